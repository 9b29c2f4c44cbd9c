//! Numbers read as text, so that epoch microseconds with fractions become exact integer
//! nanoseconds (a double cannot hold them all) and out-of-range values are caught.

use crate::model::Nanos;

/// Why a number could not be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumberProblem {
    NotANumber,
    OutOfRange,
    Negative,
}

impl NumberProblem {
    pub fn describe(self) -> &'static str {
        match self {
            NumberProblem::NotANumber => "is not a number",
            NumberProblem::OutOfRange => "is beyond the range of 64-bit nanoseconds",
            NumberProblem::Negative => "is negative",
        }
    }
}

/// The number in `raw`, without the quotes and blanks around it (if any: usually none, and
/// then this costs two comparisons).
fn unquoted(raw: &[u8]) -> &[u8] {
    let plain = |b: Option<&u8>| b.is_some_and(u8::is_ascii_alphanumeric);
    if plain(raw.first()) && plain(raw.last()) {
        return raw;
    }
    let text = raw.trim_ascii();
    let leading = text.iter().take_while(|&&b| b == b'"').count();
    let text = text.get(leading..).unwrap_or_default();
    let trailing = text.iter().rev().take_while(|&&b| b == b'"').count();
    text.get(..text.len() - trailing).unwrap_or_default().trim_ascii()
}

/// Nanoseconds per microsecond, the unit of Chrome-trace `ts` and `dur`.
pub const MICROS: i64 = 1000;

/// JSON number text (or a quoted number) in `unit_ns` units to integer nanoseconds, rounding
/// to the nearest nanosecond. Accepts `123`, `-4.5`, `"7.25"`, `1.5e3`. Read as bytes: a
/// trace's times need no UTF-8 check.
pub fn to_nanos(raw: impl AsRef<[u8]>, unit_ns: i64) -> Result<Nanos, NumberProblem> {
    let raw = raw.as_ref();
    plain_decimal(raw, unit_ns).map_or_else(|| any_number_to_nanos(raw, unit_ns), Ok)
}

