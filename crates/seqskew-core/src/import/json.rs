//! A small borrowed JSON scanner for the importers' hot path: one pass over an object's
//! members or an array's elements, borrowing keys and raw value text, validating only what a
//! caller keeps.
//!
//! Traces are mostly fields and events the importers ignore. serde_json validated and walked
//! every byte of them into structs (about 140 MB/s); the scanner only finds where each value
//! ends (strings by their closing quote, containers by their brackets, both searched a word
//! at a time: [`swar`]), so skipped content costs little.
//! What is kept is checked where it is used: strings by [`string`], numbers by the number
//! parsers. serde_json still reads top-level values and escaped strings.

use std::borrow::Cow;

use super::numbers::{digits, leading_digits};
use super::swar;

/// Why a scan stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanError {
    /// The input ended inside the value: more bytes may complete it.
    Eof,
    /// The bytes cannot be JSON here.
    Invalid(&'static str),
}

/// Past the whitespace at `pos`. Between tokens there is usually none or one space: those are
/// decided here, inline; a longer run is skipped by [`skip_ws_run`].
#[inline]
fn skip_ws(bytes: &[u8], pos: usize) -> usize {
    let blank = |at: usize| bytes.get(at).is_some_and(u8::is_ascii_whitespace);
    match (blank(pos), blank(pos + 1)) {
        (false, _) => pos,
        (true, false) => pos + 1,
        (true, true) => skip_ws_run(bytes, pos + 2),
    }
}

/// Past the whitespace at `pos`: indented traces put a dozen spaces before every key, skipped
/// whole words at a time.
fn skip_ws_run(bytes: &[u8], mut pos: usize) -> usize {
    loop {
        while let Some(w) = swar::word(bytes, pos) {
            let other = swar::unmarked(swar::eq(w, b' ') | swar::eq(w, b'\n'));
            if other != 0 {
                pos += swar::first(other);
                break;
            }
            pos += 8;
        }
        // Another blank (a tab, a carriage return) or the last few bytes: one at a time.
        if !bytes.get(pos).is_some_and(u8::is_ascii_whitespace) {
            return pos;
        }
        pos += 1;
    }
}

/// The end (after the closing quote) of the string whose opening quote is at `open`.
fn string_end(bytes: &[u8], open: usize) -> Result<usize, ScanError> {
    string_span(bytes, open).map(|(end, _)| end)
}

/// The end of the string whose opening quote is at `open`, and whether it has escapes.
fn string_span(bytes: &[u8], open: usize) -> Result<(usize, bool), ScanError> {
    let mut pos = open + 1;
    let mut escaped = false;
    loop {
        pos = quote_or_backslash(bytes, pos).ok_or(ScanError::Eof)?;
        if bytes.get(pos) == Some(&b'"') {
            return Ok((pos + 1, escaped));
        }
        // A backslash: skip it and the byte it escapes.
        escaped = true;
        pos += 2;
    }
}

/// The first `"` or `\` at or after `pos`. Most strings (keys, phases, categories, numbers
/// in quotes) end within a few words, found a word at a time before memchr would have set
/// up; memchr takes the long ones.
fn quote_or_backslash(bytes: &[u8], pos: usize) -> Option<usize> {
    let mut at = pos;
    for _ in 0..SHORT_STRING_WORDS {
        let Some(w) = swar::word(bytes, at) else { break };
        let found = swar::eq(w, b'"') | swar::eq(w, b'\\');
        if found != 0 {
            return Some(at + swar::first(found));
        }
        at += 8;
    }
    memchr::memchr2(b'"', b'\\', bytes.get(at..)?).map(|i| at + i)
}

/// Strings are searched a word at a time for this many words, then by memchr.
const SHORT_STRING_WORDS: usize = 4;

/// The end of the array or object whose opening bracket is at `open`: a word at a time, each
/// word's brackets that are not inside strings counted at once (strings found by the parity
/// of the quotes before each byte). Only a word with a closing bracket that may end the value
/// looks at its brackets one by one; a backslash ends the word early.
fn container_end(bytes: &[u8], open: usize) -> Result<usize, ScanError> {
    let mut depth = 0u32;
    let mut pos = open;
    let mut in_string = false;
    while let Some(w) = swar::word(bytes, pos) {
        let backslashes = swar::eq(w, b'\\');
        let quotes = swar::eq(w, b'"');
        // Setting bit 5 folds `[` onto `{` and `]` onto `}`, and nothing else onto either.
        let folded = w | swar::splat(0x20);
        let (opening, closing) = (swar::eq(folded, b'{'), swar::eq(folded, b'}'));
        // Indentation, numbers and the middle of strings: nothing to count.
        if backslashes | quotes | opening | closing == 0 {
            pos += 8;
            continue;
        }
        let before_backslash = swar::before_first(backslashes);
        let strings = swar::prefix_parity(quotes & before_backslash) ^ if in_string { swar::HIGHS } else { 0 };
        let outside = !strings & before_backslash;
        let (opening, closing) = (opening & outside, closing & outside);
        let closes = swar::count(closing);
        if closes < depth {
            depth = depth + swar::count(opening) - closes;
        } else {
            let mut marks = opening | closing;
            while marks != 0 {
                let bit = marks & marks.wrapping_neg();
                if opening & bit != 0 {
                    depth += 1;
                } else {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Ok(pos + swar::first(bit) + 1);
                    }
                }
                marks ^= bit;
            }
        }
        if backslashes == 0 {
            in_string = strings >> 63 != 0;
            pos += 8;
        } else {
            // Inside a string a backslash escapes the next byte; outside one it is not JSON,
            // and is stepped over like any other byte.
            let at = swar::first(backslashes);
            in_string = match at.checked_sub(1) {
                None => in_string,
                Some(prev) => strings & (0x80 << (8 * prev)) != 0,
            };
            pos += at + if in_string { 2 } else { 1 };
        }
    }
    // The last few bytes, one at a time.
    while let Some(&b) = bytes.get(pos) {
        match (in_string, b) {
            (true, b'\\') => pos += 1,
            (true, b'"') => in_string = false,
            (false, b'"') => in_string = true,
            (false, b'{' | b'[') => depth += 1,
            (false, b'}' | b']') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Ok(pos + 1);
                }
            }
            _ => {}
        }
        pos += 1;
    }
    Err(ScanError::Eof)
}

