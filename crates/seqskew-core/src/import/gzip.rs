//! Streaming gunzip in bounded pieces, so a 32 MiB compressed chunk never becomes a 300 MiB
//! buffer. Concatenated gzip members (`cat a.gz b.gz`) are one stream. Built on raw inflate
//! (`flate2::Decompress`) with the gzip framing read here, so that everything inflated before a
//! corrupt byte reaches the parser, however the input was chunked.

use flate2::{Crc, Decompress, FlushDecompress, Status};

pub const MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Decompressed content is handed on in pieces of at most this size.
const OUT: usize = 64 * 1024;

/// Header flag bits (RFC 1952).
const FHCRC: u8 = 2;
const FEXTRA: u8 = 4;
const FNAME: u8 = 8;
const FCOMMENT: u8 = 16;

enum State {
    /// Reading a member's header (bytes gathered so far).
    Header(Vec<u8>),
    /// Inflating a member's body.
    Body,
    /// Reading a member's 8-byte trailer (CRC-32, size).
    Trailer(Vec<u8>),
    /// Between members: whitespace or another member may follow.
    Between,
    Failed,
}

pub struct Gunzip {
    state: State,
    inflate: Decompress,
    crc: Crc,
    out: Vec<u8>,
    /// Compressed bytes consumed so far, for error messages.
    offset: u64,
    members: u32,
}

/// The length of a complete gzip header at the start of `h`, `Ok(None)` if more bytes are needed.
fn header_len(h: &[u8]) -> Result<Option<usize>, String> {
    let Some(fixed) = h.get(..10) else { return Ok(None) };
    if fixed.get(..2) != Some(&MAGIC[..]) {
        return Err("not a gzip member (bad magic)".into());
    }
    if fixed.get(2) != Some(&8) {
        return Err("gzip data compressed with an unknown method".into());
    }
    let flags = fixed.get(3).copied().unwrap_or(0);
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let Some(x) = h.get(at..at + 2) else { return Ok(None) };
        at += 2 + usize::from(u16::from_le_bytes([x.first().copied().unwrap_or(0), x.get(1).copied().unwrap_or(0)]));
    }
    for bit in [FNAME, FCOMMENT] {
        if flags & bit != 0 {
            let Some(rest) = h.get(at..) else { return Ok(None) };
            let Some(zero) = rest.iter().position(|&b| b == 0) else { return Ok(None) };
            at += zero + 1;
        }
    }
    if flags & FHCRC != 0 {
        at += 2;
    }
    Ok((h.len() >= at).then_some(at))
}

impl Gunzip {
    pub fn new() -> Self {
        Gunzip {
            state: State::Header(Vec::new()),
            inflate: Decompress::new(false),
            crc: Crc::new(),
            out: vec![0; OUT],
            offset: 0,
            members: 0,
        }
    }

    fn fail(&mut self, why: impl std::fmt::Display) -> Result<(), String> {
        self.state = State::Failed;
        Err(format!(
            "the gzip data is corrupt near compressed byte {}: {why}; the content before it was read",
            self.offset
        ))
    }

    /// Inflates `raw`, handing decompressed content to `sink` piece by piece. After the first
    /// corrupt byte everything else is ignored.
    pub fn feed(&mut self, mut raw: &[u8], sink: &mut dyn FnMut(&[u8])) -> Result<(), String> {
        while !raw.is_empty() {
            match std::mem::replace(&mut self.state, State::Failed) {
                State::Failed => return Ok(()),
                State::Between => {
                    if raw.first().is_some_and(u8::is_ascii_whitespace) || raw.first() == Some(&0) {
                        // Padding after the last member (some writers add it).
                        let skip = raw.iter().take_while(|b| b.is_ascii_whitespace() || **b == 0).count();
                        raw = raw.get(skip..).unwrap_or_default();
                        self.offset += skip as u64;
                        self.state = State::Between;
                    } else {
                        self.state = State::Header(Vec::new());
                    }
                }
                State::Header(mut h) => {
                    let before = h.len();
                    h.extend_from_slice(raw);
                    match header_len(&h) {
                        Ok(Some(len)) => {
                            let used = len - before;
                            raw = raw.get(used..).unwrap_or_default();
                            self.offset += used as u64;
                            self.inflate.reset(false);
                            self.crc.reset();
                            self.state = State::Body;
                        }
                        Ok(None) => {
                            self.offset += raw.len() as u64;
                            self.state = State::Header(h);
                            return Ok(());
                        }
                        Err(why) if self.members > 0 => {
                            return self.fail(format!("data after the last gzip member ({why})"));
                        }
                        Err(why) => return self.fail(why),
                    }
                }
                State::Body => {
                    let (before_in, before_out) = (self.inflate.total_in(), self.inflate.total_out());
                    let status = self.inflate.decompress(raw, &mut self.out, FlushDecompress::None);
                    let used = (self.inflate.total_in() - before_in) as usize;
                    let produced = (self.inflate.total_out() - before_out) as usize;
                    let piece = self.out.get(..produced).unwrap_or_default();
                    self.crc.update(piece);
                    sink(piece);
                    raw = raw.get(used..).unwrap_or_default();
                    self.offset += used as u64;
                    match status {
                        Ok(Status::StreamEnd) => self.state = State::Trailer(Vec::new()),
                        Ok(_) if used == 0 && produced == 0 => {
                            // Needs more input than it has been given (should not happen with input left).
                            self.state = State::Body;
                            return Ok(());
                        }
                        Ok(_) => self.state = State::Body,
                        Err(e) => return self.fail(e),
                    }
                }
                State::Trailer(mut t) => {
                    let take = (8 - t.len()).min(raw.len());
                    t.extend_from_slice(raw.get(..take).unwrap_or_default());
                    raw = raw.get(take..).unwrap_or_default();
                    self.offset += take as u64;
                    if t.len() < 8 {
                        self.state = State::Trailer(t);
                        return Ok(());
                    }
                    let crc = t.get(..4).and_then(|b| <[u8; 4]>::try_from(b).ok()).map_or(0, u32::from_le_bytes);
                    self.members += 1;
                    if crc != self.crc.sum() {
                        return self.fail("a gzip member's checksum does not match its content");
                    }
                    self.state = State::Between;
                }
            }
        }
        Ok(())
    }

