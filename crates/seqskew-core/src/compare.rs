//! Before and after a fix: step time, slowdown, and which symptoms went away
//! (`seqskew compare`, the app's compare mode).

use serde::{Deserialize, Serialize};

use crate::report::{Report, round};

pub const SCHEMA: &str = "seqskew.compare/1";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub primary: String,
    pub confidence: String,
    pub slowdown: f64,
    pub step_s: f64,
    pub ideal_step_s: f64,
    pub workers: usize,
    pub steps: usize,
    /// What would make this run's verdict firmer (its report's `verdict.to_confirm`).
    #[serde(default)]
    pub to_confirm: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SignalChange {
    pub id: String,
    pub name: String,
    pub before: Option<f64>,
    pub after: Option<f64>,
    pub before_passed: bool,
    pub after_passed: bool,
    /// The symptom was there before and is not after.
    pub gone: bool,
    /// The symptom was not there before and is after.
    pub appeared: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub schema: String,
    pub before: Side,
    pub after: Side,
    /// after / before mean step time (below 1 is faster).
    pub step_time_ratio: f64,
    pub speedup: f64,
    pub signals: Vec<SignalChange>,
    /// The straggling is gone: the before run was beyond the bound and the after run is within it.
    pub fixed: bool,
    pub headline: String,
}

fn side(r: &Report) -> Side {
    Side {
        primary: r.verdict.primary.clone(),
        confidence: r.verdict.confidence.clone(),
        slowdown: r.slowdown.factor,
        step_s: r.slowdown.actual_step_s,
        ideal_step_s: r.slowdown.ideal_step_s,
        workers: r.job.workers,
        steps: r.job.steps,
        to_confirm: r.verdict.to_confirm.clone(),
    }
}

pub fn compare(before: &Report, after: &Report, max_slowdown: f64) -> Comparison {
    let mut ids: Vec<&str> = before.signals.iter().chain(&after.signals).map(|s| s.id.as_str()).collect();
    ids.dedup();
    let mut seen = std::collections::BTreeSet::new();
    let signals: Vec<SignalChange> = ids
        .into_iter()
        .filter(|id| seen.insert(*id))
        .map(|id| {
            let b = before.signals.iter().find(|s| s.id == id && s.applicable);
            let a = after.signals.iter().find(|s| s.id == id && s.applicable);
            let (bp, ap) = (b.is_some_and(|s| s.passed), a.is_some_and(|s| s.passed));
            SignalChange {
                id: id.to_owned(),
                name: before
                    .signals
                    .iter()
                    .chain(&after.signals)
                    .find(|s| s.id == id)
                    .map_or_else(|| id.to_owned(), |s| s.name.clone()),
                before: b.map(|s| s.value),
                after: a.map(|s| s.value),
                before_passed: bp,
                after_passed: ap,
                gone: bp && !ap,
                appeared: !bp && ap,
            }
        })
        .collect();
    let (b, a) = (side(before), side(after));
    let ratio = if b.step_s > 0.0 { a.step_s / b.step_s } else { 1.0 };
    // The same bound as `seqskew check`: within it is fine.
    let within = a.slowdown <= max_slowdown;
    let fixed = within && b.slowdown > max_slowdown;
    let headline = if within && !fixed {
        format!(
            "Both runs are within the bound: S {:.2} → {:.2} (bound {max_slowdown:.2}); steps take {:.3} s instead of {:.3} s.",
            b.slowdown, a.slowdown, a.step_s, b.step_s
        )
    } else if fixed {
        format!(
            "Fixed: steps take {:.3} s instead of {:.3} s ({:.2}× faster); S fell from {:.2} to {:.2}, below {max_slowdown:.2}.",
            a.step_s,
            b.step_s,
            1.0 / ratio.max(1e-9),
            b.slowdown,
            a.slowdown
        )
    } else if a.primary == b.primary {
        format!(
            "Not fixed: still {} (S {:.2} → {:.2}); steps take {:.3} s instead of {:.3} s.",
            crate::report::cause_title(&a.primary).to_lowercase(),
            b.slowdown,
            a.slowdown,
            a.step_s,
            b.step_s
        )
    } else {
        format!(
            "Changed: {} before, {} after; S {:.2} → {:.2} (bound {max_slowdown:.2}).",
            crate::report::cause_title(&b.primary).to_lowercase(),
            crate::report::cause_title(&a.primary).to_lowercase(),
            b.slowdown,
            a.slowdown
        )
    };
    Comparison {
        schema: SCHEMA.into(),
        before: b,
        after: a,
        step_time_ratio: round(ratio, 4),
        speedup: round(1.0 / ratio.max(1e-9), 4),
        signals,
        fixed,
        headline,
    }
}

