//! The benchmark's Markdown table: medians with min–max, from DIR/native.json (this crate's
//! `run`) and DIR/browser.json (`scripts/bench-browser.mjs`, optional).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::measure::{Measured, Results, Sample};

const MB: f64 = 1e6;

/// Median, min and max of `values` (NaN-free); `None` when empty.
fn spread(mut values: Vec<f64>) -> Option<(f64, f64, f64)> {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = match n {
        0 => return None,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    };
    Some((median, values[0], values[n - 1]))
}

/// "median (min–max)" with `digits` decimals, or the median alone for one run.
fn show(values: Vec<f64>, digits: usize) -> String {
    match spread(values) {
        None => "—".into(),
        Some((m, lo, hi)) if lo == hi => format!("{m:.digits$}"),
        Some((m, lo, hi)) => format!("{m:.digits$} ({lo:.digits$}–{hi:.digits$})"),
    }
}

fn of(m: &Measured, f: impl Fn(&Sample) -> f64) -> Vec<f64> {
    m.runs.iter().map(f).collect()
}

fn megabytes_per_second(s: &Sample) -> f64 {
    s.bytes as f64 / MB / s.seconds
}

fn median(m: &Measured, f: impl Fn(&Sample) -> f64) -> Option<f64> {
    spread(of(m, f)).map(|(median, _, _)| median)
}

fn native(r: &Results, out: &mut String) {
    let _ = writeln!(out, "Machine: {}.\n", r.machine);
    let _ = writeln!(out, "### Reading traces (native, one core) against Holistic Trace Analysis\n");
    let _ = writeln!(
        out,
        "| input | size | seqskew MB/s | seqskew peak RSS MiB | HTA MB/s | HTA peak RSS MiB | speed-up | memory |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for m in &r.ingest {
        let hta = r.hta.iter().find(|h| h.what == m.what && h.size == m.size);
        let (hta_speed, hta_rss, ratio, memory) = match hta {
            Some(h) => {
                let ratio = median(m, megabytes_per_second).zip(median(h, megabytes_per_second)).map(|(s, h)| s / h);
                let memory = median(h, |s| s.peak_rss_mib).zip(median(m, |s| s.peak_rss_mib)).map(|(h, s)| s / h);
                (
                    show(of(h, megabytes_per_second), 1),
                    show(of(h, |s| s.peak_rss_mib), 0),
                    ratio.map_or("—".into(), |r| format!("**{r:.0}×**")),
                    memory.map_or("—".into(), |m| format!("1/{:.0}", 1.0 / m)),
                )
            }
            None => ("n/a".into(), "n/a".into(), "—".into(), "—".into()),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {hta_speed} | {hta_rss} | {ratio} | {memory} |",
            m.what,
            m.size,
            show(of(m, megabytes_per_second), 0),
            show(of(m, |s| s.peak_rss_mib), 0),
        );
    }
    let _ = writeln!(out, "\n### Diagnosis time against job size (native, one core)\n");
    let _ = writeln!(out, "| job | seconds | µs per worker-step | peak RSS MiB |");
    let _ = writeln!(out, "|---|---|---|---|");
    for m in &r.analyze {
        let per = |s: &Sample| s.seconds * 1e6 / (s.workers.max(1) * s.steps.max(1)) as f64;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            m.size,
            show(of(m, |s| s.seconds), 2),
            show(of(m, per), 2),
            show(of(m, |s| s.peak_rss_mib), 0)
        );
    }
}

fn numbers(v: Option<&Value>) -> Vec<f64> {
    v.and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default()
}

