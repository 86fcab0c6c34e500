//! The clients: each logical request a tokio task that connects to the hop over 127.0.0.1,
//! waits with a real attempt timeout, and retries with the simulator's policy code.

use super::{ClientMode, Connections, Shared, ATTEMPT_HEADER, REQUEST_HEADER, SERVED_HEADER, TENANT_HEADER};
use crate::engine::time::ns_to_secs;
use crate::engine::{Nanos, StreamKind};
use crate::metrics::{DlqReason, RunRecord, RETRY_DELAY_SAMPLES_MAX};
use crate::model::arrivals::OpenLoop;
use crate::model::budget::FailureKind;
use crate::model::policy::JitterState;
use crate::model::spec::{Arrival, SimSpec};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper_util::rt::TokioIo;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

/// A record with nothing counted yet, shaped for `spec`.
pub(crate) fn empty_record(spec: &SimSpec) -> RunRecord {
    let buckets = spec.bucket_count();
    let mut record = RunRecord::empty(spec.hops.len(), spec.tenants.len(), buckets);
    for (counters, h) in record.hops.iter_mut().zip(&spec.hops) {
        counters.workers_peak = h.workers;
        counters.worker_ns = u128::from(h.workers) * u128::from(spec.horizon);
    }
    for (series, h) in record.hop_series.iter_mut().zip(&spec.hops) {
        series.iter_mut().for_each(|b| b.workers = h.workers);
    }
    record
}

/// The derived parts of a record once the run stopped: requests still in flight, the in-flight
/// series, and why the run stopped early (if it did).
pub(crate) fn finish_record(record: &mut RunRecord, truncated: Option<String>) {
    for (t, c) in record.tenants.iter().enumerate() {
        record.in_flight[t] = c.requests.saturating_sub(c.succeeded + c.rejected + c.dlq);
    }
    for series in &mut record.tenant_series {
        let mut live: i64 = 0;
        for bucket in series.iter_mut() {
            live += i64::from(bucket.arrivals) - i64::from(bucket.successes) - i64::from(bucket.failures);
            bucket.in_flight = u32::try_from(live.max(0)).unwrap_or(u32::MAX);
        }
    }
    record.truncated = truncated;
}

/// The clients of a run, started: `done` completes when every request has ended; dropping the
/// value stops those still running (a run stopped at its limit).
pub(crate) struct Clients {
    pub(crate) done: tokio::sync::oneshot::Receiver<()>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// Starts every tenant's requests: on the caller's runtime, or, when each attempt costs its client
/// work (`Shared::client_work`), on one thread of their own (one client process), each attempt
/// spinning for that work on it before it is sent — so that attempts fired together leave one
/// after another, each later by the work of those before it, as a busy event loop sends them.
/// On its own thread, the process's whole time on a CPU is measured too (the work, and the
/// connections, HTTP and timers around it: `ClientDelayFit::thread_busy_s`).
pub(crate) fn start(shared: Arc<Shared>, addr: SocketAddr) -> Clients {
    let work = shared.client_work;
    let (done_tx, done) = tokio::sync::oneshot::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = async move {
        // On the clients' own thread this future and every task it spawns run on that thread.
        let cpu_before = work.and_then(|_| super::clock::thread_cpu_s());
        tokio::select! {
            () = run_clients(Arc::clone(&shared), addr) => {
                if let Some((before, after)) = cpu_before.zip(super::clock::thread_cpu_s()) {
                    let scenario_s = |wall_s: f64| wall_s.max(0.0) / shared.clock.scale();
                    let mut fit = shared.client_delays.lock().expect("client delays lock");
                    fit.thread_busy_s += scenario_s(after.0 - before.0);
                    fit.thread_waiting_s += scenario_s(after.1 - before.1);
                    // Every attempt of this run (each run has its own record of delays).
                    fit.thread_attempts = fit.work_n;
                }
                let _ = done_tx.send(());
            }
            _ = stopped => {}
        }
    };
    match work {
        None => {
            tokio::spawn(run);
        }
        Some(_) => {
            std::thread::spawn(move || {
                match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(runtime) => runtime.block_on(run),
                    // `done` is dropped unsent: the run reports the clients failed.
                    Err(_) => drop(run),
                }
            });
        }
    }
    Clients { done, _stop: stop }
}