/// The end of the number or literal starting at `start`: the next delimiter.
fn scalar_end(bytes: &[u8], start: usize) -> Result<usize, ScanError> {
    // Nearly every scalar is a plain number (ids, times): its digits and point are one byte
    // range, found a word at a time with fewer operations than the delimiters below.
    let mut pos = start;
    while let Some(w) = swar::word(bytes, pos) {
        let other = swar::unmarked(swar::below(w, b'9' + 1) & !swar::below(w, b'.'));
        if other == 0 {
            pos += 8;
            continue;
        }
        pos += swar::first(other);
        if pos > start && bytes.get(pos).is_some_and(ends_scalar) {
            return Ok(pos);
        }
        break;
    }
    // A word at a time: every delimiter is one of four bytes or below 0x21 (whitespace; other
    // control bytes there are not delimiters and are stepped over).
    while let Some(w) = swar::word(bytes, pos) {
        let maybe =
            swar::below(w, 0x21) | swar::eq(w, b',') | swar::eq(w, b'}') | swar::eq(w, b']') | swar::eq(w, b':');
        if maybe == 0 {
            pos += 8;
            continue;
        }
        pos += swar::first(maybe);
        if bytes.get(pos).is_some_and(ends_scalar) {
            break;
        }
        pos += 1;
    }
    let rest = bytes.get(pos..).unwrap_or_default();
    match rest.iter().position(ends_scalar).map(|i| pos + i) {
        Some(end) if end == start => Err(ScanError::Invalid("expected a value")),
        Some(end) => Ok(end),
        None => Err(ScanError::Eof),
    }
}

/// The plain integer at `bytes[start]` (digits only, at most eighteen: it fits in an `i64`)
/// and where it ends, read in the pass that finds its end; `None` for any other value, or one
/// [`value_end`] would not end right after its digits.
pub fn plain_integer_at(bytes: &[u8], start: usize) -> Option<(u64, usize)> {
    let (value, at) = leading_digits(bytes, start, 18);
    (at > start && bytes.get(at).is_some_and(ends_scalar)).then_some((value, at))
}

/// Whether a number or literal ends before this byte (a delimiter, or whitespace).
pub fn ends_scalar(b: &u8) -> bool {
    matches!(b, b',' | b'}' | b']' | b':') || b.is_ascii_whitespace()
}

/// The value starting at `start` (no leading whitespace): its end.
pub fn value_end(bytes: &[u8], start: usize) -> Result<usize, ScanError> {
    match bytes.get(start) {
        None => Err(ScanError::Eof),
        Some(b'"') => string_end(bytes, start),
        Some(b'{' | b'[') => container_end(bytes, start),
        Some(_) => scalar_end(bytes, start),
    }
}

/// Calls `member(key, raw value)` for each member of the object at `bytes[open]` (`{`), keys
/// as the bytes between the quotes (decoded when they have escapes, which is rare); returns
/// the position after the closing brace.
pub fn object<'a>(
    bytes: &'a [u8],
    open: usize,
    mut member: impl FnMut(Cow<'a, [u8]>, &'a [u8]),
) -> Result<usize, ScanError> {
    object_scanning(bytes, open, &[], |key, start| {
        let end = value_end(bytes, start)?;
        member(key.into_bytes(&[]), bytes.get(start..end).unwrap_or_default());
        Ok(end)
    })
}

/// A member's key, as [`object_scanning`] gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key<'a> {
    /// The usual key of this index, wherever it came: callers match an index, not bytes.
    Usual(usize),
    /// Any other key: the bytes between its quotes (decoded when they have escapes).
    Other(Cow<'a, [u8]>),
}

impl<'a> Key<'a> {
    /// The key's bytes, `usual` being the list the object was scanned with.
    pub fn into_bytes(self, usual: &[UsualKey]) -> Cow<'a, [u8]> {
        match self {
            Key::Usual(i) => Cow::Borrowed(usual.get(i).map_or(&b""[..], |k| k.name)),
            Key::Other(bytes) => bytes,
        }
    }
}

