//! Streaming gunzip in bounded pieces, so a 32 MiB compressed chunk never becomes a
//! 300 MiB buffer. Concatenated gzip members (`cat a.gz b.gz`) are one stream.

use std::io::Write;

use flate2::write::MultiGzDecoder;

pub const MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Compressed bytes are fed in slices this large; each slice's output goes to the parser
/// before the next is inflated.
const SLICE: usize = 16 * 1024;

pub struct Gunzip {
    decoder: MultiGzDecoder<Vec<u8>>,
    /// Compressed bytes consumed so far, for error messages.
    offset: u64,
    failed: bool,
}

impl Gunzip {
    pub fn new() -> Self {
        Gunzip { decoder: MultiGzDecoder::new(Vec::new()), offset: 0, failed: false }
    }

    /// Inflates `raw`, handing decompressed content to `sink` piece by piece.
    /// After the first corrupt byte everything else is ignored.
    pub fn feed(&mut self, raw: &[u8], sink: &mut dyn FnMut(&[u8])) -> Result<(), String> {
        if self.failed {
            return Ok(());
        }
        for slice in raw.chunks(SLICE) {
            let written = self.decoder.write_all(slice);
            self.drain(sink);
            if let Err(e) = written {
                self.failed = true;
                return Err(format!(
                    "the gzip data is corrupt near compressed byte {}: {e}; the content before it was read",
                    self.offset
                ));
            }
            self.offset += slice.len() as u64;
        }
        Ok(())
    }

    /// Flushes the end of the stream; a stream cut short is reported, its content kept.
    pub fn finish(&mut self, sink: &mut dyn FnMut(&[u8])) -> Result<(), String> {
        if self.failed {
            return Ok(());
        }
        let result = self.decoder.try_finish();
        self.drain(sink);
        result.map_err(|e| {
            self.failed = true;
            format!("the gzip stream ends early after {} compressed bytes (truncated file?): {e}", self.offset)
        })
    }

    fn drain(&mut self, sink: &mut dyn FnMut(&[u8])) {
        let out = self.decoder.get_mut();
        if !out.is_empty() {
            sink(out);
            out.clear();
        }
    }
}

#[cfg(test)]
mod tests {
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
    fn reports_truncation_and_keeps_what_came_before() {
        let data = vec![b'a'; 100_000];
        let raw = gz(&data);
        let (out, errors) = inflate(raw.get(..raw.len() / 2).unwrap(), 1000);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("ends early"), "{errors:?}");
        assert!(!out.is_empty());
    }

    #[test]
    fn reports_garbage_after_the_magic() {
        let mut raw = MAGIC.to_vec();
        raw.extend_from_slice(&[0xff; 64]);
        let (_, errors) = inflate(&raw, 10);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("corrupt") || errors[0].contains("ends early"), "{errors:?}");
    }
}
