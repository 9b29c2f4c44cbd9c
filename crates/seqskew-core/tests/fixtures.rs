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
    check("pytorch-cpu-dp2/dp2-random/rank0.pt.trace.json.gz", expect_file!["snapshots/dp2-random-rank0.txt"]);
    check("pytorch-cpu-dp2/dp2-random/rank1.pt.trace.json.gz", expect_file!["snapshots/dp2-random-rank1.txt"]);
}
