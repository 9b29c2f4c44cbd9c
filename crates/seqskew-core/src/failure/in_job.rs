//! Where a failure happened in the job's steps, when traces or a step log of the same job are
//! loaded with its logs and dumps: the last step the initiating rank recorded, against the
//! job's last, and what it held then (its tokens, its longest document, and the longest of
//! that step's global batch). Always built: the page connects the failure worker's diagnosis
//! with the main worker's views.

use crate::analysis::views::Views;
use crate::report::{Failure, FailureInJob};

/// The failure's first initiating rank in the job's steps; `None` when that rank has none.
pub fn in_job(failure: &Failure, views: &Views) -> Option<FailureInJob> {
    let rank = *failure.initiating_ranks.first()?;
    let job_last_step = views.steps.iter().map(|s| s.step).max()?;
    let index = views.ranks.iter().position(|&r| r == rank)?;
    let last = views.last_steps.get(index)?;
    let batch_longest = views.steps.iter().find(|s| s.step == last.step).map_or(0.0, |s| s.max_len);
    Some(FailureInJob {
        rank,
        last_step: last.step,
        job_last_step,
        tokens: last.tokens.round() as u64,
        longest: last.max_len.round() as u64,
        batch_longest: batch_longest.round() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::views::{LastStep, StepView};

    fn views() -> Views {
        let step = |step, max_len| StepView { step, max_len, ..StepView::default() };
        Views {
            ranks: vec![0, 1],
            steps: vec![step(40, 900.0), step(41, 4096.0)],
            last_steps: vec![
                LastStep { step: 41, tokens: 8192.0, max_len: 4096.0 },
                LastStep { step: 40, tokens: 2048.0, max_len: 512.0 },
            ],
            ..Views::default()
        }
    }

    fn failing(rank: u32) -> Failure {
        Failure { initiating_ranks: vec![rank], ..Failure::default() }
    }

    #[test]
    fn the_initiating_rank_s_last_step_and_what_it_held() {
        let got = in_job(&failing(0), &views());
        let want = FailureInJob {
            rank: 0,
            last_step: 41,
            job_last_step: 41,
            tokens: 8192,
            longest: 4096,
            batch_longest: 4096,
        };
        assert_eq!(got, Some(want));
        assert_eq!(in_job(&failing(1), &views()).map(|j| (j.last_step, j.batch_longest)), Some((40, 900)));
    }

    #[test]
    fn nothing_when_the_rank_or_the_steps_are_not_in_the_job() {
        assert_eq!(in_job(&failing(7), &views()), None);
        assert_eq!(in_job(&Failure::default(), &views()), None);
        assert_eq!(in_job(&failing(0), &Views::default()), None);
    }
}
