//! The report as one self-contained HTML page (`seqskew analyze --html`): to attach to a
//! ticket or open from CI artifacts. Inline CSS only: no script, no font, no request, so it
//! shows the same anywhere and leaks nothing.

use std::fmt::Write;

use crate::report::{Report, cause_title};

/// `text` with the characters HTML gives meaning to escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}\
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}\
th{background:#f4f4f4}.yes{color:#0072b2;font-weight:600}.no{color:#777}pre{background:#f6f6f6;padding:.75rem;overflow:auto}\
.headline{font-size:1.1rem}.to-confirm{background:#fdf3dc;padding:.4rem .7rem;border-radius:6px}";

impl Report {
    /// A standalone HTML page with the same content as [`Report::to_markdown`].
    pub fn to_html(&self) -> String {
        let mut o = String::new();
        let v = &self.verdict;
        let title = cause_title(&v.primary);
        let _ = write!(
            o,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
             <title>seqskew: {title}</title><style>{STYLE}</style></head><body>\n"
        );
        if let Some(failure) = &self.failure {
            o.push_str(&failure.html(escape));
        }
        let _ = writeln!(o, "<h1 id=\"verdict\" data-cause=\"{}\">seqskew: {title}</h1>", escape(&v.primary));
        let _ = writeln!(
            o,
            "<p class=\"headline\"><strong>{}</strong> (confidence: {})</p>",
            escape(&v.headline),
            escape(&v.confidence)
        );
        if let Some(more) = &v.to_confirm {
            let _ = writeln!(o, "<p class=\"to-confirm\">{}</p>", escape(more));
        }
        let _ = writeln!(o, "<ul>");
        let points = if self.has_no_steps() {
            Vec::new()
        } else {
            self.summary_points(escape, |t| format!("<strong>{t}</strong>"))
        };
        for point in points {
            let _ = writeln!(o, "<li>{point}</li>");
        }
        let _ = writeln!(o, "</ul>");
        let problems = self.problem_lines();
        if !problems.is_empty() {
            let _ = writeln!(o, "<h2>Input problems</h2>\n<ul>");
            for line in problems {
                let _ = writeln!(o, "<li>{}</li>", escape(&line));
            }
            let _ = writeln!(o, "</ul>");
        }
        if self.has_no_steps() {
            // Logs and dumps only: no steps, so no straggler evidence to show.
            let _ = writeln!(o, "</body></html>");
            return o;
        }
        let _ = writeln!(
            o,
            "<h2>Evidence</h2>\n<table><tr><th>signal</th><th>value</th><th>threshold</th><th></th><th></th></tr>"
        );
        for e in &self.signals {
            let (class, mark) = match (e.applicable, e.passed) {
                (false, _) => ("no", "n/a"),
                (true, true) => ("yes", "yes"),
                (true, false) => ("no", "no"),
            };
            let _ = writeln!(
                o,
                "<tr><td>{}</td><td>{:.3}</td><td>{:.3}</td><td class=\"{class}\">{mark}</td><td>{}</td></tr>",
                escape(&e.name),
                e.value,
                e.threshold,
                escape(&e.sentence)
            );
        }
        let _ = writeln!(o, "</table>");
        if !self.whatif.is_empty() {
            let _ = writeln!(
                o,
                "<h2>What if the batch were rebalanced?</h2>\n<table><tr><th>method</th><th>predicted step</th><th>speedup</th><th>imbalance</th></tr>"
            );
            for w in &self.whatif {
                let _ = writeln!(
                    o,
                    "<tr><td>{}</td><td>{:.3} s</td><td>{:.2}×</td><td>{:.2}</td></tr>",
                    escape(&w.method),
                    w.predicted_step_s,
                    w.speedup,
                    w.imbalance
                );
            }
            let _ = writeln!(o, "</table>");
        }
        let f = &self.fix;
        let _ = writeln!(o, "<h2>Fix</h2>\n<p>{}</p>\n<ul>", escape(&f.summary));
        let items =
            [("Cost", &f.cost_function), ("Algorithm", &f.algorithm), ("Where", &f.location), ("Limits", &f.limits)];
        for (label, value) in items {
            if let Some(value) = value {
                let _ = writeln!(o, "<li>{label}: {}</li>", escape(value));
            }
        }
        let _ = writeln!(o, "</ul>");
        if let Some(p) = &f.python {
            let _ = writeln!(o, "<pre><code>{}</code></pre>", escape(p));
        }
        let _ =
            writeln!(o, "<h2>Verify</h2>\n<pre><code>{}</code></pre>\n</body></html>", escape(&self.verify_command));
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Signal, Verdict};

    #[test]
    fn text_is_escaped_and_nothing_is_fetched() {
        let report = Report {
            verdict: Verdict {
                primary: "slow_worker".into(),
                headline: "rank <3> & \"friends\"".into(),
                ..Verdict::default()
            },
            signals: vec![Signal { name: "a<b".into(), applicable: true, passed: true, ..Signal::default() }],
            verify_command: "seqskew compare before/ after/".into(),
            ..Report::default()
        };
        let html = report.to_html();
        assert!(html.contains("rank &lt;3&gt; &amp; &quot;friends&quot;"), "{html}");
        assert!(html.contains("<td>a&lt;b</td>") && html.contains("class=\"yes\""), "{html}");
        assert!(html.contains("data-cause=\"slow_worker\">seqskew: Slow worker</h1>"), "{html}");
        for fetches in ["<script", "<link", "src=", "http:", "https:", "url("] {
            assert!(!html.contains(fetches), "{fetches} in {html}");
        }
    }
}
