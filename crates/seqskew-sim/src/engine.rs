//! The simulation: step by step, draw a global batch, deal it to ranks and micro-batches, cost
//! each pass, replay every pipeline (1F1B) and the gradient collectives, and — for the truth —
//! replay the same step with each injected cause removed.

use seqskew_core::balance::{Method, partition};
use seqskew_core::model::Nanos;
use seqskew_core::schedule::{PassTiming, replay_pipeline};

use crate::config::{Batching, Config, LengthDist, Packing, Schedule};
use crate::rng::Rng;

/// What a worker does in a stretch of its step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    Forward,
    Backward,
    /// Waiting for the neighbouring stage's activations or gradients (pipeline bubble).
    Recv,
    /// The gradient all-reduce; `transfer_start` is when the last rank arrived.
    AllReduce {
        transfer_start: Nanos,
    },
    Optimizer,
    /// The end-of-step collective over all ranks (gradient-norm clipping): the fast stages wait here.
    Barrier,
    Gc,
    DataWait,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimOp {
    pub kind: OpKind,
    pub micro_batch: Option<u32>,
    pub start: Nanos,
    pub end: Nanos,
    /// The attention part of a forward or backward pass.
    pub attention: Nanos,
}

/// One (data-parallel rank, pipeline stage) group's step. Its tensor- and context-parallel
/// ranks all run this timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupStep {
    pub dp: u32,
    pub pp: u32,
    pub ops: Vec<SimOp>,
}

/// The causes a simulated job can carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    SequenceLengthImbalance,
    SlowWorker,
    PipelineStageImbalance,
    Communication,
    HostStall,
    /// A mixture-of-experts router's hot expert: the diagnosis has no name for it.
    ExpertLoad,
}

impl Cause {
    pub const ALL: [Cause; 6] = [
        Cause::SequenceLengthImbalance,
        Cause::SlowWorker,
        Cause::PipelineStageImbalance,
        Cause::Communication,
        Cause::HostStall,
        Cause::ExpertLoad,
    ];

    /// The report's name for the cause.
    pub fn name(self) -> &'static str {
        match self {
            Cause::SequenceLengthImbalance => "sequence_length_imbalance",
            Cause::SlowWorker => "slow_worker",
            Cause::PipelineStageImbalance => "pipeline_stage_imbalance",
            Cause::Communication => "communication",
            Cause::HostStall => "host_stall",
            Cause::ExpertLoad => "expert_load_imbalance",
        }
    }
}

/// One simulated step of the whole job.
#[derive(Clone, Debug, PartialEq)]
pub struct SimStep {
    pub number: u64,
    pub start: Nanos,
    pub end: Nanos,
    /// Index `pp * dp_size + dp`.
    pub groups: Vec<GroupStep>,
    /// The documents of each (rank, micro-batch), index `dp * micro_batches + mb`.
    pub bins: Vec<Vec<u32>>,
    /// The step with all imbalance and stalls removed (the truth's ideal).
    pub ideal: Nanos,
    /// The step with only one cause present (the rest ideal), per [`Cause::ALL`]. The ideal and
    /// these replays transfer in the nominal (median) time; the truth re-centres them on the
    /// job's median transfer.
    pub only: [Nanos; 6],
    /// This step's gradient-collective transfer per stage.
    pub transfers: Vec<Nanos>,
}

impl SimStep {
    pub fn duration(&self) -> Nanos {
        self.end - self.start
    }
}

/// Draws and replays the steps of a job, one at a time (a 4096-worker job never holds more
/// than one step).
pub struct Simulation {
    config: Config,
    rng: Rng,
    step: u32,
    clock: Nanos,
    /// Whether to compute the counterfactual replays (the truth); off for scale runs.
    truth: bool,
}

impl Simulation {
    pub fn new(config: Config, truth: bool) -> Self {
        let rng = Rng::new(config.seed);
        Simulation { config, rng, step: 0, clock: 1_000_000_000, truth }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }
}

impl Iterator for Simulation {
    type Item = SimStep;

    fn next(&mut self) -> Option<SimStep> {
        if self.step >= self.config.steps {
            return None;
        }
        let mut rng = self.rng.fork(u64::from(self.step));
        let step = simulate_step(
            &self.config,
            &mut rng,
            self.config.first_step + u64::from(self.step),
            self.clock,
            self.truth,
        );
        self.clock = step.end;
        self.step += 1;
        Some(step)
    }
}

