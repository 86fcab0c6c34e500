//! The emulator: a scenario run in real time on this machine, each hop a real HTTP/1.1 server
//! on 127.0.0.1 (tokio + hyper), each logical request a real tokio task that connects, waits
//! with a real attempt timeout and retries with the simulator's own policy code
//! ([`crate::model::policy::RetryPolicy::wait_after_failure`]). What crosses the wire is recorded into the same
//! [`RunRecord`] the simulator fills, so the metrics, summary.json, timeseries.csv and charts are
//! derived by the same code. The simulator never imports this module (its hot path stays free
//! of async and of these crates).
//!
//! Bounds: servers bind and clients connect to 127.0.0.1 only; a run refuses more than
//! [`Options::max_requests`] logical requests up front and stops after
//! [`Options::max_seconds`] of wall time whatever is still in flight.

pub mod backon_client;
mod client;
mod clock;
mod server;

use crate::engine::Nanos;
use crate::metrics::RunRecord;
use crate::model::fault::{FaultKind, InService};
use crate::model::spec::{Arrival, SimSpec};
use crate::runner::Emulation;
pub use clock::Clock;
use std::sync::{Arc, Mutex};

/// How to run an emulation.
#[derive(Clone, Debug)]
pub struct Options {
    /// Wall seconds per scenario second (2 = twice as slow as the scenario's clock).
    pub time_scale: f64,
    /// Wall-clock limit: the run stops after this many seconds, whatever is still in flight.
    pub max_seconds: f64,
    /// Most logical requests a run may plan (refused up front beyond it).
    pub max_requests: u64,
    /// Run even when the timer check finds this machine too late for the scenario's service
    /// times (a warning instead of a refusal).
    pub allow_late: bool,
    /// Whose code decides the backoff.
    pub client: ClientMode,
    /// CPU work each attempt costs its client before it is sent (wall time, busy), with every
    /// client of the run on one thread — one client process's event loop, as a Python asyncio
    /// or Node client has. `None`: the clients share the servers' runtime and do no work.
    pub client_work: Option<std::time::Duration>,
    /// How callers hold their connections (`--connections`).
    pub connections: Connections,
    /// Emulated runs per variant (`--runs`), run `k` on the arrivals of simulated replication
    /// `k` (paired with it): more than one gives the measurement an interval of its own. [`run`] makes one; the command loops.
    pub runs: u32,
    /// Real endpoints in place of hops (`--target HOP=URL`): nothing is bound for those hops;
    /// their callers send to the endpoint and count its replies.
    pub targets: Vec<Target>,
}

/// A real endpoint in place of an emulated hop (`--target HOP=URL`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The hop it replaces (by name; checked against the scenario in [`preflight`]).
    pub hop: String,
    /// Where it listens.
    pub addr: std::net::SocketAddr,
    /// The Host header sent.
    pub host: String,
    /// The request path (with its query).
    pub path: String,
}

