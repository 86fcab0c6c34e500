//! The emulator's clock: scenario time against the wall, scaled, and the machine's timer
//! lateness.

use crate::engine::Nanos;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Scenario nanoseconds ↔ wall instants: scenario time t is `start + t × scale`.
pub struct Clock {
    scale: f64,
    start: OnceLock<Instant>,
}

impl Clock {
    /// A clock `scale` wall seconds per scenario second, not started.
    pub fn new(scale: f64) -> Clock {
        Clock { scale, start: OnceLock::new() }
    }

    /// Wall seconds per scenario second.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Starts scenario time 0 now (once).
    pub fn start(&self) {
        let _ = self.start.set(Instant::now());
    }

    fn origin(&self) -> Instant {
        *self.start.get_or_init(Instant::now)
    }

    /// The scenario time now.
    pub fn now(&self) -> Nanos {
        (self.origin().elapsed().as_nanos() as f64 / self.scale) as Nanos
    }

    /// The wall instant of scenario time `t`.
    pub fn instant_of(&self, t: Nanos) -> Instant {
        self.origin() + self.wall(t)
    }

    /// A scenario duration on the wall.
    pub fn wall(&self, d: Nanos) -> Duration {
        Duration::from_nanos((d as f64 * self.scale).min(u64::MAX as f64 / 2.0) as u64)
    }
}

/// The machine's timer error before a run.
pub struct Calibration {
    /// Mean error, seconds.
    pub mean_s: f64,
    /// 99th percentile, seconds.
    pub p99_s: f64,
}

/// Measures how far from their deadlines tokio's timers wake for sleeps of `service_s` (within
/// 1 to 50 ms) when each sleep asks to wake `lead` early: 10 rounds of 50 concurrent sleeps, as a
/// busy hop's workers sleep. The error is |woke − deadline|.
pub async fn timer_error(service_s: f64, lead: Duration) -> Calibration {
    let d = Duration::from_secs_f64(service_s.clamp(0.001, 0.05));
    let mut samples = Vec::with_capacity(500);
    for _ in 0..10 {
        let tasks: Vec<_> = (0..50)
            .map(|_| {
                tokio::spawn(async move {
                    let deadline = Instant::now() + d;
                    tokio::time::sleep_until(deadline.checked_sub(lead).unwrap_or(deadline).into()).await;
                    timing_error_ns(deadline)
                })
            })
            .collect();
        for t in tasks {
            samples.push(t.await.unwrap_or(0));
        }
    }
    let (mean_s, p99_s) = mean_p99_s(&samples);
    Calibration { mean_s, p99_s }
}

/// |now − deadline| in nanoseconds.
pub fn timing_error_ns(deadline: Instant) -> u64 {
    let now = Instant::now();
    let error = if now >= deadline { now - deadline } else { deadline - now };
    error.as_nanos() as u64
}

/// Mean and 99th percentile of nanosecond samples, in seconds (0 without samples).
pub fn mean_p99_s(samples: &[u64]) -> (f64, f64) {
    if samples.is_empty() {
        return (0.0, 0.0);
    }
    let mean = samples.iter().map(|&s| s as f64).sum::<f64>() / samples.len() as f64;
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let p99 = sorted[((sorted.len() as f64 * 0.99).ceil() as usize).clamp(1, sorted.len()) - 1];
    (mean / 1e9, p99 as f64 / 1e9)
}

/// CPU seconds this process has used (user + system), where the system says: Linux's
/// /proc/self/stat, fields 14 and 15, in USER_HZ ticks (100 a second on every architecture
/// Linux runs on: the kernel fixes it for user space).
pub fn process_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after its end.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some((user + system) as f64 / 100.0)
}

/// Seconds the calling thread has been on a CPU, and seconds it has waited on a run queue
/// (ready to run while other threads held the cores), where the system says: Linux's
/// /proc/thread-self/schedstat, whose first two fields are those times in nanoseconds.
pub fn thread_cpu_s() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let mut fields = stat.split_whitespace().map(|f| f.parse::<u64>().ok());
    let (on_cpu, waiting) = (fields.next()??, fields.next()??);
    Some((on_cpu as f64 / 1e9, waiting as f64 / 1e9))
}
