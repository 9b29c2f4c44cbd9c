//! What names say: collectives, attention ops, span kinds, and rank coordinates in labels
//! and file names. Shared by the trace importers.

use rustc_hash::FxHashMap;

use crate::model::{CollectiveOp, Coords, SpanKind};

/// Up to this many bytes of a name are examined (kernel names can be very long; the words
/// that matter come first).
const NAME_PREFIX: usize = 96;

/// A name lower-cased with separators (`_`, `-`, space, `:`, `.`) removed, on the stack.
struct Squashed {
    buf: [u8; NAME_PREFIX],
    len: usize,
}

impl Squashed {
    fn new(name: &str) -> Self {
        let mut buf = [0u8; NAME_PREFIX];
        let mut len = 0;
        for b in name.bytes() {
            if len == NAME_PREFIX {
                break;
            }
            if matches!(b, b'_' | b'-' | b' ' | b':' | b'.') {
                continue;
            }
            if let Some(slot) = buf.get_mut(len) {
                *slot = b.to_ascii_lowercase();
                len += 1;
            }
        }
        Squashed { buf, len }
    }

    fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }

    fn has(&self, needle: &str) -> bool {
        // Not a comparison at every offset: a new name is tested against dozens of words.
        memchr::memmem::find(self.bytes(), needle.as_bytes()).is_some()
    }

    fn has_any(&self, needles: &[&str]) -> bool {
        needles.iter().any(|n| self.has(n))
    }
}

/// Distinct names with what they say. Traces repeat a few thousand names millions of times, so
/// each is classified once. Bounded: beyond [`MAX_CACHED_NAMES`] (traces that put counters in
/// names), further names are classified every time instead of growing the cache.
pub struct NameCache<V> {
    map: FxHashMap<Box<str>, V>,
}

const MAX_CACHED_NAMES: usize = 1 << 16;

impl<V> Default for NameCache<V> {
    fn default() -> Self {
        NameCache { map: FxHashMap::default() }
    }
}

impl<V: Copy> NameCache<V> {
    pub fn get_or(&mut self, name: &str, classify: impl FnOnce(&str) -> V) -> V {
        if let Some(&v) = self.map.get(name) {
            return v;
        }
        let v = classify(name);
        if self.map.len() < MAX_CACHED_NAMES {
            self.map.insert(name.into(), v);
        }
        v
    }
}

/// The collective a name denotes, if it is communication at all.
pub fn collective_op(name: &str) -> Option<CollectiveOp> {
    let s = Squashed::new(name);
    let op = if s.has("allreduce") {
        CollectiveOp::AllReduce
    } else if s.has("allgather") {
        CollectiveOp::AllGather
    } else if s.has("reducescatter") {
        CollectiveOp::ReduceScatter
    } else if s.has_any(&["alltoall", "alltoallv"]) {
        CollectiveOp::AllToAll
    } else if s.has("broadcast") {
        CollectiveOp::Broadcast
    } else if s.has("barrier") {
        CollectiveOp::Barrier
    } else if s.has("recv") {
        CollectiveOp::Recv
    } else if s.has("send") {
        CollectiveOp::Send
    } else if s.has_any(&["nccl", "rccl", "gloo", "c10d", "recordparamcomms", "collective"]) {
        CollectiveOp::Other
    } else {
        return None;
    };
    Some(op)
}

/// Backend-prefixed collective spans (`nccl:all_reduce`, `gloo:all_reduce`): the span that
/// covers the whole collective, as opposed to its launch (`c10d::allreduce_`).
pub fn is_backend_collective(name: &str) -> bool {
    ["nccl:", "gloo:", "mpi:", "ucc:", "xla:"].iter().any(|p| name.starts_with(p))
}

/// Attention ops and kernels: SDPA and its flash/efficient/CPU children, flash-attn (varlen
/// too), fused multi-head attention kernels.
pub fn is_attention(name: &str) -> bool {
    let s = Squashed::new(name);
    s.has_any(&[
        "scaleddotproduct",
        "flashattn",
        "flashattention",
        "attention",
        "fmha",
        "attnfwd",
        "attnbwd",
        "flashfwd",
        "flashbwd",
        "sdpa",
    ])
}

