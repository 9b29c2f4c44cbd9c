//! Small text helpers shared by messages, the CLI and the app.

/// "3-5, 9" from sorted, distinct values [3, 4, 5, 9].
pub fn compact_ranges(values: &[u64]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while let Some(&first) = values.get(i) {
        let mut last = first;
        while last.checked_add(1).is_some_and(|n| values.get(i + 1) == Some(&n)) {
            last += 1;
            i += 1;
        }
        parts.push(if first == last { first.to_string() } else { format!("{first}-{last}") });
        i += 1;
    }
    parts.join(", ")
}

/// Items in words: "a", "a and b", "a, b and c".
pub fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [only] => only.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// A count and its noun, plural unless one: "1 worker", "16 workers" (nouns that take an "s").
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// Seconds with a unit that suits their size: "812 µs", "41.2 ms", "1.37 s".
pub fn seconds(ns: i64) -> String {
    let s = ns as f64 / 1e9;
    let a = s.abs();
    if a >= 1.0 {
        format!("{s:.2} s")
    } else if a >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_times_read_well() {
        assert_eq!(compact_ranges(&[3, 4, 5, 9, 11, 12]), "3-5, 9, 11-12");
        assert_eq!(compact_ranges(&[u64::MAX - 1, u64::MAX]), format!("{}-{}", u64::MAX - 1, u64::MAX));
        assert_eq!(compact_ranges(&[]), "");
        assert_eq!(seconds(1_370_000_000), "1.37 s");
        assert_eq!(seconds(41_200_000), "41.2 ms");
        assert_eq!(seconds(812_000), "812 µs");
        assert_eq!([0, 1, 2].map(|n| count(n, "worker")), ["0 workers", "1 worker", "2 workers"]);
        let words = |items: &[&str]| list(&items.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            [words(&[]), words(&["a"]), words(&["a", "b"]), words(&["a", "b", "c"])],
            ["", "a", "a and b", "a, b and c"]
        );
    }
}
