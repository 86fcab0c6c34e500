//! A progress bar on stderr that appears only when work lasts longer than a second.
//!
//! Short runs stay silent (a bar that flashes for 200 ms is noise), and nothing is drawn when
//! stderr is not a terminal (logs, CI, pipes) or when the user asked for `--quiet`. The bar only
//! observes: it never influences what is simulated.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long work must last before the bar is drawn.
pub const SHOW_AFTER: Duration = Duration::from_secs(1);

/// The bar before any run finished: no rate yet, so no ETA (indicatif would say `0s`).
const ETA_UNKNOWN: &str = "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} runs, eta estimating… {msg}";
/// The bar once a run finished.
const ETA_KNOWN: &str = "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} runs, eta {eta} {msg}";

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).expect("valid template").progress_chars("=> ")
}

/// Runs finished and runs to do, counted for an observer other than the bar (the Python
/// package's progress line): see [`watch`].
#[derive(Debug, Default)]
pub struct Counts {
    /// Runs finished.
    pub done: AtomicU64,
    /// Runs to do (added to as each piece of work starts).
    pub total: AtomicU64,
}

thread_local! {
    /// The counts every [`Progress`] made on this thread adds to ([`watch`]).
    static WATCHED: std::cell::RefCell<Option<Arc<Counts>>> = const { std::cell::RefCell::new(None) };
}

/// Runs `work` with every [`Progress`] it makes on this thread also counting into `counts`.
pub fn watch<T>(counts: Arc<Counts>, work: impl FnOnce() -> T) -> T {
    let before = WATCHED.with(|w| w.borrow_mut().replace(counts));
    let out = work();
    WATCHED.with(|w| *w.borrow_mut() = before);
    out
}

/// A counter of finished runs, drawn on stderr once [`SHOW_AFTER`] has passed.
pub struct Progress {
    bar: ProgressBar,
    /// The observer's counts ([`watch`]), if the thread that made the bar had one.
    counts: Option<Arc<Counts>>,
    /// Dropping the sender wakes the watcher early, when the work ends before [`SHOW_AFTER`].
    stop: Option<mpsc::Sender<()>>,
    watcher: Option<JoinHandle<()>>,
}

impl Progress {
    /// A bar over `total` runs; hidden unless `wanted` and stderr is a terminal.
    pub fn new(wanted: bool, total: u64) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        let counts = WATCHED.with(|w| w.borrow().clone());
        if let Some(c) = &counts {
            c.total.fetch_add(total, Ordering::Relaxed);
        }
        if !wanted || !std::io::stderr().is_terminal() {
            return Progress { bar, counts, stop: None, watcher: None };
        }
        bar.set_style(style(ETA_UNKNOWN));
        let (stop, stopped) = mpsc::channel::<()>();
        let shown = bar.clone();
        let watcher = std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(SHOW_AFTER) {
                shown.set_draw_target(ProgressDrawTarget::stderr());
                shown.enable_steady_tick(Duration::from_millis(200));
            }
        });
        Progress { bar, counts, stop: Some(stop), watcher: Some(watcher) }
    }

    /// The bar with `message` after its count (e.g. a time budget).
    pub fn with_message(self, message: String) -> Progress {
        self.bar.set_message(message);
        self
    }

    /// Counts one finished run.
    pub fn inc(&self) {
        self.inc_by(1);
    }

    /// Counts `n` runs at once (finished, or skipped because they were not needed); the first
    /// count turns "eta estimating…" into an estimate.
    pub fn inc_by(&self, n: u64) {
        if self.bar.position() == 0 && n > 0 && self.stop.is_some() {
            self.bar.set_style(style(ETA_KNOWN));
        }
        self.bar.inc(n);
        if let Some(c) = &self.counts {
            c.done.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Stops the watcher and clears the bar.
    pub fn finish(mut self) {
        drop(self.stop.take());
        if let Some(watcher) = self.watcher.take() {
            // The watcher only sleeps and flips the draw target: it cannot panic in practice.
            let _ = watcher.join();
        }
        self.bar.finish_and_clear();
    }
}

/// Runs `work`, which lasts about `total_s` wall seconds (a run in real time: emulation), under a
/// bar of the seconds passed, drawn as [`Progress`] is (after [`SHOW_AFTER`], on a terminal,
/// when `wanted`). The bar only observes: it reads the clock.
pub fn timed<T>(wanted: bool, what: &str, total_s: u64, work: impl FnOnce() -> T) -> T {
    let bar = ProgressBar::with_draw_target(Some(total_s.max(1)), ProgressDrawTarget::hidden());
    if !wanted || !std::io::stderr().is_terminal() {
        return work();
    }
    bar.set_style(style("{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} s {msg}"));
    bar.set_message(what.to_string());
    let (stop, stopped) = mpsc::channel::<()>();
    let shown = bar.clone();
    let start = std::time::Instant::now();
    let ticker = std::thread::spawn(move || {
        let mut drawn = false;
        while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(Duration::from_millis(200)) {
            if !drawn && start.elapsed() >= SHOW_AFTER {
                shown.set_draw_target(ProgressDrawTarget::stderr());
                drawn = true;
            }
            shown.set_position(start.elapsed().as_secs().min(total_s));
            shown.tick();
        }
    });
    let out = work();
    drop(stop);
    // The ticker only sleeps and draws: it cannot panic in practice.
    let _ = ticker.join();
    bar.finish_and_clear();
    out
}
