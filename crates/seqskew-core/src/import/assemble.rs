//! Many files make one job: workers merged by rank, clocks aligned across files, and
//! duplicates, missing ranks and mismatched step ranges reported rather than fatal.

use std::collections::BTreeMap;

use super::file_import::FileImport;
use crate::diag::{Diagnostic, Severity};
use crate::model::{Job, Nanos, Worker};

/// The job and what was found while putting it together.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Assembled {
    pub job: Job,
    /// Job-level findings (file-level ones stay with their [`FileImport`]).
    pub diagnostics: Vec<Diagnostic>,
    /// What the files' logs and dumps say about a failure, in file order.
    pub failures: Vec<crate::failure::evidence::FileEvidence>,
}

/// Moves every time of a worker by `delta` nanoseconds.
pub fn shift_worker(worker: &mut Worker, delta: Nanos) {
    if delta == 0 {
        return;
    }
    for step in &mut worker.steps {
        step.start = step.start.saturating_add(delta);
        for span in &mut step.spans {
            span.start = span.start.saturating_add(delta);
        }
    }
    for c in &mut worker.collectives {
        c.start = c.start.saturating_add(delta);
        c.end = c.end.saturating_add(delta);
    }
    for mb in &mut worker.micro_batches {
        mb.start = mb.start.map(|s| s.saturating_add(delta));
    }
}

/// Merges the files' workers into one job (copying them; see [`assemble_owned`]).
pub fn assemble(files: &[FileImport]) -> Assembled {
    let mut assembled = assemble_workers(files.iter().flat_map(|f| f.workers.iter().cloned()));
    assembled.failures = files.iter().filter_map(|f| f.failure.clone()).collect();
    assembled
}

/// [`assemble`], moving the workers out of the files instead of copying them: the browser's
/// memory never shrinks, so a copy of every worker would raise its peak for good.
pub fn assemble_owned(files: Vec<FileImport>) -> Assembled {
    let mut failures = Vec::new();
    let mut assembled = assemble_workers(files.into_iter().flat_map(|f| {
        failures.extend(f.failure);
        f.workers
    }));
    assembled.failures = failures;
    assembled
}

fn assemble_workers(all: impl Iterator<Item = Worker>) -> Assembled {
    let mut diagnostics = Vec::new();
    let mut by_rank: BTreeMap<u32, Worker> = BTreeMap::new();
    let mut unranked: Vec<Worker> = Vec::new();
    let mut twice: Vec<u64> = Vec::new();
    for worker in all {
        if worker.steps.is_empty() {
            continue;
        }
        if worker.rank == u32::MAX {
            unranked.push(worker);
            continue;
        }
        match by_rank.get_mut(&worker.rank) {
            Some(kept) => {
                twice.push(u64::from(worker.rank));
                diagnostics.push(keep_fuller(kept, worker));
            }
            None => {
                by_rank.insert(worker.rank, worker);
            }
        }
    }
    if let Some(warning) = several_runs(twice) {
        diagnostics.push(warning);
    }
    let mut next_free = 0u32;
    for mut worker in unranked {
        while by_rank.contains_key(&next_free) {
            next_free += 1;
        }
        diagnostics.push(Diagnostic::new(
            Severity::Warning,
            &worker.source,
            None,
            format!("its rank is unknown; treated as rank {next_free}"),
        ));
        worker.rank = next_free;
        by_rank.insert(next_free, worker);
    }
    let mut workers: Vec<Worker> = by_rank.into_values().collect();
    diagnostics.extend(infer_pipeline_stages(&mut workers));
    align_clocks(&mut workers, &mut diagnostics);
    let mut job = Job { workers };
    // A collective's transfer is its end less its last participant's arrival. With ranks of
    // the job not loaded (one shard of a scale-out summary, a sample of ranks), the last to
    // arrive may be one of those, and waiting for it would be counted as transfer: the
    // analysis then estimates transfer itself, as for a step log without `transfer_s`.
    if job.missing_ranks().is_empty() {
        measure_transfers(&mut job.workers);
    }
    report_step_mismatches(&job.workers, &mut diagnostics);
    diagnostics.extend(missing_ranks(&job));
    diagnostics.sort();
    Assembled { job, diagnostics, failures: Vec::new() }
}

