//! The report: what `seqskew analyze --json` prints and the web app renders. A documented,
//! versioned schema (`seqskew.report/1`, see `docs/report-schema.md`); deterministic (sorted,
//! rounded) so it snapshots. Adding fields is compatible; renaming or removing them is a new
//! schema version.

use serde::{Deserialize, Serialize};

use crate::diag::{Diagnostic, Severity};

pub const SCHEMA: &str = "seqskew.report/1";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub tool: Tool,
    pub inputs: Vec<Input>,
    pub job: JobInfo,
    pub verdict: Verdict,
    pub slowdown: Slowdown,
    pub signals: Vec<Signal>,
    pub cost_model: Option<CostModel>,
    pub whatif: Vec<WhatIf>,
    /// The initiating worker of each step (the one the others waited for) and its excess.
    pub stragglers: Vec<Straggler>,
    pub initiators: Initiators,
    /// Every persistently slow worker, slowest first (added within `/1`; empty when none).
    #[serde(default)]
    pub slow_workers: Vec<SlowWorker>,
    pub fix: Fix,
    pub verify_command: String,
    /// What the logs and Flight Recorder dumps say about a failure; `None` when the inputs show
    /// none (no logs, or logs of a job that did not fail).
    #[serde(default)]
    pub failure: Option<Failure>,
}

/// The causes of a failed job ([`Failure::cause`]).
pub const FAILURE_CAUSES: [&str; 8] =
    ["hang", "collective_mismatch", "crash", "oom", "killed", "network", "slow_rank", "unknown"];

/// A failed job: who started it, who only suffered it, why, and how to fix and verify.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// One of [`FAILURE_CAUSES`].
    pub cause: String,
    /// Global ranks that initiated the failure, sorted; empty when the inputs cannot tell.
    pub initiating_ranks: Vec<u32>,
    /// Global ranks that failed only because of them (timed out, lost a peer, were stopped).
    pub collateral_ranks: Vec<u32>,
    pub first_failure: Option<FirstFailure>,
    /// `high`, `medium` or `low`.
    pub confidence: String,
    pub headline: String,
    /// The lines and dump entries that show it, the initiating ranks' first.
    pub evidence: Vec<FailureEvidence>,
    /// Each process group's progress per rank (how far each had issued collectives).
    pub process_groups: Vec<GroupProgress>,
    pub fix: String,
    pub verify_command: String,
    /// What would decide it, when the inputs cannot.
    pub to_decide: Option<String>,
    /// Caveats: ranks named only within a process group, evidence dropped, …
    pub notes: Vec<String>,
    /// Where the first initiating rank stopped in the job's steps, when traces or a step log of
    /// the same job were loaded too (added within `/1`; `null` otherwise).
    #[serde(default)]
    pub in_job: Option<FailureInJob>,
}

/// The last step a failing rank recorded and what it held then.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureInJob {
    pub rank: u32,
    pub last_step: u64,
    /// The last step any rank recorded.
    pub job_last_step: u64,
    /// The rank's tokens and its longest document in `last_step` (0 when unknown).
    pub tokens: u64,
    pub longest: u64,
    /// The longest document of that step's global batch (0 when unknown).
    pub batch_longest: u64,
}