/// The first request id of closed-loop clients: tenant `t`'s client `c` sends requests
/// `CLOSED_IDS | t << 48 | c << 24` onwards, above every herd's and open-loop tenant's ids (at
/// most `--max-requests`, far below 2^62).
const CLOSED_IDS: u64 = 1 << 62;

/// Every tenant's requests, from their arrival times to a terminal state.
async fn run_clients(shared: Arc<Shared>, addr: SocketAddr) {
    let spec = &shared.spec;
    // A busy client thread's own lateness is its congestion, not the machine's timer error.
    let record_lateness = shared.client_work.is_none();
    let mut tasks = tokio::task::JoinSet::new();
    let mut next_id: u64 = 1;
    for (ti, tenant) in spec.tenants.iter().enumerate() {
        // The simulated replication's own arrival stream: this run sends its requests when that
        // replication's arrive (paired runs).
        let mut rng = crate::engine::stream(shared.seed, shared.replication, StreamKind::Arrivals, ti as u32);
        // A herd client sends `requests_per_client` one after another; a closed-loop client sends
        // its next request `think` after the one before ended, until the horizon
        // (`Simulation::schedule_next_request`): (most requests per client, none for a closed
        // loop; the think time).
        let (most, think) = match tenant.arrival {
            Arrival::Herd { requests_per_client, .. } => (Some(u64::from(requests_per_client)), 0),
            Arrival::Closed { think, .. } => (None, think),
            Arrival::Poisson { .. } | Arrival::Profile { .. } | Arrival::Ramp { .. } | Arrival::Trace(_) => {
                let mut process = OpenLoop::new(&tenant.arrival).expect("an open-loop tenant");
                let mut next = process.next(0, spec.horizon, &mut rng);
                while let Some(at) = next {
                    // The simulator's order on the stream at each arrival: its client, then the
                    // next arrival's time (`Simulation::on_poisson_arrival`).
                    let _client = rng.random_range(0..tenant.clients);
                    next = process.next(at, spec.horizon, &mut rng);
                    let (shared, id) = (Arc::clone(&shared), next_id);
                    next_id += 1;
                    tasks.spawn(async move {
                        shared.sleep(at, record_lateness).await;
                        call(&shared, Caller::Tenant(ti), addr, id, at).await;
                    });
                }
                continue;
            }
        };
        let firsts = crate::model::arrivals::first_requests(std::slice::from_ref(tenant), &mut [rng]);
        for (at, _, client) in firsts {
            // A herd's ids follow on from the tenants before it; a closed-loop client's are its
            // own range above them (its count is not known in advance).
            let first_id = match most {
                Some(_) => next_id,
                None => CLOSED_IDS | (ti as u64) << 48 | u64::from(client) << 24,
            };
            next_id += most.unwrap_or(0);
            let shared = Arc::clone(&shared);
            tasks.spawn(async move {
                shared.sleep(at, record_lateness).await;
                let mut arrived = at;
                for k in 0..most.unwrap_or(u64::MAX) {
                    // The first request arrives when it was drawn to (as a Poisson tenant's do,
                    // whatever the timer's error); the next ones `think` after the one before
                    // ended.
                    if k > 0 {
                        arrived = shared.clock.now().saturating_add(think);
                        if arrived >= shared.spec.horizon {
                            break;
                        }
                        if think > 0 {
                            shared.sleep(arrived, record_lateness).await;
                        }
                    }
                    call(&shared, Caller::Tenant(ti), addr, first_id + k, arrived).await;
                }
            });
        }
    }
    while tasks.join_next().await.is_some() {}
}

/// Who makes a call: a tenant's client (its logical request), or a hop calling the next one
/// for a job of that tenant's request, with the edge's policy.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Caller {
    /// A client of tenant `0`: it calls the entry hop.
    Tenant(usize),
    /// A chain hop's call to hop `to` under policy `policy`, for a request of tenant `tenant`.
    Hop { to: usize, tenant: usize, policy: usize },
}

impl Caller {
    fn tenant(self) -> usize {
        match self {
            Caller::Tenant(t) | Caller::Hop { tenant: t, .. } => t,
        }
    }

    /// The hop called.
    fn target(self) -> usize {
        match self {
            Caller::Tenant(_) => 0,
            Caller::Hop { to, .. } => to,
        }
    }
}

