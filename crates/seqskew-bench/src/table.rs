//! The benchmark's Markdown table: medians with min–max, from DIR/native.json (this crate's
//! `run`) and DIR/browser.json (`scripts/bench-browser.mjs`, optional).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::results::{Measured, Results, Sample};

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
    let _ = writeln!(out, "\n### Diagnosis time against job size (native, on every core)\n");
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

/// The failed-job rows: the log's scan rate, the dumps' time to a diagnosis.
pub fn failures(r: &Results, out: &mut String) {
    if r.failures.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n### Failed jobs (native, one core)\n");
    let _ = writeln!(out, "| input | size | seconds | MB/s | peak RSS MiB | goal |");
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    for m in &r.failures {
        let goal = if m.what.contains("log") { "≥ 300 MB/s" } else { "< 2 s in the browser" };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {goal} |",
            m.what,
            m.size,
            show(of(m, |s| s.seconds), 2),
            show(of(m, megabytes_per_second), 0),
            show(of(m, |s| s.peak_rss_mib), 0),
        );
    }
}

fn numbers(v: Option<&Value>) -> Vec<f64> {
    v.and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default()
}

fn number(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// Peak memory of a browser run: JS heaps and WebAssembly memories of the page and the workers.
/// The workers' WebAssembly memory peaks either while they read (the import workers end then)
/// or at the end of the analysis.
fn browser_memory(m: &Value) -> Option<f64> {
    let parts = ["peak_js_heap_mib", "peak_worker_js_heap_mib", "page_wasm_memory_mib"];
    let workers = ["wasm_memory_mib", "read_wasm_memory_mib"].iter().filter_map(|k| number(m, k)).reduce(f64::max);
    let found: Vec<f64> = parts.iter().filter_map(|k| number(m, k)).chain(workers).collect();
    (!found.is_empty()).then(|| found.iter().sum())
}

fn browser(b: &Value, native: &Results, out: &mut String) {
    let chromium = b.get("chromium").and_then(Value::as_str).unwrap_or("?");
    let _ = writeln!(out, "\n### In the browser (headless Chromium {chromium}, the release build)\n");
    let _ = writeln!(
        out,
        "Drop to verdict: from choosing the files to the verdict naming them (read, analyse, render). Read in the \
         workers: the analysis worker's own clock from the request to the last file imported (reading the slices \
         and importing them, with the import workers it starts for several files of 2 MiB or more), the ingest \
         rate in the workers.\n"
    );
    let _ = writeln!(
        out,
        "| input | drop to verdict, s | MB/s | read in the workers, MB/s | peak memory MiB (JS + wasm, page + workers) |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    let memory = b.get("memory").and_then(Value::as_array);
    for input in b.get("ingest").and_then(Value::as_array).into_iter().flatten() {
        let label = input.get("label").and_then(Value::as_str).unwrap_or("input");
        // The page sees file sizes; gzipped inputs are rated by their content, as natively.
        let content = native.inputs.iter().chain(&native.job).find(|(l, _, _)| l == label).map(|i| i.2 as f64);
        let bytes = content.or_else(|| number(input, "bytes")).unwrap_or(0.0);
        let runs = numbers(input.get("runs_ms"));
        let rates = runs.iter().map(|ms| bytes / MB / (ms / 1e3)).collect();
        let worker_rates = numbers(input.get("worker_read_ms")).iter().map(|ms| bytes / MB / (ms / 1e3)).collect();
        let peak = memory
            .into_iter()
            .flatten()
            .find(|m| m.get("label").and_then(Value::as_str) == Some(label))
            .and_then(browser_memory);
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} |",
            show(runs.iter().map(|ms| ms / 1e3).collect(), 2),
            show(rates, 0),
            show(worker_rates, 0),
            peak.map_or("—".into(), |p| format!("{p:.0}"))
        );
    }
    for failed in b.get("failures").and_then(Value::as_array).into_iter().flatten() {
        let label = failed.get("label").and_then(Value::as_str).unwrap_or("failed job");
        let bytes = number(failed, "bytes").unwrap_or(0.0);
        let runs = numbers(failed.get("runs_ms"));
        let rates = runs.iter().map(|ms| bytes / MB / (ms / 1e3)).collect();
        let _ = writeln!(
            out,
            "| failed job: {label} (to the failure panel's answer; goal for dumps < 2 s) | {} | {} | — | — |",
            show(runs.iter().map(|ms| ms / 1e3).collect(), 2),
            show(rates, 0),
        );
    }
    if let Some(big) = b.get("big") {
        let gb = number(big, "bytes").unwrap_or(0.0) / 1e9;
        let files = number(big, "files").unwrap_or(0.0);
        let outcome = match (big.get("loaded").and_then(Value::as_bool), number(big, "seconds")) {
            (Some(true), Some(s)) => format!("{s:.1}"),
            _ => format!("failed: {}", big.get("message").and_then(Value::as_str).unwrap_or("?")),
        };
        let rate = number(big, "mb_per_s").map_or("—".into(), |r| format!("{r:.0}"));
        let worker_rate =
            number(big, "worker_read_ms").map_or("—".into(), |ms| format!("{:.0}", gb * 1e3 / (ms / 1e3)));
        let peak = browser_memory(big).map_or("—".into(), |p| format!("**{p:.0}**"));
        let _ = writeln!(
            out,
            "| {gb:.2} GB of Kineto traces ({files} files) | {outcome} | {rate} | {worker_rate} | {peak} |"
        );
    }
    let _ = writeln!(out, "\n| measure | median (min–max) | goal |");
    let _ = writeln!(out, "|---|---|---|");
    if let Some(huge) = b.get("huge") {
        let gb = number(huge, "bytes").unwrap_or(0.0) / 1e9;
        let loaded = huge.get("loaded").and_then(Value::as_bool) == Some(true);
        let alive = huge.get("page_alive_after").and_then(Value::as_bool) == Some(true);
        let message = huge.get("message").and_then(Value::as_str).unwrap_or("");
        let outcome = match (loaded, alive) {
            (true, _) => "loaded".to_owned(),
            (false, true) => format!("refused, the page lives: “{message}”"),
            (false, false) => format!("**the tab died**: {message}"),
        };
        let _ = writeln!(out, "| one {gb:.1} GB merged Chrome trace | {outcome} | loads or is refused clearly |");
    }
    if let Some(frame) = b.get("timeline_frame_ms") {
        let (w, s) = (number(frame, "workers").unwrap_or(0.0), number(frame, "steps").unwrap_or(0.0));
        if let (Some(m), Some(p)) = (number(frame, "median"), number(frame, "p95")) {
            let _ = writeln!(
                out,
                "| timeline frame while panning and zooming, {w} workers × {s} steps | {m:.1} ms (p95 {p:.1}; frames come at the 16.7 ms display refresh) | ≤ 16 ms |"
            );
        }
        if let (Some(m), Some(p)) = (number(frame, "draw_median"), number(frame, "draw_p95")) {
            let _ = writeln!(
                out,
                "| the app's work per frame (from the input event to the frame drawn), same | {m:.1} ms (p95 {p:.1}) | ≤ 16 ms |"
            );
        }
    }
    let _ = writeln!(out, "| first paint after load | {} ms | |", show(numbers(b.get("first_paint_ms")), 0));
    let _ =
        writeln!(out, "| the example's verdict after load | {} ms | |", show(numbers(b.get("first_verdict_ms")), 0));
    if let Some(bundle) = b.get("bundle") {
        let kib = |k: &str| number(bundle, k).map_or("—".into(), |v| format!("{:.0} KiB", v / 1024.0));
        let _ = writeln!(
            out,
            "| first bundle, gzip: the page (raw: wasm {}, JS {}) | {} | ≤ 560 KB |",
            kib("first_wasm_bytes"),
            kib("first_js_bytes"),
            kib("first_gzip")
        );
        let _ = writeln!(
            out,
            "| with the analysis worker's bundle, a first visit, gzip (worker's raw wasm {}) | {} | ≤ 700 KB |",
            kib("worker_wasm_bytes"),
            kib("at_open_gzip")
        );
    }
}

