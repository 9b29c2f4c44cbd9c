//! The fix and the verification command for each failure cause.

use std::collections::BTreeSet;

use super::evidence::{Event, EventKind};

/// How to turn the Flight Recorder on, said wherever it would decide.
pub const FLIGHT_RECORDER: &str = "rerun with `TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_FR_BUFFER_SIZE=2000 \
     TORCH_NCCL_DUMP_ON_TIMEOUT=1`; each rank writes `/tmp/nccl_trace_rank_<rank>` on a timeout \
     (`TORCH_NCCL_DEBUG_INFO_TEMP_FILE` sets the prefix)";

/// What to give `seqskew check` again after the rerun: the one input, or the folder that
/// holds them all.
fn inputs_again(inputs: &[&str]) -> String {
    let [first, rest @ ..] = inputs else { return "logs/".into() };
    if rest.is_empty() {
        return (*first).to_owned();
    }
    let mut common: Vec<&str> = first.split('/').collect();
    common.pop();
    for path in rest {
        let parts: Vec<&str> = path.split('/').collect();
        let shared = common.iter().zip(&parts).take_while(|(a, b)| a == b).count();
        common.truncate(shared.min(parts.len().saturating_sub(1)));
    }
    if common.is_empty() { "./".into() } else { format!("{}/", common.join("/")) }
}

fn ranks_text(ranks: &BTreeSet<u32>) -> String {
    if ranks.is_empty() {
        return "The initiating rank".into();
    }
    let values: Vec<u64> = ranks.iter().map(|&r| u64::from(r)).collect();
    format!("Rank {}", crate::text::compact_ranges(&values))
}

/// The fix and the command that verifies it, for `cause` on `ranks`; `lead` is the event that
/// shows the cause best.
pub fn for_cause(cause: &str, ranks: &BTreeSet<u32>, lead: Option<&Event>, inputs: &[&str]) -> (String, String) {
    let who = ranks_text(ranks);
    let at = lead.and_then(|e| e.at.as_deref()).map(|a| format!(" at {a}")).unwrap_or_default();
    let again = inputs_again(inputs);
    let check = format!("seqskew check {again}");
    let fix = match cause {
        "crash" => {
            let name = match lead.map(|e| &e.kind) {
                Some(EventKind::Exception { name }) => name.clone(),
                Some(EventKind::Exit { signal: Some(s), .. }) => format!("the {s}"),
                _ => "the error".into(),
            };
            format!(
                "Fix {name} raised on {}{at}; the other ranks' timeouts and lost connections are its \
                 consequences, not causes. Rerun with torchrun `--log-dir logs/` (and `@record` on `main` \
                 for error files) and check that no rank fails.",
                who.to_lowercase()
            )
        }
        "oom" => format!(
            "{who} ran out of memory{at}. With variable-length documents the rank that draws the longest \
             ones peaks highest: cap the tokens per micro-batch and balance documents across ranks by \
             cost a·L + b·L² (`seqskew analyze` on a step log or trace of the job fits a and b); also \
             activation checkpointing, a smaller micro-batch, or `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` \
             against fragmentation. Rerun and check that no rank fails."
        ),
        "killed" => format!(
            "{who} was killed with SIGKILL from outside the job: the kernel's OOM killer (host memory; on its \
             node `dmesg -T | grep -i -E 'killed process|out of memory'`), the scheduler's memory or time \
             limit (`sacct -j $SLURM_JOB_ID -o JobID,State,MaxRSS,ExitCode`, `kubectl describe pod`), or an \
             operator. Lower host memory (data-loader workers, pinned buffers, prefetch) or raise the limit."
        ),
        "hang" => format!(
            "{who} never issued the collective the others waited in. Find where its code path diverges: a \
             collective under a rank-conditional branch (saving, evaluation, logging on rank 0), a \
             data-dependent number of batches per rank, or a rank blocked in I/O (`py-spy dump --pid PID` \
             while it hangs shows where). To see the exact collective and its stack, {FLIGHT_RECORDER}."
        ),
        "collective_mismatch" => format!(
            "{who} called a different (or an extra) collective than the others at the same point: a \
             collective inside a branch only some ranks take, or tensors of different shapes or dtypes. \
             `TORCH_DISTRIBUTED_DEBUG=DETAIL` makes the job fail at the first mismatch with both call sites."
        ),
        "network" => format!(
            "{who} lost its network transport. Rerun with `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET`, check \
             the node's links (`ibstat`, `ibv_devinfo`), and run nccl-tests (`all_reduce_perf -b 8 -e 1G -f 2`) \
             across the nodes; drain the node if it fails."
        ),
        "slow_rank" => format!(
            "{who} was late, not stuck: work only it does (a checkpoint save, an evaluation, an upload) took \
             longer than the collective timeout while the others waited. Do that work on every rank or off the \
             critical path (`torch.distributed.checkpoint.async_save`, or saving shards on all ranks with \
             `torch.distributed.checkpoint`), or raise `timeout=` of `init_process_group` above its longest \
             pause. If it is slow every step instead, see the straggler verdict. Rerun and check that no rank fails."
        ),
        _ => format!(
            "Collect what would decide: the logs of every rank (torchrun `--log-dir logs/`), and \
             Flight Recorder dumps ({FLIGHT_RECORDER})."
        ),
    };
    (fix, check)
}