/// One call of `caller` (request `id`, created at scenario time `arrived`) to the hop at `addr`:
/// attempts until a success, the policy gives up, or the deadline passes; true on success.
/// A tenant's call is its logical request (counted in the tenant's metrics, its retry delays
/// sampled); a hop's call is counted by the hop it calls, as the simulator counts it.
/// A tenant's attempt first costs its client `Shared::client_work` ([`start`]); a hop's does not.
pub(crate) async fn call(shared: &Shared, caller: Caller, addr: SocketAddr, id: u64, arrived: Nanos) -> bool {
    let spec = &shared.spec;
    let (ti, target) = (caller.tenant(), caller.target());
    let tenant_call = matches!(caller, Caller::Tenant(_));
    let work = shared.client_work.filter(|_| tenant_call);
    let policy = match caller {
        Caller::Tenant(t) => &spec.policies[spec.tenants[t].policy],
        Caller::Hop { policy, .. } => &spec.policies[policy],
    };
    let deadline_at = policy.deadline.map_or(Nanos::MAX, |d| arrived.saturating_add(d));
    if tenant_call {
        let mut r = shared.record.lock().expect("record lock");
        r.tenants[ti].requests += 1;
        r.tenant_series[ti][shared.bucket(arrived)].arrivals += 1;
    }
    // The run's key with the request and the hop called: other runs draw other jitter.
    let mix = crate::engine::rng::mix64;
    let key = crate::engine::stream_key(shared.seed, shared.replication, StreamKind::Jitter, target as u32);
    let mut rng = ChaCha8Rng::seed_from_u64(mix(key ^ mix(id)));
    let mut jitter = JitterState::default();
    let mut backon = match shared.client {
        ClientMode::Backon if tenant_call => Some(super::backon_client::delays(policy, mix(key ^ mix(id ^ 0xb4c0)))),
        ClientMode::Backon | ClientMode::Policy => None,
    };
    let external = shared.targets[target].as_ref();
    let mut attempts: u32 = 0;
    // A tenant's retry: the instant its backoff asked for, and its tenant's attempts per second
    // in that bucket so far when it was decided (the model's `client_timing`).
    let mut asked: Option<(Nanos, f64)> = None;
    loop {
        attempts += 1;
        if let Some(work) = work {
            // Busy, not asleep: the thread (the client process) does nothing else meanwhile.
            let began = std::time::Instant::now();
            let until = began + work;
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
            // Scenario seconds, as the simulation's `client_timing.work` reads them.
            let worked_s = began.elapsed().as_secs_f64() / shared.clock.scale();
            shared.client_delays.lock().expect("client delays lock").add_work(worked_s);
        }
        let sent = shared.clock.now();
        if let Some((at, busy)) = asked.take() {
            let late_s = (sent as f64 - at as f64) / crate::engine::NS_PER_S as f64;
            shared.client_delays.lock().expect("client delays lock").add(busy, late_s);
        }
        if tenant_call || external.is_some() {
            let mut guard = shared.record.lock().expect("record lock");
            let (r, b, retry) = (&mut *guard, shared.bucket(sent), attempts > 1);
            if tenant_call {
                r.tenants[ti].count_attempt(&mut r.tenant_series[ti][b], retry);
            }
            if external.is_some() {
                // A real endpoint counts nothing for us: its attempts are counted as they are sent.
                r.hops[target].count_attempt(&mut r.hop_series[target][b], retry);
            }
        }
        let timeout_at = policy.attempt_timeout.map_or(deadline_at, |t| sent.saturating_add(t)).min(deadline_at);
        let attempt = send(shared, addr, external, (ti, id, attempts), (tenant_call, target));
        // The timeout is a sleep like every other (woken `lead` early, its lateness recorded):
        // a timer left to fire late gives every attempt a longer timeout, by more scenario time
        // the faster the run (`--time-scale` below 1).
        let outcome = match timeout_at {
            Nanos::MAX => attempt.await,
            at => tokio::select! {
                biased;
                outcome = attempt => outcome,
                () = shared.sleep(at, work.is_none()) => Err((FailureKind::Timeout, None)),
            },
        };
        let now = shared.clock.now();
        if external.is_some() {
            // Its replies, as they come back (a timeout is no reply).
            let mut r = shared.record.lock().expect("record lock");
            let b = shared.bucket(now);
            match outcome {
                Ok(()) => {
                    r.hops[target].ok_replies += 1;
                    r.hop_series[target][b].successes += 1;
                }
                Err((FailureKind::Timeout, _)) => {}
                Err(_) => r.hop_series[target][b].failures += 1,
            }
        }
        let (failure, retry_after) = match outcome {
            Ok(()) => {
                let mut r = shared.record.lock().expect("record lock");
                let b = shared.bucket(now);
                r.hops[target].timely_ok += 1;
                r.hop_series[target][b].timely_ok += 1;
                if tenant_call {
                    let c = &mut r.tenants[ti];
                    c.succeeded += 1;
                    c.record_latency(now.saturating_sub(arrived) / 1_000);
                    r.tenant_series[ti][b].successes += 1;
                    r.completion_time_ns = r.completion_time_ns.max(now);
                }
                return true;
            }
            Err(e) => e,
        };
        let decision = match backon.as_mut() {
            // backon retries every failure and ignores the server's Retry-After (`check`).
            Some(delays) => delays.next(),
            None => policy.wait_after_failure(attempts, failure, retry_after, &mut jitter, &mut rng),
        };
        let verdict = match decision {
            None => Err(DlqReason::Attempts),
            Some(wait) if now.saturating_add(wait) >= deadline_at => Err(DlqReason::Deadline),
            Some(wait) => Ok(wait),
        };
        let retry_at = {
            let mut r = shared.record.lock().expect("record lock");
            let b = shared.bucket(now);
            match verdict {
                Err(reason) => {
                    if tenant_call {
                        let c = &mut r.tenants[ti];
                        c.dlq += 1;
                        c.dlq_deadline += u64::from(reason == DlqReason::Deadline);
                        r.tenant_series[ti][b].failures += 1;
                        r.completion_time_ns = r.completion_time_ns.max(now);
                    }
                    None
                }
                Ok(wait) => {
                    r.hop_series[target][b].retries_scheduled += 1;
                    if tenant_call {
                        let busy = f64::from(r.tenant_series[ti][b].attempts) / ns_to_secs(spec.bucket);
                        asked = Some((now.saturating_add(wait), busy));
                    }
                    if tenant_call {
                        if let Some(samples) = r.retry_delays_ns.get_mut(attempts as usize - 1) {
                            if samples.len() < RETRY_DELAY_SAMPLES_MAX {
                                samples.push(wait);
                            }
                        }
                    }
                    Some(now.saturating_add(wait))
                }
            }
        };
        let Some(at) = retry_at else { return false };
        shared.sleep(at, work.is_none()).await;
        let fired = shared.bucket(shared.clock.now());
        shared.record.lock().expect("record lock").hop_series[target][fired].retries_fired += 1;
    }
}