/// The cost model's forward time of a micro-batch on a whole model replica, and its attention part.
fn bin_cost(config: &Config, bin: &[u32]) -> (f64, f64) {
    let c = &config.cost;
    let (n, tokens, pairs) = match config.packing {
        Packing::Packed => {
            let tokens: f64 = bin.iter().map(|&l| f64::from(l)).sum();
            let pairs: f64 = bin.iter().map(|&l| c.attended(f64::from(l))).sum();
            (bin.len() as f64, tokens, pairs)
        }
        Packing::Padded => {
            let s = f64::from(bin.iter().copied().max().unwrap_or(0));
            let n = bin.len() as f64;
            (n, n * s, n * c.attended(s))
        }
    };
    let attention = c.b_ns_per_token_sq * pairs;
    (c.per_doc_ns * n + c.a_ns_per_token * tokens + attention, attention)
}

fn document_cost(config: &Config, len: u32) -> f64 {
    let c = &config.cost;
    let l = f64::from(len);
    c.per_doc_ns + c.a_ns_per_token * l + c.b_ns_per_token_sq * c.attended(l)
}

fn draw_length(config: &Config, rng: &mut Rng) -> u32 {
    let raw = match config.lengths {
        LengthDist::LogNormal { mu, sigma } => rng.log_normal(mu, sigma),
        LengthDist::Zipf { alpha, min } => rng.pareto(alpha, min),
        LengthDist::Bimodal { short, long, p_long } => {
            let centre = if rng.uniform() < p_long { long } else { short };
            centre * (0.8 + 0.4 * rng.uniform())
        }
        LengthDist::Fixed { length } => f64::from(length),
    };
    (raw.round() as u32).clamp(config.min_len.max(1), config.max_len)
}

/// The global batch dealt into `dp × micro_batches` bins (index `dp * mb_count + mb`).
pub fn deal_batch(config: &Config, rng: &mut Rng) -> Vec<Vec<u32>> {
    let bins = (config.dp * config.micro_batches) as usize;
    let mut docs: Vec<u32> = Vec::new();
    match config.packing {
        Packing::Packed => {
            let budget = u64::from(config.tokens_per_micro_batch) * bins as u64;
            let mut total = 0u64;
            while total < budget {
                let l = u64::from(draw_length(config, rng)).min(budget - total);
                docs.push(l as u32);
                total += l;
            }
        }
        Packing::Padded => {
            docs = (0..bins * config.docs_per_micro_batch.max(1) as usize).map(|_| draw_length(config, rng)).collect();
        }
    }
    match (config.batching, config.packing) {
        (Batching::Random, Packing::Packed) => fill_sequentially(&docs, bins, config.tokens_per_micro_batch),
        (Batching::Sorted, Packing::Packed) => {
            docs.sort_unstable_by(|a, b| b.cmp(a));
            fill_sequentially(&docs, bins, config.tokens_per_micro_batch)
        }
        (Batching::Random, Packing::Padded) => {
            deal(&docs, &partition(&vec![1.0; docs.len()], bins, Method::RoundRobin), bins)
        }
        (Batching::Sorted, Packing::Padded) => {
            let lens: Vec<f64> = docs.iter().map(|&l| f64::from(l)).collect();
            deal(&docs, &partition(&lens, bins, Method::Sorted), bins)
        }
        (Batching::TokenBalanced, _) => two_level(config, &docs, f64::from, Method::Lpt, rng),
        (Batching::CostLpt, _) => two_level(config, &docs, |l| document_cost(config, l), Method::Lpt, rng),
        (Batching::CostKk, _) => {
            let method = if config.dp <= 64 { Method::KarmarkarKarp } else { Method::Lpt };
            two_level(config, &docs, |l| document_cost(config, l), method, rng)
        }
    }
}

/// Concatenates documents and cuts the stream into bins of `capacity` tokens, splitting the
/// documents that straddle a cut (what padding-free packing does).
fn fill_sequentially(docs: &[u32], bins: usize, capacity: u32) -> Vec<Vec<u32>> {
    let mut out: Vec<Vec<u32>> = vec![Vec::new(); bins];
    let mut bin = 0;
    let mut room = capacity;
    for &d in docs {
        let mut left = d;
        while left > 0 && bin < bins {
            let take = left.min(room);
            if let Some(b) = out.get_mut(bin) {
                b.push(take);
            }
            left -= take;
            room -= take;
            if room == 0 {
                bin += 1;
                room = capacity;
            }
        }
    }
    out
}

