//! What a synthetic job looks like: parallelism, data, batching, costs, and the causes injected.
//! `seqskew synth --config FILE` reads this as JSON (every field has a default).

use serde::{Deserialize, Serialize};

/// How document lengths are drawn (tokens).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LengthDist {
    /// exp(N(mu, sigma²)): web-scale pretraining corpora.
    LogNormal {
        mu: f64,
        sigma: f64,
    },
    /// Power law with exponent `alpha` above `min`.
    Zipf {
        alpha: f64,
        min: f64,
    },
    /// Mostly `short`, sometimes `long` (probability `p_long`), each ±20%.
    Bimodal {
        short: f64,
        long: f64,
        p_long: f64,
    },
    Fixed {
        length: u32,
    },
}

/// How micro-batches hold their documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Packing {
    /// Varlen packing: every micro-batch gets about `tokens_per_micro_batch` tokens.
    Packed,
    /// `docs_per_micro_batch` documents, padded to the longest.
    Padded,
}

/// The order a pipeline's stages run their passes in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Schedule {
    /// One forward one backward (`seqskew_core::schedule::replay_pipeline`, the replay the
    /// diagnosis itself uses).
    #[default]
    OneFOneB,
    /// GPipe: every forward, then every backward in reverse, timed by the simulator's own
    /// recurrence ([`crate::schedule::gpipe`]), code the diagnosis does not share.
    Gpipe,
}

/// How the global batch is dealt to ranks and micro-batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Batching {
    /// Random order (what a shuffled sampler gives): the failure.
    Random,
    /// Sorted by length into consecutive bins (length bucketing).
    Sorted,
    /// Equal tokens per bin (LPT on length): balances tokens, not Σ L².
    TokenBalanced,
    /// Equal cost a·L + b·L² per bin, greedy longest-first: the fix.
    CostLpt,
    /// Equal cost per bin, Karmarkar–Karp differencing: the fix.
    CostKk,
}

/// Time per micro-batch on one full model replica: `per_doc` + `a`·tokens + `b`·Σ L² for the
/// forward pass (attention is the `b` part), backward `backward_factor` times that.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cost {
    pub per_doc_ns: f64,
    pub a_ns_per_token: f64,
    pub b_ns_per_token_sq: f64,
    pub backward_factor: f64,
    /// Relative spread of multiplicative noise on every pass.
    pub noise: f64,
    /// Sliding-window attention (each token attends to at most this many before it, as in
    /// Mistral or Gemma's local layers): a document's attention then grows as L·W past the
    /// window, not as L² ([`Cost::attended`]). None: full attention. A cost of another shape
    /// than the diagnosis's a·L + b·L², for the corpus's out-of-model family.
    pub attention_window: Option<u32>,
    /// Mixture-of-experts layers with expert parallelism over each stage's data-parallel group
    /// (one rank's experts per rank): a rank computes its experts over the tokens the router
    /// sends them, from every rank, not over its own. None: dense.
    pub experts: Option<Experts>,
}

/// A router that favours one expert a step, as a hot expert does: which one is drawn per step
/// and stage, so the rank that holds it rotates. What a rank computes then depends on where
/// the tokens were routed, which no sequence length shows (the corpus's `moe-expert-load`
/// family: a cost outside the diagnosis's a·L + b·L²).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Experts {
    /// The part of the per-token cost (`a_ns_per_token`) spent in the expert layers.
    pub share_of_tokens_cost: f64,
    /// The hot expert's rank's expert work relative to an even router's (at least 1, at most
    /// the group's size); the other ranks share what is left evenly.
    pub hot_load: f64,
}

impl Experts {
    /// The expert work `rank` does relative to an even router's, when `hot` holds the hot
    /// expert among `ranks`: the loads average 1.
    pub fn load(&self, rank: u32, hot: u32, ranks: u32) -> f64 {
        let n = f64::from(ranks.max(1));
        let hot_load = self.hot_load.clamp(1.0, n);
        if rank == hot { hot_load } else { (n - hot_load) / (n - 1.0).max(1.0) }
    }
}

impl Cost {
    /// The token pairs a document of `len` tokens attends over, in units where full attention
    /// is L²: L² up to the window, 2·L·W − W² past it (each token's min(i, W) keys, doubled
    /// as causal attention's L²/2 is; the same at L = W).
    pub fn attended(&self, len: f64) -> f64 {
        match self.attention_window.map(f64::from) {
            Some(w) if len > w => 2.0 * len * w - w * w,
            _ => len * len,
        }
    }
}

