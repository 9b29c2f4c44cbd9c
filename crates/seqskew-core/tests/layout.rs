//! Where each worker sits in the job when its traces do not say it outright: per-rank Kineto
//! traces name no pipeline stage, but their send/recv calls record their process group's
//! ranks, the pipeline in stage order.

use seqskew_core::analysis::frame;
use seqskew_core::diag::Severity;
use seqskew_core::import::{Assembled, assemble, import_bytes};

/// One rank's Kineto trace of two steps, whose point-to-point call names `group` (as PyTorch
/// 2.x writes it): on the GPU kernel, or on the CPU's `record_param_comms`.
fn kineto(rank: u32, world: u32, group: &str, on_kernel: bool) -> Vec<u8> {
    let p2p = if on_kernel {
        format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 1, "ts": 1020, "dur": 2, "args": {{"correlation": 5}}}},
    {{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 20, "ts": 1030, "dur": 30, "args": {{"correlation": 5, "Collective name": "recv", "Process Group Ranks": "{group}"}}}},
    {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 1, "ts": 1012, "dur": 2, "args": {{"correlation": 6}}}},
    {{"ph": "X", "cat": "kernel", "name": "ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn", "pid": 0, "tid": 7, "ts": 1014, "dur": 10, "args": {{"correlation": 6}}}},"#
        )
    } else {
        format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 7, "tid": 1, "ts": 1030, "dur": 30, "args": {{"Collective name": "recv", "Process Group Ranks": "{group}", "Group size": 2}}}},"#
        )
    };
    format!(
        r#"{{"schemaVersion": 1, "distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": {world}}}, "traceEvents": [
    {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 1, "ts": 1000, "dur": 100}},
    {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 1, "ts": 1010, "dur": 15}},
    {p2p}
    {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 7, "tid": 1, "ts": 1100, "dur": 100}},
    {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 1, "ts": 1110, "dur": 15}}
]}}"#
    )
    .into_bytes()
}

fn job(files: &[(u32, u32, &str, bool)]) -> Assembled {
    let imports: Vec<_> = files
        .iter()
        .map(|&(rank, world, group, on_kernel)| {
            import_bytes(&format!("rank{rank}.pt.trace.json"), &kineto(rank, world, group, on_kernel))
        })
        .collect();
    for i in &imports {
        assert!(i.diagnostics.iter().all(|d| d.severity < Severity::Warning), "{:?}", i.diagnostics);
    }
    assemble(&imports)
}

fn stages(assembled: &Assembled) -> Vec<(u32, Option<u32>)> {
    assembled.job.workers.iter().map(|w| (w.rank, w.coords.pp)).collect()
}

#[test]
fn send_recv_groups_give_each_rank_its_pipeline_stage() {
    // Data parallel 2 × pipeline 2, Megatron's order: rank = dp + 2 · stage, pipelines {0, 2}
    // and {1, 3}; the groups recorded on kernels and on CPU ops alike.
    let assembled =
        job(&[(0, 4, "[0, 2]", true), (1, 4, "[1, 3]", false), (2, 4, "[0, 2]", false), (3, 4, "[1, 3]", true)]);
    assert_eq!(stages(&assembled), [(0, Some(0)), (1, Some(0)), (2, Some(1)), (3, Some(1))]);
    assert!(assembled.diagnostics.is_empty(), "{:?}", assembled.diagnostics);
    let table = frame::build(&assembled.job);
    assert_eq!((table.stages, table.dp_size), (2, 2));
    let places: Vec<(usize, usize)> = table.slots.iter().map(|s| (s.stage, s.dp)).collect();
    assert_eq!(places, [(0, 0), (0, 1), (1, 0), (1, 1)]);
    let labels: Vec<&str> = table.slots.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["rank 0 (dp 0, pp 0)", "rank 1 (dp 1, pp 0)", "rank 2 (dp 0, pp 1)", "rank 3 (dp 1, pp 1)"]);

    // A sample of the ranks still has its stages.
    let sample = job(&[(1, 4, "[1, 3]", false), (3, 4, "[1, 3]", true)]);
    assert_eq!(stages(&sample), [(1, Some(0)), (3, Some(1))]);
}

#[test]
fn groups_that_make_no_pipeline_layout_give_no_stages() {
    // Neighbour pairs (DeepSpeed's pipeline groups, three stages): the middle rank has two
    // groups, the others one pair each, whose place in the pair is not their stage.
    let assembled = job(&[(0, 3, "[0, 1]", false), (1, 3, "[0, 1]", false), (2, 3, "[1, 2]", false)]);
    assert_eq!(stages(&assembled), [(0, None), (1, None), (2, None)]);
    let said: Vec<&str> = assembled.diagnostics.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(
        said,
        ["the traces' send/recv groups do not make one pipeline layout; pipeline stages were not inferred"]
    );

    // A rank in two groups names none; with the others' groups then told apart, no stage.
    let two = kineto(1, 3, "[0, 1]", false);
    let text = String::from_utf8(two).expect("UTF-8").replace(
        r#"{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2""#,
        r#"{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 7, "tid": 1, "ts": 1070, "dur": 5, "args": {"Collective name": "send", "Process Group Ranks": "[1, 2]"}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2""#,
    );
    let import = import_bytes("rank1.pt.trace.json", text.as_bytes());
    assert_eq!(import.workers.first().map(|w| w.pipeline_group.clone()), Some(Vec::new()));
}

/// gloo's send/recv name no group (no `record_param_comms`): the trace's list of process
/// groups says which carried them, the only one or the one described as the pipeline.
#[test]
fn unnamed_send_recv_go_through_the_group_the_trace_lists() {
    let trace = |groups: &str, op: &str| {
        format!(
            r#"{{"schemaVersion": 1, "distributedInfo": {{"backend": "gloo", "rank": 1, "world_size": 2, "pg_config": {groups}}},
            "traceEvents": [
              {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100}},
              {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 50}},
              {{"ph": "X", "cat": "cpu_op", "name": "{op}", "pid": 1, "tid": 1, "ts": 60, "dur": 10}}
            ]}}"#
        )
    };
    let one = r#"[{"pg_name": "0", "pg_desc": "default_pg", "pg_size": 2, "ranks": [1, 0]}]"#;
    let two = r#"[{"pg_name": "0", "ranks": [0, 1]}, {"pg_name": "1", "ranks": [0, 1]}]"#;
    let mesh = r#"[{"pg_desc": "default_pg", "ranks": [0, 1, 2, 3]}, {"pg_desc": "mesh_dp", "ranks": [1, 3]}, {"pg_desc": "mesh_pp", "ranks": [0, 1]}]"#;
    for (groups, op, pipeline) in [
        (one, "c10d::send", vec![0, 1]),
        (one, "c10d::recv_", vec![0, 1]),
        (two, "c10d::send", vec![]),
        (mesh, "c10d::recv_", vec![0, 1]),
        (one, "c10d::allreduce_", vec![]),
        ("\"not a list\"", "c10d::send", vec![]),
    ] {
        let import = import_bytes("rank1.pt.trace.json", trace(groups, op).as_bytes());
        let groups: Vec<&[u32]> = import.workers.iter().map(|w| w.pipeline_group.as_slice()).collect();
        assert_eq!(groups, [pipeline.as_slice()], "{groups:?} with {op}: {:?}", import.diagnostics);
    }
}
