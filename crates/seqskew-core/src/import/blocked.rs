//! Time a CPU-only trace's ops spend blocked on a collective rather than computing.
//!
//! In a CPU trace (gloo), a collective runs on the backend's own thread (`gloo:all_reduce`)
//! while the training thread waits for it, often inside an op that encloses the wait: FSDP
//! reduce-scatters its gradients from a hook inside `autograd::engine::evaluate_function:
//! AccumulateGrad` and blocks there until every rank has arrived. The timeline gives compute
//! priority over communication in flight (on a GPU, kernels on two streams do overlap), so such
//! an enclosing op would count the whole wait as compute, and the ranks that waited longest for
//! the slow one would look the slowest. Measured on a real FSDP job (the `fsdp_slow_rank`
//! fixture): the waiting ranks' "compute" held up to 157 ms of all-reduce wait in a 250 ms step.
//!
//! The rule: where a collective completes while no innermost op (one with no op of its own
//! thread inside it) computes, the thread was waiting for it from when it last computed (or the
//! collective began) until it completed, whatever ops enclose that time ([`waits`]). Innermost
//! ops that overlap a collective still compute: that is real overlap.

use super::timeline::union;
use crate::model::Nanos;

/// An op's interval on its thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OnThread {
    pub thread: i64,
    pub start: Nanos,
    pub end: Nanos,
}

/// For each op, whether another op of its thread starts inside it (it encloses work of its
/// own); in the order given. An op with the very same interval is not inside it. Per thread,
/// counted in the thread's intervals sorted as [`union`] sorts them (one sort of one type: the
/// analysis worker's bundle, which a first visit loads, carries this code, and each sort it
/// instantiates costs kilobytes).
pub fn encloses(ops: &[OnThread]) -> Vec<bool> {
    let mut threads: Vec<i64> = Vec::new();
    for op in ops {
        if !threads.contains(&op.thread) {
            threads.push(op.thread);
        }
    }
    let mut result = vec![false; ops.len()];
    for thread in threads {
        let mine = |o: &&OnThread| o.thread == thread;
        let mut intervals: Vec<(Nanos, Nanos)> = ops.iter().filter(mine).map(|o| (o.start, o.end)).collect();
        intervals.sort_unstable();
        let before = |key: (Nanos, Nanos), or_equal: bool| {
            intervals.partition_point(|&i| if or_equal { i <= key } else { i < key })
        };
        for (op, flag) in ops.iter().zip(result.iter_mut()).filter(|(o, _)| o.thread == thread) {
            let starting_inside =
                before((op.end, Nanos::MIN), false).saturating_sub(before((op.start, Nanos::MIN), false));
            let twins = before((op.start, op.end), true).saturating_sub(before((op.start, op.end), false));
            *flag = starting_inside > twins;
        }
    }
    result
}

/// Where the thread was blocked on a collective: for each collective that ends while no
/// innermost op computes, the time from when the last one stopped (or the collective began, if
/// later) to the collective's end. A thread waiting for a collective resumes when it completes;
/// a gap between two ops while an asynchronous collective happens to be in flight (a DDP
/// bucket's all-reduce under the backward pass) is dispatch, not a wait, and ends when the next
/// op starts, not when the collective does. `computing`: the innermost ops' time, sorted and
/// disjoint (a [`union`]). Sorted, disjoint.
pub fn waits(collectives: Vec<(Nanos, Nanos)>, computing: &[(Nanos, Nanos)]) -> Vec<(Nanos, Nanos)> {
    let mut waits = Vec::with_capacity(collectives.len());
    for (start, end) in collectives {
        // The first stretch of compute that reaches the collective's end.
        let next = computing.partition_point(|c| c.1 < end);
        if computing.get(next).is_some_and(|c| c.0 < end) {
            continue; // computing when it completed: not waiting for it
        }
        let idle_since = next.checked_sub(1).and_then(|i| computing.get(i)).map_or(Nanos::MIN, |c| c.1);
        waits.push((start.max(idle_since), end));
    }
    union(waits)
}

/// The parts of `[start, end)` outside the sorted, disjoint `holes`.
pub fn outside(start: Nanos, end: Nanos, holes: &[(Nanos, Nanos)]) -> Vec<(Nanos, Nanos)> {
    let mut parts = Vec::new();
    let mut from = start;
    let first = holes.partition_point(|h| h.1 <= start);
    for &(hole_start, hole_end) in holes.get(first..).unwrap_or_default() {
        if hole_start >= end {
            break;
        }
        if hole_start > from {
            parts.push((from, hole_start));
        }
        from = from.max(hole_end);
    }
    if from < end {
        parts.push((from, end));
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(thread: i64, start: Nanos, end: Nanos) -> OnThread {
        OnThread { thread, start, end }
    }

    #[test]
    fn an_op_encloses_the_ops_of_its_thread_that_start_inside_it() {
        let ops =
            [op(1, 0, 100), op(1, 10, 20), op(2, 30, 40), op(1, 100, 110), op(1, 50, 60), op(3, 0, 5), op(3, 0, 5)];
        // The twin ops on thread 3 enclose nothing: neither starts inside the other.
        assert_eq!(encloses(&ops), [true, false, false, false, false, false, false]);
        assert_eq!(encloses(&[]), Vec::<bool>::new());
    }

    #[test]
    fn a_wait_runs_from_the_last_compute_to_the_collective_s_end() {
        let computing = vec![(0, 15), (30, 35), (60, 100), (120, 130)];
        // Ends at 50, idle since 35: waited 35..50. Ends at 70, inside compute: no wait.
        // Began at 105, after the compute that ended at 100: waited 105..110.
        let collectives = vec![(10, 50), (40, 70), (105, 110), (125, 140)];
        assert_eq!(waits(collectives, &computing), [(35, 50), (105, 110), (130, 140)]);
        // A collective in flight across a gap it does not end in is no wait (dispatch).
        assert_eq!(waits(vec![(10, 65)], &computing), Vec::<(Nanos, Nanos)>::new());
        assert_eq!(waits(vec![(5, 5)], &[]), Vec::<(Nanos, Nanos)>::new());
        assert_eq!(waits(vec![(5, 9)], &[]), [(5, 9)]);
    }

    #[test]
    fn outside_the_holes() {
        let holes = [(15, 30), (35, 60)];
        assert_eq!(outside(0, 10, &[]), [(0, 10)]);
        assert_eq!(outside(0, 100, &holes), [(0, 15), (30, 35), (60, 100)]);
        assert_eq!(outside(20, 40, &holes), [(30, 35)]);
        assert_eq!(outside(16, 29, &holes), Vec::<(Nanos, Nanos)>::new());
        assert_eq!(outside(60, 70, &holes), [(60, 70)]);
    }
}