impl Default for Cost {
    fn default() -> Self {
        // ~7B-parameter-like shape at bf16: linear part dominates short documents, attention long ones.
        Cost {
            per_doc_ns: 20_000.0,
            a_ns_per_token: 2_000.0,
            b_ns_per_token_sq: 0.25,
            backward_factor: 2.0,
            noise: 0.02,
            attention_window: None,
            experts: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Comm {
    /// Gradient collective transfer time per step (each stage's DP group).
    pub allreduce_ns: f64,
    /// Relative spread of transfer times (log-normal).
    pub jitter: f64,
    /// Pipeline send/recv transfer per micro-batch.
    pub p2p_ns: f64,
}

impl Default for Comm {
    fn default() -> Self {
        Comm { allreduce_ns: 15e6, jitter: 0.05, p2p_ns: 0.3e6 }
    }
}

/// A worker (data-parallel rank `dp` on stage `pp`) that is slower whatever it draws.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowWorker {
    pub dp: u32,
    pub pp: u32,
    pub factor: f64,
}

/// Host-side stalls: garbage collection and data-loader waits, at the start of a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stalls {
    /// Probability that a given step has a GC pause on one random worker.
    pub gc_probability: f64,
    /// GC pause length, as a fraction of the mean step's compute.
    pub gc_fraction: f64,
    /// Probability that a worker waits for data in a step.
    pub data_probability: f64,
    pub data_fraction: f64,
}

impl Default for Stalls {
    fn default() -> Self {
        Stalls { gc_probability: 0.0, gc_fraction: 0.4, data_probability: 0.0, data_fraction: 0.2 }
    }
}

/// What the written files reveal about sequence lengths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lengths {
    /// Nothing: timing only.
    Hidden,
    /// Attention shapes, as PyTorch records them (varlen: tokens, count, max only).
    Shapes,
    /// Every document's length (step logs, `seqlens` args and annotations).
    Exact,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    pub seed: u64,
    pub dp: u32,
    pub pp: u32,
    /// Tensor- and context-parallel group sizes: they name ranks; every member of a group runs
    /// the same timeline.
    pub tp: u32,
    pub cp: u32,
    pub steps: u32,
    /// Micro-batches per step per data-parallel rank.
    pub micro_batches: u32,
    pub lengths: LengthDist,
    pub max_len: u32,
    pub min_len: u32,
    pub packing: Packing,
    pub tokens_per_micro_batch: u32,
    pub docs_per_micro_batch: u32,
    pub batching: Batching,
    pub cost: Cost,
    pub comm: Comm,
    pub optimizer_ns: f64,
    pub slow_workers: Vec<SlowWorker>,
    /// The last pipeline stage's compute relative to the others (1 = even).
    pub last_stage_factor: f64,
    /// Communication slower than nominal by this factor.
    pub comm_slowdown: f64,
    pub stalls: Stalls,
    pub reveal: Lengths,
    /// Number of the first step (profilers often start mid-run).
    pub first_step: u64,
    /// The pipeline's schedule (with `pp` > 1).
    pub schedule: Schedule,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 1,
            dp: 8,
            pp: 1,
            tp: 1,
            cp: 1,
            steps: 30,
            micro_batches: 4,
            lengths: LengthDist::LogNormal { mu: 6.0, sigma: 1.2 },
            max_len: 16_384,
            min_len: 16,
            packing: Packing::Packed,
            tokens_per_micro_batch: 16_384,
            docs_per_micro_batch: 8,
            batching: Batching::Random,
            cost: Cost::default(),
            comm: Comm::default(),
            optimizer_ns: 8e6,
            slow_workers: Vec::new(),
            last_stage_factor: 1.0,
            comm_slowdown: 1.0,
            stalls: Stalls::default(),
            reveal: Lengths::Exact,
            first_step: 100,
            schedule: Schedule::OneFOneB,
        }
    }
}

impl Config {
    pub fn workers(&self) -> u32 {
        self.dp.max(1) * self.pp.max(1) * self.tp.max(1) * self.cp.max(1)
    }