fn deal(docs: &[u32], assignment: &[usize], bins: usize) -> Vec<Vec<u32>> {
    let mut out: Vec<Vec<u32>> = vec![Vec::new(); bins];
    for (&d, &b) in docs.iter().zip(assignment) {
        if let Some(bin) = out.get_mut(b) {
            bin.push(d);
        }
    }
    out
}

/// Balance across ranks first, then each rank's documents across its micro-batches. Bins go to
/// ranks in random order: balancers emit bins heaviest-first, and a rank that always got the
/// first bin would look like slow hardware.
fn two_level(config: &Config, docs: &[u32], cost: impl Fn(u32) -> f64, method: Method, rng: &mut Rng) -> Vec<Vec<u32>> {
    let costs: Vec<f64> = docs.iter().map(|&l| cost(l)).collect();
    let mut ranks = deal(docs, &partition(&costs, config.dp as usize, method), config.dp as usize);
    rng.shuffle(&mut ranks);
    let mut out = Vec::with_capacity((config.dp * config.micro_batches) as usize);
    for rank_docs in ranks {
        let c: Vec<f64> = rank_docs.iter().map(|&l| cost(l)).collect();
        out.extend(deal(
            &rank_docs,
            &partition(&c, config.micro_batches as usize, method),
            config.micro_batches as usize,
        ));
    }
    out
}

/// Everything random about a step, drawn once so that the counterfactual replays differ only
/// in the cause they remove.
struct Draws {
    /// Forward cost per bin (whole replica) and its attention part.
    bin_cost: Vec<(f64, f64)>,
    /// Noise per (group, mb, direction): index `(g * M + m) * 2 + backward`.
    noise: Vec<f64>,
    /// Stall before the step per group, and whether it is GC (else data loading).
    stall: Vec<(Nanos, bool)>,
    /// Transfer per stage of the gradient all-reduce.
    transfer: Vec<Nanos>,
    optimizer: Vec<Nanos>,
    /// The rank (of its stage's data-parallel group) holding the hot expert, per stage.
    hot_expert: Vec<u32>,
    /// A bin's forward expert work under an even router (the mean bin's tokens).
    expert_ns: f64,
}

/// Which causes a replay keeps.
#[derive(Clone, Copy)]
struct Keep {
    imbalance: bool,
    slow: bool,
    stages: bool,
    comm_jitter: bool,
    stalls: bool,
    noise: bool,
    experts: bool,
}

/// Transfer time of the end-of-step collective (a few scalars).
const BARRIER_NS: Nanos = 50_000;

const ALL: Keep =
    Keep { imbalance: true, slow: true, stages: true, comm_jitter: true, stalls: true, noise: true, experts: true };
const NONE: Keep = Keep {
    imbalance: false,
    slow: false,
    stages: false,
    comm_jitter: false,
    stalls: false,
    noise: false,
    experts: false,
};

fn stage_weight(config: &Config, p: u32) -> f64 {
    if config.pp > 1 && p + 1 == config.pp { config.last_stage_factor } else { 1.0 }
}

fn slow_factor(config: &Config, dp: u32, pp: u32) -> f64 {
    config.slow_workers.iter().filter(|w| w.dp == dp && w.pp == pp).map(|w| w.factor).product()
}

