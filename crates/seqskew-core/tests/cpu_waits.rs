//! CPU traces (gloo): a collective runs on the backend's thread while the training thread
//! waits for it, often inside an op that encloses the wait (FSDP reduce-scatters from a hook
//! inside `AccumulateGrad`). That time is communication, not compute; an innermost op that
//! overlaps a collective still computes. The real case: `fixtures/stragglers/fsdp_slow_rank`.

use seqskew_core::import::import_bytes;
use seqskew_core::model::{Nanos, SpanKind};

/// One 100 µs step: `aten::mm` 0–30, then `AccumulateGrad` 30–90 holding `aten::copy_` at
/// `copy` (µs from the step's start), while `gloo:all_reduce` runs 40–85 on the gloo thread.
fn trace(copy: (u32, u32)) -> Vec<u8> {
    let (copy_at, copy_for) = copy;
    format!(
        r#"{{"schemaVersion": 1, "distributedInfo": {{"backend": "gloo", "rank": 0, "world_size": 2}}, "traceEvents": [
    {{"ph": "M", "name": "thread_name", "pid": 7, "tid": 2, "args": {{"name": "gloo_worker"}}}},
    {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 1, "ts": 1000, "dur": 100}},
    {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 1, "ts": 1000, "dur": 30}},
    {{"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", "pid": 7, "tid": 1, "ts": 1030, "dur": 60}},
    {{"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 7, "tid": 1, "ts": {}, "dur": {copy_for}}},
    {{"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 7, "tid": 2, "ts": 1040, "dur": 45}}
]}}"#,
        1000 + copy_at
    )
    .into_bytes()
}

/// (compute, communication, host stall) of the step, in µs.
fn split(copy: (u32, u32)) -> (Nanos, Nanos, Nanos) {
    let import = import_bytes("rank0.pt.trace.json", &trace(copy));
    let step = import.workers.first().and_then(|w| w.steps.first()).expect("one step");
    let t = &step.totals;
    let us = |ns: Nanos| ns / 1000;
    (us(t.get(SpanKind::Compute)), us(t.communication()), us(t.get(SpanKind::HostStall)))
}

#[test]
fn an_op_blocked_on_a_collective_waits_from_its_last_compute_to_the_collective_s_end() {
    // copy_ 32–40; the all-reduce ends at 85 with nothing innermost running: 40–85 is a wait.
    // Compute: mm 30, AccumulateGrad's own 30–32 and 85–90, copy_ 8. Nothing runs 90–100.
    assert_eq!(split((32, 8)), (45, 45, 10));
}

#[test]
fn an_innermost_op_running_when_the_collective_ends_is_compute() {
    // copy_ 50–88 is running when the all-reduce ends at 85: the thread was not waiting for
    // it, so AccumulateGrad's time around it is compute, as before.
    assert_eq!(split((50, 38)), (90, 0, 10));
}