fn browser(b: &Value, out: &mut String) {
    let chromium = b.get("chromium").and_then(Value::as_str).unwrap_or("Chromium");
    let _ = writeln!(out, "\n### In the browser (headless {chromium}, the release build)\n");
    let _ = writeln!(out, "| measure | median (min–max) | goal |");
    let _ = writeln!(out, "|---|---|---|");
    for input in b.get("ingest").and_then(Value::as_array).into_iter().flatten() {
        let label = input.get("label").and_then(Value::as_str).unwrap_or("input");
        let bytes = input.get("bytes").and_then(Value::as_f64).unwrap_or(0.0);
        let runs = numbers(input.get("runs_ms"));
        let rates = runs.iter().map(|ms| bytes / MB / (ms / 1e3)).collect();
        let _ = writeln!(out, "| drop to verdict, {label}: MB/s | {} | |", show(rates, 0));
        let _ = writeln!(
            out,
            "| drop to verdict, {label}: seconds | {} | |",
            show(runs.iter().map(|ms| ms / 1e3).collect(), 2)
        );
    }
    if let Some(big) = b.get("big") {
        let label = big.get("label").and_then(Value::as_str).unwrap_or("1 GB");
        let seconds = big.get("seconds").and_then(Value::as_f64);
        let text = match (seconds, big.get("error").and_then(Value::as_str)) {
            (Some(s), _) => format!("{s:.1} s"),
            (None, Some(e)) => format!("failed: {e}"),
            (None, None) => "—".into(),
        };
        let _ = writeln!(out, "| drop to verdict, {label} | {text} | |");
        if let Some(peak) = big.get("peak_memory_mib").and_then(Value::as_f64) {
            let _ = writeln!(out, "| peak memory (JS heap + wasm), {label} | {peak:.0} MiB | ≤ 300 MB |");
        }
    }
    if let Some(huge) = b.get("huge") {
        let outcome = huge.get("outcome").and_then(Value::as_str).unwrap_or("—");
        let _ = writeln!(out, "| a 4 GB input | {outcome} | loads or is refused; the tab lives |");
    }
    if let Some(frame) = b.get("timeline_frame_ms") {
        let median = frame.get("median").and_then(Value::as_f64);
        let p95 = frame.get("p95").and_then(Value::as_f64);
        if let (Some(m), Some(p)) = (median, p95) {
            let _ = writeln!(out, "| timeline frame, 4096 workers × 1000 steps | {m:.1} ms (p95 {p:.1}) | ≤ 16 ms |");
        }
    }
    let _ = writeln!(out, "| first paint after load | {} ms | |", show(numbers(b.get("first_paint_ms")), 0));
    if let Some(bundle) = b.get("bundle") {
        let kib =
            |k: &str| bundle.get(k).and_then(Value::as_f64).map_or("—".into(), |v| format!("{:.0} KiB", v / 1024.0));
        let _ = writeln!(
            out,
            "| bundle: wasm {} + JS {} raw; gzip total | {} | ≤ 600 KB gzip |",
            kib("wasm_bytes"),
            kib("js_bytes"),
            kib("total_gzip")
        );
    }
    for note in b.get("notes").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        let _ = writeln!(out, "\n- {note}");
    }
}

/// Writes DIR/bench.md from the runs' JSON and prints it.
pub fn write(dir: &Path) -> Result<(), String> {
    let read =
        |name: &str| std::fs::read_to_string(dir.join(name)).map_err(|e| format!("{}: {e}", dir.join(name).display()));
    let results: Results = serde_json::from_str(&read("native.json")?).map_err(|e| format!("native.json: {e}"))?;
    let mut out = String::new();
    native(&results, &mut out);
    if let Ok(text) = read("browser.json") {
        let b: Value = serde_json::from_str(&text).map_err(|e| format!("browser.json: {e}"))?;
        browser(&b, &mut out);
    }
    std::fs::write(dir.join("bench.md"), &out).map_err(|e| e.to_string())?;
    print!("{out}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads() {
        assert_eq!(spread(vec![]), None);
        assert_eq!(spread(vec![3.0, 1.0, 2.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(spread(vec![4.0, 1.0, 2.0, f64::NAN]), Some((2.0, 1.0, 4.0)));
        assert_eq!(spread(vec![1.0, 3.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(show(vec![2.0, 2.0], 1), "2.0");
        assert_eq!(show(vec![1.0, 2.0, 4.0], 0), "2 (1–4)");
    }
}
