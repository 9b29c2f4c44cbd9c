//! The page's state as a pure reducer (unit-tested natively): what is loaded, what is loading.

use std::rc::Rc;

use crate::protocol::{JobResult, Progress};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct AppState {
    /// The job the page is waiting for (results of older jobs are ignored).
    pub current_job: u32,
    pub loading: Option<Loading>,
    pub result: Option<Rc<JobResult>>,
    /// Names of the files of the shown (or loading) job.
    pub file_names: Vec<String>,
    /// A visible error banner: worker crashes, unreadable results.
    pub error: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Loading {
    pub progress: Progress,
}

#[derive(Clone, Debug)]
pub enum Action {
    Started { job: u32, names: Vec<String>, bytes: u64 },
    Progress(Progress),
    Finished { job: u32, result: Result<JobResult, String> },
    Cancelled { job: u32 },
    Crashed(String),
    DismissError,
}

impl AppState {
    pub fn reduce(&self, action: Action) -> AppState {
        let mut next = self.clone();
        match action {
            Action::Started { job, names, bytes } => {
                next.current_job = job;
                next.file_names = names;
                next.loading = Some(Loading {
                    progress: Progress {
                        job,
                        files_total: next.file_names.len() as u32,
                        bytes_total: bytes,
                        ..Progress::default()
                    },
                });
            }
            Action::Progress(p) if p.job == self.current_job && self.loading.is_some() => {
                next.loading = Some(Loading { progress: p });
            }
            Action::Progress(_) => {}
            Action::Finished { job, result } if job == self.current_job => {
                next.loading = None;
                match result {
                    Ok(r) => next.result = Some(Rc::new(r)),
                    Err(e) => next.error = Some(e),
                }
            }
            Action::Finished { .. } => {}
            Action::Cancelled { job } if job == self.current_job => next.loading = None,
            Action::Cancelled { .. } => {}
            Action::Crashed(message) => {
                next.loading = None;
                next.error = Some(format!(
                    "The analysis stopped on an internal error and was restarted. Please report it: {message}"
                ));
            }
            Action::DismissError => next.error = None,
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_results_are_ignored() {
        let s = AppState::default().reduce(Action::Started { job: 1, names: vec!["a".into()], bytes: 10 });
        let s = s.reduce(Action::Started { job: 2, names: vec!["b".into()], bytes: 20 });
        let s = s.reduce(Action::Finished { job: 1, result: Ok(JobResult::default()) });
        assert!(s.loading.is_some() && s.result.is_none());
        let s = s.reduce(Action::Finished { job: 2, result: Ok(JobResult { workers: 3, ..JobResult::default() }) });
        assert!(s.loading.is_none());
        assert_eq!(s.result.as_ref().map(|r| r.workers), Some(3));
    }

    #[test]
    fn a_crash_stops_loading_and_shows_an_error() {
        let s = AppState::default().reduce(Action::Started { job: 1, names: vec![], bytes: 0 });
        let s = s.reduce(Action::Crashed("boom".into()));
        assert!(s.loading.is_none());
        assert!(s.error.as_deref().is_some_and(|e| e.contains("boom")));
        assert!(s.reduce(Action::DismissError).error.is_none());
    }
}