    /// The end of the stream: a stream cut short is reported (its content was kept).
    pub fn finish(&mut self, _sink: &mut dyn FnMut(&[u8])) -> Result<(), String> {
        match std::mem::replace(&mut self.state, State::Failed) {
            State::Between | State::Failed => Ok(()),
            State::Header(h) if h.is_empty() && self.members > 0 => Ok(()),
            _ => Err(format!("the gzip stream ends early after {} compressed bytes (truncated file?)", self.offset)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use flate2::Compression;
    use flate2::write::GzEncoder;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    fn inflate(raw: &[u8], chunk: usize) -> (Vec<u8>, Vec<String>) {
        let mut out = Vec::new();
        let mut errors = Vec::new();
        let mut g = Gunzip::new();
        for c in raw.chunks(chunk) {
            if let Err(e) = g.feed(c, &mut |b| out.extend_from_slice(b)) {
                errors.push(e);
            }
        }
        if let Err(e) = g.finish(&mut |b| out.extend_from_slice(b)) {
            errors.push(e);
        }
        (out, errors)
    }

    #[test]
    fn round_trips_in_any_chunking_and_joins_members() {
        let data: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let mut raw = gz(&data);
        raw.extend(gz(b"tail"));
        for chunk in [1, 7, 4096, 1 << 20] {
            let (out, errors) = inflate(&raw, chunk);
            assert!(errors.is_empty(), "{errors:?}");
            assert_eq!(out.len(), data.len() + 4);
            assert!(out.ends_with(b"tail"));
        }
    }

    #[test]
    fn reads_headers_with_names_and_extras() {
        // A member with FEXTRA, FNAME and FCOMMENT set, built by hand around a real deflate body.
        let plain = gz(b"hello");
        let body = &plain[10..];
        let mut raw = vec![0x1f, 0x8b, 8, FEXTRA | FNAME | FCOMMENT, 0, 0, 0, 0, 0, 3, 2, 0, b'x', b'y'];
        raw.extend_from_slice(b"name.json\0comment\0");
        raw.extend_from_slice(body);
        for chunk in [1, 3, 100] {
            let (out, errors) = inflate(&raw, chunk);
            assert_eq!((out.as_slice(), errors.len()), (&b"hello"[..], 0), "{errors:?}");
        }
    }

    #[test]
    fn reports_truncation_and_keeps_what_came_before() {
        let data = vec![b'a'; 100_000];
        let raw = gz(&data);
        let (out, errors) = inflate(raw.get(..raw.len() / 2).unwrap(), 1000);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("ends early"), "{errors:?}");
        assert!(!out.is_empty());
    }

    #[test]
    fn keeps_what_came_before_corruption_whatever_the_chunking() {
        // A stored block holding the text, then a block of the reserved type 3.
        let text = b"step,rank,step_s\n1,0,1.0\n";
        let mut raw = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0];
        raw.extend_from_slice(&(text.len() as u16).to_le_bytes());
        raw.extend_from_slice(&(!(text.len() as u16)).to_le_bytes());
        raw.extend_from_slice(text);
        raw.push(0b111);
        raw.extend_from_slice(&[0; 16]);
        for chunk in [1, 7, 64, 4096] {
            let (out, errors) = inflate(&raw, chunk);
            assert_eq!(out, text, "chunk {chunk}");
            assert!(errors.len() == 1 && errors[0].contains("corrupt"), "{errors:?}");
        }
    }

    #[test]
    fn reports_garbage_after_the_magic() {
        let mut raw = MAGIC.to_vec();
        raw.extend_from_slice(&[0xff; 64]);
        let (_, errors) = inflate(&raw, 10);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("corrupt"), "{errors:?}");
    }
}
