//! From slowdown shares and signals to a verdict, and from the verdict to the fix.

use super::costmodel::Fit;
use super::whatif::WhatIfs;
use crate::report::{CauseShare, Fix, Signal, Verdict, round};

/// Below this slowdown a job is not straggling (the bound `seqskew check` uses by default).
pub const STRAGGLING: f64 = 1.10;

/// The restorations' shares of the slowdown, in the order (stage, worker, residual compute,
/// residual stalls, transfers).
pub const RESTORATIONS: [&str; 5] =
    ["pipeline_stage_imbalance", "slow_worker", "sequence_length_imbalance", "host_stall", "communication"];

/// Where communication is in [`RESTORATIONS`].
const COMMUNICATION: usize = 4;

/// What the verdict needs to know beyond the signals.
pub struct Facts<'a> {
    pub slowdown: f64,
    pub shares: [f64; 5],
    pub signals: &'a [Signal],
    pub lengths_known: bool,
    pub stages: usize,
    /// The most frequent initiator's label and how often it led.
    pub top_initiator: Option<(String, f64)>,
    pub distinct_initiators: usize,
    /// The slowest worker's persistent factor and label.
    pub slowest_worker: Option<(String, f64)>,
    /// Where two or more workers are persistently slow: them in words
    /// ([`super::slow_workers::describe`]) and the share of steps one of them led.
    pub slow_workers: Option<(String, f64)>,
    pub heaviest_stage: Option<(usize, f64)>,
    /// Where its ranks ran several stages of the pipeline, the heaviest stage's model chunks:
    /// each one's pipeline stage and its share of the stage's compute (empty otherwise).
    pub heaviest_stage_chunks: Vec<(usize, f64)>,
    pub fit: Option<&'a Fit>,
    pub whatifs: &'a WhatIfs,
    /// Why time in collectives cannot be split into transfer and waiting, when it cannot
    /// ([`super::peers_missing`]).
    pub peers_missing: Option<&'a str>,
    /// When the job is a pipeline whose traces name no micro-batches (so each stage is replayed
    /// as one pass a step): the share of the measured step the replay reproduces.
    pub unseen_micro_batches: Option<f64>,
    /// Where the ranks ran several pipeline stages in a placement the replay does not know
    /// ([`super::pipeline_order::Order::unknown_placement`]): how much of the measured step the
    /// replay reproduces.
    pub unknown_placement: Option<f64>,
    /// The traces say the job had more ranks than were loaded (`world_size`): one of those may
    /// be the rank the loaded ones wait for.
    pub ranks_not_loaded: bool,
    /// Where every slot's data has a predicted cost: of the time two replays add over the ideal
    /// run, one with each slot's compute as its data predicts and one with the measured compute
    /// over that prediction (what varies that the data does not explain), each alone
    /// ([`super::replay::Gains`]), the first's part. Below a half, what differs between the
    /// ranks' compute is mostly not what they drew.
    pub data_explains: Option<f64>,
    /// The time the second of those replays adds, relative to the shares' total (which count
    /// the data's part, not the rest of the compute variation): 0 without predictions.
    pub unexplained_compute: f64,
}

/// Signal `id`, where it applies and passed.
fn passing<'a>(signals: &'a [Signal], id: &str) -> Option<&'a Signal> {
    signals.iter().find(|s| s.id == id && s.applicable && s.passed)
}

fn passed(signals: &[Signal], id: &str) -> bool {
    passing(signals, id).is_some()
}

/// The share of the initiating workers' excess that was idle time with nothing running, when
/// the host-stall signal passed.
fn idle_share(signals: &[Signal]) -> Option<f64> {
    passing(signals, "host_stalls").map(|s| s.value)
}

/// A persistently slow worker whose excess is at least this share idle time is slow by its host
/// (its GC, its data loading, what else runs there), not by its GPU.
const MOSTLY_IDLE: f64 = 0.5;