type Failure = (FailureKind, Option<Nanos>);

/// A caller's HTTP/1.1 connection: the handle requests go through and the connection itself,
/// driven by the task that uses it rather than by a task of its own. So a request is written in
/// the same turn of the caller's thread that makes it, right after the caller's work, as an
/// event-loop client (Python's asyncio) writes it; a connection task of its own would write it
/// only when its turn came, after every task woken meanwhile — on a busy client thread, after
/// the work of every attempt due by then, so that attempts due apart would leave together.
pub(crate) struct Conn {
    sender: hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    io: std::pin::Pin<Box<hyper::client::conn::http1::Connection<TokioIo<tokio::net::TcpStream>, Empty<Bytes>>>>,
    /// The connection has ended (closed by either side, or failed): it is not polled again and
    /// not pooled.
    ended: bool,
}

/// `work` run to its end while the connection is driven, the connection first at every turn
/// (so that what `work` queued on it is written in that turn); `None` if the connection ended
/// with `work` unfinished. An ended connection is not polled again (`Conn::ended`).
async fn drive<T>(
    io: &mut std::pin::Pin<Box<impl Future<Output = hyper::Result<()>>>>,
    ended: &mut bool,
    work: impl Future<Output = T>,
) -> Option<T> {
    let mut work = std::pin::pin!(work);
    std::future::poll_fn(|cx| {
        // A server that closes after its reply (`connection: close`) ends the connection with
        // the reply read: `work` may still finish.
        *ended = *ended || io.as_mut().poll(cx).is_ready();
        match work.as_mut().poll(cx) {
            std::task::Poll::Ready(t) => std::task::Poll::Ready(Some(t)),
            std::task::Poll::Pending if *ended => std::task::Poll::Ready(None),
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    })
    .await
}

impl Conn {
    /// The reply to `req`, read to its end, and the wall nanoseconds from sending the request to
    /// the reply's head; `Err(true)` if the request could not be sent (it was not taken in),
    /// `Err(false)` if the connection failed after.
    async fn exchange(
        &mut self,
        req: Request<Empty<Bytes>>,
    ) -> Result<(hyper::StatusCode, hyper::HeaderMap, u64), bool> {
        let Conn { sender, io, ended } = self;
        drive(io, ended, std::future::poll_fn(|cx| sender.poll_ready(cx))).await.and_then(Result::ok).ok_or(true)?;
        let sent = std::time::Instant::now();
        let resp = drive(io, ended, sender.send_request(req)).await.ok_or(false)?.map_err(|e| e.is_canceled())?;
        let round_trip = sent.elapsed().as_nanos() as u64;
        let (parts, body) = resp.into_parts();
        // The reply read to its end frees the connection for the caller's next request.
        drive(io, ended, body.collect()).await.and_then(Result::ok).ok_or(false)?;
        Ok((parts.status, parts.headers, round_trip))
    }
}

/// A connection to `addr`: an idle one from the caller's pool (`Connections::Pooled`), else a
/// new one, its set-up timed. The flag says it was reused.
async fn connection(shared: &Shared, addr: SocketAddr, pool: Option<(bool, usize)>) -> Result<(Conn, bool), ()> {
    if let Some(idle) = pool.and_then(|key| shared.idle.lock().expect("pool lock").get_mut(&key).and_then(Vec::pop)) {
        return Ok((idle, true));
    }
    let began = std::time::Instant::now();
    let stream = tokio::net::TcpStream::connect(addr).await.map_err(drop)?;
    let _ = stream.set_nodelay(true);
    let (sender, io) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(drop)?;
    shared.connect_ns.lock().expect("connect lock").push(began.elapsed().as_nanos() as u64);
    Ok((Conn { sender, io: Box::pin(io), ended: false }, false))
}

/// One attempt over a connection of its own (`Connections::PerAttempt`) or one from its caller's
/// pool (`Connections::Pooled`, the pool `(tenant_call, target)`), given back after a whole
/// reply; the reply's status as a success or a failure kind, with the server's Retry-After (wall
/// seconds, converted to scenario time). An attempt dropped at its timeout drops its connection.
/// To a real endpoint (`--target`), the request goes to its path with its Host header.
async fn send(
    shared: &Shared,
    addr: SocketAddr,
    external: Option<&super::Target>,
    (ti, id, attempt): (usize, u64, u32),
    pool: (bool, usize),
) -> Result<(), Failure> {
    let refused = (FailureKind::Transient, None);
    let pool = (shared.connections == Connections::Pooled).then_some(pool);
    let (path, host) = external.map_or(("/", "127.0.0.1"), |t| (t.path.as_str(), t.host.as_str()));
    let request = || {
        Request::builder()
            .uri(path)
            .header(hyper::header::HOST, host)
            .header(REQUEST_HEADER, id)
            .header(ATTEMPT_HEADER, attempt)
            .header(TENANT_HEADER, ti)
            .body(Empty::<Bytes>::new())
    };
    let (mut conn, reused) = connection(shared, addr, pool).await.map_err(|()| refused)?;
    let (status, headers, round_trip) = match conn.exchange(request().map_err(|_| refused)?).await {
        Ok(reply) => reply,
        // A pooled connection the server closed while it sat idle: once more on a new one (as
        // pooling HTTP clients do; the request was not taken in).
        Err(true) if reused => {
            (conn, _) = connection(shared, addr, None).await.map_err(|()| refused)?;
            conn.exchange(request().map_err(|_| refused)?).await.map_err(|_| refused)?
        }
        Err(_) => return Err(refused),
    };
    // What the loopback took: the round trip less the hop's own time (an emulated hop says it).
    let held = headers.get(SERVED_HEADER).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if let Some(held) = held {
        shared.loopback_ns.lock().expect("loopback lock").push(round_trip.saturating_sub(held));
    }
    if let Some(key) = pool.filter(|_| !conn.ended) {
        shared.idle.lock().expect("pool lock").entry(key).or_default().push(conn);
    }
    let retry_after = headers
        .get(hyper::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| (s * 1e9 / shared.clock.scale()) as Nanos);
    if status.is_success() {
        return Ok(());
    }
    let kind =
        if status == hyper::StatusCode::TOO_MANY_REQUESTS { FailureKind::Throttling } else { FailureKind::Transient };
    Err((kind, retry_after))
}
