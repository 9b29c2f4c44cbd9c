//! Micro-batches in PyTorch profiler traces: `torch.distributed.pipelining` annotates each pass
//! of a micro-batch (`Forward 3`, `Backward 3`; `PP:1F3`, `PP:1B3` in its multi-stage
//! runtime), and the compute that ran in a pass is that micro-batch's.

use seqskew_core::analysis::{analyze, frame};
use seqskew_core::diag::Severity;
use seqskew_core::import::{FileImport, assemble, import_bytes};
use seqskew_core::model::{MicroBatch, Worker};

fn import(name: &str, events: &str) -> FileImport {
    let trace = format!(
        r#"{{"schemaVersion": 1, "distributedInfo": {{"backend": "nccl", "rank": 0, "world_size": 1}}, "traceEvents": [{events}]}}"#
    );
    let import = import_bytes(name, trace.as_bytes());
    assert!(import.diagnostics.iter().all(|d| d.severity < Severity::Warning), "{:?}", import.diagnostics);
    import
}

/// A micro-batch as the tests compare it: (id, forward µs, backward µs, attention µs, lengths).
type Summary = (u32, i64, i64, Option<i64>, Vec<u32>);

/// The micro-batches of the worker's first step.
fn micro_batches(worker: &Worker) -> Vec<Summary> {
    let step = worker.steps.first().expect("a step");
    let micros = |ns: i64| ns / 1000;
    worker
        .micro_batches_of(step)
        .iter()
        .map(|m: &MicroBatch| {
            let s = &m.sequences;
            (m.id, micros(m.forward), micros(m.backward), s.attention.map(micros), s.lengths.clone())
        })
        .collect()
}

/// A CPU op of the training thread.
fn op(name: &str, ts: u32, dur: u32) -> String {
    format!(r#"{{"ph": "X", "cat": "cpu_op", "name": "{name}", "pid": 7, "tid": 1, "ts": {ts}, "dur": {dur}}}"#)
}

/// A `record_function` annotation of the training thread.
fn mark(name: &str, ts: u32, dur: u32) -> String {
    format!(
        r#"{{"ph": "X", "cat": "user_annotation", "name": "{name}", "pid": 7, "tid": 1, "ts": {ts}, "dur": {dur}}}"#
    )
}

#[test]
fn cpu_ops_in_a_pass_are_its_micro_batchs() {
    // GPipe on the CPU: two forwards, then two backwards; the first forward's data loader marks
    // its documents. aten::mm nests aten::addmm; attention runs inside a matmul of micro-batch 1;
    // the optimizer runs after the passes, in no micro-batch. A pass holds its thread for all
    // of its annotation: the interpreter's time between its ops is the pass's.
    let events = [
        mark("ProfilerStep#4", 1000, 200),
        mark("Forward 0", 1000, 30),
        mark("seqlens=100,50", 1001, 1),
        op("aten::mm", 1005, 20),
        op("aten::addmm", 1006, 10),
        mark("Forward 1", 1030, 30),
        op("aten::mm", 1035, 15),
        op("aten::scaled_dot_product_attention", 1040, 5),
        mark("Backward 0", 1060, 40),
        op("aten::mm", 1062, 28),
        mark("Backward 1", 1100, 50),
        op("aten::mm", 1105, 35),
        mark("Optimizer.step#AdamW.step", 1160, 20),
        op("aten::add_", 1162, 10),
    ];
    let import = import("rank0.pt.trace.json", &events.join(",\n"));
    let worker = import.workers.first().expect("one worker");
    assert_eq!(
        micro_batches(worker),
        [(0, 30, 40, None, vec![100, 50]), (1, 30, 50, Some(5), vec![])],
        "forward and backward of each micro-batch: its passes' annotations"
    );
    // The timeline says which micro-batch each stretch of compute was, and the time between a
    // pass's ops is compute, not a host stall.
    let step = worker.steps.first().expect("a step");
    let labelled: Vec<Option<u32>> =
        step.spans.iter().filter(|s| s.kind.is_compute() && s.duration > 0).map(|s| s.micro_batch()).collect();
    assert_eq!(labelled, [Some(0), Some(1), Some(1), Some(1), Some(0), Some(1), None]);
    let idle = step.totals.get(seqskew_core::model::SpanKind::HostStall);
    assert_eq!(idle, 30_000, "idle only between the passes and the optimizer, and after it");
}

#[test]
fn a_passs_own_sends_and_receives_hold_its_thread_on_a_cpu_backend() {
    // A gloo stage under the pipelining runtime, whose sends and receives are actions of their
    // own (`PP:1SEND_F0`): the forward computes, then its send action copies for 10 µs and the
    // transfer (`gloo:send`) goes on while later passes compute; the backward's receive action
    // posts its receive (5 µs), the backward then waits 55 µs for the peer (`gloo:recv` ends
    // with nothing computing), computes, and its send action takes 10 µs.
    let events = [
        mark("ProfilerStep#1", 1000, 300),
        mark("PP:1F0", 1000, 50),
        op("aten::mm", 1005, 40),
        mark("PP:1SEND_F0", 1050, 12),
        op("c10d::send", 1050, 10),
        mark("gloo:send", 1060, 140),
        mark("PP:1RECV_B0", 1100, 5),
        op("c10d::recv_", 1100, 5),
        mark("gloo:recv", 1105, 55),
        mark("PP:1B0", 1105, 135),
        op("aten::mm", 1160, 60),
        mark("PP:1SEND_B0", 1240, 10),
        op("c10d::send", 1241, 8),
        mark("gloo:send", 1249, 7),
    ];
    let import = import("rank1.pt.trace.json", &events.join(",\n"));
    let worker = import.workers.first().expect("one worker");
    let step = worker.steps.first().expect("a step");
    let passes: Vec<_> = worker.micro_batches_of(step).iter().map(|m| (m.forward, m.backward, m.p2p)).collect();
    assert_eq!(passes, [(50_000, 80_000, (12_000, 15_000))], "the passes and their transfers held, the wait not");
}

/// One rank of a two-stage pipeline on the GPU, its passes annotated by the pipelining
/// runtime: each kernel is the micro-batch of the pass that launched it, whenever it runs.
fn gpu_stage(rank: u32, slow: bool) -> String {
    let mut events = vec![format!(
        r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 1, "ts": 1000, "dur": 1000}}"#
    )];
    let mut correlation = 0;
    let mut launch = |events: &mut Vec<String>, at: u32, kernel: &str, start: u32, dur: u32, args: &str| {
        correlation += 1;
        events.push(format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 1, "ts": {at}, "dur": 1, "args": {{"correlation": {correlation}}}}}"#
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "{kernel}", "pid": 0, "tid": 7, "ts": {start}, "dur": {dur}, "args": {{"correlation": {correlation}{args}}}}}"#
        ));
    };
    let gemm = "ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn";
    let group = r#", "Collective name": "send", "Process Group Ranks": "[0, 1]""#;
    // Four micro-batches, all forwards then all backwards, 100 µs apart on the CPU; the GPU
    // runs each pass's kernel 50 µs after its launch (backwards twice as long; rank 1's
    // micro-batch 2 three times as long, its longest documents).
    for (i, (mb, backward)) in (0..4).map(|mb| (mb, false)).chain((0..4).map(|mb| (mb, true))).enumerate() {
        let at = 1010 + 100 * i as u32;
        let name = format!("PP:{rank}{}{mb}", if backward { "B" } else { "F" });
        events.push(format!(
            r#"{{"ph": "X", "cat": "user_annotation", "name": "{name}", "pid": 7, "tid": 1, "ts": {at}, "dur": 20}}"#
        ));
        let dur = if backward { 20 } else { 10 } * if slow && mb == 2 { 3 } else { 1 };
        launch(&mut events, at + 1, gemm, at + 50, dur, "");
        launch(
            &mut events,
            at + 2,
            "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
            at + 50 + dur,
            5,
            group,
        );
    }
    events.join(",\n").replace(r#""rank": 0"#, &format!(r#""rank": {rank}"#))
}