/// The sequence-length explanation of the residual compute is supported by the evidence.
fn sequence_evidence(f: &Facts<'_>) -> (bool, bool) {
    let s = f.signals;
    if f.lengths_known {
        // The data is to blame only if it costs at least as much time as what else varies the
        // ranks' compute (a router's hot expert, say, costs time no length shows): as the
        // replays measure it, or, where no fit predicts the data's costs well enough for every
        // slot, as far as the cost model explains each worker's compute.
        let explains = match f.data_explains {
            Some(x) => x >= 0.5,
            None => passed(s, "compute_tracks_cost"),
        };
        let direct = explains
            && (passed(s, "max_vs_mean") || passed(s, "compute_tracks_cost") || passed(s, "attention_on_longest"));
        let strong = passed(s, "compute_tracks_cost") && (passed(s, "max_vs_mean") || passed(s, "rotation"));
        (direct, strong)
    } else {
        // Micro-batches that differ far beyond noise point at the data by themselves; otherwise
        // the straggler must move from step to step and compute must be what differs.
        let timing = passed(s, "attention_on_longest")
            || passed(s, "rotation") && (passed(s, "max_vs_mean") || passed(s, "compute_tracks_cost"));
        (timing, false)
    }
}

/// The balancer the fix recommends (Karmarkar–Karp when it beats longest-first greedy on this
/// job) and the share of step time it would save, when the what-ifs could be computed.
fn recommended(f: &Facts<'_>) -> (&'static str, Option<f64>) {
    let p = &f.whatifs.predictions;
    let total = |m: &str| p.iter().find(|x| x.method == m).map(|x| x.total);
    let method = match (total("karmarkar_karp"), total("lpt")) {
        (Some(k), Some(l)) if k < l * 0.995 => "karmarkar_karp",
        _ => "lpt",
    };
    let saving = match (total("current"), total(method)) {
        (Some(c), Some(m)) if c > 0.0 => Some(1.0 - m / c),
        _ => None,
    };
    (method, saving)
}

/// The verdict, and what it cannot see. Ranks that are not loaded may be the ones the others
/// wait for (a rank persistently slow makes the others wait alike in every step, which looks like
/// ordinary time in collectives); and a pipeline replayed one pass per stage and step cannot tell
/// whether its micro-batches were even, which is where sequence-length imbalance shows in a
/// pipeline. "Balanced" then says only that nothing was found among what was seen, so it is not
/// held with confidence; every verdict on such a pipeline says how to make its micro-batches seen.
pub fn decide(f: &Facts<'_>) -> Verdict {
    let mut verdict = decide_by_evidence(f);
    if let (true, Some(why)) = (f.ranks_not_loaded && verdict.primary == "balanced", f.peers_missing) {
        verdict.confidence = "low".into();
        verdict.to_confirm = Some(format!(
            "Straggling was looked for among the loaded ranks alone ({why}): a rank that is not here may be the one the others wait for. Analyse every rank's trace together."
        ));
    }
    // What the replay could not see: a balanced verdict is then only a low-confidence one.
    let caveats = [f.unseen_micro_batches.map(name_the_micro_batches), f.unknown_placement.map(unknown_placement)];
    for advice in caveats.into_iter().flatten() {
        if verdict.primary == "balanced" {
            verdict.confidence = "low".into();
        }
        verdict.to_confirm = Some(match verdict.to_confirm.take() {
            Some(first) => format!("{first} {advice}"),
            None => advice,
        });
    }
    verdict
}

fn unknown_placement(reproduced: f64) -> String {
    format!(
        "Each rank ran several pipeline stages, placed otherwise than interleaved 1F1B places them (rank r of P holding stages r, r + P, …), such as in a V-shape, as ScheduleZBVZeroBubble and DualPipeV place them. The replay knows no such schedule and runs each rank as one stage in 1F1B order, its stages' passes summed (it reproduces {:.0}% of the measured step): the slowdown and its shares are approximate.",
        reproduced * 100.0
    )
}

/// What would show a pipeline's micro-batches, whose traces name none.
fn name_the_micro_batches(reproduced: f64) -> String {
    format!(
        "The traces name no micro-batches, so each pipeline stage is replayed as one pass a step (the replay reproduces {:.0}% of the measured step), and uneven micro-batches inside the pipeline, which is how sequence-length imbalance shows there, cannot be seen. To see them, name each pass: record_function(\"Forward N\") and record_function(\"Backward N\") around each micro-batch's forward and backward, as torch.distributed.pipelining does, or write a step log with a row per micro-batch (docs/formats.md).",
        reproduced * 100.0
    )
}