fn simulate_step(config: &Config, rng: &mut Rng, number: u64, start: Nanos, truth: bool) -> SimStep {
    let (dp, pp, mbs) = (config.dp, config.pp, config.micro_batches);
    let groups = (dp * pp) as usize;
    let bins = deal_batch(config, &mut rng.fork(1));
    let bin_cost: Vec<(f64, f64)> = bins.iter().map(|b| bin_cost(config, b)).collect();
    let mut noise_rng = rng.fork(2);
    let noise: Vec<f64> = (0..groups * mbs as usize * 2).map(|_| noise_rng.noise(config.cost.noise)).collect();
    let mean_bin = bin_cost.iter().map(|c| c.0).sum::<f64>() / bin_cost.len().max(1) as f64;
    let step_compute = mean_bin * (1.0 + config.cost.backward_factor) * f64::from(mbs) / f64::from(pp);
    let mut stall_rng = rng.fork(3);
    let mut stall = vec![(0, false); groups];
    if stall_rng.uniform() < config.stalls.gc_probability {
        let g = stall_rng.below(groups as u64) as usize;
        if let Some(s) = stall.get_mut(g) {
            *s = ((config.stalls.gc_fraction * step_compute * stall_rng.noise(0.2)) as Nanos, true);
        }
    }
    for s in stall.iter_mut() {
        if stall_rng.uniform() < config.stalls.data_probability && s.0 == 0 {
            *s = ((config.stalls.data_fraction * step_compute * stall_rng.noise(0.2)) as Nanos, false);
        }
    }
    let mut comm_rng = rng.fork(4);
    let transfer: Vec<Nanos> = (0..pp)
        .map(|_| (config.comm.allreduce_ns * config.comm_slowdown * comm_rng.noise(config.comm.jitter)) as Nanos)
        .collect();
    let optimizer: Vec<Nanos> = (0..groups).map(|_| (config.optimizer_ns * comm_rng.noise(0.01)) as Nanos).collect();
    // Drawn from a fork of its own, so that jobs without experts draw as they always did.
    let mut expert_rng = rng.fork(5);
    let hot_expert: Vec<u32> = (0..pp).map(|_| expert_rng.below(u64::from(dp)) as u32).collect();
    let expert_ns = config.cost.experts.as_ref().map_or(0.0, |e| {
        let tokens = bins.iter().flatten().map(|&l| f64::from(l)).sum::<f64>() / bins.len().max(1) as f64;
        e.share_of_tokens_cost * config.cost.a_ns_per_token * tokens
    });
    let draws = Draws { bin_cost, noise, stall, transfer, optimizer, hot_expert, expert_ns };

    let (end, timelines) = replay(config, &draws, start, ALL, true);
    let (ideal, only) = if truth {
        let ideal = replay(config, &draws, start, NONE, false).0;
        // Each cause alone on top of the ideal run, without run-to-run noise (no cause of its
        // own, and the diagnosis measures the data's share from the data's predicted cost).
        let only = [
            replay(config, &draws, start, Keep { imbalance: true, ..NONE }, false).0,
            replay(config, &draws, start, Keep { slow: true, ..NONE }, false).0,
            replay(config, &draws, start, Keep { stages: true, ..NONE }, false).0,
            replay(config, &draws, start, Keep { comm_jitter: true, ..NONE }, false).0,
            replay(config, &draws, start, Keep { stalls: true, ..NONE }, false).0,
            replay(config, &draws, start, Keep { experts: true, ..NONE }, false).0,
        ];
        (ideal - start, only.map(|w| w - start))
    } else {
        (0, [0; 6])
    };
    let transfers = draws.transfer.clone();
    SimStep { number, start, end, groups: timelines, bins, ideal, only, transfers }
}