/// Like [`object`], but `member(key, start)` reads the value at `bytes[start]` itself and
/// returns where it ends ([`value_end`] skips it): a nested object it wants is then scanned
/// once, not once to find its end and again to read it.
///
/// `usual` lists the keys writers usually put first, in their order: a key where it is
/// expected (first, or after the usual key before it in the list) is recognised by comparing
/// a word or two instead of being searched for its closing quote, with its colon when it is
/// written as writers write it (`"name": `). Any other key, or any order, is read as usual,
/// and is still [`Key::Usual`] when its bytes are a usual key's.
pub fn object_scanning<'a>(
    bytes: &'a [u8],
    open: usize,
    usual: &[UsualKey],
    mut member: impl FnMut(Key<'a>, usize) -> Result<usize, ScanError>,
) -> Result<usize, ScanError> {
    if bytes.get(open) != Some(&b'{') {
        return Err(ScanError::Invalid("expected an object"));
    }
    let mut pos = skip_ws(bytes, open + 1);
    if bytes.get(pos) == Some(&b'}') {
        return Ok(pos + 1);
    }
    // The usual key expected next.
    let mut expected = 0;
    loop {
        let (key, value) = match usual.get(expected).filter(|k| k.is_spaced_at(bytes, pos)) {
            Some(k) => (Key::Usual(expected), skip_ws(bytes, pos + k.spaced_len())),
            None => key_and_colon(bytes, pos, usual, expected)?,
        };
        expected = match key {
            Key::Usual(i) => i + 1,
            Key::Other(_) => expected,
        };
        let end = member(key, value)?;
        // A value is usually followed at once by a comma.
        pos = match bytes.get(end) {
            Some(b',') => skip_ws(bytes, end + 1),
            Some(b'}') => return Ok(end + 1),
            _ => {
                let after = skip_ws(bytes, end);
                match bytes.get(after) {
                    None => return Err(ScanError::Eof),
                    Some(b',') => skip_ws(bytes, after + 1),
                    Some(b'}') => return Ok(after + 1),
                    Some(_) => return Err(ScanError::Invalid("expected ',' or '}' after a value")),
                }
            }
        };
    }
}

/// The key at `bytes[pos]` (where the usual key `expected` would be) and where its value
/// starts, past the colon: the general way of [`object_scanning`]. Kept out of its loop (most
/// keys are where they are expected): inlined, it cost the loop more than the call saved.
#[inline(never)]
fn key_and_colon<'a>(
    bytes: &'a [u8],
    pos: usize,
    usual: &[UsualKey],
    expected: usize,
) -> Result<(Key<'a>, usize), ScanError> {
    match bytes.get(pos) {
        None => return Err(ScanError::Eof),
        Some(b'"') => {}
        Some(_) => return Err(ScanError::Invalid("expected a key")),
    }
    let (key, key_end) = match usual.get(expected).filter(|k| k.is_quoted_at(bytes, pos)) {
        Some(k) => (Key::Usual(expected), pos + k.name.len() + 2),
        None => {
            let (key_end, escaped) = string_span(bytes, pos)?;
            let raw_key = bytes.get(pos + 1..key_end - 1).unwrap_or_default();
            let (key, known) = if escaped {
                let key = unescaped_key(raw_key);
                let known = usual.iter().position(|k| k.name == key.as_ref());
                (key, known)
            } else {
                // Compared in words, where the lengths agree: no call per candidate.
                let known = usual.iter().position(|k| k.name.len() == raw_key.len() && k.is_quoted_at(bytes, pos));
                (Cow::Borrowed(raw_key), known)
            };
            (known.map_or(Key::Other(key), Key::Usual), key_end)
        }
    };
    let colon = skip_ws(bytes, key_end);
    match bytes.get(colon) {
        None => Err(ScanError::Eof),
        Some(b':') => Ok((key, skip_ws(bytes, colon + 1))),
        Some(_) => Err(ScanError::Invalid("expected ':' after a key")),
    }
}

/// A key [`object_scanning`] expects, as writers write it (`"name": `), in up to
/// [`KEY_WORDS`] little-endian words: the words, the masks of the bytes they hold, and the
/// masks of its quoted form alone (`"name"`, for writers that put no space after the colon).
pub struct UsualKey {
    name: &'static [u8],
    words: [u64; KEY_WORDS],
    spaced: [u64; KEY_WORDS],
    quoted: [u64; KEY_WORDS],
}

/// The most words a [`UsualKey`] takes.
const KEY_WORDS: usize = 3;

impl UsualKey {
    /// `name` without quotes, at most twenty bytes (so that with its quotes, colon and space it
    /// takes at most [`KEY_WORDS`] words).
    pub const fn new(name: &'static [u8]) -> Self {
        assert!(name.len() + 4 <= 8 * KEY_WORDS, "a usual key is compared as at most three words");
        let (words, spaced) = Self::words_of(&[b"\"", name, b"\": "]);
        let (_, quoted) = Self::words_of(&[b"\"", name, b"\""]);
        UsualKey { name, words, spaced, quoted }
    }

    /// `parts` one after the other as little-endian words, and the masks of their bytes.
    const fn words_of(parts: &[&[u8]]) -> ([u64; KEY_WORDS], [u64; KEY_WORDS]) {
        let (mut words, mut masks) = ([0u64; KEY_WORDS], [0u64; KEY_WORDS]);
        let mut at = 0;
        let mut parts = parts;
        while let [part, later @ ..] = parts {
            let mut rest = *part;
            while let [b, tail @ ..] = rest {
                let (byte, mask) = ((*b as u64) << (8 * (at % 8)), 0xffu64 << (8 * (at % 8)));
                let (word, full) = match at / 8 {
                    0 => (&mut words[0], &mut masks[0]),
                    1 => (&mut words[1], &mut masks[1]),
                    _ => (&mut words[2], &mut masks[2]),
                };
                *word |= byte;
                *full |= mask;
                at += 1;
                rest = tail;
            }
            parts = later;
        }
        (words, masks)
    }

    /// Whether `"name": ` is at `bytes[pos]`.
    fn is_spaced_at(&self, bytes: &[u8], pos: usize) -> bool {
        self.is_at(bytes, pos, &self.spaced)
    }

    /// Whether `"name"` is at `bytes[pos]`.
    fn is_quoted_at(&self, bytes: &[u8], pos: usize) -> bool {
        self.is_at(bytes, pos, &self.quoted)
    }