fn decide_by_evidence(f: &Facts<'_>) -> Verdict {
    let s = f.slowdown;
    let evidence: Vec<Signal> = f.signals.to_vec();
    if s < STRAGGLING {
        return Verdict {
            primary: "balanced".into(),
            contributing: Vec::new(),
            confidence: if s < 1.05 { "high" } else { "medium" }.into(),
            headline: format!(
                "No significant straggling: steps take {s:.2}× the ideal step (below the {STRAGGLING:.2} bound)."
            ),
            evidence,
            to_confirm: None,
        };
    }
    let (seq_supported, seq_strong) = sequence_evidence(f);
    let mut ranked: Vec<(usize, f64)> =
        f.shares.iter().copied().enumerate().filter(|&(i, _)| i != 0 || f.stages > 1).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    // Compute that varies from step to step without anything pointing at the data is noise: it
    // is no cause, and the next largest cause (if it is large enough) is the answer.
    if !seq_supported {
        let residual = ranked.iter().position(|&(i, _)| i == 2).map(|p| ranked.remove(p));
        // Large against all the time lost, the compute variation the data do not explain too.
        let next_is_large = ranked.first().is_some_and(|&(_, sh)| sh / (1.0 + f.unexplained_compute) >= 0.3);
        if !next_is_large && residual.is_some_and(|r| r.1 > 0.0) {
            let explained = f.data_explains.filter(|&x| x < 0.5).map(|x| {
                format!(
                    " (their predicted costs account for {:.0}% of the time the ranks' differing compute costs)",
                    x.max(0.0) * 100.0
                )
            });
            let why = if f.lengths_known {
                &format!(
                    "compute varies from step to step, but not with the sequences the workers drew{}",
                    explained.unwrap_or_default()
                )
            } else {
                "compute varies from step to step, but without sequence lengths the timing alone does not point at the data"
            };
            let mut v = inconclusive(s, evidence, why);
            v.to_confirm = Some(confirm_text(f.lengths_known));
            return v;
        }
    }
    let Some(&(top, share)) = ranked.first().filter(|r| r.1 > 0.0) else {
        return inconclusive(s, evidence, "the replay found no part of the step to blame");
    };
    // Collectives that take long, seen from some of their ranks only, may be waiting for the
    // others: no verdict of slow communication (nor any other) from them.
    if let (COMMUNICATION, Some(why)) = (top, f.peers_missing) {
        let mut v = inconclusive(
            s,
            evidence,
            &format!(
                "the time is in collectives, and {why}, so slow transfers cannot be told apart from waiting for a rank that is not here"
            ),
        );
        v.to_confirm = Some(
            "Analyse every rank's trace together, so that each collective's transfer is told apart from waiting for its last rank.".into(),
        );
        return v;
    }
    let primary = RESTORATIONS.get(top).copied().unwrap_or("inconclusive").to_owned();
    let contributing: Vec<CauseShare> = ranked
        .iter()
        .skip(1)
        .filter(|&&(i, sh)| {
            sh >= 0.15 && (i != 2 || seq_supported) && (i != COMMUNICATION || f.peers_missing.is_none())
        })
        .map(|&(i, sh)| CauseShare {
            cause: RESTORATIONS.get(i).copied().unwrap_or("inconclusive").to_owned(),
            share: round(sh, 3),
        })
        .collect();
    let mut confidence = if share >= 0.6 {
        2
    } else if share >= 0.4 {
        1
    } else {
        0
    };
    let mut to_confirm = None;
    match top {
        2 if !f.lengths_known => {
            confidence = confidence.min(1);
            to_confirm = Some(confirm_text(false));
        }
        2 if !seq_strong => confidence = confidence.min(1),
        // Several ranks always slower, with no lengths to say what they drew: ranks always handed
        // the heaviest data would look the same.
        1 if !f.lengths_known && f.slow_workers.is_some() => {
            confidence = confidence.min(1);
            to_confirm = Some(SLOW_WITHOUT_LENGTHS.into());
        }
        1 if !f.top_initiator.as_ref().is_some_and(|t| t.1 >= 0.5)
            && !f.slow_workers.as_ref().is_some_and(|w| w.1 >= 0.5) =>
        {
            confidence = confidence.min(1);
        }
        0 if !passed(f.signals, "stage_band") => confidence = confidence.min(1),
        4 if !passed(f.signals, "communication_bound") => confidence = confidence.min(1),
        3 if !passed(f.signals, "host_stalls") => confidence = confidence.min(1),
        _ => {}
    }
    let headline = headline(top, f, s);
    Verdict {
        primary,
        contributing,
        confidence: ["low", "medium", "high"].get(confidence).copied().unwrap_or("low").into(),
        headline,
        evidence,
        to_confirm,
    }
}