impl Target {
    /// Reads `HOP=http://HOST:PORT/PATH`. The host must be loopback (`127.0.0.1`, `::1` or
    /// `localhost`) unless `remote`; only plain HTTP/1.1 is spoken.
    pub fn parse(text: &str, remote: bool) -> Result<Target, String> {
        let fix = "give HOP=http://127.0.0.1:PORT/PATH (a hop's name and a plain-HTTP URL)";
        let (hop, url) = text.split_once('=').ok_or_else(|| format!("--target {text}: {fix}"))?;
        let uri: hyper::Uri = url.parse().map_err(|e| format!("--target {text}: `{url}` is not a URL ({e}); {fix}"))?;
        if uri.scheme_str() != Some("http") {
            return Err(format!("--target {text}: only http:// is spoken (no TLS); {fix}"));
        }
        let host = uri.host().ok_or_else(|| format!("--target {text}: the URL has no host; {fix}"))?.to_string();
        // A port beyond 65535 is not a port: hyper would read it as none (80) and the run would
        // measure another endpoint.
        // hyper's `port()` is None for a port it cannot read: take the authority's text after
        // the host instead.
        let authority = uri.authority().map_or("", |a| a.as_str());
        let after_host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let after_host = after_host.rsplit_once(']').map_or(after_host, |(_, rest)| rest);
        let port = match after_host.rsplit_once(':') {
            None => 80,
            Some((_, p)) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                Ok(_) | Err(_) => return Err(format!("--target {text}: port `{p}` is not a port (1 to 65535); {fix}")),
            },
        };
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let addr = std::net::ToSocketAddrs::to_socket_addrs(&(bare, port))
            .map_err(|e| format!("--target {text}: cannot resolve `{host}` ({e})"))?
            .next()
            .ok_or_else(|| format!("--target {text}: `{host}` resolves to no address"))?;
        if !remote && !addr.ip().is_loopback() {
            return Err(format!(
                "--target {text}: `{host}` is not on this machine; the emulator talks to 127.0.0.1 only unless you pass --allow-remote-target"
            ));
        }
        let path = uri.path_and_query().map_or("/".to_string(), |p| p.as_str().to_string());
        Ok(Target { hop: hop.to_string(), addr, host: format!("{host}:{port}"), path })
    }
}

/// How a caller connects to the hop it calls (`--connections`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Connections {
    /// A fresh connection for every attempt, closed after its reply: every attempt pays for a
    /// connect and a handshake on its caller's thread.
    #[default]
    PerAttempt,
    /// Keep-alive connections kept in a pool and reused, as HTTP client libraries do by default:
    /// one pool for all the clients (one client process), one for the hops' calls to each hop.
    /// A connection is opened only when every pooled one is busy; an attempt that times out
    /// closes its connection (HTTP/1.1 cannot take a request back).
    Pooled,
}

/// Whose code decides a client's backoff.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClientMode {
    /// The simulator's own policy code ([`crate::model::policy::RetryPolicy::wait_after_failure`]).
    #[default]
    Policy,
    /// The `backon` crate's exponential backoff with its jitter ([`backon_client`]).
    Backon,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            time_scale: 1.0,
            max_seconds: 120.0,
            max_requests: 20_000,
            allow_late: false,
            client: ClientMode::Policy,
            client_work: None,
            connections: Connections::PerAttempt,
            runs: 1,
            targets: Vec::new(),
        }
    }
}

/// Why an emulation did not run.
#[derive(Debug, thiserror::Error)]
pub enum EmulateError {
    /// The scenario uses something the emulator does not reproduce, or the machine cannot keep
    /// up: the caller's to change (exit code 2).
    #[error("{0}")]
    Refused(String),
    /// The runtime or a socket failed (exit code 1).
    #[error("{0}")]
    Failed(String),
}