impl FailureInJob {
    /// One sentence for the reports and the page.
    pub fn describe(&self) -> String {
        let FailureInJob { rank, last_step, job_last_step, tokens, longest, batch_longest } = *self;
        let when = if last_step < job_last_step {
            format!(
                "Rank {rank}'s last recorded step is {last_step}, {} before the job's last ({job_last_step})",
                crate::text::count(
                    usize::try_from(job_last_step.saturating_sub(last_step)).unwrap_or(usize::MAX),
                    "step"
                )
            )
        } else {
            format!("Rank {rank} recorded steps up to {job_last_step}, as the others did: it failed in a later step")
        };
        if tokens == 0 {
            return format!("{when}.");
        }
        let drew = if longest >= batch_longest {
            "the longest of that step's global batch".to_owned()
        } else {
            format!("the global batch's longest: {batch_longest}")
        };
        format!("{when}; in step {last_step} it held {tokens} tokens, its longest document {longest} tokens ({drew}).")
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FirstFailure {
    pub rank: Option<u32>,
    /// As the log wrote it (`2024-07-09_17:05:38`, `E709 17:05:38.162`), when it did.
    pub time: Option<String>,
    pub what: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FailureEvidence {
    pub file: String,
    /// 1-based line number; 0 for a dump entry.
    pub line: u64,
    pub rank: Option<u32>,
    /// `initiating`, `collateral` or `progress`.
    pub role: String,
    pub text: String,
    /// The collective's stack (Flight Recorder pickles), innermost first.
    pub frames: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupProgress {
    /// The process group (`0` is the default group), and its description.
    pub group: String,
    pub desc: String,
    /// Global ranks of the group (as many as the inputs name).
    pub size: usize,
    /// Per rank, the last collective it issued and completed, sorted by rank.
    pub ranks: Vec<RankProgress>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankProgress {
    pub rank: u32,
    pub last_enqueued: Option<i64>,
    pub last_completed: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Input {
    pub path: String,
    pub format: Option<String>,
    pub workers: usize,
    pub steps: usize,
    pub diagnostics: Vec<Diagnostic>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobInfo {
    pub workers: usize,
    pub steps: usize,
    pub dp: usize,
    pub pp: usize,
    pub has_sequence_lengths: bool,
    /// `unknown`, `varlen_bounds`, `dense_shapes` or `exact`.
    pub sequence_knowledge: String,
    /// How many ranks the job had, where the inputs say (Kineto's `distributedInfo.world_size`,
    /// a step log's `world_size`); more than `workers` when some ranks' traces are missing.
    #[serde(default)]
    pub world_size: Option<u32>,
    pub first_step: Option<u64>,
    pub last_step: Option<u64>,
    /// Job-level findings: duplicates, missing ranks, clock alignment.
    pub diagnostics: Vec<Diagnostic>,
    /// Where the verdict's step times come from when the inputs have no per-rank compute:
    /// `training_log` (iteration lines) or `job_level` (a step log's step times); none when
    /// traces or a step log with per-rank times were analysed (`null`; not left out: the
    /// browser's workers pass reports in bincode, which has no optional fields).
    #[serde(default)]
    pub step_times: Option<String>,
}

/// The report's cause names.
pub const CAUSES: [&str; 7] = [
    "sequence_length_imbalance",
    "slow_worker",
    "pipeline_stage_imbalance",
    "communication",
    "host_stall",
    "balanced",
    "inconclusive",
];

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// One of [`CAUSES`].
    pub primary: String,
    pub contributing: Vec<CauseShare>,
    /// `high`, `medium` or `low`.
    pub confidence: String,
    pub headline: String,
    /// The signals that support (or argue against) the verdict, in signal order.
    pub evidence: Vec<Signal>,
    /// What would make the verdict firmer (e.g. recording shapes), when anything would.
    pub to_confirm: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CauseShare {
    pub cause: String,
    /// Fraction of the slowdown this cause accounts for.
    pub share: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Slowdown {
    /// Mean measured step time.
    pub actual_step_s: f64,
    /// Mean step time of the ideal run (compute at the mean, transfers and stalls at the median).
    pub ideal_step_s: f64,
    /// S = actual / ideal.
    pub factor: f64,
    /// Time lost to straggling over the analysed steps.
    pub time_lost_s: f64,
    /// Share of the slowdown per cause (sums to 1 when S > 1).
    pub by_cause: Vec<CauseShare>,
    /// Replayed / measured step time: how well the replay reproduces the job (1 = exactly).
    pub replay_fidelity: f64,
    /// S against the ideal of the usual what-if analysis, as other tools compute it: every op
    /// at its median across workers, no stalls. Above `factor` where a few workers draw far
    /// more work (their median is below the mean that dealing the work evenly gives). `None`
    /// where steps are not replayed (a training log alone).
    #[serde(default)]
    pub median_ops_factor: Option<f64>,
}

/// One piece of evidence: a number, its threshold, whether it passed, and what it means.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Signal {
    /// Stable id: `max_vs_mean`, `attention_on_longest`, `compute_tracks_cost`, `rotation`,
    /// `stage_band`, `communication_bound`, `host_stalls`.
    pub id: String,
    pub name: String,
    pub value: f64,
    pub threshold: f64,
    pub passed: bool,
    /// False when the data cannot say (too few steps, no lengths, a single stage...).
    pub applicable: bool,
    pub sentence: String,
    /// Extra numbers (e.g. the mean-correlation beside the max-correlation), for display.
    pub detail: Vec<(String, f64)>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// compute ≈ c0 + per_doc·documents + per_token·tokens + per_token_sq·Σ L², per worker-step.
    pub c0_s: f64,
    pub per_doc_s: f64,
    pub per_token_s: f64,
    pub per_token_sq_s: f64,
    pub r2: f64,
    /// The quadratic term's share of predicted compute at the observed lengths.
    pub quadratic_share: f64,
    pub samples: usize,
    /// The same fit per micro-batch, where micro-batches carry lengths and times.
    pub micro_batch: Option<Box<CostModel>>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WhatIf {
    /// `current`, `sorted`, `token_balanced`, `lpt`, `karmarkar_karp`.
    pub method: String,
    pub predicted_step_s: f64,
    pub speedup: f64,
    /// Mean over steps of max/mean predicted compute across data-parallel ranks.
    pub imbalance: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Straggler {
    pub step: u64,
    pub worker: u32,
    /// How much longer it worked than the mean worker of the step.
    pub excess_s: f64,
}

/// A worker slower than its peers whatever it draws.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SlowWorker {
    pub rank: u32,
    /// Its compute relative to what its peers (or its data) take, in a typical step.
    pub factor: f64,
    /// Its host, where the traces name it.
    pub host: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Initiators {
    /// Fraction of steps led by the most frequent initiator (1 = always the same).
    pub dominance: f64,
    pub distinct: usize,
    /// The most frequent initiators: (rank, steps led), most first.
    pub top: Vec<(u32, usize)>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fix {
    pub summary: String,
    /// The cost function to balance, with the fitted coefficients.
    pub cost_function: Option<String>,
    pub algorithm: Option<String>,
    /// Where in the training stack the change goes.
    pub location: Option<String>,
    pub python: Option<String>,
    /// When rebalancing alone cannot fix it (one document outweighs a whole shard).
    pub limits: Option<String>,
}

/// The job's rank count, where the inputs say (`world_size`) it had more ranks than the
/// `loaded` ones.
pub fn larger_world(loaded: usize, world_size: Option<u32>) -> Option<u32> {
    world_size.filter(|&world| world as usize > loaded)
}

/// Why the time workers spend in collectives cannot be split into transfer and waiting, when
/// it cannot: of the job's ranks (`world_size`, when the traces say), fewer are loaded, or only
/// one is (a collective's transfer is its end minus its last rank's arrival, and an absent
/// rank's arrival is unknown). One rule, on what the report states, for the diagnosis and for
/// the report's wording.
pub fn peers_missing(loaded: usize, world_size: Option<u32>) -> Option<String> {
    match larger_world(loaded, world_size) {
        Some(world) => {
            Some(format!("only {loaded} of the job's {world} ranks {} loaded", if loaded == 1 { "is" } else { "are" }))
        }
        _ if loaded == 1 => Some("only one rank is loaded".into()),
        _ => None,
    }
}

/// Rounds to `digits` significant digits, so reports compare equal across platforms.
pub fn round(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return if x.is_finite() { 0.0 } else { x };
    }
    let magnitude = x.abs().log10().floor() as i32;
    let factor = 10f64.powi(digits - 1 - magnitude);
    (x * factor).round() / factor
}

impl Report {
    /// A report of logs and dumps only: no worker had steps, so no signal was measured and
    /// there is no straggler evidence to show.
    pub fn has_no_steps(&self) -> bool {
        self.job.workers == 0 && self.signals.is_empty()
    }

    /// Pretty JSON (the `--json` output).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// What went wrong with the inputs: each file's warnings and errors, then the job's, at most
    /// `limit` of them, and how many more there are. The reports and the page list these, so
    /// that a file the analysis could not use (or a copy it left out) is named where the
    /// verdict is read, not silently left out; the JSON report and `seqskew inspect` carry
    /// every one.
    pub fn problems(&self, limit: usize) -> (Vec<&Diagnostic>, usize) {
        let problems = self.inputs.iter().flat_map(|i| &i.diagnostics).chain(&self.job.diagnostics);
        let mut problems = problems.filter(|d| d.severity >= Severity::Warning);
        let listed = problems.by_ref().take(limit).collect();
        (listed, problems.count())
    }

    /// [`Report::problems`] as the Markdown and HTML reports list them: at most
    /// [`LISTED_PROBLEMS`], and a line saying how many more there are.
    pub(crate) fn problem_lines(&self) -> Vec<String> {
        let (listed, more) = self.problems(LISTED_PROBLEMS);
        let mut lines: Vec<String> = listed.into_iter().map(ToString::to_string).collect();
        if more > 0 {
            lines.push(format!("… and {more} more (`seqskew inspect` lists every one)"));
        }
        lines
    }

    /// Whether some of the job's ranks are not in the report's inputs (the job says it had more,
    /// or only one is loaded): the diagnosis's own rule ([`peers_missing`]) on the report's job.
    pub fn peers_missing(&self) -> bool {
        peers_missing(self.job.workers, self.job.world_size).is_some()
    }

    /// The job's rank count, where the inputs say it had more ranks than were loaded.
    fn larger_world(&self) -> Option<u32> {
        larger_world(self.job.workers, self.job.world_size)
    }

    /// The name of a share of the slowdown (`slowdown.by_cause`). With ranks missing, time in
    /// collectives beyond the typical transfer may as well be waiting for a rank not loaded: its
    /// share is named so, not "Communication" (which the verdict then does not claim either).
    pub fn share_title(&self, cause: &str) -> &'static str {
        match cause {
            "communication" if self.peers_missing() => "Collectives (transfer, or waiting for ranks not loaded)",
            // The share of compute that varies from step to step is the data's only where the
            // verdict found the data behind it.
            "sequence_length_imbalance" if !self.verdict_names(cause) => "Compute varying (not shown to be the data)",
            _ => cause_title(cause),
        }
    }

    /// Whether the verdict names `cause`, as its primary cause or a contributing one.
    fn verdict_names(&self, cause: &str) -> bool {
        self.verdict.primary == cause || self.verdict.contributing.iter().any(|c| c.cause == cause)
    }

    /// The summary's points, shared by the Markdown and HTML reports: `text` makes input-derived
    /// text safe for the format, `strong` emphasises.
    pub(crate) fn summary_points(&self, text: impl Fn(&str) -> String, strong: impl Fn(&str) -> String) -> Vec<String> {
        let s = &self.slowdown;
        let j = &self.job;
        // "1 of 8 ranks" where the traces name ranks that are missing.
        let workers = match self.larger_world() {
            Some(world) => format!("{} of {world} ranks", j.workers),
            None => crate::text::count(j.workers, "worker"),
        };
        let mut points = vec![
            format!(
                "Job: {workers} (dp {} × pp {}), {} steps, sequence lengths: {}",
                j.dp,
                j.pp,
                j.steps,
                text(&j.sequence_knowledge)
            ),
            format!(
                "Step time {:.3} s vs ideal {:.3} s: slowdown {}, {:.1} s lost over the analysed steps",
                s.actual_step_s,
                s.ideal_step_s,
                strong(&format!("S = {:.2}", s.factor)),
                s.time_lost_s
            ) + &s
                .median_ops_factor
                .map(|m| {
                    format!(" (S = {m:.2} with every op at its median across workers, as what-if tools compute it)")
                })
                .unwrap_or_default(),
        ];
        if !s.by_cause.is_empty() {
            let parts: Vec<String> =
                s.by_cause.iter().map(|c| format!("{} {:.0}%", self.share_title(&c.cause), c.share * 100.0)).collect();
            points.push(format!("Slowdown by cause: {}", parts.join(", ")));
        }
        if let Some((rank, steps)) = self.initiators.top.first() {
            points.push(format!(
                "Initiating worker: rank {rank} led {steps} of {} steps ({} distinct initiators)",
                self.stragglers.len(),
                self.initiators.distinct
            ));
        }
        points
    }

    /// Markdown for pasting in a wiki or an issue.
    pub fn to_markdown(&self) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        let v = &self.verdict;
        if let Some(failure) = &self.failure {
            o.push_str(&failure.markdown());
        }
        let _ = writeln!(o, "## seqskew: {}\n", cause_title(&v.primary));
        let _ = writeln!(o, "**{}** (confidence: {})\n", v.headline, v.confidence);
        if let Some(more) = &v.to_confirm {
            let _ = writeln!(o, "{more}\n");
        }
        // Logs and dumps only: no steps, so no job summary and no straggler evidence.
        let points =
            if self.has_no_steps() { Vec::new() } else { self.summary_points(str::to_owned, |t| format!("**{t}**")) };
        for point in points {
            let _ = writeln!(o, "- {point}");
        }
        let problems = self.problem_lines();
        if !problems.is_empty() {
            let _ = writeln!(o, "\n### Input problems\n");
            for line in problems {
                let _ = writeln!(o, "- {line}");
            }
        }
        if self.has_no_steps() {
            return o;
        }
        let _ = writeln!(o, "\n### Evidence\n\n| signal | value | threshold | | |\n|---|---|---|---|---|");
        for e in &self.signals {
            let mark = match (e.applicable, e.passed) {
                (false, _) => "n/a",
                (true, true) => "yes",
                (true, false) => "no",
            };
            let _ = writeln!(o, "| {} | {:.3} | {:.3} | {mark} | {} |", e.name, e.value, e.threshold, e.sentence);
        }
        if !self.whatif.is_empty() {
            let _ = writeln!(
                o,
                "\n### What if the batch were rebalanced?\n\n| method | predicted step | speedup | imbalance |\n|---|---|---|---|"
            );
            for w in &self.whatif {
                let _ = writeln!(
                    o,
                    "| {} | {:.3} s | {:.2}× | {:.2} |",
                    w.method, w.predicted_step_s, w.speedup, w.imbalance
                );
            }
        }
        let _ = writeln!(o, "\n### Fix\n\n{}", self.fix.summary);
        if let Some(c) = &self.fix.cost_function {
            let _ = writeln!(o, "\n- Cost: `{c}`");
        }
        if let Some(a) = &self.fix.algorithm {
            let _ = writeln!(o, "- Algorithm: {a}");
        }
        if let Some(l) = &self.fix.location {
            let _ = writeln!(o, "- Where: {l}");
        }
        if let Some(l) = &self.fix.limits {
            let _ = writeln!(o, "- Limits: {l}");
        }
        if let Some(p) = &self.fix.python {
            let _ = writeln!(o, "\n```python\n{p}```");
        }
        let _ = writeln!(o, "\n### Verify\n\n```sh\n{}\n```", self.verify_command);
        o
    }
}

/// The most input problems the Markdown and HTML reports list.
const LISTED_PROBLEMS: usize = 20;

/// A cause name as a title: "Sequence-length imbalance".
pub fn cause_title(cause: &str) -> &'static str {
    match cause {
        "sequence_length_imbalance" => "Sequence-length imbalance",
        "slow_worker" => "Slow worker",
        "pipeline_stage_imbalance" => "Pipeline stage imbalance",
        "communication" => "Communication",
        "host_stall" => "Host stalls",
        "balanced" => "Balanced",
        _ => "Inconclusive",
    }
}

/// A failure cause as a title: "Hang", "Out of memory".
pub fn failure_title(cause: &str) -> &'static str {
    match cause {
        "hang" => "Hang",
        "collective_mismatch" => "Collective mismatch",
        "crash" => "Crash",
        "oom" => "Out of memory",
        "killed" => "Killed",
        "network" => "Network failure",
        "slow_rank" => "Slow rank",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_and_html_name_the_inputs_that_went_wrong() {
        let clean = Report::default();
        assert!(!clean.to_markdown().contains("Input problems"));
        assert!(!clean.to_html().contains("Input problems"));

        let bad = |severity, file: &str, message: &str| Diagnostic::new(severity, file, None, message);
        let mut report = Report {
            inputs: vec![
                Input {
                    path: "a.json".into(),
                    diagnostics: vec![bad(Severity::Error, "a.json", "the file is empty (0 bytes)")],
                    ..Input::default()
                },
                Input {
                    path: "b.json".into(),
                    diagnostics: vec![bad(Severity::Info, "b.json", "clock shifted")],
                    ..Input::default()
                },
            ],
            job: JobInfo { workers: 2, ..JobInfo::default() },
            ..Report::default()
        };
        report.job.diagnostics = vec![bad(Severity::Warning, "", "rank 3 has no step 7")];
        let md = report.to_markdown();
        assert!(
            md.contains(
                "### Input problems\n\n- error: a.json: the file is empty (0 bytes)\n- warning: rank 3 has no step 7\n"
            ),
            "{md}"
        );
        assert!(!md.contains("clock shifted"), "information is not a problem");
        let html = report.to_html();
        assert!(
            html.contains("<h2>Input problems</h2>\n<ul>\n<li>error: a.json: the file is empty (0 bytes)</li>"),
            "{html}"
        );

        // A file with a thousand bad events does not bury the report.
        let many = (0..LISTED_PROBLEMS + 5).map(|k| bad(Severity::Warning, "c.json", &format!("event {k} <skipped>")));
        report.inputs = vec![Input { path: "c.json".into(), diagnostics: many.collect(), ..Input::default() }];
        report.job.diagnostics.clear();
        let lines = report.problem_lines();
        assert_eq!(lines.len(), LISTED_PROBLEMS + 1);
        assert_eq!(lines.last().map(String::as_str), Some("… and 5 more (`seqskew inspect` lists every one)"));
        assert!(report.to_html().contains("<li>warning: c.json: event 0 &lt;skipped&gt;</li>"));
    }

    /// What would make the verdict firmer is said under the headline, wherever the report goes.
    #[test]
    fn markdown_and_html_say_what_would_confirm_the_verdict() {
        let mut report = Report { job: JobInfo { workers: 2, ..JobInfo::default() }, ..Report::default() };
        report.verdict.headline = "No significant straggling.".into();
        assert!(!report.to_html().contains("<p class=\"to-confirm\">"));
        let plain = report.to_markdown();
        report.verdict.to_confirm = Some("Name each pass <Forward N> & <Backward N>.".into());
        let md = report.to_markdown();
        assert!(
            md.contains(
                "**No significant straggling.** (confidence: )\n\nName each pass <Forward N> & <Backward N>.\n\n- "
            ),
            "{md}"
        );
        assert_eq!(md.replace("Name each pass <Forward N> & <Backward N>.\n\n", ""), plain);
        let html = report.to_html();
        assert!(
            html.contains("(confidence: )</p>\n<p class=\"to-confirm\">Name each pass &lt;Forward N&gt; &amp; &lt;Backward N&gt;.</p>\n<ul>"),
            "{html}"
        );
    }

    #[test]
    fn a_share_in_collectives_is_not_called_communication_when_ranks_are_missing() {
        let mut report = Report::default();
        report.slowdown.by_cause = vec![CauseShare { cause: "communication".into(), share: 1.0 }];
        let summary = |r: &Report| r.summary_points(str::to_owned, str::to_owned).join("\n");
        report.job.workers = 8;
        assert_eq!(report.share_title("communication"), "Communication");
        assert!(summary(&report).contains("Slowdown by cause: Communication 100%"));
        for (workers, world_size) in [(1, None), (2, Some(128))] {
            report.job.workers = workers;
            report.job.world_size = world_size;
            assert!(report.peers_missing());
            assert_eq!(report.share_title("communication"), "Collectives (transfer, or waiting for ranks not loaded)");
            assert!(summary(&report).contains("Collectives (transfer, or waiting for ranks not loaded) 100%"));
            assert_eq!(report.share_title("host_stall"), "Host stalls");
        }
        report.job.world_size = Some(2);
        assert!(!report.peers_missing());
    }

    #[test]
    fn varying_compute_is_called_the_data_only_where_the_verdict_says_so() {
        let mut report = Report::default();
        report.verdict.primary = "pipeline_stage_imbalance".into();
        assert_eq!(report.share_title("sequence_length_imbalance"), "Compute varying (not shown to be the data)");
        report.verdict.contributing = vec![CauseShare { cause: "sequence_length_imbalance".into(), share: 0.3 }];
        assert_eq!(report.share_title("sequence_length_imbalance"), cause_title("sequence_length_imbalance"));
        report.verdict.contributing.clear();
        report.verdict.primary = "sequence_length_imbalance".into();
        assert_eq!(report.share_title("sequence_length_imbalance"), cause_title("sequence_length_imbalance"));
    }

    #[test]
    fn rounding_keeps_significant_digits() {
        assert_eq!(round(1.234_567_89, 4), 1.235);
        assert_eq!(round(0.000_123_456, 3), 0.000_123);
        assert_eq!(round(0.0, 3), 0.0);
        assert_eq!(round(98_765.0, 2), 99_000.0);
    }
}