/// What would tell several slow workers from data always dealt to the same ranks.
const SLOW_WITHOUT_LENGTHS: &str = "Without sequence lengths, ranks that were always handed the heaviest data would look the same as slow hardware: record the lengths each rank computed on (record_function(\"seqlens=...\") per micro-batch, or a step log, docs/formats.md) to confirm it is the hardware.";

fn confirm_text(lengths_known: bool) -> String {
    if lengths_known {
        "Something other than the recorded lengths decides how much each rank computes in a step. A mixture-of-experts router that sends more tokens to the experts one rank holds does this (check the tokens each expert received, step by step: the busiest rank should hold the busiest expert); so do inputs of other shapes (images, generated outputs of varying length), and lengths recorded before packing (check that they are the ones each rank computed on, or write a step log with each micro-batch's lengths, docs/formats.md).".into()
    } else {
        "Record sequence lengths to confirm: profile with record_shapes=True, add record_function(\"seqlens=...\") per micro-batch, or write a step log (docs/formats.md). From timing alone, a mixture-of-experts router whose busiest expert moves from rank to rank looks the same; the lengths tell them apart.".into()
    }
}

fn inconclusive(s: f64, evidence: Vec<Signal>, why: &str) -> Verdict {
    Verdict {
        primary: "inconclusive".into(),
        contributing: Vec::new(),
        confidence: "low".into(),
        headline: format!("Steps take {s:.2}× the ideal step, but the evidence does not single out a cause: {why}."),
        evidence,
        to_confirm: None,
    }
}

fn headline(top: usize, f: &Facts<'_>, s: f64) -> String {
    match top {
        2 => {
            let saving = match recommended(f) {
                (m, Some(x)) if x >= 0.01 => {
                    format!(
                        " Dealing each batch by cost ({}) would cut step time by about {:.0}%.",
                        method_title(m),
                        x * 100.0
                    )
                }
                (_, Some(_)) => " Rebalancing by cost would win little here: see the limits of the fix.".into(),
                (_, None) => " Balancing batches by a·L + b·L² across ranks should recover most of it.".into(),
            };
            format!(
                "Sequence-length imbalance: steps take {s:.2}× the ideal because whichever rank draws the longest documents sets the pace ({} different ranks led).{saving}",
                f.distinct_initiators
            )
        }
        1 => match (&f.slow_workers, &f.slowest_worker) {
            (Some((named, led)), Some((_, factor))) => format!(
                "Slow workers: {named} are persistently slower than their peers (the slowest works {factor:.2}× as long in a typical step) and one of them leads {:.0}% of steps; steps take {s:.2}× the ideal.",
                led * 100.0
            ),
            _ => slow_worker_headline(f, s),
        },
        0 => match f.heaviest_stage {
            Some((p, g)) => format!(
                "Pipeline stage imbalance: stage {p} does {g:.2}× the mean stage's work, and the pipeline waits for it; steps take {s:.2}× the ideal."
            ),
            None => format!("Pipeline stage imbalance: steps take {s:.2}× the ideal."),
        },
        3 => format!(
            "Host stalls: idle gaps with nothing running (GC, data loading) on the initiating workers make steps take {s:.2}× the ideal."
        ),
        _ => format!("Communication: collective transfers vary and stretch steps to {s:.2}× the ideal."),
    }
}

/// What to do about one slow worker: its host when its excess is mostly idle, else its GPU.
fn one_slow_worker_fix(f: &Facts<'_>) -> Fix {
    let worker = f.slowest_worker.as_ref().map_or("the persistent initiator", |w| w.0.as_str());
    let look = match idle_share(f.signals).filter(|&idle| idle >= MOSTLY_IDLE) {
        Some(idle) => format!(
            "Find out why {worker}'s host stalls: {:.0}% of its excess is idle time with nothing running, so its GPU is not what is slow. Look at that host: Python's garbage collector (gc.freeze(), gc.disable(), gc.collect() at fixed steps on every rank together), its data loader (more workers, pinned memory, prefetching), CPU contention and other processes.",
            idle * 100.0
        ),
        None => format!(
            "Find out why {worker} is slow: check its GPU (clocks and thermal throttling, ECC errors, NVLink/PCIe width) and its host (CPU contention, other processes, data loading); drain or replace it if it stays slow."
        ),
    };
    Fix { summary: format!("{look} Rebalancing data will not help: it is slow whatever it draws."), ..Fix::default() }
}

