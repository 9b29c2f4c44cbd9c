//! Progress on standard error while a run reads and analyses its inputs: a folder of large
//! traces can take minutes, and a command that prints nothing for that long looks hung. Drawn
//! only on a terminal (never into a pipe or a CI log), only once the run has taken about a
//! second (quick runs stay clean), and never with `--quiet`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Set once from `--quiet` before any work starts.
static QUIET: AtomicBool = AtomicBool::new(false);

pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// How long a run goes before its progress is drawn.
const DELAY: Duration = Duration::from_secs(1);

/// Makes the target the bar is drawn on, once it is shown.
type Target = Box<dyn FnOnce() -> ProgressDrawTarget + Send>;

/// Bytes read over the bytes of every input file, then what the run is doing.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// Progress over `total_bytes` of input, drawn on standard error after [`DELAY`].
    pub fn reading(files: usize, total_bytes: u64) -> Self {
        let draw: Option<Target> =
            (!QUIET.load(Ordering::Relaxed)).then(|| Box::new(ProgressDrawTarget::stderr) as Target);
        Self::with_target(files, total_bytes, DELAY, draw)
    }

    /// `draw` makes the target the bar appears on after `delay` (`None`: never drawn). The
    /// bar starts hidden; a detached thread shows it if the run is still going after `delay`,
    /// so a run of half a second leaves no trace on the terminal.
    fn with_target(files: usize, total_bytes: u64, delay: Duration, draw: Option<Target>) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total_bytes), ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template("{spinner} {msg} {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(format!("reading {}", seqskew_core::text::count(files, "file")));
        if let Some(draw) = draw {
            let weak = bar.downgrade();
            std::thread::spawn(move || {
                std::thread::sleep(delay);
                if let Some(bar) = weak.upgrade()
                    && !bar.is_finished()
                {
                    bar.set_draw_target(draw());
                    bar.enable_steady_tick(Duration::from_millis(120));
                }
            });
        }
        Self { bar }
    }

    /// `bytes` more of the input were read (called from the reading threads).
    pub fn read(&self, bytes: u64) {
        self.bar.inc(bytes);
    }

    /// The reading is over; the run goes on with `what` (e.g. "analysing 64 workers").
    pub fn then(&self, what: String) {
        self.bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        self.bar.set_message(what);
        self.bar.tick();
    }

    /// Runs `print` (lines for standard error) with the bar taken off the terminal meanwhile.
    pub fn suspend(&self, print: impl FnOnce()) {
        self.bar.suspend(print);
    }
}

impl Drop for Progress {
    /// The run's own output follows on a clean line.
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use indicatif::TermLike;

    use super::*;

    /// A terminal that keeps what is written to it.
    #[derive(Debug, Clone, Default)]
    struct Screen(Arc<Mutex<String>>);

    impl Screen {
        fn text(&self) -> String {
            self.0.lock().map(|s| s.clone()).unwrap_or_default()
        }
    }

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            100
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, line: &str) -> std::io::Result<()> {
            self.write_str(&format!("{line}\n"))
        }
        fn write_str(&self, text: &str) -> std::io::Result<()> {
            if let Ok(mut s) = self.0.lock() {
                s.push_str(text);
            }
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn on(screen: &Screen) -> Option<Target> {
        let screen = screen.clone();
        Some(Box::new(move || ProgressDrawTarget::term_like(Box::new(screen))))
    }

    #[test]
    fn a_long_run_is_drawn_after_the_delay_and_a_short_one_never() {
        let screen = Screen::default();
        let short = Progress::with_target(3, 1000, Duration::from_millis(200), on(&screen));
        short.read(1000);
        drop(short);
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(screen.text(), "", "a run shorter than the delay draws nothing");

        let long = Progress::with_target(3, 1000, Duration::from_millis(20), on(&screen));
        long.read(500);
        std::thread::sleep(Duration::from_millis(400));
        assert!(screen.text().contains("reading 3 files"), "{:?}", screen.text());
        long.then("analysing 2 workers".into());
        std::thread::sleep(Duration::from_millis(300));
        assert!(screen.text().contains("analysing 2 workers"), "{:?}", screen.text());
    }

    #[test]
    fn quiet_runs_are_never_drawn() {
        let quiet = Progress::with_target(1, 10, Duration::ZERO, None);
        quiet.read(5);
        assert!(quiet.bar.is_hidden());
    }
}