/// The scenario features the emulator reproduces; anything else is refused by name, never run
/// with a silently different behaviour.
pub fn check_supported(spec: &SimSpec) -> Result<(), EmulateError> {
    let refuse = |what: String| {
        Err(EmulateError::Refused(format!(
            "emulate: {what} is not emulated yet (docs/MODEL.md, \"Emulation on real sockets\", lists what is); `retrystorm run` simulates it"
        )))
    };
    for hop in &spec.hops {
        let h = &hop.name;
        if hop.replicas.count != 1 || hop.autoscale.is_some() {
            return refuse(format!("hop `{h}`'s replicas or autoscaling"));
        }
        if hop.overload != crate::model::overload::OverloadSpec::default() {
            return refuse(format!("hop `{h}`'s overload control (discipline, shedding, admission)"));
        }
        if hop.fair || hop.is_occ() || hop.cache().is_some() || hop.pool.is_some() || hop.load_latency.is_some() {
            return refuse(format!("hop `{h}`'s kind (fair queues, occ, cache, pool or load_latency)"));
        }
        // A chain is emulated: one required call, made every time.
        match hop.calls.as_slice() {
            [] => {}
            [edge] if edge.required && edge.probability >= 1.0 => {
                let p = &spec.policies[edge.policy];
                if p.deadline_mode == crate::model::policy::DeadlineMode::Propagate {
                    return refuse(format!("policy `{}`'s propagated deadline", p.name));
                }
            }
            _ => return refuse(format!("hop `{h}`'s call graph (a chain of one required call per hop is emulated)")),
        }
    }
    for t in &spec.tenants {
        match t.arrival {
            // Every arrival kind is emulated.
            Arrival::Herd { .. }
            | Arrival::Poisson { .. }
            | Arrival::Profile { .. }
            | Arrival::Ramp { .. }
            | Arrival::Trace(_)
            | Arrival::Closed { .. } => {}
        }
        if t.invalid_fraction > 0.0 || t.poison_fraction > 0.0 {
            return refuse(format!("tenant `{}`'s invalid or poison fraction", t.name));
        }
    }
    for p in &spec.policies {
        if p.budget.is_some() || p.breaker.is_some() {
            return refuse(format!("policy `{}`'s retry budget or circuit breaker", p.name));
        }
        if p.hedge.is_some() || p.cancel_on_timeout {
            return refuse(format!("policy `{}`'s hedging or cancellation", p.name));
        }
        if p.late_reply == crate::model::LateReply::Accept {
            return refuse(format!("policy `{}`'s late_reply = \"accept\"", p.name));
        }
    }
    for f in &spec.faults {
        match f.kind {
            FaultKind::Outage { in_service: InService::Reset | InService::Complete }
            | FaultKind::Throttle { .. }
            | FaultKind::ErrorRate { .. }
            | FaultKind::Slow { .. } => {}
            FaultKind::Hang => {
                let timed = spec.policies.iter().all(|p| p.attempt_timeout.is_some() || p.deadline.is_some());
                if !timed {
                    return refuse("a `hang` fault with a policy that has no attempt timeout or deadline".into());
                }
            }
            FaultKind::Outage { in_service: InService::Lost }
            | FaultKind::LostReply { .. }
            | FaultKind::Capacity { .. }
            | FaultKind::CacheFlush => {
                return refuse(format!("a `{}` fault{}", f.kind.name(), lost_note(&f.kind)));
            }
        }
    }
    Ok(())
}

fn lost_note(kind: &FaultKind) -> &'static str {
    match kind {
        FaultKind::Outage { .. } => " with in_service = \"lost\"",
        FaultKind::Hang
        | FaultKind::Throttle { .. }
        | FaultKind::ErrorRate { .. }
        | FaultKind::LostReply { .. }
        | FaultKind::Slow { .. }
        | FaultKind::Capacity { .. }
        | FaultKind::CacheFlush => "",
    }
}

/// Logical requests the scenario plans (herd: clients × requests each; Poisson, profile, ramp
/// and trace: the mean count over the horizon plus five standard deviations; closed loop: each
/// client's requests if each took its think time and the hops' mean latency).
pub fn planned_requests(spec: &SimSpec) -> u64 {
    use crate::engine::time::ns_to_secs;
    let horizon_s = ns_to_secs(spec.horizon);
    let poisson = |mean: f64| (mean + 5.0 * mean.sqrt()).ceil() as u64;
    spec.tenants
        .iter()
        .map(|t| match &t.arrival {
            Arrival::Herd { requests_per_client, .. } => u64::from(t.clients) * u64::from(*requests_per_client),
            Arrival::Poisson { .. } | Arrival::Profile { .. } => {
                // Each step's rate over its span, the last to the horizon.
                let steps = crate::model::arrivals::poisson_steps(&t.arrival).expect("an open-loop tenant");
                let ends = steps.iter().skip(1).map(|s| s.0).chain(std::iter::once(spec.horizon));
                poisson(
                    steps
                        .iter()
                        .zip(ends)
                        .map(|(&(from, rate), to)| rate * ns_to_secs(to.min(spec.horizon).saturating_sub(from)))
                        .sum(),
                )
            }
            &Arrival::Ramp { from_rate_per_s: from, rate_per_s: to, over } => {
                // The rate's integral: linear up to `over` (or the horizon), then constant.
                let ramp_s = ns_to_secs(over).min(horizon_s);
                let at_end = from + (to - from) * ramp_s / ns_to_secs(over).max(f64::MIN_POSITIVE);
                poisson((from + at_end) / 2.0 * ramp_s + to * (horizon_s - ramp_s))
            }
            Arrival::Trace(trace) => poisson(trace.requests_within(horizon_s)),
            // Each client's requests follow one another, a cycle apart at least (as the memory
            // estimate counts them), and the first may come before the horizon's first cycle.
            Arrival::Closed { think, .. } => {
                let cycle_ns = crate::model::arrivals::closed_loop_cycle_ns(spec, *think);
                u64::from(t.clients).saturating_mul((spec.horizon as f64 / cycle_ns).ceil() as u64 + 1)
            }
        })
        .sum()
}