/// One slow worker's headline.
fn slow_worker_headline(f: &Facts<'_>, s: f64) -> String {
    match (&f.slowest_worker, &f.top_initiator) {
        (Some((label, factor)), Some((_, led))) => {
            let idle = idle_share(f.signals)
                .map(|x| format!(", {:.0}% of its excess idle with nothing running,", x * 100.0))
                .unwrap_or_default();
            format!(
                "Slow worker: {label} works {factor:.2}× as long as its peers in a typical step{idle} and leads {:.0}% of steps; steps take {s:.2}× the ideal.",
                led * 100.0
            )
        }
        _ => format!("Slow worker: one worker is persistently slower than its peers; steps take {s:.2}× the ideal."),
    }
}

fn method_title(m: &str) -> &'static str {
    match m {
        "karmarkar_karp" => "Karmarkar–Karp",
        "lpt" => "longest-first greedy",
        "token_balanced" => "equal tokens",
        "sorted" => "sorted buckets",
        _ => "as now",
    }
}

/// Repartitioning layers: off the heaviest stage, or, where its ranks run several stages of the
/// pipeline (interleaved or V-shaped schedules), off the heaviest of those model chunks (the
/// schedule already shrinks the bubble).
fn stage_fix(f: &Facts<'_>) -> String {
    let (stage, factor) = f.heaviest_stage.unwrap_or((0, 1.0));
    let chunks = &f.heaviest_stage_chunks;
    match chunks.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
        Some(&(heaviest, _)) if chunks.len() >= 2 => {
            let stages = crate::text::list(&chunks.iter().map(|(s, _)| s.to_string()).collect::<Vec<_>>());
            let shares = crate::text::list(
                &chunks.iter().map(|(_, share)| format!("{:.0}%", share * 100.0)).collect::<Vec<_>>(),
            );
            format!(
                "Repartition layers across pipeline stages so each does the same work: the ranks of stage {stage} (it does {factor:.2}× the mean) run the pipeline's stages {stages} as model chunks, which do {shares} of their work: move layers off pipeline stage {heaviest}, and give the LM head and loss their own share."
            )
        }
        _ => format!(
            "Repartition layers across pipeline stages so each does the same work: move layers off stage {stage} (it does {factor:.2}× the mean), give the LM head and loss their own share, or use an interleaved schedule."
        ),
    }
}

/// The fix for the verdict.
pub fn fix(verdict: &Verdict, f: &Facts<'_>) -> Fix {
    match verdict.primary.as_str() {
        "sequence_length_imbalance" => sequence_fix(f),
        "slow_worker" => match &f.slow_workers {
            Some((named, _)) => slow_hardware_fix(&format!("{named} are")),
            None => one_slow_worker_fix(f),
        },
        "pipeline_stage_imbalance" => Fix { summary: stage_fix(f), ..Fix::default() },
        "communication" => Fix {
            summary: "Stabilise the collectives: check the fabric (link errors, congestion from other jobs), NCCL settings (algorithm, channels, IB/GPU-direct), and overlap gradient reduction with backward (bucketing).".into(),
            ..Fix::default()
        },
        "host_stall" => Fix {
            summary: "Remove the host stalls: freeze or disable Python's automatic GC and collect at fixed steps on every rank together (gc.freeze(), gc.disable(), gc.collect() every N steps); give the data loader more workers, pinned memory and prefetching.".into(),
            ..Fix::default()
        },
        "balanced" => Fix { summary: "Nothing to fix: no significant straggling.".into(), ..Fix::default() },
        _ => Fix { summary: verdict.to_confirm.clone().unwrap_or_else(|| confirm_text(f.lengths_known)), ..Fix::default() },
    }
}

/// The fix for ranks slow whatever they draw (`who`: "ranks 3 and 5 are", "rank 2 is").
pub fn slow_hardware_fix(who: &str) -> Fix {
    Fix {
        summary: format!(
            "Find out why {who} slow: check their GPUs (clocks and thermal throttling, ECC errors, NVLink/PCIe width) and hosts (CPU contention, other processes, data loading); ranks slow together on one host point at that node (its power and cooling, its network card, its PCIe switch). Drain or replace what stays slow. Rebalancing data will not help: they are slow whatever they draw."
        ),
        ..Fix::default()
    }
}

