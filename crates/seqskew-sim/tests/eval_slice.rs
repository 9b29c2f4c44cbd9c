//! A slice of the labelled corpus, diagnosed on every test run: the small jobs (≤ 64 workers)
//! among the first 90 cases, every scenario and file format among them. The full corpus
//! (`seqskew eval`, 540 jobs, ~25 minutes) is too slow for a test; this slice catches a change
//! that breaks a cause outright within a minute.

use std::collections::BTreeSet;

use seqskew_sim::eval::{corpus, run_case};

#[test]
fn a_slice_of_the_corpus_is_diagnosed_correctly() {
    let cases: Vec<_> = corpus(90, 1).into_iter().filter(|c| c.config.workers() <= 64).collect();
    let scenarios: BTreeSet<&str> = cases.iter().map(|c| c.scenario.as_str()).collect();
    assert_eq!(scenarios.len(), 9, "the slice must hold every scenario: {scenarios:?}");
    assert!(cases.len() >= 50, "only {} small cases", cases.len());
    let outcomes: Vec<_> = cases.iter().map(run_case).collect();
    let clear: Vec<_> = outcomes.iter().filter(|o| !o.ambiguous).collect();
    let wrong: Vec<String> = clear
        .iter()
        .filter(|o| o.predicted != o.truth)
        .map(|o| format!("case {} {} ({:?}): truth {} got {}", o.id, o.scenario, o.format, o.truth, o.predicted))
        .collect();
    // The full corpus scores 97.8%; allow one miss in twenty on this small slice.
    assert!(wrong.len() * 20 <= clear.len(), "{} of {} wrong:\n{}", wrong.len(), clear.len(), wrong.join("\n"));
}
