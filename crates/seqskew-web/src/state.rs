//! The page's state as a pure reducer (unit-tested natively): which runs are loaded (a run and,
//! in compare mode, the run after a fix), what is loading, and what the user looks at.

use std::rc::Rc;

use seqskew_core::failure::Reading;

use crate::hash::{HashState, View};
use crate::protocol::{JobResult, Progress};

/// Which run a job loads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Role {
    /// The run being diagnosed.
    #[default]
    Main,
    /// The run after a fix, compared against the main one.
    After,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Loading {
    pub role: Role,
    pub progress: Progress,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct AppState {
    /// The job the page waits for (results of older jobs are ignored).
    pub current_job: u32,
    pub loading: Option<Loading>,
    pub main: Option<Rc<JobResult>>,
    pub after: Option<Rc<JobResult>>,
    /// A visible error banner: worker crashes, unreadable results, refused links.
    pub error: Option<String>,
    /// The worker died: the next job needs a new one (even once the banner is dismissed).
    pub worker_crashed: bool,
    /// View, focused step and worker, zoom (mirrored in the URL hash).
    pub nav: HashState,
    /// What the failure worker made of the main run's logs and dumps.
    pub failure: FailureState,
}

/// The failure worker's part of the main run: it reads the logs and dumps the analysis worker
/// recognised but leaves to it.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum FailureState {
    /// The run has no log or dump.
    #[default]
    None,
    Reading {
        job: u32,
    },
    Done(Rc<Reading>),
    /// The failure worker could not start or read.
    Error(String),
}

#[derive(Clone, Debug)]
pub enum Action {
    Started {
        job: u32,
        role: Role,
        files: u32,
        bytes: u64,
    },
    Progress(Progress),
    Finished {
        job: u32,
        result: Result<Rc<JobResult>, String>,
    },
    Cancelled {
        job: u32,
    },
    /// The worker died with this panic message.
    Crashed(String),
    /// Something the page itself could not do (a link's trace), said as is.
    Failed(String),
    DismissError,
    Show(View),
    FocusStep(Option<u64>),
    FocusWorker(Option<u32>),
    Zoom(Option<(f64, f64)>),
    /// The hash changed (back/forward, a pasted link).
    Navigate(HashState),
    CloseCompare,
    /// The run's logs and dumps went to the failure worker (heeded for the main run only).
    FailureStarted {
        job: u32,
    },
    /// The failure worker's answer for `job` (`None`: it could not start, whatever the job).
    FailureRead {
        job: Option<u32>,
        result: Result<Rc<Reading>, String>,
    },
}

impl AppState {
    pub fn reduce(&self, action: Action) -> AppState {
        let mut next = self.clone();
        match action {
            Action::Started { job, role, files, bytes } => {
                next.current_job = job;
                if role == Role::Main {
                    next.failure = FailureState::None;
                }
                next.worker_crashed = false;
                next.loading = Some(Loading {
                    role,
                    progress: Progress { job, files_total: files, bytes_total: bytes, ..Progress::default() },
                });
            }
            Action::Progress(p) => {
                if let Some(l) = next.loading.as_mut().filter(|_| p.job == self.current_job) {
                    l.progress = p;
                }
            }
            Action::Finished { job, result } if job == self.current_job => {
                let role = next.loading.take().map(|l| l.role).unwrap_or_default();
                match result {
                    Ok(r) => match role {
                        Role::Main => {
                            next.main = Some(r);
                            // A new run invalidates the old comparison and focus.
                            next.after = None;
                            next.nav = HashState {
                                view: self.nav.view,
                                src: self.nav.src.clone(),
                                example: self.nav.example.clone(),
                                ..HashState::default()
                            };
                            if next.nav.view == View::Compare {
                                next.nav.view = View::Timeline;
                            }
                        }
                        Role::After => {
                            next.after = Some(r);
                            next.nav.view = View::Compare;
                        }
                    },
                    Err(e) => next.error = Some(e),
                }
            }
            Action::Finished { .. } => {}
            Action::Cancelled { job } => {
                if job == self.current_job {
                    next.loading = None;
                }
            }
            Action::Crashed(message) => {
                next.loading = None;
                next.error = Some(crash_message(&message));
                next.worker_crashed = true;
                // The failure worker was the crashed worker's: its answer will not come.
                if matches!(self.failure, FailureState::Reading { .. }) {
                    next.failure = FailureState::Error("the analysis stopped before every file was read".into());
                }
            }
            Action::Failed(message) => next.error = Some(message),
            Action::DismissError => next.error = None,
            Action::Show(v) => next.nav.view = v,
            Action::FocusStep(s) => next.nav.step = s,
            Action::FocusWorker(w) => next.nav.worker = w,
            Action::Zoom(z) => next.nav.zoom = z,
            Action::Navigate(h) => next.nav = h,
            // Only the main run's logs and dumps are diagnosed (not those of a run to compare).
            Action::FailureStarted { job } => {
                let main_run = self.loading.as_ref().is_some_and(|l| l.role == Role::Main);
                if job == self.current_job && main_run {
                    next.failure = FailureState::Reading { job };
                }
            }
            Action::FailureRead { job, result } => {
                let waiting =
                    matches!(self.failure, FailureState::Reading { job: j } if job.is_none_or(|job| job == j));
                if waiting {
                    next.failure = match result {
                        Ok(reading) => FailureState::Done(reading),
                        Err(why) => FailureState::Error(why),
                    };
                }
            }
            Action::CloseCompare => {
                next.after = None;
                if next.nav.view == View::Compare {
                    next.nav.view = View::Timeline;
                }
            }
        }
        next.connect_failure();
        next
    }

