//! What an emulated run (`emulate`, real sockets) measured about itself, carried in
//! `summary.json`: how the machine kept up with the scenario's clock, and the clients' own delay
//! on a retry against their load, fitted into the scenario's `client_timing`.

/// What an emulated run measured about itself (`summary.json`'s `emulation`): how the machine
/// kept up with the scenario's clock.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Emulation {
    /// Always true: these numbers come from the wire, not from the simulator.
    pub emulated: bool,
    /// Wall seconds per scenario second.
    pub time_scale: f64,
    /// Wall-clock seconds the run took.
    pub wall_s: f64,
    /// Mean timer lateness measured before the run (wall seconds a sleep woke after its
    /// deadline); every sleep of the run asks to wake this much early.
    pub timer_lateness_calibration_mean_s: f64,
    /// Mean timer error during the run, over every service and backoff sleep: wall seconds
    /// between a deadline and the wake-up, early or late, after that correction.
    pub timer_lateness_mean_s: f64,
    /// Its 99th percentile.
    pub timer_lateness_p99_s: f64,
    /// Sleeps measured.
    pub timer_samples: u64,
    /// Mean time to open a connection and complete the HTTP/1.1 handshake (wall seconds).
    pub connect_mean_s: f64,
    /// Its 99th percentile.
    pub connect_p99_s: f64,
    /// Connections opened: one per attempt, or fewer when `pooled`.
    pub connections: u64,
    /// Callers kept their connections in a pool and reused them (`--connections pooled`;
    /// absent, false, in runs written before the option).
    #[serde(default)]
    pub pooled: bool,
    /// Mean loopback time of a request and its reply on a ready connection (wall seconds): the
    /// round trip the caller saw less the time the hop held the attempt (0 in runs written
    /// before it was measured, and for a `--target` endpoint, which does not say).
    #[serde(default)]
    pub loopback_mean_s: f64,
    /// Its 99th percentile.
    #[serde(default)]
    pub loopback_p99_s: f64,
    /// Exchanges measured.
    #[serde(default)]
    pub loopback_samples: u64,
    /// CPU seconds the emulator's process used during the run (servers and clients together;
    /// `None` where the system does not say).
    pub cpu_s: Option<f64>,
    /// `cpu_s` ÷ (wall seconds × cores): 1 is every core busy (CPU saturation).
    pub cpu_share: Option<f64>,
    /// What the emulator warns about this machine (timers too late for the service times).
    pub warnings: Vec<String>,
    /// The clients' own delay on each retry, against how busy their tenant was: the data to
    /// fit a scenario's `client_timing` from (absent in runs written before it was measured).
    #[serde(default)]
    pub client_delays: ClientDelayFit,
    /// `compare --emulate`: the measured runs beside the simulation, row by row (absent for
    /// `emulate`, which has no simulation to compare with).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<MeasuredComparison>,
}

/// `compare --emulate`'s judgement of the measured runs against the simulated replications:
/// what `report.html`, `comparison.csv` and the terminal show.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredComparison {
    /// What the two sides are and how a row is judged.
    pub method: String,
    /// The verdict column's heading: `inside` (one run, against the prediction interval) or
    /// `agree` (several runs, by a permutation test).
    pub judged_by: String,
    /// One row per variant and metric.
    pub rows: Vec<ComparedRow>,
    /// How many agree, notes on the rows judged apart, and what the simulation leaves out.
    pub notes: Vec<String>,
}

/// One variant's metric, simulated and measured.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComparedRow {
    /// The variant.
    pub variant: String,
    /// The metric's label.
    pub metric: String,
    /// The simulation: mean and interval, as shown.
    pub simulated: String,
    /// The measurement, as shown.
    pub measured: String,
    /// `yes`, `NO`, or `-` (not judged) with why.
    pub verdict: String,
}

/// Least-squares sums of the clients' own delay on a retry (y, scenario seconds from the instant
/// the backoff asked for to the attempt being sent) against their tenant's attempts in the
/// bucket so far, per second, in thousands (x) — the model's `client_timing` (docs/MODEL.md,
/// "Client timing"). Sums, so runs merge exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientDelayFit {
    /// Retries measured.
    pub n: u64,
    /// Σx.
    pub sum_x: f64,
    /// Σy.
    pub sum_y: f64,
    /// Σx².
    pub sum_xx: f64,
    /// Σxy.
    pub sum_xy: f64,
    /// Attempts on which the client process was timed doing its work before sending
    /// (`--client-work`; absent in runs written before it was measured).
    #[serde(default)]
    pub work_n: u64,
    /// The seconds of that work, summed.
    #[serde(default)]
    pub work_sum_s: f64,
    /// Scenario seconds the client process's one thread was on a CPU during the run: the work
    /// above, and also every connection's set-up, the HTTP requests and replies, and the
    /// timers (`--client-work`; 0 where not measured).
    #[serde(default)]
    pub thread_busy_s: f64,
    /// Scenario seconds that thread was ready to run but not running: waiting for a core other
    /// threads held (the servers'), and each wake-up's scheduling delay (`--client-work`; 0
    /// where not measured).
    #[serde(default)]
    pub thread_waiting_s: f64,
    /// The attempts of the runs whose thread time was measured (a run stopped at its limit is
    /// not): what `thread_busy_s` is divided by.
    #[serde(default)]
    pub thread_attempts: u64,
}

impl ClientDelayFit {
    /// Adds one retry: `delay_s` late while its tenant sent `attempts_per_s`.
    pub fn add(&mut self, attempts_per_s: f64, delay_s: f64) {
        let x = attempts_per_s / 1_000.0;
        self.n += 1;
        self.sum_x += x;
        self.sum_y += delay_s;
        self.sum_xx += x * x;
        self.sum_xy += x * delay_s;
    }

