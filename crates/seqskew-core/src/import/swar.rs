//! Byte searches eight bytes at a time in a plain `u64` ("SIMD within a register"): the JSON
//! scanner's short hops (a key's closing quote, a number's end, a run of indentation) are too
//! short for `memchr` to pay off and too many for a byte loop to be cheap. Safe, portable
//! (the same in wasm), exact: every mask marks precisely the bytes asked for.

const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of every byte: a mask marking all eight.
pub const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The eight bytes at `pos` as one little-endian word (byte `pos` lowest); `None` when fewer
/// than eight remain.
pub fn word(bytes: &[u8], pos: usize) -> Option<u64> {
    let eight: [u8; 8] = bytes.get(pos..pos.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(eight))
}

/// The high bit of each byte of `w` that equals `b`.
pub fn eq(w: u64, b: u8) -> u64 {
    let x = w ^ splat(b);
    // A byte of x is zero exactly when adding 0x7f to its low seven bits leaves its high bit
    // clear and its own high bit is clear; no carry crosses bytes.
    !(((x & !HIGHS) + !HIGHS) | x) & HIGHS
}

/// The high bit of each byte of `w` below `n` (`n` ≤ 128).
pub fn below(w: u64, n: u8) -> u64 {
    debug_assert!(n <= 128);
    !(((w & !HIGHS) + ONES * u64::from(128 - n)) | w) & HIGHS
}

/// The high bit of each byte of `w` that is a quote or a control character (below 0x20): one
/// comparison, not two. Flipping bit 1 turns the quote (0x22) into 0x20 and keeps every
/// control character below it, while no other byte goes below 0x21 (the space becomes 0x22,
/// `!` 0x23, `#` 0x21).
pub fn quote_or_control(w: u64) -> u64 {
    below(w ^ splat(0x02), 0x21)
}

/// `b` in every byte of a word.
pub fn splat(b: u8) -> u64 {
    ONES * u64::from(b)
}

/// The high bit of each byte a mask does not mark.
pub fn unmarked(mask: u64) -> u64 {
    !mask & HIGHS
}

/// How many bytes a mask marks (a multiply: `count_ones` is no instruction on baseline x86-64).
pub fn count(mask: u64) -> u32 {
    ((mask >> 7).wrapping_mul(ONES) >> 56) as u32
}

/// Marks every byte before the first one a mask marks (all of them when it marks none).
pub fn before_first(mask: u64) -> u64 {
    if mask == 0 { HIGHS } else { ((mask & mask.wrapping_neg()) - 1) & HIGHS }
}

/// Marks each byte at or after which a mask has marked an odd number of bytes: with quotes
/// marked, the bytes inside strings (opening quote included, closing quote not).
pub fn prefix_parity(mask: u64) -> u64 {
    let mut parity = mask;
    parity ^= parity << 8;
    parity ^= parity << 16;
    parity ^= parity << 32;
    parity
}

/// The index (0–7) of the first byte marked in a non-zero mask.
pub fn first(mask: u64) -> usize {
    (mask.trailing_zeros() / 8) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every mask against the byte-at-a-time definition, on every byte value in every lane.
    #[test]
    fn masks_are_exact() {
        for lane in 0..8 {
            for v in 0..=255u8 {
                let mut eight = [b'a'; 8];
                eight[lane] = v;
                // A neighbour that could carry into the lane if the trick were wrong.
                eight[(lane + 1) % 8] = 0xff;
                let w = u64::from_le_bytes(eight);
                let marked = |mask: u64| (0..8).filter(|i| mask & (0x80 << (8 * i)) != 0).collect::<Vec<_>>();
                let expect = |f: &dyn Fn(u8) -> bool| (0..8).filter(|&i| f(eight[i])).collect::<Vec<_>>();
                for b in [b'"', b'\\', b' ', 0, 0xff, b'a'] {
                    assert_eq!(marked(eq(w, b)), expect(&|x| x == b), "eq {v:#x} in lane {lane} vs {b:#x}");
                }
                for n in [0, 1, 0x20, 0x21, 0x7f, 128] {
                    assert_eq!(marked(below(w, n)), expect(&|x| x < n), "below {v:#x} in lane {lane} vs {n:#x}");
                }
                assert_eq!(
                    marked(quote_or_control(w)),
                    expect(&|x| x == b'"' || x < 0x20),
                    "quote or control {v:#x} in lane {lane}"
                );
            }
        }
        assert_eq!(first(eq(u64::from_le_bytes(*b"abc\"def\""), b'"')), 3);
        let quotes = eq(u64::from_le_bytes(*br#"a"b"c"dd"#), b'"');
        assert_eq!(count(quotes), 3);
        assert_eq!(count(HIGHS), 8);
        assert_eq!(count(0), 0);
        // Inside the strings: from the first quote to before the second, from the third on.
        assert_eq!(prefix_parity(quotes), (0x80 << 8) | (0x80 << 16) | (0x80 << 40) | (0x80 << 48) | (0x80 << 56));
        assert_eq!(before_first(quotes), 0x80);
        assert_eq!(before_first(0x80), 0);
        assert_eq!(before_first(0), HIGHS);
        assert_eq!(word(b"1234567", 0), None);
        assert_eq!(word(b"12345678", 0), Some(u64::from_le_bytes(*b"12345678")));
        assert_eq!(word(b"12345678", usize::MAX), None);
    }
}