pub fn is_backward(name: &str) -> bool {
    let s = Squashed::new(name);
    s.has_any(&["backward", "bwd"])
}

/// Lower-case alphanumeric words of a label.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_ascii_lowercase).collect()
}

/// The kind a merged trace's span name (and category) suggests.
pub fn kind_from_words(name: &str, cat: &str) -> SpanKind {
    let s = Squashed::new(name);
    let w: Vec<String> = words(name).into_iter().chain(words(cat)).collect();
    let word = |x: &str| w.iter().any(|v| v == x);
    if s.has("wait") && collective_op(name).is_some() || word("wait") {
        SpanKind::CollectiveWait
    } else if collective_op(name).is_some() || word("comm") || word("communication") {
        SpanKind::Communication
    } else if s.has_any(&["optimizer", "optim"]) || word("adam") || word("sgd") {
        SpanKind::Optimizer
    } else if s.has_any(&["dataloader", "dataload", "batchgenerator", "getbatch", "datawait"]) {
        SpanKind::DataLoading
    } else if word("gc") || s.has_any(&["garbagecollect", "hoststall", "stall", "idle"]) {
        SpanKind::HostStall
    } else if is_attention(name) {
        SpanKind::Attention
    } else if s.has_any(&[
        "forward",
        "backward",
        "compute",
        "fwd",
        "bwd",
        "gemm",
        "matmul",
        "kernel",
        "loss",
        "embedding",
        "recompute",
    ]) {
        SpanKind::Compute
    } else {
        SpanKind::Other
    }
}

/// Rank coordinates in a label or file name: "rank 7", "rank3.pt.trace.json", "DP rank \[3\]",
/// "PP rank 1, TP rank 0, compute", "dp=2 pp=1", "[rank-4]".
/// Returns the global rank (when a plain "rank N" is present) and the coordinates found.
pub fn parse_coords(label: &str) -> (Option<u32>, Coords) {
    let tokens = split_tokens(label);
    let mut rank = None;
    let mut coords = Coords::default();
    let mut i = 0;
    while let Some(tok) = tokens.get(i) {
        let (role, number) = match tok.as_str() {
            "rank" | "dp" | "pp" | "tp" | "cp" => {
                let role_word =
                    if tok == "rank" { tokens.get(i.wrapping_sub(1)).filter(|_| i > 0).cloned() } else { None };
                let role = match (tok.as_str(), role_word.as_deref()) {
                    ("rank", Some("dp" | "data")) | ("dp", _) => "dp",
                    ("rank", Some("pp" | "pipeline" | "stage")) | ("pp", _) => "pp",
                    ("rank", Some("tp" | "tensor")) | ("tp", _) => "tp",
                    ("rank", Some("cp" | "context")) | ("cp", _) => "cp",
                    _ => "rank",
                };
                // "dp rank 3": the role word is consumed by the following "rank".
                if tok != "rank" && tokens.get(i + 1).is_some_and(|t| t == "rank") {
                    i += 1;
                    continue;
                }
                (role, tokens.get(i + 1).and_then(|t| t.parse::<u32>().ok()))
            }
            other => match glued_number(other) {
                Some((role, n)) => (role, Some(n)),
                None => ("", None),
            },
        };
        if let Some(n) = number {
            match role {
                "rank" => rank = rank.or(Some(n)),
                "dp" => coords.dp = coords.dp.or(Some(n)),
                "pp" => coords.pp = coords.pp.or(Some(n)),
                "tp" => coords.tp = coords.tp.or(Some(n)),
                "cp" => coords.cp = coords.cp.or(Some(n)),
                _ => {}
            }
        }
        i += 1;
    }
    (rank, coords)
}