    /// Whether the bytes `masks` marks in the key's words are at `bytes[pos]`; the first word
    /// tells nearly every other key apart.
    fn is_at(&self, bytes: &[u8], pos: usize, masks: &[u64; KEY_WORDS]) -> bool {
        let same = |i: usize, word: u64, mask: u64| {
            mask == 0 || swar::word(bytes, pos + 8 * i).is_some_and(|w| (w ^ word) & mask == 0)
        };
        let ([w0, w1, w2], [m0, m1, m2]) = (self.words, *masks);
        same(0, w0, m0) && same(1, w1, m1) && same(2, w2, m2)
    }

    /// The bytes of `"name": `.
    fn spaced_len(&self) -> usize {
        self.name.len() + 4
    }
}

/// Calls `element(raw value)` for each element of the array at `bytes[open]` (`[`); returns
/// the position after the closing bracket.
pub fn array<'a>(bytes: &'a [u8], open: usize, mut element: impl FnMut(&'a [u8])) -> Result<usize, ScanError> {
    if bytes.get(open) != Some(&b'[') {
        return Err(ScanError::Invalid("expected an array"));
    }
    let mut pos = skip_ws(bytes, open + 1);
    if bytes.get(pos) == Some(&b']') {
        return Ok(pos + 1);
    }
    loop {
        let end = element_end(bytes, pos)?;
        element(bytes.get(pos..end).unwrap_or_default());
        pos = skip_ws(bytes, end);
        match bytes.get(pos) {
            None => return Err(ScanError::Eof),
            Some(b',') => pos = skip_ws(bytes, pos + 1),
            Some(b']') => return Ok(pos + 1),
            Some(_) => return Err(ScanError::Invalid("expected ',' or ']' after a value")),
        }
    }
}

/// [`value_end`] of an array element, with the elements of recorded shapes and inputs (a few
/// digits, a short string without escapes) ended here, a byte at a time: for them the general
/// search's dispatch and word set-up cost more than the element. Anything else, and anything
/// these loops are not sure of, is left to [`value_end`].
fn element_end(bytes: &[u8], start: usize) -> Result<usize, ScanError> {
    let mut at = start + 1;
    match bytes.get(start) {
        Some(b'0'..=b'9') => {
            while bytes.get(at).is_some_and(u8::is_ascii_digit) {
                at += 1;
            }
            if matches!(bytes.get(at), Some(b',' | b']')) {
                return Ok(at);
            }
        }
        Some(b'"') => {
            while let Some(&b) = bytes.get(at).filter(|_| at - start <= SHORT_ELEMENT) {
                match b {
                    b'"' => return Ok(at + 1),
                    b'\\' => break,
                    _ => at += 1,
                }
            }
        }
        _ => {}
    }
    value_end(bytes, start)
}

/// The longest string [`element_end`] ends itself.
const SHORT_ELEMENT: usize = 16;

/// A tensor shape as profilers record it: a flat array of up to [`MAX_DIMS`] non-negative
/// integers (`[8, 4096, 16, 128]`), as the dimensions and their count; `None` for anything
/// else. Nothing is allocated: attention calls are frequent.
pub fn shape(raw: &[u8]) -> Option<Shape> {
    match plain_shape(raw, 0) {
        Some((shape, end)) => shape.filter(|_| end == raw.len()),
        None => scanned_shape(raw),
    }
}

/// [`shape`] of any JSON, read with the scanner.
fn scanned_shape(raw: &[u8]) -> Option<Shape> {
    let mut dims = [0u64; MAX_DIMS];
    let mut n = 0usize;
    let mut flat = true;
    let end = array(raw, 0, |v| {
        match (digits(v), dims.get_mut(n)) {
            (Some(d), Some(slot)) => *slot = d,
            _ => flat = false,
        }
        n += 1;
    })
    .ok()?;
    (flat && end == raw.len()).then_some((dims, n))
}

/// A shape's dimensions and their count.
pub type Shape = ([u64; MAX_DIMS], usize);

/// [`shape`] of each element of a list of shapes (`[[8, 4096, 16, 128], [23], []]`), in order,
/// and where the list ends: one pass, a byte at a time, for the lists profilers write. `None`
/// (perhaps after some calls) when the list holds anything but arrays of plain integers, or is
/// not JSON: read it then with [`array()`] and [`shape`], which take any JSON.
pub fn plain_shapes(raw: &[u8], mut each: impl FnMut(Option<Shape>)) -> Option<usize> {
    if raw.first() != Some(&b'[') {
        return None;
    }
    let mut at = skip_ws(raw, 1);
    if raw.get(at) == Some(&b']') {
        return Some(at + 1);
    }
    loop {
        let (shape, end) = plain_shape(raw, at)?;
        each(shape);
        at = skip_ws(raw, end);
        match raw.get(at) {
            Some(b',') => at = skip_ws(raw, at + 1),
            Some(b']') => return Some(at + 1),
            _ => return None,
        }
    }
}

