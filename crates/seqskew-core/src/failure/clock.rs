//! One clock for every rank's evidence: log lines carry times in several forms, some without a
//! year (glog's `E0709 17:05:38.162`), and dumps carry Unix nanoseconds. All become nanoseconds
//! since the start of their year, which orders the events of one job (jobs rarely fail across a
//! New Year) without guessing a year nobody wrote.

const NS_PER_S: i64 = 1_000_000_000;
const NS_PER_DAY: i64 = 86_400 * NS_PER_S;

/// Days before each month in a non-leap year.
const DAYS_BEFORE_MONTH: [i64; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// Nanoseconds since January 1st, 00:00 of `year` (leap day counted when the year is known).
fn in_year(year: Option<i64>, month: u32, day: u32, seconds_of_day: i64, fraction_ns: i64) -> Option<i64> {
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let before = *DAYS_BEFORE_MONTH.get(month as usize - 1)?;
    let leap = i64::from(month > 2 && year.is_some_and(is_leap));
    let days = before + leap + i64::from(day) - 1;
    Some(days * NS_PER_DAY + seconds_of_day * NS_PER_S + fraction_ns)
}

/// Unix-epoch nanoseconds (Flight Recorder's `time_created_ns`) on the same clock.
pub fn from_unix_ns(ns: i64) -> i64 {
    let days = ns.div_euclid(NS_PER_DAY);
    let within_day = ns.rem_euclid(NS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    in_year(Some(year), month, day, 0, 0).map_or(ns, |start| start + within_day)
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Digits at the start of `s`, as a number, and the rest.
fn number(s: &[u8], min: usize, max: usize) -> Option<(i64, &[u8])> {
    let n = s.iter().take(max).take_while(|b| b.is_ascii_digit()).count();
    if n < min {
        return None;
    }
    let (digits, rest) = s.split_at_checked(n)?;
    let value = digits.iter().fold(0i64, |v, d| v * 10 + i64::from(d - b'0'));
    Some((value, rest))
}

fn byte<'a>(s: &'a [u8], expected: &[u8]) -> Option<&'a [u8]> {
    let (&first, rest) = s.split_first()?;
    expected.contains(&first).then_some(rest)
}

/// `HH:MM:SS` with an optional `.fraction` or `,millis`: seconds of the day and the fraction.
fn time_of_day(s: &[u8]) -> Option<(i64, i64)> {
    let (h, s) = number(s, 2, 2)?;
    let (m, s) = number(byte(s, b":")?, 2, 2)?;
    let (sec, s) = number(byte(s, b":")?, 2, 2)?;
    if h > 23 || m > 59 || sec > 60 {
        return None;
    }
    let fraction = match byte(s, b".,") {
        Some(rest) => {
            let digits = rest.iter().take(9).take_while(|b| b.is_ascii_digit()).count();
            let (value, _) = number(rest, 1, 9)?;
            value * 10i64.pow(9 - digits as u32)
        }
        None => 0,
    };
    Some((h * 3600 + m * 60 + sec, fraction))
}

/// A date and time written at `s`: ISO-like `2024-07-09 17:05:38,162` (also `T` or `_` between
/// date and time, as torchrun writes) or glog's `E0709 17:05:38.162555` / `[E709 17:05:38…`.
pub fn parse_at(s: &[u8]) -> Option<i64> {
    if let Some((year, rest)) = number(s, 4, 4) {
        let (month, rest) = number(byte(rest, b"-")?, 2, 2)?;
        let (day, rest) = number(byte(rest, b"-")?, 2, 2)?;
        let (seconds, fraction) = time_of_day(byte(rest, b" T_")?)?;
        return in_year(Some(year), month as u32, day as u32, seconds, fraction);
    }
    // glog: a severity letter, then month and day run together (the month may be one digit).
    let rest = byte(s, b"IWEF")?;
    let (month_day, rest) = number(rest, 3, 4)?;
    let (seconds, fraction) = time_of_day(byte(rest, b" ")?)?;
    in_year(None, (month_day / 100) as u32, (month_day % 100) as u32, seconds, fraction)
}

/// The first time written near the start of `line` (within its first 80 bytes, after a `[`).
pub fn find_in_line(line: &[u8]) -> Option<i64> {
    let head = line.get(..line.len().min(80)).unwrap_or(line);
    let starts = head.iter().enumerate().filter(|&(i, b)| {
        let after_boundary = i == 0 || matches!(head.get(i - 1), Some(b'[' | b' ' | b':' | b'\t'));
        after_boundary && (b.is_ascii_digit() || b"IWEF".contains(b))
    });
    starts.filter_map(|(i, _)| head.get(i..)).find_map(parse_at)
}

/// `12-05 17:05:38.162`: a time on this clock as people read it (the year is not known).
pub fn format(ns_in_year: i64) -> String {
    let days = ns_in_year.div_euclid(NS_PER_DAY);
    let within = ns_in_year.rem_euclid(NS_PER_DAY);
    let month = DAYS_BEFORE_MONTH.iter().rposition(|&d| d <= days).unwrap_or(0);
    let day = days - DAYS_BEFORE_MONTH.get(month).copied().unwrap_or(0) + 1;
    let seconds = within / NS_PER_S;
    format!(
        "{:02}-{:02} {:02}:{:02}:{:02}.{:03}",
        month + 1,
        day,
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        within % NS_PER_S / 1_000_000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_form_on_one_clock() {
        let iso = parse_at(b"2024-07-09 17:05:38,162").unwrap();
        let torchrun = parse_at(b"2024-07-09_17:05:38").unwrap();
        let glog = parse_at(b"E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632]").unwrap();
        let glog4 = parse_at(b"W0709 17:05:38.162000 123 x.py:1]").unwrap();
        assert_eq!(iso - torchrun, 162_000_000);
        // A year without a leap day before July: glog's unknown year agrees with 2023, not 2024.
        let in_2023 = parse_at(b"2023-07-09T17:05:38.162555850").unwrap();
        assert_eq!(glog, in_2023);
        assert_eq!(glog4, parse_at(b"2023-07-09 17:05:38.162").unwrap());
        assert_eq!(format(glog4), "07-09 17:05:38.162");
        assert_eq!(from_unix_ns(1_724_779_239_936_775_119), parse_at(b"2024-08-27 17:20:39.936775119").unwrap());
    }

    #[test]
    fn finds_a_time_after_prefixes_and_rejects_non_times() {
        let line = b"[rank0]:[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog";
        assert_eq!(find_in_line(line), parse_at(b"E709 17:05:38.162555850"));
        assert_eq!(find_in_line(b"[2024-07-09 17:05:38,162] torch.distributed"), parse_at(b"2024-07-09 17:05:38,162"));
        for not_a_time in
            [&b"E1399 17:05:38"[..], b"2024-13-01 00:00:00", b"Epoch 12 loss 3", b"", b"2024-07-09 25:00:00"]
        {
            assert_eq!(find_in_line(not_a_time), None, "{}", String::from_utf8_lossy(not_a_time));
        }
    }
}