/// The request headers a client sends: the logical request's id and the attempt number.
pub(crate) const REQUEST_HEADER: &str = "x-retrystorm-request";
/// See [`REQUEST_HEADER`].
pub(crate) const ATTEMPT_HEADER: &str = "x-retrystorm-attempt";
/// See [`REQUEST_HEADER`]: the index of the request's tenant.
pub(crate) const TENANT_HEADER: &str = "x-retrystorm-tenant";
/// The reply header an emulated hop sends: wall nanoseconds from reading the request to its reply.
pub(crate) const SERVED_HEADER: &str = "x-retrystorm-served-ns";

/// Shared by the servers and the clients of one run: the clock and what was recorded.
pub(crate) struct Shared {
    pub(crate) spec: SimSpec,
    pub(crate) client: ClientMode,
    /// The clients' work per attempt, all of them on one thread (`--client-work`).
    pub(crate) client_work: Option<std::time::Duration>,
    pub(crate) clock: Clock,
    pub(crate) record: Mutex<RunRecord>,
    /// How early every sleep asks to wake: the machine's mean timer lateness, measured before
    /// the run (tokio's timer rounds a deadline up to its next millisecond tick).
    pub(crate) lead: std::time::Duration,
    /// Timer error samples: wall nanoseconds between a sleep's deadline and its wake-up.
    pub(crate) lateness_ns: Mutex<Vec<u64>>,
    /// Attempts the servers are still handling (each in a task of its own, `server::start`).
    pub(crate) serving: std::sync::atomic::AtomicU32,
    /// How callers hold their connections.
    pub(crate) connections: Connections,
    /// Idle keep-alive connections (`Connections::Pooled`), per pool: the clients' (`true`) or a
    /// hop's callers' (`false`), and the hop called.
    pub(crate) idle: Mutex<std::collections::HashMap<(bool, usize), Vec<client::Conn>>>,
    /// Connection set-up times (wall nanoseconds from connect to a ready HTTP/1.1 connection).
    pub(crate) connect_ns: Mutex<Vec<u64>>,
    /// Loopback times: wall nanoseconds of each request's round trip on a ready connection, less
    /// the time the hop held it (its `SERVED_HEADER`).
    pub(crate) loopback_ns: Mutex<Vec<u64>>,
    /// The clients' own delay on each retry against how busy their tenant was.
    pub(crate) client_delays: Mutex<crate::runner::ClientDelayFit>,
    /// The master seed and the replication this run stands for: its arrival times are that
    /// replication's ([`crate::engine::stream`], as the simulator draws them), its other draws
    /// (jitter, service and network times) keyed by both.
    pub(crate) seed: u64,
    pub(crate) replication: u64,
    /// Per hop, the real endpoint in its place (`--target`), if any.
    pub(crate) targets: Vec<Option<Target>>,
    /// Where each hop listens, set once every hop is bound.
    pub(crate) addrs: std::sync::OnceLock<Vec<std::net::SocketAddr>>,
}