/// The array of plain integers at `raw[open]`, read a byte at a time: its [`shape`] (`None`
/// beyond [`MAX_DIMS`] dimensions) and where it ends; `None` when it is anything else, or a
/// number may not fit in 64 bits (the general reader decides then).
fn plain_shape(raw: &[u8], open: usize) -> Option<(Option<Shape>, usize)> {
    if raw.get(open) != Some(&b'[') {
        return None;
    }
    let (mut dims, mut n) = ([0u64; MAX_DIMS], 0usize);
    let mut at = skip_ws(raw, open + 1);
    if raw.get(at) == Some(&b']') {
        return Some((Some((dims, 0)), at + 1));
    }
    loop {
        let start = at;
        // Nineteen digits always fit in 64 bits; a twentieth is left to the general reader.
        let value;
        (value, at) = leading_digits(raw, start, 19);
        if at == start || raw.get(at).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        if let Some(slot) = dims.get_mut(n) {
            *slot = value;
        }
        n += 1;
        at = skip_ws(raw, at);
        match raw.get(at) {
            Some(b',') => at = skip_ws(raw, at + 1),
            Some(b']') => return Some(((n <= MAX_DIMS).then_some((dims, n)), at + 1)),
            _ => return None,
        }
    }
}

/// A flat array of non-negative integers that fit in `u32` (`[512, 77]`); `None` for anything
/// else. Read in place: a step's lengths may be thousands.
pub fn naturals(raw: &[u8]) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    let mut all = true;
    let end = array(raw, 0, |v| match digits(v).and_then(|n| u32::try_from(n).ok()) {
        Some(n) => out.push(n),
        None => all = false,
    })
    .ok()?;
    (all && end == raw.len()).then_some(out)
}

/// The most dimensions [`shape`] reads.
pub const MAX_DIMS: usize = 4;

/// A raw JSON string (quotes included) as text: borrowed unless it has escapes. Control
/// characters and invalid UTF-8 are errors, as in JSON.
pub fn string(raw: &[u8]) -> Result<Cow<'_, str>, &'static str> {
    let inner = raw.strip_prefix(b"\"").and_then(|r| r.strip_suffix(b"\"")).ok_or("not a string")?;
    // One pass finds whether anything is forbidden or needs decoding; rare strings look again.
    if !has_control_or_backslash(inner) {
        return std::str::from_utf8(inner).map(Cow::Borrowed).map_err(|_| "invalid UTF-8 in a string");
    }
    match inner.iter().any(|&b| b < 0x20) {
        true => Err("a control character in a string"),
        false => serde_json::from_slice::<String>(raw).map(Cow::Owned).map_err(|_| "a bad escape in a string"),
    }
}

/// The value at `bytes[start]` as a string ([`string`]), and where the value ends: a string
/// without escapes is found and checked for control characters in one pass, a word at a time
/// (a kept name, category or phase), then for UTF-8; anything else the usual way. `known`
/// names the values a field usually has (a trace's categories): one of them is taken as its
/// static text, not checked as UTF-8.
pub fn string_at(
    bytes: &[u8],
    start: usize,
    known: impl Fn(&[u8]) -> Option<&'static str>,
) -> Result<(Result<Cow<'_, str>, &'static str>, usize), ScanError> {
    let mut at = start + 1;
    if bytes.get(start) == Some(&b'"') {
        while let Some(w) = swar::word(bytes, at) {
            let stop = swar::quote_or_control(w) | swar::eq(w, b'\\');
            if stop == 0 {
                at += 8;
                continue;
            }
            let close = at + swar::first(stop);
            if bytes.get(close) != Some(&b'"') {
                break;
            }
            let inner = bytes.get(start + 1..close).unwrap_or_default();
            // Phases are one letter: taken from a table, not checked as UTF-8.
            if let [b] = inner
                && let Some(letter) = b.checked_sub(b' ').and_then(|i| PRINTABLE.get(usize::from(i)..=usize::from(i)))
            {
                return Ok((Ok(Cow::Borrowed(letter)), close + 1));
            }
            if let Some(text) = known(inner) {
                return Ok((Ok(Cow::Borrowed(text)), close + 1));
            }
            let text = std::str::from_utf8(inner).map(Cow::Borrowed).map_err(|_| "invalid UTF-8 in a string");
            return Ok((text, close + 1));
        }
    }
    let end = value_end(bytes, start)?;
    Ok((string(bytes.get(start..end).unwrap_or_default()), end))
}

/// The printable ASCII characters, from the space on.
const PRINTABLE: &str =
    " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~";

/// Whether `text` has a control character or a backslash: a word at a time (names are long).
fn has_control_or_backslash(text: &[u8]) -> bool {
    let mut at = 0;
    while let Some(w) = swar::word(text, at) {
        if swar::below(w, 0x20) | swar::eq(w, b'\\') != 0 {
            return true;
        }
        at += 8;
    }
    text.get(at..).unwrap_or_default().iter().any(|&b| b < 0x20 || b == b'\\')
}