impl Comparison {
    pub fn to_markdown(&self) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        let _ = writeln!(o, "## seqskew compare\n\n**{}**\n", self.headline);
        // What the run after the fix cannot show qualifies whether the fix held.
        if let Some(more) = &self.after.to_confirm {
            let _ = writeln!(o, "After: {more}\n");
        }
        let _ = writeln!(o, "| | before | after |\n|---|---|---|");
        let _ = writeln!(o, "| verdict | {} | {} |", self.before.primary, self.after.primary);
        let _ = writeln!(o, "| step time | {:.3} s | {:.3} s |", self.before.step_s, self.after.step_s);
        let _ = writeln!(o, "| ideal step | {:.3} s | {:.3} s |", self.before.ideal_step_s, self.after.ideal_step_s);
        let _ = writeln!(o, "| slowdown S | {:.2} | {:.2} |", self.before.slowdown, self.after.slowdown);
        let _ = writeln!(o, "\n| signal | before | after | symptom gone? |\n|---|---|---|---|");
        for s in &self.signals {
            let show = |v: Option<f64>, p: bool| {
                v.map_or("n/a".to_owned(), |v| format!("{v:.3}{}", if p { " ✔" } else { "" }))
            };
            let gone = if s.gone {
                "yes"
            } else if s.appeared {
                "new"
            } else if s.before_passed {
                "no"
            } else {
                "—"
            };
            let _ = writeln!(
                o,
                "| {} | {} | {} | {gone} |",
                s.name,
                show(s.before, s.before_passed),
                show(s.after, s.after_passed)
            );
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Signal, Slowdown, Verdict};

    fn report(primary: &str, s: f64, step: f64, passed: bool) -> Report {
        Report {
            verdict: Verdict { primary: primary.into(), ..Verdict::default() },
            slowdown: Slowdown { factor: s, actual_step_s: step, ..Slowdown::default() },
            signals: vec![Signal {
                id: "max_vs_mean".into(),
                name: "max".into(),
                applicable: true,
                passed,
                value: 0.9,
                ..Signal::default()
            }],
            ..Report::default()
        }
    }

    #[test]
    fn a_fix_that_works_and_one_that_does_not() {
        let before = report("sequence_length_imbalance", 1.4, 1.0, true);
        let c = compare(&before, &report("balanced", 1.03, 0.75, false), 1.10);
        assert!(c.fixed && c.signals[0].gone && (c.speedup - 1.3333).abs() < 1e-3, "{c:?}");
        let c = compare(&before, &report("sequence_length_imbalance", 1.3, 0.95, true), 1.10);
        assert!(!c.fixed && !c.signals[0].gone && c.headline.starts_with("Not fixed"), "{c:?}");
    }

    /// What the run after the fix cannot show (say, a pipeline's unnamed micro-batches) is said
    /// under the headline, since it qualifies whether the fix held.
    #[test]
    fn what_the_after_run_cannot_show_is_said() {
        let before = report("sequence_length_imbalance", 1.4, 1.0, true);
        let mut after = report("balanced", 1.03, 0.75, false);
        let plain = compare(&before, &after, 1.10).to_markdown();
        assert!(!plain.contains("After:"), "{plain}");
        after.verdict.to_confirm = Some("Name the passes.".into());
        let c = compare(&before, &after, 1.10);
        assert_eq!(c.after.to_confirm.as_deref(), Some("Name the passes."));
        let md = c.to_markdown();
        assert!(md.starts_with("## seqskew compare\n\n**Fixed: "), "{md}");
        assert!(md.contains("**\n\nAfter: Name the passes.\n\n| | before | after |"), "{md}");
    }
}