/// "rank3" → ("rank", 3), "dp2" → ("dp", 2).
fn glued_number(token: &str) -> Option<(&'static str, u32)> {
    for role in ["rank", "dp", "pp", "tp", "cp"] {
        if let Some(n) = token.strip_prefix(role).and_then(|d| d.parse::<u32>().ok()) {
            return Some((role, n));
        }
    }
    None
}

/// Words and numbers of a label, lower case.
fn split_tokens(label: &str) -> Vec<String> {
    label.split(|c: char| !c.is_ascii_alphanumeric()).filter(|t| !t.is_empty()).map(str::to_ascii_lowercase).collect()
}

/// A pipeline schedule's pass of one micro-batch, as its `record_function` annotation names it.
/// `torch.distributed.pipelining` wraps each pass in one: `Forward 3` and `Backward 3` in its
/// single-stage schedules (GPipe, 1F1B), and `PP:{stage}{action}{micro-batch}` in the runtime of
/// the others (`PP:1F3`; `B` a whole backward, `I` and `W` its two halves where the schedule
/// splits it), whose stage is the pipeline's (a rank holds several under an interleaved
/// schedule: rank r of P the stages r, r + P, …). That runtime also wraps the sends and
/// receives that serve a pass in actions of their own (`PP:1SEND_F3`, `PP:2RECV_B0`): those are
/// the pass's `transfer`s. Its waits and sharding actions (`PP:1WAIT_SEND_F3`, `PP:1UNSHARD`) are
/// neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelinePass {
    pub micro_batch: u32,
    pub backward: bool,
    /// The pipeline stage the annotation names (the `PP:` forms only).
    pub stage: Option<u32>,
    /// A send or receive for the pass, not the pass.
    pub transfer: bool,
}

pub fn pipeline_pass(name: &str) -> Option<PipelinePass> {
    let number = |digits: &str| digits.bytes().all(|b| b.is_ascii_digit()).then(|| digits.parse().ok()).flatten();
    if let Some(stage_and_action) = name.strip_prefix("PP:") {
        let action = stage_and_action.trim_start_matches(|c: char| c.is_ascii_digit());
        let stage = stage_and_action.get(..stage_and_action.len() - action.len()).and_then(number);
        let (transfer, action) = match action.strip_prefix("SEND_").or_else(|| action.strip_prefix("RECV_")) {
            Some(pass) => (true, pass),
            None => (false, action),
        };
        let backward = match (action.as_bytes().first()?, transfer) {
            (b'F', _) => false,
            (b'B', _) | (b'I' | b'W', false) => true,
            _ => return None,
        };
        return Some(PipelinePass { micro_batch: number(action.get(1..)?)?, backward, stage, transfer });
    }
    let (pass, micro_batch) = name.split_once(' ')?;
    let backward = match pass {
        "Forward" => false,
        "Backward" => true,
        _ => return None,
    };
    Some(PipelinePass { micro_batch: number(micro_batch)?, backward, stage: None, transfer: false })
}