impl Shared {
    /// The bucket of scenario time `t`.
    pub(crate) fn bucket(&self, t: Nanos) -> usize {
        ((t / self.spec.bucket) as usize).min(self.spec.bucket_count() - 1)
    }

    /// Sleeps until scenario time `at`, recording how late the wake-up was.
    pub(crate) async fn sleep_until(&self, at: Nanos) {
        self.sleep(at, true).await;
    }

    /// Sleeps until scenario time `at`; `record`: count the wake-up's error as the machine's
    /// timer error. A client thread busy with `--client-work` wakes late by its own work — the
    /// client's congestion, measured as its retries' delays, not the machine's timers.
    pub(crate) async fn sleep(&self, at: Nanos, record: bool) {
        let deadline = self.clock.instant_of(at);
        tokio::time::sleep_until(deadline.checked_sub(self.lead).unwrap_or(deadline).into()).await;
        if record {
            let error = clock::timing_error_ns(deadline);
            self.lateness_ns.lock().expect("lateness lock").push(error);
        }
    }
}

/// What the pre-flight timer check found: how early sleeps ask to wake, and the warnings to
/// carry into the run's record.
#[derive(Clone, Debug)]
pub struct Preflight {
    lead: std::time::Duration,
    raw_lateness_mean_s: f64,
    limit_s: f64,
    mean_service_wall_s: f64,
    warnings: Vec<String>,
}

fn runtime() -> Result<tokio::runtime::Runtime, EmulateError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| EmulateError::Failed(format!("emulate: cannot start the async runtime: {e}")))
}

/// Everything checked before a run (and before the caller writes anything): the features, the
/// planned requests, and this machine's timers against the service time (refused, unless
/// `allow_late`, when they are off by more than a tenth of the mean service time).
pub fn preflight(spec: &SimSpec, options: &Options) -> Result<Preflight, EmulateError> {
    check_supported(spec)?;
    for t in &options.targets {
        let Some(h) = spec.hops.iter().position(|h| h.name == t.hop) else {
            let names: Vec<&str> = spec.hops.iter().map(|h| h.name.as_str()).collect();
            return Err(EmulateError::Refused(format!(
                "--target {}=…: the scenario has no hop `{}`; its hops are {}",
                t.hop,
                t.hop,
                names.join(", ")
            )));
        };
        if !spec.hops[h].calls.is_empty() {
            return Err(EmulateError::Refused(format!(
                "--target {}=…: hop `{}` calls other hops; a real endpoint makes its own calls, so only a hop that calls none can be replaced",
                t.hop, t.hop
            )));
        }
        if spec.faults.iter().any(|f| f.hop == h) {
            return Err(EmulateError::Refused(format!(
                "--target {}=…: the scenario puts faults on hop `{}`, which a real endpoint does not play; remove them (--set) or target another hop",
                t.hop, t.hop
            )));
        }
    }
    if options.client == ClientMode::Backon {
        let retry_after_sent = spec.faults.iter().any(|f| matches!(f.kind, FaultKind::Throttle { .. }));
        for t in &spec.tenants {
            backon_client::check(&spec.policies[t.policy], retry_after_sent)?;
        }
    }
    let planned = planned_requests(spec);
    if planned > options.max_requests {
        return Err(EmulateError::Refused(format!(
            "emulate: the scenario plans {planned} requests, more than --max-requests {}; scale it down (e.g. --set tenant.NAME.clients=…) or raise --max-requests",
            options.max_requests
        )));
    }
    // A tenant's `client_timing` is the simulation's stand-in for its clients' own delays; the
    // emulated clients have real ones, so it is not emulated (it calibrates the simulated side of
    // `compare --emulate`, e.g. from what `--client-work` measured).
    let mut warnings: Vec<String> = spec
        .tenants
        .iter()
        .filter(|t| !t.timing.is_zero())
        .map(|t| format!("tenant `{}`'s client_timing is simulated only: the emulated clients' own delays are real ones (--client-work gives them a process that congests)", t.name))
        .collect();
    let runtime = runtime()?;
    let mean_service_wall_s =
        crate::engine::time::ns_to_secs(spec.hops[0].service.mean_ns(1) as Nanos) * options.time_scale;
    // First how late the timers wake, then how far off they are when each sleep asks to wake
    // that much early (what the run does).
    let raw = runtime.block_on(clock::timer_error(mean_service_wall_s, std::time::Duration::ZERO));
    let lead = std::time::Duration::from_secs_f64(raw.mean_s);
    let calibration = runtime.block_on(clock::timer_error(mean_service_wall_s, lead));
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    let limit_s = mean_service_wall_s / 10.0;
    if calibration.mean_s > limit_s {
        let text = format!(
            "this machine's timers wake {:.3} ms off their deadlines on average (p99 {:.3} ms), after correcting for their mean lateness, against a mean service time of {:.3} ms at --time-scale {}: more than a tenth of it, so service times and backoffs are not what the scenario says",
            calibration.mean_s * 1e3,
            calibration.p99_s * 1e3,
            mean_service_wall_s * 1e3,
            options.time_scale
        );
        if !options.allow_late {
            let enough = options.time_scale * calibration.mean_s / limit_s;
            return Err(EmulateError::Refused(format!(
                "emulate: {text}; raise --time-scale (to about {:.0} or more) or pass --allow-late to run anyway",
                (enough * 1.5).ceil().max(options.time_scale * 2.0)
            )));
        }
        warnings.push(text);
    }
    Ok(Preflight { lead, raw_lateness_mean_s: raw.mean_s, limit_s, mean_service_wall_s, warnings })
}

