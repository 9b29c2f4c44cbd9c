//! What the URL may carry: the view, the focused step and worker, the timeline zoom, and a
//! same-origin trace to load (`#src=`). Trace data never goes in the URL.

/// The app's views.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum View {
    #[default]
    Timeline,
    Scatter,
    Heatmap,
    Pipeline,
    Compare,
    Files,
}

impl View {
    pub const ALL: [View; 6] =
        [View::Timeline, View::Scatter, View::Heatmap, View::Pipeline, View::Compare, View::Files];

    pub fn id(self) -> &'static str {
        match self {
            View::Timeline => "timeline",
            View::Scatter => "scatter",
            View::Heatmap => "heatmap",
            View::Pipeline => "pipeline",
            View::Compare => "compare",
            View::Files => "files",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            View::Timeline => "Timeline",
            View::Scatter => "Length vs step time",
            View::Heatmap => "Worker × step",
            View::Pipeline => "Pipeline",
            View::Compare => "Compare",
            View::Files => "Files",
        }
    }

    fn parse(s: &str) -> Option<View> {
        View::ALL.into_iter().find(|v| v.id() == s)
    }
}

/// The state the hash carries.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HashState {
    pub view: View,
    pub step: Option<u64>,
    pub worker: Option<u32>,
    /// Timeline window in milliseconds from the job's start.
    pub zoom: Option<(f64, f64)>,
    /// A same-origin relative URL of a trace to load.
    pub src: Option<String>,
    /// A simulator preset to show instead of the default example (the gallery's links).
    pub example: Option<String>,
}

/// Parses `#view=heatmap&step=12&worker=3&zoom=10.5-250&src=traces/run.json`; unknown or
/// malformed parts are ignored.
pub fn parse(hash: &str) -> HashState {
    let mut s = HashState::default();
    for part in hash.trim_start_matches('#').split('&') {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        let value = decode(value);
        match key {
            "view" => s.view = View::parse(&value).unwrap_or_default(),
            "step" => s.step = value.parse().ok(),
            "worker" => s.worker = value.parse().ok(),
            "zoom" => {
                s.zoom = value.split_once('_').and_then(|(a, b)| {
                    let (a, b) = (a.parse::<f64>().ok()?, b.parse::<f64>().ok()?);
                    (a.is_finite() && b.is_finite() && b > a).then_some((a, b))
                })
            }
            "src" if !value.is_empty() => s.src = Some(value),
            "example" if !value.is_empty() => s.example = Some(value),
            _ => {}
        }
    }
    s
}

/// The hash for a state (`src` and `example` are kept so a reload loads the same job).
pub fn format(s: &HashState) -> String {
    let mut parts = vec![format!("view={}", s.view.id())];
    if let Some(step) = s.step {
        parts.push(format!("step={step}"));
    }
    if let Some(w) = s.worker {
        parts.push(format!("worker={w}"));
    }
    if let Some((a, b)) = s.zoom {
        parts.push(format!("zoom={a:.3}_{b:.3}"));
    }
    if let Some(src) = &s.src {
        parts.push(format!("src={}", encode(src)));
    }
    if let Some(example) = &s.example {
        parts.push(format!("example={}", encode(example)));
    }
    format!("#{}", parts.join("&"))
}

/// Only relative URLs (resolved against the page, so same-origin) may be loaded from `#src=`.
pub fn is_safe_src(src: &str) -> bool {
    let lower = src.to_ascii_lowercase();
    !(lower.contains("://")
        || lower.starts_with("//")
        || lower.starts_with("data:")
        || lower.starts_with("javascript:")
        || lower.starts_with("blob:"))
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%'
            && let Some(v) = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(if b == b'+' { b' ' } else { b });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_ignores_junk() {
        let s = HashState {
            view: View::Heatmap,
            step: Some(12),
            worker: Some(3),
            zoom: Some((10.5, 250.0)),
            src: Some("runs/a b.json".into()),
            example: Some("slow-worker".into()),
        };
        assert_eq!(parse(&format(&s)), s);
        let junk = parse("#view=nope&step=x&zoom=5_1&&=&src=&example=");
        assert_eq!(junk, HashState::default());
    }

    #[test]
    fn only_relative_sources() {
        assert!(is_safe_src("traces/rank0.json.gz"));
        assert!(is_safe_src("../attachments/run.jsonl"));
        for bad in
            ["https://evil.example/x.json", "//evil.example/x", "data:application/json,{}", "JavaScript:alert(1)"]
        {
            assert!(!is_safe_src(bad), "{bad}");
        }
    }
}
