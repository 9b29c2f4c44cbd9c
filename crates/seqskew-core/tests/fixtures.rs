//! Every real trace in ../shared/fixtures imports to what it holds. The summaries below were
//! checked against the files (see each test's comment); `UPDATE_EXPECT=1` rewrites them.

mod common;

use common::{import_fixture, summary};
use expect_test::expect_file;

fn check(relative: &str, snapshot: expect_test::ExpectFile) {
    let whole = import_fixture(relative, usize::MAX);
    // Any chunking gives the same model.
    let chunked = import_fixture(relative, 65_521);
    assert_eq!(whole.workers, chunked.workers, "{relative}: chunking changed the model");
    snapshot.assert_eq(&summary(&whole));
}

#[test]
fn pytorch_cpu_dp2_random() {
    if common::skip_without_shared("pytorch_cpu_dp2_random") {
        return;
    }
    check("pytorch-cpu-dp2/dp2-random/rank0.pt.trace.json.gz", expect_file!["snapshots/dp2-random-rank0.txt"]);
    check("pytorch-cpu-dp2/dp2-random/rank1.pt.trace.json.gz", expect_file!["snapshots/dp2-random-rank1.txt"]);
}

/// The same job balanced, and balanced with rank 1 sleeping 150 ms a step.
#[test]
fn pytorch_cpu_dp2_balanced() {
    if common::skip_without_shared("pytorch_cpu_dp2_balanced") {
        return;
    }
    check("pytorch-cpu-dp2/dp2-balanced/rank0.pt.trace.json.gz", expect_file!["snapshots/dp2-balanced-rank0.txt"]);
    check("pytorch-cpu-dp2/dp2-balanced/rank1.pt.trace.json.gz", expect_file!["snapshots/dp2-balanced-rank1.txt"]);
    check(
        "pytorch-cpu-dp2/dp2-balanced-slowrank1/rank1.pt.trace.json.gz",
        expect_file!["snapshots/dp2-slowrank1-rank1.txt"],
    );
}

/// Others' traces from HTA and TraceLens test suites: GPU (CUDA and ROCm) Kineto traces,
/// sampled and filtered traces, torch.compile with Triton kernels.
#[test]
fn hta_and_tracelens_traces() {
    if common::skip_without_shared("hta_and_tracelens_traces") {
        return;
    }
    check("hta_amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", expect_file!["snapshots/hta-amd-mi250.txt"]);
    check("hta_nccl_parser_config/nccl_data.json.gz", expect_file!["snapshots/hta-nccl-data.txt"]);
    check("hta_trace_filter/sampled_rank-0.json.gz", expect_file!["snapshots/hta-sampled-rank0.txt"]);
    check("hta_trace_filter/sampled_rank-1.json.gz", expect_file!["snapshots/hta-sampled-rank1.txt"]);
    check("tracelens_b200/eager_trace.json.gz", expect_file!["snapshots/tracelens-b200.txt"]);
    check("tracelens_mi300/resnet_act_checkpoint.json.gz", expect_file!["snapshots/tracelens-mi300.txt"]);
    check("tracelens_torch_compile_triton/trace.json.gz", expect_file!["snapshots/tracelens-triton.txt"]);
}

/// Not a trace: Megatron's golden values (loss per step) are named as such, not misread.
#[test]
fn megatron_golden_values_are_not_a_trace() {
    if common::skip_without_shared("megatron_golden_values_are_not_a_trace") {
        return;
    }
    check("megatron_golden/golden_values_dev.json", expect_file!["snapshots/megatron-golden.txt"]);
}