/// Runs `spec` once on loopback after its [`preflight`] and returns what the wire showed plus
/// the machine's overhead.
pub fn run(
    spec: &SimSpec,
    (seed, replication): (u64, u64),
    options: &Options,
    preflight: &Preflight,
) -> Result<(RunRecord, Emulation), EmulateError> {
    let runtime = runtime()?;
    let (lead, limit, mean_service_wall_s) = (preflight.lead, preflight.limit_s, preflight.mean_service_wall_s);
    let mut warnings = preflight.warnings.clone();
    let started = std::time::Instant::now();
    let cpu_before = clock::process_cpu_s();
    let outcome = runtime.block_on(run_async(spec.clone(), (seed, replication), options.clone(), lead));
    let wall_s = started.elapsed().as_secs_f64();
    let cpu_s = cpu_before.zip(clock::process_cpu_s()).map(|(before, after)| (after - before).max(0.0));
    let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    let cpu_share = cpu_s.map(|c| if wall_s > 0.0 { c / (wall_s * cores) } else { 0.0 });
    if let Some(share) = cpu_share.filter(|&s| s > 0.8) {
        warnings.push(format!(
            "the emulator used {:.0}% of this machine's {cores} cores: it was CPU-bound, and its timings are the machine's",
            share * 100.0
        ));
    }
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    let Outcome { record, lateness, connect, loopback, client_delays } = outcome?;
    let (late_mean, late_p99) = clock::mean_p99_s(&lateness);
    let (connect_mean, connect_p99) = clock::mean_p99_s(&connect);
    let (loopback_mean, loopback_p99) = clock::mean_p99_s(&loopback);
    if late_mean > limit {
        warnings.push(format!(
            "during the run, timers woke {:.3} ms off their deadlines on average (p99 {:.3} ms), more than a tenth of the mean service time ({:.3} ms): the machine did not keep the scenario's clock",
            late_mean * 1e3,
            late_p99 * 1e3,
            mean_service_wall_s * 1e3
        ));
    }
    let emulation = Emulation {
        emulated: true,
        time_scale: options.time_scale,
        wall_s,
        timer_lateness_calibration_mean_s: preflight.raw_lateness_mean_s,
        timer_lateness_mean_s: late_mean,
        timer_lateness_p99_s: late_p99,
        timer_samples: lateness.len() as u64,
        connect_mean_s: connect_mean,
        connect_p99_s: connect_p99,
        connections: connect.len() as u64,
        pooled: options.connections == Connections::Pooled,
        loopback_mean_s: loopback_mean,
        loopback_p99_s: loopback_p99,
        loopback_samples: loopback.len() as u64,
        cpu_s,
        cpu_share,
        warnings,
        client_delays,
        comparison: None,
    };
    Ok((record, emulation))
}

