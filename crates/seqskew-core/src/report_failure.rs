//! The failure section of the Markdown and HTML reports: one list of facts, two renderings.

use crate::report::{Failure, failure_title};

fn ranks(list: &[u32]) -> String {
    if list.is_empty() {
        return "unknown".into();
    }
    let values: Vec<u64> = list.iter().map(|&r| u64::from(r)).collect();
    crate::text::compact_ranges(&values)
}

/// `(label, value)` pairs every rendering lists, in order.
fn facts(f: &Failure) -> Vec<(&'static str, String)> {
    let mut facts = vec![
        ("Initiating ranks", ranks(&f.initiating_ranks)),
        ("Collateral ranks", if f.collateral_ranks.is_empty() { "none".into() } else { ranks(&f.collateral_ranks) }),
    ];
    if let Some(first) = &f.first_failure {
        let rank = first.rank.map_or_else(String::new, |r| format!("rank {r}"));
        let time = first.time.as_deref().map_or_else(String::new, |t| format!(" at {t}"));
        facts.push(("First failure", format!("{rank}{time}: {}", first.what)));
    }
    if let Some(in_job) = &f.in_job {
        facts.push(("In the job's steps", in_job.describe()));
    }
    facts
}

fn evidence_line(e: &crate::report::FailureEvidence) -> (String, String) {
    let place = if e.line > 0 { format!("{}:{}", e.file, e.line) } else { e.file.clone() };
    let rank = e.rank.map_or_else(String::new, |r| format!(" rank {r}"));
    (format!("{place} ({}{rank})", e.role), e.text.clone())
}

impl Failure {
    pub(crate) fn markdown(&self) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        let _ = writeln!(o, "## seqskew: failed job: {}\n", failure_title(&self.cause));
        let _ = writeln!(o, "**{}** (confidence: {})\n", self.headline, self.confidence);
        for (label, value) in facts(self) {
            let _ = writeln!(o, "- {label}: {value}");
        }
        if let Some(more) = &self.to_decide {
            let _ = writeln!(o, "\nTo decide: {more}");
        }
        for note in &self.notes {
            let _ = writeln!(o, "\nNote: {note}");
        }
        if !self.evidence.is_empty() {
            let _ = writeln!(o, "\n### Evidence\n");
            for e in &self.evidence {
                let (place, text) = evidence_line(e);
                let _ = writeln!(o, "- {place}\n  ```\n  {text}\n  ```");
                for frame in &e.frames {
                    let _ = writeln!(o, "  - {frame}");
                }
            }
        }
        let _ = writeln!(o, "\n### Fix\n\n{}\n\n### Verify\n\n```sh\n{}\n```\n", self.fix, self.verify_command);
        o
    }

    pub(crate) fn html(&self, escape: impl Fn(&str) -> String) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "<h1 id=\"failure\" data-failure-cause=\"{}\">seqskew: failed job: {}</h1>",
            escape(&self.cause),
            failure_title(&self.cause)
        );
        let _ = writeln!(
            o,
            "<p class=\"headline\"><strong>{}</strong> (confidence: {})</p>\n<ul>",
            escape(&self.headline),
            escape(&self.confidence)
        );
        for (label, value) in facts(self) {
            let _ = writeln!(o, "<li>{label}: {}</li>", escape(&value));
        }
        let _ = writeln!(o, "</ul>");
        if let Some(more) = &self.to_decide {
            let _ = writeln!(o, "<p class=\"to-confirm\">To decide: {}</p>", escape(more));
        }
        for note in &self.notes {
            let _ = writeln!(o, "<p>Note: {}</p>", escape(note));
        }
        if !self.evidence.is_empty() {
            let _ = writeln!(o, "<h2>Evidence</h2>");
            for e in &self.evidence {
                let (place, text) = evidence_line(e);
                let _ = writeln!(o, "<p>{}</p><pre>{}</pre>", escape(&place), escape(&text));
                for frame in &e.frames {
                    let _ = writeln!(o, "<p><code>{}</code></p>", escape(frame));
                }
            }
        }
        let _ = writeln!(
            o,
            "<h2>Fix</h2>\n<p>{}</p>\n<h2>Verify</h2>\n<pre>{}</pre>",
            escape(&self.fix),
            escape(&self.verify_command)
        );
        o
    }
}