/// The rank a file name carries (`rank3.pt.trace.json.gz`, `rank-3.json`, `trace_rank_12.json`).
pub fn rank_from_file_name(path: &str) -> Option<u32> {
    let base = path.rsplit(['/', '\\']).next().unwrap_or(path);
    parse_coords(base).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collectives_by_name() {
        for (name, op) in [
            ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", Some(CollectiveOp::AllReduce)),
            ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", Some(CollectiveOp::AllGather)),
            ("ncclDevKernel_Generic", Some(CollectiveOp::Other)),
            ("gloo:all_reduce", Some(CollectiveOp::AllReduce)),
            ("c10d::allreduce_", Some(CollectiveOp::AllReduce)),
            ("grads-reduce-scatter", Some(CollectiveOp::ReduceScatter)),
            ("forward-send", Some(CollectiveOp::Send)),
            ("backward-recv", Some(CollectiveOp::Recv)),
            ("record_param_comms", Some(CollectiveOp::Other)),
            ("aten::mm", None),
            ("forward-compute", None),
        ] {
            assert_eq!(collective_op(name), op, "{name}");
        }
    }

    #[test]
    fn attention_by_name() {
        for name in [
            "aten::scaled_dot_product_attention",
            "aten::_scaled_dot_product_flash_attention_for_cpu",
            "autograd::engine::evaluate_function: ScaledDotProductFlashAttentionForCpuBackward0",
            "flash_attn::_flash_attn_varlen_forward",
            "FlashAttnVarlenFunc",
            "attn_fwd",
            "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128>>",
            "fmha_cutlassF_f16_aligned_64x128_rf_sm80",
        ] {
            assert!(is_attention(name), "{name}");
        }
        assert!(!is_attention("aten::addmm"));
        assert!(is_backward("aten::_scaled_dot_product_flash_attention_for_cpu_backward"));
        assert!(!is_backward("aten::scaled_dot_product_attention"));
    }

    #[test]
    fn pipeline_passes_by_name() {
        for (name, pass) in [
            ("Forward 0", Some((0, false, None, false))),
            ("Backward 12", Some((12, true, None, false))),
            ("PP:0F3", Some((3, false, Some(0), false))),
            ("PP:12B7", Some((7, true, Some(12), false))),
            ("PP:1I0", Some((0, true, Some(1), false))),
            ("PP:1W0", Some((0, true, Some(1), false))),
            ("PP:1SEND_F3", Some((3, false, Some(1), true))),
            ("PP:2RECV_B0", Some((0, true, Some(2), true))),
            ("PP:1WAIT_SEND_F3", None),
            ("PP:1SEND_W3", None),
            ("PP:1UNSHARD", None),
            ("PP:1REDUCE_GRAD", None),
            ("PP:1F", None),
            ("PP:F3", Some((3, false, None, false))),
            ("PP:99999999999F3", Some((3, false, None, false))),
            ("Forward", None),
            ("Forward x", None),
            ("Forward -1", None),
            ("Forward +1", None),
            ("Forward 99999999999", None),
            ("Backward 1 2", None),
            ("forward 1", None),
            ("ProfilerStep#4", None),
        ] {
            let expected = pass.map(|(micro_batch, backward, stage, transfer)| PipelinePass {
                micro_batch,
                backward,
                stage,
                transfer,
            });
            assert_eq!(pipeline_pass(name), expected, "{name}");
        }
    }

    #[test]
    fn kinds_from_words() {
        for (name, kind) in [
            ("forward-compute", SpanKind::Compute),
            ("backward-compute", SpanKind::Compute),
            ("forward-send", SpanKind::Communication),
            ("grads-reduce-scatter", SpanKind::Communication),
            ("all-reduce wait", SpanKind::CollectiveWait),
            ("optimizer", SpanKind::Optimizer),
            ("gc", SpanKind::HostStall),
            ("dataloader", SpanKind::DataLoading),
            ("attention-forward", SpanKind::Attention),
            ("misc", SpanKind::Other),
        ] {
            assert_eq!(kind_from_words(name, ""), kind, "{name}");
        }
    }

    #[test]
    fn coordinates_in_labels() {
        let c = |dp, pp, tp| Coords { dp, pp, tp, cp: None };
        for (label, rank, coords) in [
            ("rank 7", Some(7), c(None, None, None)),
            ("DP rank [3]", None, c(Some(3), None, None)),
            ("PP rank 1, TP rank 0, compute", None, c(None, Some(1), Some(0))),
            ("rank 12 (dp=3, pp=1)", Some(12), c(Some(3), Some(1), None)),
            ("worker dp2 pp0", None, c(Some(2), Some(0), None)),
            ("python", None, c(None, None, None)),
        ] {
            assert_eq!(parse_coords(label), (rank, coords), "{label}");
        }
        assert_eq!(rank_from_file_name("/x/rank3.pt.trace.json.gz"), Some(3));
        assert_eq!(rank_from_file_name("run7/trace_rank-12.json"), Some(12));
        assert_eq!(rank_from_file_name("host_1234.1700000.pt.trace.json"), None);
    }
}