/// Replays the step under `keep`; returns its end and (when `record`) every group's ops.
fn replay(config: &Config, d: &Draws, start: Nanos, keep: Keep, record: bool) -> (Nanos, Vec<GroupStep>) {
    let (dp, pp, mbs) = (config.dp, config.pp, config.micro_batches as usize);
    let mean_bin = |i: usize| d.bin_cost.get(i).copied().unwrap_or_default();
    let avg = {
        let n = d.bin_cost.len().max(1) as f64;
        (d.bin_cost.iter().map(|c| c.0).sum::<f64>() / n, d.bin_cost.iter().map(|c| c.1).sum::<f64>() / n)
    };
    let mean_weight = (0..pp).map(|p| stage_weight(config, p)).sum::<f64>() / f64::from(pp);
    // A pass's (duration, attention part).
    let pass = |g_dp: u32, p: u32, m: usize, backward: bool| -> (Nanos, Nanos) {
        let (cost, attention) = if keep.imbalance { mean_bin(g_dp as usize * mbs + m) } else { avg };
        // The hot expert's rank computes more of the expert layers, the others less.
        let routed = match (&config.cost.experts, d.hot_expert.get(p as usize)) {
            (Some(e), Some(&hot)) if keep.experts => d.expert_ns * (e.load(g_dp, hot, dp) - 1.0),
            _ => 0.0,
        };
        let cost = cost + routed;
        let weight = if keep.stages { stage_weight(config, p) } else { mean_weight } / f64::from(pp);
        let slow = if keep.slow { slow_factor(config, g_dp, p) } else { 1.0 };
        let g = (p * dp + g_dp) as usize;
        let noise = if keep.noise {
            d.noise.get((g * mbs + m) * 2 + usize::from(backward)).copied().unwrap_or(1.0)
        } else {
            1.0
        };
        let direction = if backward { config.cost.backward_factor } else { 1.0 };
        let f = weight * slow * noise * direction;
        ((cost * f) as Nanos, (attention * f) as Nanos)
    };
    let p2p = config.comm.p2p_ns as Nanos;
    let mut arrivals: Vec<Vec<Nanos>> = vec![vec![start; dp as usize]; pp as usize];
    let mut passes: Vec<Vec<Vec<PassTiming>>> = Vec::with_capacity(dp as usize);
    for g_dp in 0..dp {
        let ready: Vec<Nanos> = (0..pp)
            .map(|p| start + if keep.stalls { d.stall.get((p * dp + g_dp) as usize).map_or(0, |s| s.0) } else { 0 })
            .collect();
        let duration = |p: usize, m: usize, backward: bool| pass(g_dp, p as u32, m, backward).0;
        let timings = match config.schedule {
            Schedule::OneFOneB => replay_pipeline(&ready, mbs, &duration, p2p),
            Schedule::Gpipe => crate::schedule::gpipe(&ready, mbs, &duration, p2p),
        };
        for (p, stage) in timings.iter().enumerate() {
            let last = stage.iter().map(|t| t.end).max().unwrap_or(start);
            if let Some(a) = arrivals.get_mut(p).and_then(|a| a.get_mut(g_dp as usize)) {
                *a = last;
            }
        }
        passes.push(timings);
    }
    // The typical transfer: the median of the jittered distribution.
    let median_transfer = (config.comm.allreduce_ns * config.comm_slowdown) as Nanos;
    let mut optimizer_end = start;
    let mut groups = Vec::new();
    for p in 0..pp {
        let stage_arrivals = arrivals.get(p as usize).cloned().unwrap_or_default();
        let transfer_start = stage_arrivals.iter().copied().max().unwrap_or(start);
        let transfer =
            if keep.comm_jitter { d.transfer.get(p as usize).copied().unwrap_or(0) } else { median_transfer };
        let reduce_end = transfer_start + transfer;
        for g_dp in 0..dp {
            let g = (p * dp + g_dp) as usize;
            let opt = d.optimizer.get(g).copied().unwrap_or(0);
            optimizer_end = optimizer_end.max(reduce_end + opt);
            if !record {
                continue;
            }
            let mut ops = Vec::with_capacity(mbs * 3 + 3);
            if keep.stalls
                && let Some(&(len, gc)) = d.stall.get(g).filter(|s| s.0 > 0)
            {
                ops.push(SimOp {
                    kind: if gc { OpKind::Gc } else { OpKind::DataWait },
                    micro_batch: None,
                    start,
                    end: start + len,
                    attention: 0,
                });
            }
            let mut free = ops.last().map_or(start, |o| o.end);
            for t in passes.get(g_dp as usize).and_then(|s| s.get(p as usize)).into_iter().flatten() {
                if t.start > free && pp > 1 {
                    ops.push(SimOp {
                        kind: OpKind::Recv,
                        micro_batch: Some(t.micro_batch as u32),
                        start: free,
                        end: t.start,
                        attention: 0,
                    });
                }
                let kind = if t.backward { OpKind::Backward } else { OpKind::Forward };
                let attention = pass(g_dp, p, t.micro_batch, t.backward).1;
                ops.push(SimOp {
                    kind,
                    micro_batch: Some(t.micro_batch as u32),
                    start: t.start,
                    end: t.end,
                    attention,
                });
                free = t.end;
            }
            let arrival = stage_arrivals.get(g_dp as usize).copied().unwrap_or(start);
            ops.push(SimOp {
                kind: OpKind::AllReduce { transfer_start },
                micro_batch: None,
                start: arrival,
                end: reduce_end,
                attention: 0,
            });
            ops.push(SimOp {
                kind: OpKind::Optimizer,
                micro_batch: None,
                start: reduce_end,
                end: reduce_end + opt,
                attention: 0,
            });
            groups.push(GroupStep { dp: g_dp, pp: p, ops });
        }
    }
    // Everyone meets in the end-of-step collective, which ends the step.
    let end = optimizer_end + BARRIER_NS;
    for g in &mut groups {
        let from = g.ops.last().map_or(start, |o| o.end);
        g.ops.push(SimOp { kind: OpKind::Barrier, micro_batch: None, start: from, end, attention: 0 });
    }
    (end, groups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::preset;

    #[test]
    fn packing_gives_every_micro_batch_the_same_tokens() {
        let config = Config { dp: 4, micro_batches: 2, ..Config::default() };
        let bins = deal_batch(&config, &mut Rng::new(3));
        assert_eq!(bins.len(), 8);
        for b in &bins {
            assert_eq!(b.iter().map(|&l| u64::from(l)).sum::<u64>(), u64::from(config.tokens_per_micro_batch));
        }
    }

    #[test]
    fn cost_balancing_evens_out_what_random_packing_does_not() {
        let spread = |batching| {
            let config = Config { dp: 8, micro_batches: 1, batching, ..Config::default() };
            let bins = deal_batch(&config, &mut Rng::new(11));
            let costs: Vec<f64> = bins.iter().map(|b| bin_cost(&config, b).0).collect();
            costs.iter().copied().fold(0.0, f64::max) / (costs.iter().sum::<f64>() / costs.len() as f64)
        };
        let (random, balanced) = (spread(Batching::Random), spread(Batching::CostKk));
        assert!(random > 1.15, "random packing max/mean {random}");
        assert!(balanced < 1.05, "balanced max/mean {balanced}");
    }

    #[test]
    fn steps_are_deterministic_and_chained() {
        let config = preset("seqlen-imbalance").unwrap();
        let a: Vec<SimStep> = Simulation::new(config.clone(), true).take(3).collect();
        let b: Vec<SimStep> = Simulation::new(config, true).take(3).collect();
        assert_eq!(a, b);
        assert_eq!(a[1].start, a[0].end);
        assert!(a.iter().all(|s| s.ideal > 0 && s.ideal <= s.duration()));
        assert_eq!(a[0].groups.len(), 16);
    }

    /// A hot expert on balanced data: the expert-load cause alone makes the steps longer than
    /// the ideal, and the data alone almost does not; the loads average an even router's.
    #[test]
    fn a_hot_expert_costs_time_the_lengths_do_not_show() {
        let experts = crate::config::Experts { share_of_tokens_cost: 0.7, hot_load: 3.0 };
        assert!(((0..8).map(|r| experts.load(r, 2, 8)).sum::<f64>() - 8.0).abs() < 1e-9);
        let cost = crate::config::Cost { experts: Some(experts), ..Default::default() };
        let config = Config { cost, batching: Batching::CostKk, ..Config::default() };
        let steps: Vec<SimStep> = Simulation::new(config, true).take(6).collect();
        let added = |cause: Cause| -> i64 {
            let i = Cause::ALL.iter().position(|&c| c == cause).unwrap_or(0);
            steps.iter().map(|s| s.only.get(i).copied().unwrap_or(0) - s.ideal).sum()
        };
        let ideal: i64 = steps.iter().map(|s| s.ideal).sum();
        let (expert, data) = (added(Cause::ExpertLoad), added(Cause::SequenceLengthImbalance));
        assert!(expert > ideal / 5 && data < expert / 5, "expert {expert}, data {data}, ideal {ideal}");
        assert!(
            Config {
                cost: crate::config::Cost {
                    experts: Some(crate::config::Experts { share_of_tokens_cost: 0.5, hot_load: 0.5 }),
                    ..Default::default()
                },
                ..Config::default()
            }
            .validate()
            .is_err()
        );
    }

    #[test]
    fn a_slow_worker_initiates_every_step() {
        let config = preset("slow-worker").unwrap();
        for step in Simulation::new(config, false).take(5) {
            let last = step
                .groups
                .iter()
                .max_by_key(|g| g.ops.iter().find(|o| matches!(o.kind, OpKind::AllReduce { .. })).map(|o| o.start))
                .unwrap();
            assert_eq!(last.dp, 5);
        }
    }
}
