//! The persistently slow workers, named together: two slow GPUs are two ranks to check, and a
//! slow node is one host to drain, not its slowest rank alone.

use super::frame::Frame;
use super::replay::{Factors, SLOW};
use crate::model::Job;
use crate::report::SlowWorker;

/// Every worker whose persistent factor marks it slow ([`SLOW`]), slowest first (ties by rank).
pub fn find(frame: &Frame, factors: &Factors, job: &Job) -> Vec<SlowWorker> {
    let mut slow: Vec<SlowWorker> = frame
        .slots
        .iter()
        .filter_map(|s| {
            let factor = factors.worker.get(s.stage)?.get(s.dp).copied()?;
            (factor > SLOW).then(|| SlowWorker { rank: s.rank, factor, host: host_of(job, s.rank) })
        })
        .collect();
    slow.sort_by(|a, b| b.factor.total_cmp(&a.factor).then(a.rank.cmp(&b.rank)));
    slow
}

fn host_of(job: &Job, rank: u32) -> Option<String> {
    let i = job.workers.binary_search_by_key(&rank, |w| w.rank).ok()?;
    job.workers.get(i)?.host.clone()
}

/// Ranks a node holds when the traces do not name hosts: the usual 8 GPUs.
const RANKS_PER_NODE: u32 = 8;

/// The slow workers in words: "ranks 2 and 5", "ranks 16–23 (every rank of host node3)", or
/// "ranks 16–23 (one aligned block of 8 ranks: likely one node)". `None` for fewer than two.
pub fn describe(slow: &[SlowWorker], job: &Job) -> Option<String> {
    if slow.len() < 2 {
        return None;
    }
    let mut ranks: Vec<u32> = slow.iter().map(|w| w.rank).collect();
    ranks.sort_unstable();
    let named = format!("ranks {}", rank_runs(&ranks));
    let mut hosts: Vec<&str> = slow.iter().filter_map(|w| w.host.as_deref()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let every_one_named = slow.iter().all(|w| w.host.is_some());
    // A job on one host: naming it says nothing.
    let mut job_hosts = job.workers.iter().filter_map(|w| w.host.as_deref());
    let one_host = job_hosts.next().is_some_and(|first| job_hosts.all(|h| h == first));
    if every_one_named && !hosts.is_empty() && !one_host {
        // Whole hosts, where every loaded rank of each is slow.
        let whole = hosts.iter().all(|h| {
            let mut on_host = job.workers.iter().filter(|w| w.host.as_deref() == Some(h));
            on_host.all(|w| ranks.binary_search(&w.rank).is_ok())
        });
        let list = hosts.join(", ");
        return Some(match (whole, hosts.len()) {
            (true, 1) => format!("{named} (every rank of host {list})"),
            (true, _) => format!("{named} (every rank of hosts {list})"),
            (false, 1) => format!("{named} (all on host {list})"),
            (false, _) => format!("{named} (on hosts {list})"),
        });
    }
    let first = ranks.first().copied().unwrap_or(0);
    let one_block = ranks.len() == RANKS_PER_NODE as usize
        && first % RANKS_PER_NODE == 0
        && ranks.iter().all(|&r| r / RANKS_PER_NODE == first / RANKS_PER_NODE);
    Some(if one_block {
        format!("{named} (one aligned block of {RANKS_PER_NODE} ranks: likely one node)")
    } else {
        named
    })
}

/// Sorted ranks as runs: "2 and 5", "1, 4 and 9", "16–23", "0–3 and 8".
fn rank_runs(ranks: &[u32]) -> String {
    let mut runs: Vec<String> = Vec::new();
    let mut i = 0;
    while let Some(&start) = ranks.get(i) {
        let mut end = start;
        while ranks.get(i + 1).is_some_and(|&next| Some(next) == end.checked_add(1)) {
            i += 1;
            end = end.saturating_add(1);
        }
        runs.push(if end > start.saturating_add(1) {
            format!("{start}–{end}")
        } else if end > start {
            format!("{start}, {end}")
        } else {
            start.to_string()
        });
        i += 1;
    }
    match runs.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => runs.concat(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Worker;

    fn job(hosts: &[(u32, Option<&str>)]) -> Job {
        let workers = hosts
            .iter()
            .map(|&(rank, host)| Worker { rank, host: host.map(str::to_owned), ..Worker::default() })
            .collect();
        Job { workers }
    }

    fn slow(ranks: &[u32], job: &Job) -> Vec<SlowWorker> {
        ranks.iter().map(|&rank| SlowWorker { rank, factor: 1.5, host: host_of(job, rank) }).collect()
    }

    #[test]
    fn ranks_are_written_as_runs() {
        assert_eq!(rank_runs(&[2, 5]), "2 and 5");
        assert_eq!(rank_runs(&[1, 4, 9]), "1, 4 and 9");
        assert_eq!(rank_runs(&[16, 17, 18, 19, 20, 21, 22, 23]), "16–23");
        assert_eq!(rank_runs(&[0, 1, 2, 3, 8]), "0–3 and 8");
        assert_eq!(rank_runs(&[3, 4]), "3, 4");
        assert_eq!(rank_runs(&[u32::MAX - 1, u32::MAX]), format!("{}, {}", u32::MAX - 1, u32::MAX));
    }

    #[test]
    fn a_whole_host_is_named_as_the_host() {
        let on = |r: u32| if r < 4 { "node0" } else { "node1" };
        let j = job(&(0..8).map(|r| (r, Some(on(r)))).collect::<Vec<_>>());
        assert_eq!(describe(&slow(&[4, 5, 6, 7], &j), &j).as_deref(), Some("ranks 4–7 (every rank of host node1)"));
        assert_eq!(describe(&slow(&[4, 6], &j), &j).as_deref(), Some("ranks 4 and 6 (all on host node1)"));
        assert_eq!(describe(&slow(&[1, 6], &j), &j).as_deref(), Some("ranks 1 and 6 (on hosts node0, node1)"));
    }

    #[test]
    fn a_job_on_one_host_names_no_host() {
        let j = job(&(0..4).map(|r| (r, Some("vm"))).collect::<Vec<_>>());
        assert_eq!(describe(&slow(&[1, 3], &j), &j).as_deref(), Some("ranks 1 and 3"));
    }

    #[test]
    fn without_hosts_an_aligned_block_of_eight_is_likely_a_node() {
        let j = job(&(0..64).map(|r| (r, None)).collect::<Vec<_>>());
        let block: Vec<u32> = (16..24).collect();
        let said = describe(&slow(&block, &j), &j).unwrap_or_default();
        assert_eq!(said, "ranks 16–23 (one aligned block of 8 ranks: likely one node)");
        let straddling: Vec<u32> = (12..20).collect();
        assert_eq!(describe(&slow(&straddling, &j), &j).as_deref(), Some("ranks 12–19"));
        assert_eq!(describe(&slow(&[3], &j), &j), None);
    }
}