#[test]
fn gpu_kernels_belong_to_the_pass_that_launched_them() {
    let import = import("rank1.pt.trace.json", &gpu_stage(1, true));
    let worker = import.workers.first().expect("one worker");
    assert_eq!(
        micro_batches(worker),
        [(0, 10, 20, None, vec![]), (1, 10, 20, None, vec![]), (2, 30, 60, None, vec![]), (3, 10, 20, None, vec![])],
        "send/recv kernels are not the passes' compute"
    );
}

/// The two stages' traces, assembled; `annotated` false renames the passes' annotations to
/// something no schedule writes.
fn pipeline(annotated: bool) -> seqskew_core::import::Assembled {
    let files: Vec<FileImport> = [(0, false), (1, true)]
        .iter()
        .map(|&(rank, slow)| {
            let events = gpu_stage(rank, slow);
            let events = if annotated { events } else { events.replace("PP:", "step part ") };
            let trace = format!(
                r#"{{"schemaVersion": 1, "distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": 2}}, "traceEvents": [{events}]}}"#
            );
            import_bytes(&format!("rank{rank}.pt.trace.json"), trace.as_bytes())
        })
        .collect();
    assemble(&files)
}

#[test]
fn a_pipeline_of_annotated_passes_is_replayed_pass_by_pass() {
    let assembled = pipeline(true);
    let stages: Vec<Option<u32>> = assembled.job.workers.iter().map(|w| w.coords.pp).collect();
    assert_eq!(stages, [Some(0), Some(1)], "the send/recv group orders the stages");
    let table = frame::build(&assembled.job);
    let passes: Vec<usize> = (0..2).map(|w| table.cell(0, w).map_or(0, |c| table.micro_batches_of(&c).len())).collect();
    assert_eq!(passes, [4, 4], "each stage's step has its four micro-batches");
    // Replayed as a pipeline, one slow micro-batch holds up the passes after it; as one pass a
    // stage (without the annotations) it is only a heavier stage.
    let factor = |assembled| analyze(&assembled, &[]).report.slowdown.factor;
    let (pipelined, whole) = (factor(assembled), factor(pipeline(false)));
    assert!(pipelined > whole + 0.03, "{pipelined} against {whole}");
}