/// What one run recorded: the wire's record, and the machine's samples (wall nanoseconds).
struct Outcome {
    record: RunRecord,
    /// Every sleep's error.
    lateness: Vec<u64>,
    /// Every connection's set-up.
    connect: Vec<u64>,
    /// Every exchange's loopback time (`Shared::loopback_ns`).
    loopback: Vec<u64>,
    client_delays: crate::runner::ClientDelayFit,
}

async fn run_async(
    spec: SimSpec,
    (seed, replication): (u64, u64),
    options: Options,
    lead: std::time::Duration,
) -> Result<Outcome, EmulateError> {
    let record = client::empty_record(&spec);
    let targets = spec.hops.iter().map(|h| options.targets.iter().find(|t| t.hop == h.name).cloned()).collect();
    let shared = Arc::new(Shared {
        clock: Clock::new(options.time_scale),
        client: options.client,
        client_work: options.client_work,
        connections: options.connections,
        idle: Mutex::new(std::collections::HashMap::new()),
        spec,
        lead,
        record: Mutex::new(record),
        lateness_ns: Mutex::new(Vec::new()),
        serving: std::sync::atomic::AtomicU32::new(0),
        connect_ns: Mutex::new(Vec::new()),
        loopback_ns: Mutex::new(Vec::new()),
        client_delays: Mutex::new(Default::default()),
        addrs: std::sync::OnceLock::new(),
        seed,
        replication,
        targets,
    });
    let servers = server::start(&shared).await?;
    let addr = servers.addrs[0];
    shared.clock.start();
    let clients = client::start(Arc::clone(&shared), addr);
    let limit = std::time::Duration::from_secs_f64(options.max_seconds);
    let drain = shared.clock.instant_of(shared.spec.drain_limit);
    let stop_at = drain.min(std::time::Instant::now() + limit);
    let stopped = |what: &str| {
        if stop_at == drain {
            format!("drain limit reached with {what}")
        } else {
            format!("--max-seconds {} reached with {what}", options.max_seconds)
        }
    };
    let truncated = tokio::select! {
        done = clients.done => {
            done.map_err(|e| EmulateError::Failed(format!("emulate: the clients' task failed: {e}")))?;
            None
        }
        _ = tokio::time::sleep_until(stop_at.into()) => Some(stopped("requests in flight")),
    };
    // As the simulator drains its queue, the run ends when the hops have finished the work they
    // took in, the attempts whose callers left included (within the same limits).
    let truncated = match truncated {
        Some(t) => Some(t),
        None => {
            let settled = async {
                while shared.serving.load(std::sync::atomic::Ordering::SeqCst) > 0 {
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                }
            };
            tokio::select! {
                () = settled => None,
                _ = tokio::time::sleep_until(stop_at.into()) => Some(stopped("attempts still in service")),
            }
        }
    };
    servers.stop();
    let mut record =
        std::mem::replace(&mut *shared.record.lock().expect("record lock"), client::empty_record(&shared.spec));
    client::finish_record(&mut record, truncated);
    let lateness = std::mem::take(&mut *shared.lateness_ns.lock().expect("lateness lock"));
    let connect = std::mem::take(&mut *shared.connect_ns.lock().expect("connect lock"));
    let loopback = std::mem::take(&mut *shared.loopback_ns.lock().expect("loopback lock"));
    let client_delays = *shared.client_delays.lock().expect("client delays lock");
    Ok(Outcome { record, lateness, connect, loopback, client_delays })
}