fn sequence_fix(f: &Facts<'_>) -> Fix {
    let limits = f.whatifs.outlier.map(|(step, len, ratio)| {
        format!(
            "In step {step} one document of {len} tokens alone costs {ratio:.2}× a rank's fair share: no rebalancing can fix that step. Split such documents across context-parallel ranks, or hold outliers back and spread them over later batches."
        )
    });
    balancing_fix(f.fit, recommended(f).0 == "karmarkar_karp", limits)
}

/// Dealing by cost: the fix for sequence-length imbalance, with the fitted cost function where
/// `fit` is usable (`karmarkar_karp`: that method beat longest-first greedy on the job).
pub fn balancing_fix(fit: Option<&Fit>, karmarkar_karp: bool, limits: Option<String>) -> Fix {
    let algorithm = if karmarkar_karp {
        "Karmarkar–Karp largest differencing over ranks, then over each rank's micro-batches (it beat longest-first greedy on this job)"
    } else {
        "longest-first greedy (LPT): sort documents by cost, give each to the least-loaded rank, then split each rank's documents into micro-batches the same way"
    };
    let (cost_function, python) = match fit.filter(|x| x.usable()) {
        Some(fit) => {
            let (c, a, b) = (fit.per_doc / 1e9, fit.per_token / 1e9, fit.per_token_sq / 1e9);
            (
                format!("cost(L) = {c:.3e} + {a:.3e}·L + {b:.3e}·L² seconds per document (fitted, R² = {:.2})", fit.r2),
                python_sketch(c, a, b),
            )
        }
        None => (
            "cost(L) = a·L + b·L² (fit a and b from a step log; for a transformer of hidden size h, b/a ≈ 1/(6h))"
                .to_owned(),
            python_sketch(0.0, 1.0, 1.0 / (6.0 * 4096.0)),
        ),
    };
    Fix {
        summary: "Deal each global batch to ranks and micro-batches by the cost of attention and the rest (a·L + b·L² per document), not by token count, with every rank computing the same assignment.".into(),
        cost_function: Some(cost_function),
        algorithm: Some(algorithm.into()),
        location: Some("In the sampler or collator, before micro-batches are formed: every rank draws the same global batch (same seed), balances it, and keeps its own bin.".into()),
        python: Some(python),
        limits,
    }
}