/// Gives workers whose input names their pipeline's ranks but no stage (Kineto traces) their
/// place in it as their stage, when the pipelines make one layout: no worker has a stage of its
/// own, every worker names a pipeline holding its rank, all of one size, and each loaded member
/// of a pipeline names the same one. Otherwise (say, neighbour pairs) says why none is given.
fn infer_pipeline_stages(workers: &mut [Worker]) -> Option<Diagnostic> {
    if workers.iter().all(|w| w.pipeline_group.is_empty()) {
        return None;
    }
    let size = workers.first().map_or(0, |w| w.pipeline_group.len());
    let named: BTreeMap<u32, &[u32]> = workers.iter().map(|w| (w.rank, w.pipeline_group.as_slice())).collect();
    let one_layout = workers.iter().all(|w| {
        let group = w.pipeline_group.as_slice();
        w.coords.pp.is_none()
            && group.len() == size
            && group.contains(&w.rank)
            && group.iter().all(|r| named.get(r).is_none_or(|other| *other == group))
    });
    if !one_layout {
        return Some(Diagnostic::new(
            Severity::Info,
            "",
            None,
            "the traces' send/recv groups do not make one pipeline layout; pipeline stages were not inferred",
        ));
    }
    for w in workers.iter_mut() {
        let stage = w.pipeline_group.iter().position(|&r| r == w.rank);
        w.coords.pp = stage.and_then(|p| u32::try_from(p).ok());
    }
    None
}

/// When the traces say the job had more ranks than were loaded (one rank's trace, or a
/// sample of ranks), names those missing: the time the loaded ranks spent in collectives may
/// be waiting for them.
fn missing_ranks(job: &Job) -> Option<Diagnostic> {
    let world = job.world_size()?;
    let missing: Vec<u64> = job.missing_ranks().into_iter().map(u64::from).collect();
    if missing.is_empty() {
        return None;
    }
    // In rank order, as assembled.
    let loaded: Vec<u64> = job.workers.iter().map(|w| u64::from(w.rank)).collect();
    // "rank 3 is" or "ranks 0-2 are".
    let ranks = |r: &[u64]| {
        let (noun, verb) = if r.len() == 1 { ("rank", "is") } else { ("ranks", "are") };
        format!("{noun} {} {verb}", crate::text::compact_ranges(r))
    };
    Some(Diagnostic::new(
        Severity::Warning,
        "",
        None,
        format!(
            "the traces come from a job of {world} ranks, and only {} here: {} missing, so time in \
             collectives cannot be told apart from waiting for them; add every rank's trace for the \
             full diagnosis",
            ranks(&loaded),
            ranks(&missing)
        ),
    ))
}

/// Of two copies of one rank, keeps in `kept` the one with more steps (a file cut short by a
/// killed job, beside a complete copy, must not hide it); on a tie, the one already kept, which
/// came first. Returns the warning naming the ignored copy.
fn keep_fuller(kept: &mut Worker, other: Worker) -> Diagnostic {
    let ignored = if other.steps.len() > kept.steps.len() { std::mem::replace(kept, other) } else { other };
    let more = if ignored.steps.len() < kept.steps.len() {
        format!(", which has more steps ({} against {})", kept.steps.len(), ignored.steps.len())
    } else {
        String::new()
    };
    // The page knows dropped files by name alone: two folders' copies may share one.
    let kept_in = if ignored.source == kept.source { "another file of that name" } else { kept.source.as_str() };
    Diagnostic::new(
        Severity::Warning,
        &ignored.source,
        None,
        format!("rank {} is also in {kept_in}{more}; this copy was ignored", ignored.rank),
    )
}

/// When several ranks are in more than one file, the likeliest reason is two runs put together
/// (a before and an after dropped at once): says so once, for the job, beside each copy's warning.
fn several_runs(mut ranks: Vec<u64>) -> Option<Diagnostic> {
    ranks.sort_unstable();
    ranks.dedup();
    (ranks.len() >= 2).then(|| {
        Diagnostic::new(
            Severity::Warning,
            "",
            None,
            format!(
                "{} ranks ({}) are each in more than one file; if the files hold several runs, \
                 analyse each run alone, or compare two (`seqskew compare BEFORE AFTER`, or \
                 Compare with… on the page)",
                ranks.len(),
                crate::text::compact_ranges(&ranks)
            ),
        )
    })
}

/// When a worker-step ends on every rank at once (all leave the step's last collective
/// together), the end of its last collective, else the step's end, is the anchor.
fn anchor(worker: &Worker, step: &crate::model::WorkerStep) -> Nanos {
    worker.collectives_of(step).iter().map(|c| c.end).max().unwrap_or(step.start + step.duration)
}