/// [`to_nanos`] of any number it accepts, the usual ones too (slower).
fn any_number_to_nanos(raw: &[u8], unit_ns: i64) -> Result<Nanos, NumberProblem> {
    let text = unquoted(raw);
    let (negative, digits) = match text.strip_prefix(b"-") {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if digits.iter().any(|&b| b == b'e' || b == b'E') {
        return float_to_nanos(text, unit_ns);
    }
    let (int_part, frac_part) = match digits.iter().position(|&b| b == b'.') {
        Some(dot) => (digits.get(..dot).unwrap_or_default(), digits.get(dot + 1..).unwrap_or_default()),
        None => (digits, &b""[..]),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(NumberProblem::NotANumber);
    }
    if !int_part.iter().all(u8::is_ascii_digit) || !frac_part.iter().all(u8::is_ascii_digit) {
        return Err(NumberProblem::NotANumber);
    }
    let mut whole: i64 = 0;
    for &b in int_part {
        whole =
            whole.checked_mul(10).and_then(|w| w.checked_add(i64::from(b - b'0'))).ok_or(NumberProblem::OutOfRange)?;
    }
    let mut value = i128::from(whole) * i128::from(unit_ns);
    // Fraction digits beyond 18 cannot change the rounded nanosecond.
    let frac_part = frac_part.get(..18).unwrap_or(frac_part);
    let fraction = frac_part.iter().fold(0i64, |f, &b| f * 10 + i64::from(b - b'0'));
    let denominator = i128::from(10i64.pow(frac_part.len() as u32));
    value += (i128::from(fraction) * i128::from(unit_ns) * 2 + denominator) / (2 * denominator);
    let value = if negative { -value } else { value };
    i64::try_from(value).map_err(|_| NumberProblem::OutOfRange)
}

/// What [`to_nanos`] makes of the usual number (`1700000000123.456`: digits, then up to nine
/// decimals, in a unit of at most a second), in one pass and 64 bits; `None` for anything else,
/// which the general path reads.
fn plain_decimal(raw: &[u8], unit_ns: i64) -> Option<Nanos> {
    plain_decimal_prefix(raw, unit_ns).filter(|&(_, used)| used == raw.len()).map(|(ns, _)| ns)
}

/// [`plain_decimal`] of the number `raw` starts with (digits, then a point and digits or not),
/// and how many bytes it takes: a scanner reads a time in the pass that finds its end. `None`
/// when that number is not one [`plain_decimal`] reads.
pub fn plain_decimal_prefix(raw: &[u8], unit_ns: i64) -> Option<(Nanos, usize)> {
    let unit = u64::try_from(unit_ns).ok().filter(|&u| u <= 1_000_000_000)?;
    // The integer digits, up to the point, in the same pass that finds it: not read by
    // [`leading_digits`], since a time's digits are the most the import reads, and this loop
    // checks no count per digit (it wraps past 19 digits, which go to the general path).
    let mut whole = 0u64;
    let mut int_digits = 0;
    for &b in raw {
        let digit = b.wrapping_sub(b'0');
        if digit >= 10 {
            break;
        }
        // Wraps only past 19 digits, which are then sent to the general path.
        whole = whole.wrapping_mul(10).wrapping_add(u64::from(digit));
        int_digits += 1;
    }
    if int_digits == 0 || int_digits > 19 {
        return None;
    }
    // The decimals, in billionths: 10⁹ is then the one denominator, and dividing by a constant
    // is a multiplication (a division by a variable cost as much as reading the digits).
    let (decimals, frac_digits, used) = if raw.get(int_digits) == Some(&b'.') {
        let (decimals, end) = leading_digits(raw, int_digits + 1, 9);
        // A tenth decimal is left to the general path.
        if raw.get(end).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        (decimals, end - int_digits - 1, end)
    } else {
        (0, 0, int_digits)
    };
    let fraction = decimals * TO_BILLIONTHS.get(frac_digits)?;
    // fraction < 10⁹ and unit ≤ 10⁹: no overflow; rounded to the nearest nanosecond.
    let ns = whole.checked_mul(unit)?.checked_add((fraction * unit * 2 + BILLION) / (2 * BILLION))?;
    Some((i64::try_from(ns).ok()?, used))
}

/// The number the digits at `bytes[start..]` spell, reading at most `max` of them (at most 19,
/// which always fit in 64 bits), and where the reading stopped: callers look at the byte there
/// (a digit means there were more than `max`).
pub fn leading_digits(bytes: &[u8], start: usize, max: usize) -> (u64, usize) {
    debug_assert!(max <= 19);
    // The bytes that may be read, as one slice: the loop then checks neither the count nor
    // the bounds per digit (ids, times and lengths are read by the million).
    let rest = bytes.get(start..).unwrap_or_default();
    let window = rest.get(..max).unwrap_or(rest);
    let mut value = 0u64;
    let mut read = 0;
    for &b in window {
        let digit = b.wrapping_sub(b'0');
        if digit >= 10 {
            break;
        }
        value = value * 10 + u64::from(digit);
        read += 1;
    }
    (value, start + read)
}

const BILLION: u64 = 1_000_000_000;

/// What a fraction of `i` decimals is multiplied by to count billionths (up to nine decimals).
const TO_BILLIONTHS: [u64; 10] = [BILLION, 100_000_000, 10_000_000, 1_000_000, 100_000, 10_000, 1_000, 100, 10, 1];

fn float_to_nanos(text: &[u8], unit_ns: i64) -> Result<Nanos, NumberProblem> {
    let v: f64 = std::str::from_utf8(text).ok().and_then(|t| t.parse().ok()).ok_or(NumberProblem::NotANumber)?;
    let ns = v * unit_ns as f64;
    if !ns.is_finite() || ns.abs() >= 9.2e18 {
        return Err(NumberProblem::OutOfRange);
    }
    Ok(ns.round() as i64)
}

/// A duration: like [`to_nanos`], but negative values are a problem.
pub fn to_duration(raw: impl AsRef<[u8]>, unit_ns: i64) -> Result<Nanos, NumberProblem> {
    let ns = to_nanos(raw, unit_ns)?;
    if ns < 0 { Err(NumberProblem::Negative) } else { Ok(ns) }
}

/// A non-negative integer (step numbers, ranks, ids), also when quoted or written `7.0`.
pub fn to_u64(raw: impl AsRef<[u8]>) -> Option<u64> {
    let text = unquoted(raw.as_ref());
    let whole = text.strip_suffix(b".0").unwrap_or(text);
    // A leading '+' is allowed, as `str::parse` allowed it when this read text.
    digits(whole.strip_prefix(b"+").unwrap_or(whole))
}

/// Plain decimal digits (at least one, nothing else) as a number; `None` beyond `u64`.
pub fn digits(raw: &[u8]) -> Option<u64> {
    if raw.is_empty() {
        return None;
    }
    // Up to 19 digits cannot overflow 64 bits: no check per digit (numbers are read by the
    // million).
    if raw.len() <= 19 {
        return raw.iter().try_fold(0u64, |n, &b| {
            let digit = b.wrapping_sub(b'0');
            (digit < 10).then(|| n * 10 + u64::from(digit))
        });
    }
    raw.iter().try_fold(0u64, |n, &b| {
        let digit = b.is_ascii_digit().then(|| u64::from(b - b'0'))?;
        n.checked_mul(10)?.checked_add(digit)
    })
}

/// A list of non-negative integers that each fit a `u32`: `[12, 40]`, `12 40`, `12;40`,
/// optionally quoted (a step log's lengths; a collective's ranks, `"[0, 8, 16]"`); `None` when
/// anything else is in it. Hand-rolled because the lengths are most of a step log's bytes.
pub fn list_of_u32(value: &str) -> Option<Vec<u32>> {
    let list = value.trim_matches('"').trim();
    let list = list.strip_prefix('[').and_then(|l| l.strip_suffix(']')).unwrap_or(list);
    let mut lengths = Vec::with_capacity(list.len() / 4);
    let mut current: Option<u32> = None;
    for b in list.bytes() {
        match b {
            b'0'..=b'9' => {
                let digit = u32::from(b - b'0');
                current = Some(current.unwrap_or(0).checked_mul(10)?.checked_add(digit)?);
            }
            b',' | b' ' | b';' | b'\t' => lengths.extend(current.take()),
            _ => return None,
        }
    }
    lengths.extend(current);
    Some(lengths)
}

/// Seconds as floating-point text, the way Python's `time.perf_counter()` deltas are logged.
pub fn seconds_to_nanos(raw: &str) -> Result<Nanos, NumberProblem> {
    to_nanos(raw, 1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::test_rng::xorshift;

    #[test]
    fn microseconds_become_exact_nanoseconds() {
        for (text, ns) in [
            ("0", 0),
            ("1", 1000),
            ("1.5", 1500),
            ("\"7.25\"", 7250),
            ("-4.5", -4500),
            ("5165937268476.246", 5_165_937_268_476_246),
            // beyond a double's exact range; the text keeps every digit
            ("1700000000123456.789", 1_700_000_000_123_456_789),
            ("0.0004", 0),
            ("0.0005", 1),
            ("1.5e3", 1_500_000),
            (".5", 500),
        ] {
            assert_eq!(to_nanos(text, 1000), Ok(ns), "{text}");
        }
    }

    /// The fast path agrees with the general one wherever it answers, and answers the usual.
    #[test]
    fn the_fast_path_agrees_with_the_general_one() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut answered = 0;
        for _ in 0..100_000 {
            let len = (next() % 24) as usize;
            let text: Vec<u8> = (0..len).map(|_| b"0123456789999.-e"[(next() % 16) as usize]).collect();
            for unit in [1, 1000, 1_000_000, 1_000_000_000, 1_000_000_001] {
                if let Some(fast) = plain_decimal(&text, unit) {
                    answered += 1;
                    assert_eq!(Ok(fast), any_number_to_nanos(&text, unit), "{}", String::from_utf8_lossy(&text));
                }
            }
        }
        assert!(answered > 50_000, "{answered}");
        assert_eq!(plain_decimal(b"1700000000123.456", 1000), Some(1_700_000_000_123_456));
        assert_eq!(plain_decimal(b"9223372036854775.808", 1000), None, "beyond i64");
    }

    /// Leading digits are the digits one by one, at every length, limit and start.
    #[test]
    fn leading_digits_stop_at_the_limit_or_the_first_other_byte() {
        let by_bytes = |bytes: &[u8], start: usize, max: usize| {
            let run = bytes.iter().skip(start).take(max).take_while(|b| b.is_ascii_digit()).count();
            let value = bytes.iter().skip(start).take(run).fold(0u64, |v, &b| v * 10 + u64::from(b - b'0'));
            (value, start + run)
        };
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..100_000 {
            let seed = next();
            let len = (seed % 30) as usize;
            let text: Vec<u8> =
                (0..len).map(|i| b"0123456789999999/:.,]x"[((seed >> (i % 60)) as usize + i) % 22]).collect();
            // Starts past the end too.
            let start = (seed >> 40) as usize % (len + 2);
            let max = (seed >> 50) as usize % 20;
            assert_eq!(leading_digits(&text, start, max), by_bytes(&text, start, max), "{text:?} {start} {max}");
        }
    }

    #[test]
    fn rejects_what_it_cannot_hold() {
        assert_eq!(to_nanos("99999999999999999999", 1000), Err(NumberProblem::OutOfRange));
        assert_eq!(to_nanos("9223372036854776", 1000), Err(NumberProblem::OutOfRange));
        assert_eq!(to_nanos("NaN", 1000), Err(NumberProblem::NotANumber));
        assert_eq!(to_nanos("1e400", 1000), Err(NumberProblem::OutOfRange));
        assert_eq!(to_nanos("-", 1000), Err(NumberProblem::NotANumber));
        assert_eq!(to_nanos("1.2.3", 1000), Err(NumberProblem::NotANumber));
        assert_eq!(to_duration("-3", 1000), Err(NumberProblem::Negative));
    }

    #[test]
    fn lists_of_integers() {
        for (text, want) in [
            ("[]", Some(vec![])),
            ("\"12;40 7\"", Some(vec![12, 40, 7])),
            (" [ 1,2 , 3 ] ", Some(vec![1, 2, 3])),
            ("[4294967295]", Some(vec![u32::MAX])),
            ("[4294967296]", None),
            ("[1, -2]", None),
            ("[1.5]", None),
            ("[[1]]", None),
        ] {
            assert_eq!(list_of_u32(text), want, "{text}");
        }
    }

    #[test]
    fn integers_and_seconds() {
        assert_eq!(to_u64("\"12\""), Some(12));
        assert_eq!(to_u64("3.0"), Some(3));
        assert_eq!(to_u64("-1"), None);
        assert_eq!(to_u64(" \"18446744073709551615\" "), Some(u64::MAX));
        assert_eq!(to_u64("18446744073709551616"), None);
        assert_eq!(to_u64(""), None);
        assert_eq!(to_u64("1x"), None);
        assert_eq!(to_u64("+7"), Some(7));
        assert_eq!(to_u64("+"), None);
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..100_000 {
            let seed = next();
            let len = (seed % 23) as usize;
            let text: String = (0..len).map(|i| b"01234567899x"[((seed >> (2 * i)) % 12) as usize] as char).collect();
            assert_eq!(digits(text.as_bytes()), text.parse::<u64>().ok(), "{text}");
        }
        // Either side of the 19 digits read without overflow checks.
        assert_eq!(digits(b"9999999999999999999"), Some(9_999_999_999_999_999_999));
        assert_eq!(digits(b"99999999999999999999"), None);
        assert_eq!(digits(b"00000000000000000000012"), Some(12));
        assert_eq!(digits(b"12345678901234567/9"), None);
        assert_eq!(seconds_to_nanos("0.532"), Ok(532_000_000));
    }
}