/// Writes DIR/bench.md from the runs' JSON and prints it.
pub fn write(dir: &Path) -> Result<(), String> {
    let read =
        |name: &str| std::fs::read_to_string(dir.join(name)).map_err(|e| format!("{}: {e}", dir.join(name).display()));
    let results: Results = serde_json::from_str(&read("native.json")?).map_err(|e| format!("native.json: {e}"))?;
    let mut out = String::new();
    native(&results, &mut out);
    failures(&results, &mut out);
    if let Ok(text) = read("browser.json") {
        let b: Value = serde_json::from_str(&text).map_err(|e| format!("browser.json: {e}"))?;
        browser(&b, &results, &mut out);
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

    #[test]
    fn failed_jobs_in_the_browser_get_rows() {
        let b: Value = serde_json::json!({
            "failures": [{"label": "Flight Recorder dumps, 4 ranks", "bytes": 2e6, "runs_ms": [1000.0, 2000.0, 4000.0]}]
        });
        let mut out = String::new();
        browser(&b, &Results::default(), &mut out);
        assert!(
            out.contains("| failed job: Flight Recorder dumps, 4 ranks (to the failure panel's answer; goal for dumps < 2 s) | 2.00 (1.00–4.00) | 1 (0–2) |"),
            "{out}"
        );
    }
}