/// Aligns the clocks of workers from different files on different (or unknown) hosts to the
/// first worker's clock, by the median difference of their step anchors.
fn align_clocks(workers: &mut [Worker], diagnostics: &mut Vec<Diagnostic>) {
    let Some((reference, rest)) = workers.split_first_mut() else {
        return;
    };
    let ref_anchors: BTreeMap<u64, Nanos> = reference.steps.iter().map(|s| (s.step, anchor(reference, s))).collect();
    let ref_step_len = median(reference.steps.iter().map(|s| s.duration).collect()).unwrap_or(0);
    let mut largest: Nanos = 0;
    for worker in rest {
        let same_clock = worker.source == reference.source || (worker.host.is_some() && worker.host == reference.host);
        if same_clock {
            continue;
        }
        let diffs: Vec<Nanos> =
            worker.steps.iter().filter_map(|s| ref_anchors.get(&s.step).map(|&a| a - anchor(worker, s))).collect();
        let Some(offset) = median(diffs) else {
            continue;
        };
        // Offsets within a step's length are noise on a shared clock; beyond that, another clock.
        if offset.abs() > ref_step_len / 2 {
            shift_worker(worker, offset);
            largest = largest.max(offset.abs());
        }
    }
    if largest > 0 {
        diagnostics.push(Diagnostic::new(
            Severity::Info,
            "",
            None,
            format!(
                "clocks of different files were aligned on step ends (largest shift {:.3} s)",
                largest as f64 / 1e9
            ),
        ));
    }
}

fn median(mut v: Vec<Nanos>) -> Option<Nanos> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// One worker's call of a collective: (worker index, step index, start, end).
type Call = (usize, usize, Nanos, Nanos);

/// Splits collective time into transfer and waiting, where collectives carry timestamps (on
/// aligned clocks). Everyone in a collective leaves it at about the same moment, so the k-th
/// collectives of a step that end together are one collective; its transfer is its end minus
/// the last participant's start. Pipeline send/recv is left out: the replay schedules it.
pub fn measure_transfers(workers: &mut [Worker]) {
    use std::collections::HashMap;
    // step → ordinal → calls
    let mut by_step: BTreeMap<u64, Vec<Vec<Call>>> = BTreeMap::new();
    let mut durations: HashMap<u64, Vec<Nanos>> = HashMap::new();
    for (wi, w) in workers.iter().enumerate() {
        for (si, s) in w.steps.iter().enumerate() {
            if s.transfer.is_some() {
                continue;
            }
            durations.entry(s.step).or_default().push(s.duration);
            let own = w.collectives_of(s).iter().filter(|c| !c.op.is_point_to_point());
            let ordinals = by_step.entry(s.step).or_default();
            for (k, c) in own.enumerate() {
                if ordinals.len() <= k {
                    ordinals.resize(k + 1, Vec::new());
                }
                if let Some(list) = ordinals.get_mut(k) {
                    list.push((wi, si, c.start, c.end));
                }
            }
        }
    }
    for (step, ordinals) in by_step {
        let mut d = durations.remove(&step).unwrap_or_default();
        d.sort_unstable();
        let tolerance = (d.get(d.len() / 2).copied().unwrap_or(0) / 500).max(100_000);
        let mut found: HashMap<(usize, usize), Nanos> = HashMap::new();
        for mut list in ordinals {
            list.sort_by_key(|&(_, _, _, end)| end);
            let mut i = 0;
            while i < list.len() {
                let mut j = i + 1;
                while list.get(j).zip(list.get(j - 1)).is_some_and(|(a, b)| a.3 - b.3 <= tolerance) {
                    j += 1;
                }
                let group = list.get(i..j).unwrap_or_default();
                // A collective seen from one worker only (one rank's file, summarised alone)
                // cannot tell its transfer from its waiting: leave it unmeasured.
                if group.len() >= 2 {
                    let end = group.iter().map(|g| g.3).max().unwrap_or(0);
                    let last_start = group.iter().map(|g| g.2).max().unwrap_or(end);
                    for &(wi, si, _, _) in group {
                        *found.entry((wi, si)).or_default() += (end - last_start).max(0);
                    }
                }
                i = j;
            }
        }
        for ((wi, si), t) in found {
            if let Some(s) = workers.get_mut(wi).and_then(|w| w.steps.get_mut(si)) {
                s.transfer = Some(t);
            }
        }
    }
}