    /// Checks the configuration; the error says which field is wrong.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("dp", self.dp),
            ("pp", self.pp),
            ("tp", self.tp),
            ("cp", self.cp),
            ("steps", self.steps),
            ("micro_batches", self.micro_batches),
            ("max_len", self.max_len),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(format!("{name} must be at least 1"));
        }
        if self.min_len > self.max_len {
            return Err("min_len must not exceed max_len".into());
        }
        if self.workers() > 1 << 16 {
            return Err(format!("{} workers is more than the simulator's limit of 65536", self.workers()));
        }
        if let Some(e) = &self.cost.experts
            && !(e.hot_load >= 1.0 && (0.0..=1.0).contains(&e.share_of_tokens_cost))
        {
            return Err(format!(
                "cost.experts: hot_load {} must be at least 1 and share_of_tokens_cost {} between 0 and 1",
                e.hot_load, e.share_of_tokens_cost
            ));
        }
        if let Some(w) = self.slow_workers.iter().find(|w| w.dp >= self.dp || w.pp >= self.pp) {
            return Err(format!("slow worker dp={} pp={} is outside dp={} pp={}", w.dp, w.pp, self.dp, self.pp));
        }
        Ok(())
    }
}

/// The named presets a user can try from the app and the CLI.
pub const PRESETS: [(&str, &str); 8] = [
    ("seqlen-imbalance", "random packing of heavy-tailed documents: the rank that draws the long ones straggles"),
    ("seqlen-balanced", "the same data after the fix: cost-balanced (Karmarkar–Karp on a·L + b·L²)"),
    ("slow-worker", "balanced data, one GPU 1.6× slower whatever it draws"),
    ("stage-imbalance", "a 4-stage pipeline whose last stage has 1.8× the work"),
    ("comm-bound", "slow, jittery gradient all-reduces"),
    ("gc-stalls", "balanced data, garbage-collection pauses on random workers"),
    ("balanced", "a healthy job: balanced data, nothing injected"),
    ("mixed", "sequence-length imbalance and a slow worker at once"),
];

/// The configuration of a named preset.
pub fn preset(name: &str) -> Option<Config> {
    // Documents up to 4k tokens in 16k-token micro-batches: long enough for attention to matter,
    // short enough that cost-balancing can even the shards out (the fixed run).
    let base = Config { dp: 8, pp: 1, steps: 40, micro_batches: 4, max_len: 4096, ..Config::default() };
    let balanced_data = Config { batching: Batching::CostKk, ..base.clone() };
    // Longer documents in 32k-token micro-batches: attention dominates the long ones, and one
    // document never outweighs a rank's share, so balancing by cost can fix it.
    let long_context = Config {
        lengths: LengthDist::LogNormal { mu: 6.5, sigma: 1.3 },
        max_len: 16_384,
        tokens_per_micro_batch: 32_768,
        ..base.clone()
    };
    let config = match name {
        "seqlen-imbalance" => Config { dp: 8, pp: 2, ..long_context.clone() },
        "seqlen-balanced" => Config { dp: 8, pp: 2, batching: Batching::CostKk, ..long_context },
        "slow-worker" => Config { slow_workers: vec![SlowWorker { dp: 5, pp: 0, factor: 1.6 }], ..balanced_data },
        "stage-imbalance" => Config { pp: 4, micro_batches: 8, last_stage_factor: 1.8, ..balanced_data },
        "comm-bound" => Config {
            comm: Comm { allreduce_ns: 120e6, jitter: 1.0, ..Comm::default() },
            comm_slowdown: 2.0,
            ..balanced_data
        },
        "gc-stalls" => {
            Config { stalls: Stalls { gc_probability: 0.6, gc_fraction: 0.6, ..Stalls::default() }, ..balanced_data }
        }
        "balanced" => balanced_data,
        "mixed" => Config { slow_workers: vec![SlowWorker { dp: 2, pp: 0, factor: 1.2 }], ..long_context },
        _ => return None,
    };
    Some(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_valid() {
        for (name, _) in PRESETS {
            let c = preset(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(c.validate(), Ok(()), "{name}");
        }
        assert!(preset("nope").is_none());
    }

    #[test]
    fn configs_read_from_json_with_defaults() {
        let c: Config =
            serde_json::from_str(r#"{"dp": 4, "batching": "cost_lpt", "lengths": {"kind": "fixed", "length": 512}}"#)
                .unwrap();
        assert_eq!((c.dp, c.batching, c.pp), (4, Batching::CostLpt, 1));
        assert!(Config { dp: 0, ..Config::default() }.validate().unwrap_err().contains("dp"));
    }
}