    /// Both runs' retries.
    pub fn merged(&self, other: &ClientDelayFit) -> ClientDelayFit {
        ClientDelayFit {
            n: self.n + other.n,
            sum_x: self.sum_x + other.sum_x,
            sum_y: self.sum_y + other.sum_y,
            sum_xx: self.sum_xx + other.sum_xx,
            sum_xy: self.sum_xy + other.sum_xy,
            work_n: self.work_n + other.work_n,
            work_sum_s: self.work_sum_s + other.work_sum_s,
            thread_busy_s: self.thread_busy_s + other.thread_busy_s,
            thread_waiting_s: self.thread_waiting_s + other.thread_waiting_s,
            thread_attempts: self.thread_attempts + other.thread_attempts,
        }
    }

    /// One attempt on which the client process worked `work_s` seconds before sending it.
    pub fn add_work(&mut self, work_s: f64) {
        self.work_n += 1;
        self.work_sum_s += work_s;
    }

    /// The fitted line: (seconds at no load, seconds per 1,000 attempts/s); the slope is 0 when
    /// the load never varied. `None` without retries.
    pub fn line(&self) -> Option<(f64, f64)> {
        if self.n == 0 {
            return None;
        }
        let n = self.n as f64;
        let spread = n * self.sum_xx - self.sum_x * self.sum_x;
        let slope = if spread > 1e-12 * n * n { (n * self.sum_xy - self.sum_x * self.sum_y) / spread } else { 0.0 };
        Some(((self.sum_y - slope * self.sum_x) / n, slope))
    }

    /// What to write on the tenant to simulate these delays, with what was measured, or `None`
    /// without retries. A negative part (timers early on average, or later when idle than when
    /// busy) is written as 0 and said.
    pub fn advice(&self) -> Option<String> {
        if self.work_n > 0 {
            // A process that works on each attempt: its queue, not a line through the delays,
            // is what delays the retries (docs/MODEL.md, "Client timing"). What it costs per
            // attempt is all its thread did (connections and HTTP included) where that was
            // measured, else the work it was timed doing.
            let n = self.work_n as f64;
            let work_ms = self.work_sum_s / n * 1e3;
            let busy_ms =
                if self.thread_attempts > 0 { self.thread_busy_s / self.thread_attempts as f64 * 1e3 } else { 0.0 };
            if busy_ms > work_ms {
                return Some(format!(
                    "the client process's thread was busy {busy_ms:.3} ms per attempt, over {} attempts\n({work_ms:.3} ms its own work, the rest connections, HTTP and timers);\nto simulate it, on the tenant:\n  client_timing = {{ work = \"{busy_ms:.3}ms\" }}",
                    self.thread_attempts
                ));
            }
            return Some(format!(
                "the client process worked {work_ms:.3} ms on each attempt on average, over {} attempts,\none attempt at a time; to simulate it, on the tenant:\n  client_timing = {{ work = \"{work_ms:.3}ms\" }}",
                self.work_n
            ));
        }
        let (at_rest, per_1000) = self.line()?;
        let ms = |s: f64| format!("{:.3}ms", s.max(0.0) * 1e3);
        let clipped =
            if at_rest < 0.0 || per_1000 < 0.0 { "\n(a negative part of the fit is written as 0)" } else { "" };
        // Lines within 100 columns; the third is the field to paste.
        Some(format!(
            "the clients' own delay on a retry, over {} retries: {:.3} ms on average,\nfitted {:.3} ms + {:.3} ms per 1,000 attempts/s; to simulate it, on the tenant:\n  client_timing = {{ lateness = \"{}\", lateness_per_1000_per_s = \"{}\" }}{clipped}",
            self.n,
            self.sum_y / self.n as f64 * 1e3,
            at_rest * 1e3,
            per_1000 * 1e3,
            ms(at_rest),
            ms(per_1000),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::ClientDelayFit;

    #[test]
    fn the_fit_recovers_a_line_and_merging_equals_pooling() {
        // y = 0.002 + 0.0005 × x/1000 (seconds): 2 ms at rest, 0.5 ms per 1,000 attempts/s.
        let (mut a, mut b, mut all) = (ClientDelayFit::default(), ClientDelayFit::default(), ClientDelayFit::default());
        for (i, rate) in [0.0, 500.0, 1_000.0, 4_000.0, 10_000.0].into_iter().enumerate() {
            let y = 0.002 + 0.0005 * rate / 1_000.0;
            if i % 2 == 0 {
                a.add(rate, y)
            } else {
                b.add(rate, y)
            }
            all.add(rate, y);
        }
        let (at_rest, per_1000) = a.merged(&b).line().expect("retries");
        assert!((at_rest - 0.002).abs() < 1e-12 && (per_1000 - 0.0005).abs() < 1e-12, "{at_rest} {per_1000}");
        assert_eq!(a.merged(&b), all);
        // No variation in load: the slope is 0 and the level is the mean.
        let mut flat = ClientDelayFit::default();
        flat.add(100.0, 0.001);
        flat.add(100.0, 0.003);
        assert_eq!(flat.line(), Some((0.002, 0.0)));
        assert_eq!(ClientDelayFit::default().line(), None);
        let advice = all.merged(&ClientDelayFit::default()).advice().expect("advice");
        assert!(advice.contains("lateness = \"2.000ms\", lateness_per_1000_per_s = \"0.500ms\""), "{advice}");
        assert!(advice.lines().all(|l| l.chars().count() <= 100), "{advice}");
    }
}