    /// The failure worker's diagnosis, told where its rank stopped in the main run's steps
    /// (whichever of the two answers came last).
    fn connect_failure(&mut self) {
        let FailureState::Done(reading) = &self.failure else { return };
        let Some(failure) = reading.failure.as_ref().filter(|f| f.in_job.is_none()) else { return };
        let Some(analysis) = self.main.as_ref().and_then(|m| m.analysis.as_ref()) else { return };
        if let Some(in_job) = seqskew_core::failure::in_job::in_job(failure, &analysis.views) {
            let mut connected = (**reading).clone();
            if let Some(f) = connected.failure.as_mut() {
                f.in_job = Some(in_job);
            }
            self.failure = FailureState::Done(Rc::new(connected));
        }
    }
}

/// What the page says when the worker died: running out of memory (a job too large for the
/// browser's 4 GiB) is the user's limit to work around, anything else is a bug to report.
fn crash_message(panic: &str) -> String {
    if panic.contains("capacity overflow") || panic.contains("memory allocation") {
        "These files need more memory than the browser gives a page (4 GiB at most), so the analysis \
         stopped; the page still works. Analyse them with the command line (`seqskew analyze`), or turn \
         them into a small step log there (`seqskew summarize FILES -o steps.jsonl`) and drop that."
            .to_owned()
    } else {
        format!(
            "The analysis stopped on an internal error and was restarted; the page still works. Please report: {panic}"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(workers: usize) -> Result<Rc<JobResult>, String> {
        Ok(Rc::new(JobResult { workers, ..JobResult::default() }))
    }

    #[test]
    fn stale_results_are_ignored() {
        let s = AppState::default().reduce(Action::Started { job: 1, role: Role::Main, files: 1, bytes: 10 });
        let s = s.reduce(Action::Started { job: 2, role: Role::Main, files: 1, bytes: 20 });
        let s = s.reduce(Action::Finished { job: 1, result: result(1) });
        assert!(s.loading.is_some() && s.main.is_none());
        let s = s.reduce(Action::Finished { job: 2, result: result(3) });
        assert!(s.loading.is_none());
        assert_eq!(s.main.as_ref().map(|r| r.workers), Some(3));
    }

    #[test]
    fn the_fixed_run_opens_compare_and_a_new_run_closes_it() {
        let s = AppState::default().reduce(Action::Started { job: 1, role: Role::Main, files: 1, bytes: 1 });
        let s = s.reduce(Action::Finished { job: 1, result: result(2) });
        let s = s.reduce(Action::Started { job: 2, role: Role::After, files: 1, bytes: 1 });
        let s = s.reduce(Action::Finished { job: 2, result: result(2) });
        assert!(s.after.is_some() && s.nav.view == View::Compare);
        let s = s.reduce(Action::Started { job: 3, role: Role::Main, files: 1, bytes: 1 });
        let s = s.reduce(Action::Finished { job: 3, result: result(4) });
        assert!(s.after.is_none() && s.nav.view == View::Timeline);
    }

    #[test]
    fn only_the_current_runs_failure_reading_is_kept() {
        let s = AppState::default().reduce(Action::Started { job: 1, role: Role::Main, files: 1, bytes: 1 });
        let s = s.reduce(Action::FailureStarted { job: 1 });
        let s = s.reduce(Action::Started { job: 2, role: Role::Main, files: 1, bytes: 1 });
        assert_eq!(s.failure, FailureState::None, "a new run forgets the old one's failure");
        let s = s.reduce(Action::FailureStarted { job: 2 });
        let late = s.reduce(Action::FailureRead { job: Some(1), result: Ok(Rc::new(Reading::default())) });
        assert_eq!(late.failure, FailureState::Reading { job: 2 });
        let done = s.reduce(Action::FailureRead { job: None, result: Err("could not start".into()) });
        assert_eq!(done.failure, FailureState::Error("could not start".into()));
        let after = done.reduce(Action::Started { job: 3, role: Role::After, files: 1, bytes: 1 });
        assert_eq!(after.failure, done.failure, "loading the run after a fix keeps the main run's failure");
        let after = after.reduce(Action::FailureStarted { job: 3 });
        assert_eq!(after.failure, done.failure, "the logs of the run to compare are not the main run's failure");
        let stale = s.reduce(Action::FailureStarted { job: 1 });
        assert_eq!(stale.failure, FailureState::Reading { job: 2 }, "an older job's start is ignored");
        let crashed = s.reduce(Action::Crashed("boom".into()));
        assert!(matches!(crashed.failure, FailureState::Error(_)), "no answer will come: {:?}", crashed.failure);
    }

    #[test]
    fn the_failure_is_told_where_its_rank_stopped_whichever_answer_comes_last() {
        use seqskew_core::analysis::{Analysis, views};
        let view_step = |step| views::StepView { step, ..views::StepView::default() };
        let analysis = Analysis {
            report: seqskew_core::report::Report::default(),
            views: views::Views {
                ranks: vec![0, 1],
                steps: vec![view_step(4), view_step(5)],
                last_steps: vec![
                    views::LastStep { step: 5, ..views::LastStep::default() },
                    views::LastStep { step: 4, ..views::LastStep::default() },
                ],
                ..views::Views::default()
            },
        };
        let run = Ok(Rc::new(JobResult { workers: 2, analysis: Some(Rc::new(analysis)), ..JobResult::default() }));
        let failure = seqskew_core::report::Failure { initiating_ranks: vec![1], ..Default::default() };
        let reading = Ok(Rc::new(Reading { failure: Some(failure), ..Reading::default() }));
        let started = AppState::default()
            .reduce(Action::Started { job: 1, role: Role::Main, files: 2, bytes: 1 })
            .reduce(Action::FailureStarted { job: 1 });
        let orders = [
            started
                .reduce(Action::Finished { job: 1, result: run.clone() })
                .reduce(Action::FailureRead { job: Some(1), result: reading.clone() }),
            started
                .reduce(Action::FailureRead { job: Some(1), result: reading })
                .reduce(Action::Finished { job: 1, result: run }),
        ];
        for state in orders {
            let FailureState::Done(reading) = &state.failure else { panic!("{:?}", state.failure) };
            let in_job = reading.failure.as_ref().and_then(|f| f.in_job.clone());
            assert_eq!(in_job.map(|j| (j.rank, j.last_step, j.job_last_step)), Some((1, 4, 5)));
        }
    }

    #[test]
    fn running_out_of_memory_is_not_called_a_bug() {
        for panic in ["capacity overflow", "memory allocation of 1073741824 bytes failed"] {
            let e = crash_message(panic);
            assert!(e.starts_with("These files need more memory") && e.contains("seqskew analyze"), "{e}");
        }
        assert!(crash_message("index out of bounds").contains("Please report: index out of bounds"));
    }

    #[test]
    fn a_crash_stops_loading_and_shows_an_error() {
        let s = AppState::default().reduce(Action::Started { job: 1, role: Role::Main, files: 0, bytes: 0 });
        let s = s.reduce(Action::Crashed("boom".into()));
        assert!(s.loading.is_none());
        assert!(s.error.as_deref().is_some_and(|e| e.contains("boom")));
        assert!(s.worker_crashed, "the crashed worker must be replaced");
        let dismissed = s.reduce(Action::DismissError);
        assert!(dismissed.error.is_none());
        assert!(dismissed.worker_crashed, "dismissing the banner does not revive the worker");
        let restarted = dismissed.reduce(Action::Started { job: 2, role: Role::Main, files: 1, bytes: 1 });
        assert!(!restarted.worker_crashed);
        let refused = AppState::default().reduce(Action::Failed("the link names x".into()));
        assert_eq!((refused.error.as_deref(), refused.worker_crashed), (Some("the link names x"), false));
    }
}