/// Steps some workers have and others lack.
fn report_step_mismatches(workers: &[Worker], diagnostics: &mut Vec<Diagnostic>) {
    let mut all: Vec<u64> = workers.iter().flat_map(|w| w.steps.iter().map(|s| s.step)).collect();
    all.sort_unstable();
    all.dedup();
    for w in workers {
        if w.steps.len() == all.len() {
            continue;
        }
        let have: std::collections::BTreeSet<u64> = w.steps.iter().map(|s| s.step).collect();
        let missing: Vec<u64> = all.iter().copied().filter(|s| !have.contains(s)).collect();
        diagnostics.push(Diagnostic::new(
            Severity::Warning,
            &w.source,
            None,
            format!(
                "rank {} lacks {} of the job's {} steps ({}); those steps are analysed without it",
                w.rank,
                missing.len(),
                all.len(),
                crate::text::compact_ranges(&missing)
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::WorkerStep;

    fn worker(rank: u32, source: &str, steps: &[(u64, Nanos)]) -> Worker {
        Worker {
            rank,
            source: source.to_owned(),
            steps: steps
                .iter()
                .map(|&(step, start)| WorkerStep { step, start, duration: 100, ..WorkerStep::default() })
                .collect(),
            ..Worker::default()
        }
    }

    fn file(workers: Vec<Worker>) -> FileImport {
        FileImport { workers, ..FileImport::default() }
    }

    #[test]
    fn merges_reports_duplicates_and_assigns_unknown_ranks() {
        let a = file(vec![worker(1, "a", &[(1, 0)]), worker(u32::MAX, "c", &[(1, 0)])]);
        let b = file(vec![worker(1, "b", &[(1, 0)]), worker(0, "b", &[(1, 0)])]);
        let out = assemble(&[a.clone(), b.clone()]);
        assert_eq!(assemble_owned(vec![a, b]), out, "moving the workers changes nothing");
        let ranks: Vec<(u32, &str)> = out.job.workers.iter().map(|w| (w.rank, w.source.as_str())).collect();
        assert_eq!(ranks, vec![(0, "b"), (1, "a"), (2, "c")]);
        let messages: Vec<&str> = out.diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert!(messages.iter().any(|m| m.contains("rank 1 is also in a")), "{messages:?}");
        assert!(messages.iter().any(|m| m.contains("treated as rank 2")), "{messages:?}");
        assert!(!messages.iter().any(|m| m.contains("several runs")), "one rank twice is one stray file: {messages:?}");
    }

    #[test]
    fn two_runs_put_together_are_named_once_for_the_job() {
        let run = |dir: &str| file((0..3).map(|r| worker(r, &format!("{dir}/rank{r}"), &[(1, 0)])).collect());
        let out = assemble(&[run("before"), run("after")]);
        let kept: Vec<&str> = out.job.workers.iter().map(|w| w.source.as_str()).collect();
        assert_eq!(kept, vec!["before/rank0", "before/rank1", "before/rank2"]);
        let job: Vec<&Diagnostic> = out.diagnostics.iter().filter(|d| d.file.is_empty()).collect();
        assert_eq!(job.len(), 1, "{:?}", out.diagnostics);
        assert_eq!(job[0].severity, Severity::Warning);
        assert!(job[0].message.starts_with("3 ranks (0-2) are each in more than one file"), "{}", job[0].message);
        assert_eq!(out.diagnostics.iter().filter(|d| d.message.contains("this copy was ignored")).count(), 3);
    }

    #[test]
    fn copies_of_one_name_are_told_apart_in_words() {
        // Files picked on the page are known by name alone.
        let out =
            assemble(&[file(vec![worker(0, "rank0.json", &[(1, 0)])]), file(vec![worker(0, "rank0.json", &[(1, 0)])])]);
        let messages: Vec<&str> = out.diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(messages, vec!["rank 0 is also in another file of that name; this copy was ignored"]);
    }

    #[test]
    fn aligns_other_clocks_and_reports_missing_steps() {
        use crate::model::{Collective, CollectiveOp, MicroBatch};
        let a = file(vec![worker(0, "a", &[(1, 0), (2, 100), (3, 200)])]);
        // Worker b's first step has a micro-batch and a collective, which move with it.
        let mut b = worker(1, "b", &[(3, 5_000_200)]);
        let first = WorkerStep { step: 1, start: 5_000_000, duration: 100, ..WorkerStep::default() };
        let mb = MicroBatch { start: Some(5_000_010), ..MicroBatch::default() };
        let call = Collective { start: 5_000_050, end: 5_000_100, op: CollectiveOp::AllReduce };
        let later = std::mem::take(&mut b.steps);
        b = b.with_steps([(first, vec![mb], vec![call])]);
        b.steps.extend(later);
        let out = assemble(&[a, file(vec![b])]);
        let b = &out.job.workers[1];
        let b_steps: Vec<Nanos> = b.steps.iter().map(|s| s.start).collect();
        assert_eq!(b_steps, vec![0, 200]);
        let (mbs, calls) = (b.micro_batches_of(&b.steps[0]), b.collectives_of(&b.steps[0]));
        assert_eq!((mbs[0].start, calls[0].start, calls[0].end), (Some(10), 50, 100));
        let messages: Vec<&str> = out.diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert!(messages.iter().any(|m| m.contains("lacks 1 of the job's 3 steps (2)")), "{messages:?}");
        assert!(messages.iter().any(|m| m.contains("aligned")), "{messages:?}");
    }
}