/// A key with escapes, decoded (its raw bytes if it cannot be).
fn unescaped_key(raw: &[u8]) -> Cow<'_, [u8]> {
    let quoted = [b"\"", raw, b"\""].concat();
    match serde_json::from_slice::<String>(&quoted) {
        Ok(decoded) => Cow::Owned(decoded.into_bytes()),
        Err(_) => Cow::Borrowed(raw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(text: &str) -> Result<(Vec<(String, String)>, usize), ScanError> {
        let mut out = Vec::new();
        let end = object(text.as_bytes(), 0, |k, v| {
            out.push((String::from_utf8_lossy(&k).into_owned(), String::from_utf8_lossy(v).into_owned()))
        })?;
        Ok((out, end))
    }

    #[test]
    fn members_borrow_keys_and_raw_values() {
        let text = r#"{"ph": "X", "args": {"a": [1, {"b": "}"}]}, "ts" :12.5,"s":"q\"}" }, next"#;
        let (m, end) = members(text).expect("an object");
        let pairs: Vec<(&str, &str)> = m.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            pairs,
            vec![("ph", "\"X\""), ("args", r#"{"a": [1, {"b": "}"}]}"#), ("ts", "12.5"), ("s", r#""q\"}""#)]
        );
        assert_eq!(text.get(end..), Some(", next"));
        assert_eq!(members("{}").map(|m| m.1), Ok(2));
    }

    #[test]
    fn incomplete_and_invalid_objects() {
        for cut in [r#"{"ph": "X", "ts": 1"#, r#"{"ph": "X"#, r#"{"ph""#, "{", r#"{"a": [1, 2"#] {
            assert_eq!(members(cut).map(|m| m.1), Err(ScanError::Eof), "{cut}");
        }
        for bad in [r#"{"a" 1}"#, r#"{a: 1}"#, r#"{"a": 1 "b": 2}"#, r#"{"a": , "b": 2}"#, "[1]"] {
            assert!(matches!(members(bad), Err(ScanError::Invalid(_))), "{bad}");
        }
    }

    #[test]
    fn strings_are_checked_when_kept() {
        assert_eq!(string(br#""aten::mm""#), Ok(Cow::Borrowed("aten::mm")));
        assert_eq!(string(br#""a\"b\u00e9""#), Ok(Cow::Owned("a\"bé".to_owned())));
        assert!(string(b"\"tab\there\"").is_err());
        assert!(string(b"\"\xff\"").is_err());
        assert!(string(b"12").is_err());
        assert!(string(b"\"a\\\"\x01\"").is_err(), "a control character after an escape");
        assert_eq!(unescaped_key(br"t\u0073").as_ref(), b"ts");
        let mut keys = Vec::new();
        object(br#"{"t\u0073": 1, "ph": 2}"#, 0, |k, _| keys.push(k.into_owned())).expect("an object");
        assert_eq!(keys, [b"ts".to_vec(), b"ph".to_vec()]);
    }

    /// A container's end found a byte at a time: what the word-at-a-time search must agree with.
    fn container_end_bytewise(bytes: &[u8]) -> Result<usize, ScanError> {
        let (mut depth, mut in_string, mut escaped) = (0u32, false, false);
        for (i, &b) in bytes.iter().enumerate() {
            match (in_string, escaped, b) {
                (true, true, _) => escaped = false,
                (true, false, b'\\') => escaped = true,
                (true, false, b'"') => in_string = false,
                (false, _, b'"') => in_string = true,
                (false, _, b'{' | b'[') => depth += 1,
                (false, _, b'}' | b']') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Ok(i + 1);
                    }
                }
                _ => {}
            }
        }
        Err(ScanError::Eof)
    }

    #[test]
    fn containers_end_where_a_byte_at_a_time_search_ends_them() {
        let cases = [
            r#"[[32768, 32, 128], [32768, 32, 128], [23], [], [], [], []], "next": 1"#,
            r#"["", "", "", "", "15139", "15139", "0.0", "True"]"#,
            r#"{"a": "]]]}}}", "b": ["[", "{"], "c": {"d": [[[]]]}} tail ]"#,
            r#"["quote \" ] inside", "backslash \\", "\\\"]\\", ["x"]] ]"#,
            "[\n        [\n            512\n        ],\n        [],\n        []\n    ],\n",
            r#"{"k": "a long name that runs over several words ] } [ {", "v": [1,2,3]}"#,
            r#"[\"]"]"#,
            "[]",
            "{}",
        ];
        for case in cases {
            let bytes = case.as_bytes();
            // Every prefix (cut mid-value: incomplete) and every starting alignment.
            for pad in 0..8 {
                let padded = [" ".repeat(pad).as_bytes(), bytes].concat();
                for cut in pad..=padded.len() {
                    let text = padded.get(..cut).unwrap_or_default();
                    let expected = container_end_bytewise(text.get(pad..).unwrap_or_default()).map(|e| e + pad);
                    assert_eq!(container_end(text, pad), expected, "{case:?} padded {pad} cut at {cut}");
                }
            }
        }
    }

    #[test]
    fn strings_at_a_place_read_as_strings_and_their_ends_do() {
        let long = format!("\"{}\"", "a".repeat(200));
        let cases: [&[u8]; 14] = [
            br#""X", "cat""#,
            br#"" ""#,
            b"\"\x7f\" ",
            "\"é\"".as_bytes(),
            br#""aten::mm", "next""#,
            br#""", 1"#,
            br#""a\"b\u00e9" x"#,
            b"\"tab\there\" x",
            b"\"bad \xff utf-8\" x",
            long.as_bytes(),
            b"12, 3",
            b"{\"a\": 1}",
            br#""cut mid-stri"#,
            br#""exactly eight b""#,
        ];
        for case in cases {
            for cut in 0..=case.len() {
                let text = case.get(..cut).unwrap_or_default();
                let usual = value_end(text, 0).map(|end| (string(text.get(..end).unwrap_or_default()), end));
                assert_eq!(string_at(text, 0, |_| None), usual, "{} cut at {cut}", String::from_utf8_lossy(case));
            }
        }
    }

    #[test]
    fn scalars_end_at_the_first_delimiter() {
        for case in ["1700000000123.456, ", "7}", "-3 ", "1e-5,", "12345678901234567890]", "true,", "0.5:", "nul", "8"]
        {
            for cut in 0..=case.len() {
                let text = case.get(..cut).unwrap_or_default().as_bytes();
                let delimiter =
                    text.iter().position(|b| matches!(b, b',' | b'}' | b']' | b':') || b.is_ascii_whitespace());
                let expected = match delimiter {
                    Some(0) => Err(ScanError::Invalid("expected a value")),
                    Some(end) => Ok(end),
                    None => Err(ScanError::Eof),
                };
                assert_eq!(value_end(text, 0), expected, "{case:?} cut at {cut}");
            }
        }
    }

    #[test]
    fn plain_integers_end_where_values_do() {
        let mut next = xorshift();
        let mut answered = 0;
        for _ in 0..50_000 {
            let len = (next() % 24) as usize;
            let text = jsonish(&mut next, b"0123456789012345678901234567890123456789,} ]:.e-\"x", len);
            if let Some((n, end)) = plain_integer_at(&text, 0) {
                answered += 1;
                assert_eq!(Ok(end), value_end(&text, 0), "{}", String::from_utf8_lossy(&text));
                assert_eq!(text.get(..end).and_then(digits), Some(n));
            }
        }
        assert!(answered > 5_000, "{answered}");
        assert_eq!(plain_integer_at(b"123456789012345678,", 0), Some((123_456_789_012_345_678, 18)));
        assert_eq!(plain_integer_at(b"1234567890123456789,", 0), None, "nineteen digits: the general way");
        assert_eq!(plain_integer_at(b"12", 0), None, "may go on in the next chunk");
    }

    #[test]
    fn usual_keys_are_recognised_where_expected_and_others_read_as_usual() {
        const USUAL: [UsualKey; 3] = [UsualKey::new(b"ph"), UsualKey::new(b"cat"), UsualKey::new(b"name")];
        let keys = |text: &str| {
            let mut keys = Vec::new();
            let end = object_scanning(text.as_bytes(), 0, &USUAL, |key, start| {
                keys.push(String::from_utf8_lossy(&key.into_bytes(&USUAL)).into_owned());
                value_end(text.as_bytes(), start)
            });
            (keys, end)
        };
        let usual = r#"{"ph": "X", "cat": "kernel", "name": "k", "ts": 1}"#;
        assert_eq!(keys(usual), (vec!["ph".into(), "cat".into(), "name".into(), "ts".into()], Ok(usual.len())));
        // Keys that begin like a usual one, other orders, escapes, and a key too near the end
        // of the buffer to be compared as a word.
        let other = r#"{"phx": 1, "ph" : 2, "c\u0061t": 3, "cat":4}"#;
        assert_eq!(keys(other), (vec!["phx".into(), "ph".into(), "cat".into(), "cat".into()], Ok(other.len())));
        assert_eq!(keys(r#"{"ph":1}"#), (vec!["ph".into()], Ok(8)));
        // A usual key out of its place (or escaped) is still known by its index.
        let mut found = Vec::new();
        object_scanning(other.as_bytes(), 0, &USUAL, |key, start| {
            found.push(key);
            value_end(other.as_bytes(), start)
        })
        .expect("an object");
        assert_eq!(found, [Key::Other(Cow::Borrowed(&b"phx"[..])), Key::Usual(0), Key::Usual(1), Key::Usual(1)]);
        assert_eq!(keys(r#"{"ph": 1, "ca"#).1, Err(ScanError::Eof));
    }

    /// Objects of usual keys (one to three words long, with their colon and space or not),
    /// keys that begin like them, in any order and spacing, cut anywhere: scanned with the
    /// usual keys, they give what scanning them without any gives.
    #[test]
    fn usual_keys_of_every_length_read_as_any_key() {
        const USUAL: [UsualKey; 4] = [
            UsualKey::new(b"ph"),
            UsualKey::new(b"correlation"),
            UsualKey::new(b"Process Group Ranks"),
            UsualKey::new(b"twenty bytes exactly"),
        ];
        let names = ["ph", "correlation", "Process Group Ranks", "twenty bytes exactly", "p", "correlations", "x"];
        let separators = [": ", ":", " : ", ":  ", ":\n"];
        let read = |text: &[u8], usual: &[UsualKey]| {
            let mut members = Vec::new();
            let end = object_scanning(text, 0, usual, |key, start| {
                let end = value_end(text, start)?;
                members.push((key.into_bytes(usual).into_owned(), text.get(start..end).map(<[u8]>::to_vec)));
                Ok(end)
            });
            (members, end)
        };
        let mut next = xorshift();
        for _ in 0..5_000 {
            let members: Vec<String> = (0..next() % 5)
                .map(|_| {
                    let name = names[next() as usize % names.len()];
                    let separator = separators[next() as usize % separators.len()];
                    format!("\"{name}\"{separator}{}", next() % 1000)
                })
                .collect();
            let text = format!("{{{}}} ", members.join(", "));
            for cut in 0..=text.len() {
                let text = text.as_bytes().get(..cut).unwrap_or_default();
                assert_eq!(read(text, &USUAL), read(text, &[]), "{}", String::from_utf8_lossy(text));
            }
        }
        let mut found = Vec::new();
        let text = br#"{"correlation": 1, "ph": 2, "Process Group Ranks":3}"#;
        object_scanning(text, 0, &USUAL, |key, start| {
            found.push(key);
            value_end(text, start)
        })
        .expect("an object");
        assert_eq!(found, [Key::Usual(1), Key::Usual(0), Key::Usual(2)]);
    }

    /// Random text of JSON's punctuation, digits and a few other bytes, `len` bytes long.
    fn jsonish(next: &mut impl FnMut() -> u64, alphabet: &[u8], len: usize) -> Vec<u8> {
        (0..len).map(|_| alphabet.get(next() as usize % alphabet.len()).copied().unwrap_or(b' ')).collect()
    }

    fn xorshift() -> impl FnMut() -> u64 {
        crate::import::test_rng::xorshift(0x2545_f491_4f6c_dd1d)
    }

    #[test]
    fn whitespace_is_skipped_as_a_byte_at_a_time_skips_it() {
        let mut next = xorshift();
        for _ in 0..20_000 {
            let len = (next() % 40) as usize;
            let text = jsonish(&mut next, b"      \n\n\t\r\x0c{", len);
            for start in 0..=text.len() {
                let expected =
                    text.iter().skip(start).position(|b| !b.is_ascii_whitespace()).map_or(text.len(), |i| start + i);
                assert_eq!(skip_ws(&text, start), expected, "{:?} from {start}", String::from_utf8_lossy(&text));
            }
        }
    }

    #[test]
    fn elements_end_where_values_do() {
        let mut next = xorshift();
        for _ in 0..20_000 {
            let len = (next() % 24) as usize;
            let text = jsonish(&mut next, br#"0123456789"\,]}[ .a-"#, len);
            for start in 0..text.len() {
                assert_eq!(
                    element_end(&text, start),
                    value_end(&text, start),
                    "{:?} at {start}",
                    String::from_utf8_lossy(&text)
                );
            }
        }
    }

    /// Shapes and lists of shapes read in one pass agree with the scanner wherever the one
    /// pass answers, and it answers the lists profilers write.
    #[test]
    fn plain_shapes_read_as_the_scanner_reads_them() {
        let scanned_list = |raw: &[u8]| {
            let mut shapes = Vec::new();
            array(raw, 0, |v| shapes.push(scanned_shape(v))).ok().map(|end| (shapes, end))
        };
        let plain_list = |raw: &[u8]| {
            let mut shapes = Vec::new();
            plain_shapes(raw, |s| shapes.push(s)).map(|end| (shapes, end))
        };
        let mut next = xorshift();
        let mut answered = 0;
        for round in 0..50_000 {
            // Half the texts are lists of arrays of numbers with noise, half anything.
            let text = if round % 2 == 0 {
                let shapes: Vec<String> = (0..next() % 5)
                    .map(|_| {
                        let dims: Vec<String> = (0..next() % 6).map(|_| (next() % 100_000).to_string()).collect();
                        format!("[{}]", dims.join(if next().is_multiple_of(2) { ", " } else { "," }))
                    })
                    .collect();
                let mut text = format!("[{}]", shapes.join(", ")).into_bytes();
                let at = next() as usize % text.len().max(1);
                if next().is_multiple_of(3)
                    && let Some(b) = text.get_mut(at)
                {
                    *b = b"0 ,[]\"-.9\t"[next() as usize % 10];
                }
                text
            } else {
                let len = (next() % 24) as usize;
                jsonish(&mut next, b"[[[]]],,,0123456789 \"-.\te", len)
            };
            if let Some(plain) = plain_list(&text) {
                answered += 1;
                assert_eq!(Some(plain), scanned_list(&text), "{}", String::from_utf8_lossy(&text));
            }
            assert_eq!(shape(&text), scanned_shape(&text), "{}", String::from_utf8_lossy(&text));
        }
        assert!(answered > 15_000, "{answered}");
        let profiler = b"[[32768, 32, 128], [32768, 32, 128], [23], [], [8, 1, 4096, 16, 128]]";
        let (shapes, end) = plain_list(profiler).expect("read in one pass");
        assert_eq!(end, profiler.len());
        assert_eq!(
            shapes,
            [
                Some(([32768, 32, 128, 0], 3)),
                Some(([32768, 32, 128, 0], 3)),
                Some(([23, 0, 0, 0], 1)),
                Some(([0; 4], 0)),
                None
            ]
        );
        assert_eq!(plain_list(b"[[12345678901234567890]]"), None, "twenty digits: left to the scanner");
    }

    #[test]
    fn arrays_and_integer_lists() {
        let mut elements = Vec::new();
        let text = br#"[[1, 2], "a]", {"b": [3]}, 4 ] tail"#;
        let end = array(text, 0, |v| elements.push(String::from_utf8_lossy(v).into_owned()));
        assert_eq!(end, Ok(text.len() - 5));
        assert_eq!(elements, ["[1, 2]", "\"a]\"", r#"{"b": [3]}"#, "4"]);
        assert_eq!(array(b"[]", 0, |_| {}), Ok(2));
        assert_eq!(array(b"[1, 2", 0, |_| {}), Err(ScanError::Eof));
        assert!(matches!(array(b"[1 2]", 0, |_| {}), Err(ScanError::Invalid(_))));
        assert_eq!(naturals(b"[512, 77,3 ]"), Some(vec![512, 77, 3]));
        assert_eq!(naturals(b"[]"), Some(vec![]));
        for not_lengths in [&b"[1, -2]"[..], b"[4294967296]", b"[1.0]", b"[\"1\"]", b"[[1]]", b"7", b"[1"] {
            assert_eq!(naturals(not_lengths), None, "{}", String::from_utf8_lossy(not_lengths));
        }
        assert_eq!(shape(b"[8, 4096, 16, 128]"), Some(([8, 4096, 16, 128], 4)));
        assert_eq!(shape(b"[23]"), Some(([23, 0, 0, 0], 1)));
        assert_eq!(shape(b"[ ]"), Some(([0; 4], 0)));
        for not_a_shape in [&b"[1, [2]]"[..], b"[1.5]", b"[-1]", b"[\"1\"]", b"[1] x", b"7", b"[1, 2, 3, 4, 5]"] {
            assert_eq!(shape(not_a_shape), None, "{}", String::from_utf8_lossy(not_a_shape));
        }
    }
}