fn python_sketch(c: f64, a: f64, b: f64) -> String {
    format!(
        r#"import heapq

C, A, B = {c:.3e}, {a:.3e}, {b:.3e}  # seconds per document, per token, per token^2

def cost(length):
    return C + A * length + B * length * length

def balance(lengths, n_bins):
    """Longest-first greedy: each document to the least-loaded bin."""
    bins = [(0.0, i, []) for i in range(n_bins)]
    heapq.heapify(bins)
    for length in sorted(lengths, key=cost, reverse=True):
        load, i, docs = heapq.heappop(bins)
        docs.append(length)
        heapq.heappush(bins, (load + cost(length), i, docs))
    return [docs for _, _, docs in sorted(bins, key=lambda b: b[1])]

# Every rank draws the same global batch (same seed), then:
#   mine = balance(global_batch_lengths, world_size)[rank]
#   micro_batches = balance(mine, n_micro_batches)
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The facts of a job of one stage with nothing known and nothing lost: each test sets
    /// what it is about.
    fn facts_of<'a>(signals: &'a [Signal], whatifs: &'a WhatIfs) -> Facts<'a> {
        Facts {
            slowdown: 1.0,
            shares: [0.0; 5],
            signals,
            lengths_known: false,
            stages: 1,
            top_initiator: None,
            distinct_initiators: 1,
            slowest_worker: None,
            slow_workers: None,
            heaviest_stage: None,
            heaviest_stage_chunks: Vec::new(),
            fit: None,
            whatifs,
            peers_missing: None,
            unseen_micro_batches: None,
            unknown_placement: None,
            ranks_not_loaded: false,
            data_explains: None,
            unexplained_compute: 0.0,
        }
    }

    /// A pipeline whose traces name no micro-batches is replayed one pass per stage: "balanced"
    /// is then only what that replay can see, held with low confidence, and every verdict says
    /// how to make the micro-batches seen, after what it already asked for.
    #[test]
    fn a_pipeline_without_micro_batches_says_what_it_cannot_see() {
        let whatifs = WhatIfs::default();
        let facts = |slowdown: f64, shares: [f64; 5], unseen: Option<f64>| Facts {
            slowdown,
            shares,
            stages: 8,
            distinct_initiators: 8,
            unseen_micro_batches: unseen,
            ..facts_of(&[], &whatifs)
        };
        let transfers = [0.0, 0.0, 0.0, 0.0, 1.0];
        let seen = decide(&facts(1.03, transfers, None));
        assert_eq!((seen.primary.as_str(), seen.confidence.as_str(), seen.to_confirm), ("balanced", "high", None));
        let unseen = decide(&facts(1.03, transfers, Some(0.61)));
        assert_eq!((unseen.primary.as_str(), unseen.confidence.as_str()), ("balanced", "low"));
        let advice = unseen.to_confirm.unwrap_or_default();
        assert!(advice.contains("(the replay reproduces 61% of the measured step)"), "{advice}");
        assert!(advice.contains("record_function(\"Forward N\")"), "{advice}");
        // Stages in a placement the replay does not know: said the same way.
        let v_shaped = decide(&Facts { unknown_placement: Some(0.8), ..facts(1.03, transfers, None) });
        assert_eq!((v_shaped.primary.as_str(), v_shaped.confidence.as_str()), ("balanced", "low"));
        let said = v_shaped.to_confirm.unwrap_or_default();
        assert!(said.contains("a V-shape") && said.contains("(it reproduces 80% of the measured step)"), "{said}");
        // A straggling pipeline keeps its verdict and confidence, with the same advice.
        let (straggling, as_seen) = (decide(&facts(1.5, transfers, Some(0.61))), decide(&facts(1.5, transfers, None)));
        assert_eq!((&straggling.primary, &straggling.confidence), (&as_seen.primary, &as_seen.confidence));
        assert_eq!((as_seen.primary.as_str(), as_seen.to_confirm), ("communication", None));
        assert_eq!(straggling.to_confirm.as_ref(), Some(&advice));
        // Compute that varies without lengths asks for them first.
        let residual = [0.0, 0.0, 1.0, 0.0, 0.0];
        let (inconclusive, as_seen) = (decide(&facts(1.5, residual, Some(0.61))), decide(&facts(1.5, residual, None)));
        let asked = as_seen.to_confirm.unwrap_or_default();
        assert!(asked.starts_with("Record sequence lengths to confirm"), "{asked}");
        assert_eq!(inconclusive.to_confirm, Some(format!("{asked} {advice}")));
    }

    /// With ranks the traces name but that are not loaded, "balanced" covers only the loaded
    /// ones; a lone trace that names no larger job is a job of one rank, balanced as it is.
    #[test]
    fn balanced_among_the_loaded_ranks_is_not_balanced_for_sure() {
        let whatifs = WhatIfs::default();
        let facts = |peers_missing: Option<&'static str>, ranks_not_loaded: bool| Facts {
            slowdown: 1.02,
            shares: [0.0, 0.0, 0.0, 0.0, 1.0],
            peers_missing,
            ranks_not_loaded,
            ..facts_of(&[], &whatifs)
        };
        let partial = decide(&facts(Some("only 1 of the job's 8 ranks is loaded"), true));
        assert_eq!((partial.primary.as_str(), partial.confidence.as_str()), ("balanced", "low"));
        let asked = partial.to_confirm.unwrap_or_default();
        assert!(asked.contains("alone (only 1 of the job's 8 ranks is loaded): a rank that is not here"), "{asked}");
        for alone in [facts(Some("only one rank is loaded"), false), facts(None, false)] {
            let v = decide(&alone);
            assert_eq!((v.primary.as_str(), v.confidence.as_str(), v.to_confirm), ("balanced", "high", None));
        }
    }

    #[test]
    fn a_slow_worker_that_idles_is_sent_to_its_host() {
        // Rank 1 leads 90% of steps and takes 1.4× as long as its peers; the host-stall signal
        // finds 80% of the initiators' excess idle, 40% (passed, but most of the excess is
        // compute), or 10% (below its threshold).
        let verdict_and_fix = |idle: f64| {
            let signals = [Signal {
                id: "host_stalls".into(),
                value: idle,
                threshold: 0.3,
                passed: idle >= 0.3,
                applicable: true,
                ..Signal::default()
            }];
            let whatifs = WhatIfs::default();
            let facts = Facts {
                slowdown: 1.5,
                shares: [0.0, 0.9, 0.0, 0.1, 0.0],
                top_initiator: Some(("rank 1".into(), 0.9)),
                distinct_initiators: 2,
                slowest_worker: Some(("rank 1".into(), 1.4)),
                ..facts_of(&signals, &whatifs)
            };
            let verdict = decide(&facts);
            let fix = fix(&verdict, &facts);
            (verdict, fix.summary)
        };
        let (idling, to_host) = verdict_and_fix(0.8);
        assert_eq!(idling.primary, "slow_worker");
        assert!(idling.headline.contains("1.40× as long as its peers in a typical step, 80% of its excess idle"));
        assert!(to_host.starts_with("Find out why rank 1's host stalls: 80% of its excess is idle time"), "{to_host}");
        assert!(to_host.contains("gc.freeze()") && !to_host.contains("clocks"), "{to_host}");
        let (partly, to_gpu) = verdict_and_fix(0.4);
        assert!(partly.headline.contains("40% of its excess idle"), "{}", partly.headline);
        assert!(to_gpu.starts_with("Find out why rank 1 is slow: check its GPU (clocks"), "{to_gpu}");
        let (computing, to_gpu) = verdict_and_fix(0.1);
        assert_eq!(computing.primary, "slow_worker");
        assert!(!computing.headline.contains("idle"), "{}", computing.headline);
        assert!(to_gpu.starts_with("Find out why rank 1 is slow: check its GPU (clocks"), "{to_gpu}");
    }

    #[test]
    fn several_slow_workers_are_named_together_and_without_lengths_held_less_sure() {
        let whatifs = WhatIfs::default();
        let facts = |lengths_known: bool| Facts {
            slowdown: 1.5,
            shares: [0.0, 0.95, 0.05, 0.0, 0.0],
            lengths_known,
            top_initiator: Some(("rank 20".into(), 0.3)),
            distinct_initiators: 8,
            slowest_worker: Some(("rank 20".into(), 1.5)),
            slow_workers: Some(("ranks 16–23 (every rank of host node2)".into(), 1.0)),
            ..facts_of(&[], &whatifs)
        };
        let known = decide(&facts(true));
        assert_eq!((known.primary.as_str(), known.confidence.as_str()), ("slow_worker", "high"));
        assert_eq!(known.to_confirm, None);
        assert!(
            known.headline.starts_with("Slow workers: ranks 16–23 (every rank of host node2) are"),
            "{}",
            known.headline
        );
        let fixed = fix(&known, &facts(true)).summary;
        assert!(fixed.starts_with("Find out why ranks 16–23 (every rank of host node2) are slow"), "{fixed}");
        let blind = decide(&facts(false));
        assert_eq!((blind.primary.as_str(), blind.confidence.as_str()), ("slow_worker", "medium"));
        assert_eq!(blind.to_confirm.as_deref(), Some(SLOW_WITHOUT_LENGTHS));
    }

    /// Lengths known and compute that tracks them, but the data's predicted costs account for
    /// little of the time the ranks' differing compute costs (a router's hot expert): no verdict
    /// of sequence-length imbalance, and a cause that is small against all the time lost
    /// (transfers here) does not take its place.
    #[test]
    fn compute_the_data_do_not_explain_is_no_sequence_imbalance() {
        let whatifs = WhatIfs::default();
        let signals: Vec<Signal> = ["max_vs_mean", "compute_tracks_cost", "attention_on_longest", "rotation"]
            .iter()
            .map(|id| crate::analysis::signals::signal(id, id, 1.0, 0.5, true, String::new()))
            .collect();
        let facts = |data_explains: Option<f64>, unexplained_compute: f64| Facts {
            slowdown: 1.4,
            shares: [0.0, 0.0, 0.6, 0.0, 0.4],
            lengths_known: true,
            top_initiator: Some(("rank 3".into(), 0.2)),
            distinct_initiators: 8,
            data_explains,
            unexplained_compute,
            ..facts_of(&signals, &whatifs)
        };
        assert_eq!(decide(&facts(Some(0.9), 0.1)).primary, "sequence_length_imbalance");
        assert_eq!(decide(&facts(None, 0.0)).primary, "sequence_length_imbalance");
        let routed = decide(&facts(Some(0.2), 2.4));
        assert_eq!((routed.primary.as_str(), routed.confidence.as_str()), ("inconclusive", "low"));
        assert!(routed.headline.contains("account for 20% of the time"), "{}", routed.headline);
        assert!(routed.to_confirm.is_some_and(|c| c.contains("mixture-of-experts router")));
        // The transfers' 40% of what the shares count is 12% of all the time lost: not the cause.
        // Counted without the unexplained compute, they would be.
        assert_eq!(decide(&facts(Some(0.2), 0.0)).primary, "communication");
    }
}
