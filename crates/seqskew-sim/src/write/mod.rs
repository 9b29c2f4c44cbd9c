//! Writing simulated jobs in the formats real jobs produce. Each writer takes steps one at a
//! time and any `std::io::Write` the caller provides (files, gzip streams, memory).

pub mod chrome;
pub mod kineto;

use seqskew_core::model::Nanos;

/// Nanoseconds as microseconds with three decimals, exactly: `1234.567`.
pub fn micros(ns: Nanos) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:03}", a / 1000, a % 1000)
}

/// `[1,2,3]`
pub fn json_list(values: &[u32]) -> String {
    let items: Vec<String> = values.iter().map(u32::to_string).collect();
    format!("[{}]", items.join(","))
}

#[cfg(test)]
mod tests {
    #[test]
    fn micros_are_exact() {
        assert_eq!(super::micros(1_234_567), "1234.567");
        assert_eq!(super::micros(5), "0.005");
        assert_eq!(super::json_list(&[3, 10]), "[3,10]");
    }
}
