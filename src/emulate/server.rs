//! A hop as a real HTTP/1.1 server on 127.0.0.1: faults on the wall clock, a waiting room of
//! `queue_limit`, `workers` concurrent services (a FIFO semaphore) that sleep the drawn service
//! time, and the idempotency store with its TTL in scenario time.

use super::client::Caller;
use super::{EmulateError, Shared, ATTEMPT_HEADER, REQUEST_HEADER, SERVED_HEADER, TENANT_HEADER};
use crate::engine::{Nanos, StreamKind};
use crate::model::fault::{FaultKind, InService};
use crate::model::spec::{IdempotencySpec, InProgress};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

/// The running servers, one per hop.
pub(crate) struct Servers {
    /// Where each hop listens (127.0.0.1, a port the system chose).
    pub(crate) addrs: Vec<SocketAddr>,
    accept: Vec<JoinHandle<()>>,
}

impl Servers {
    /// Stops accepting connections (connections already open end with the runtime).
    pub(crate) fn stop(&self) {
        for a in &self.accept {
            a.abort();
        }
    }
}

struct Hop {
    index: usize,
    workers: Semaphore,
    /// Most attempts inside (in service + waiting).
    room: u32,
    inside: AtomicU32,
    busy: AtomicU32,
    rng: Mutex<ChaCha8Rng>,
    /// Idempotency key (the logical request) → its state in the store, or its executions at an
    /// effect hop without a store.
    keys: Mutex<HashMap<u64, Key>>,
    /// Told whenever a key held in progress is settled (deliveries with `in_progress = "wait"`
    /// look again).
    settled: tokio::sync::Notify,
}

/// One idempotency key (docs/MODEL.md, "Idempotency and duplicates").
#[derive(Clone, Copy, Default)]
struct Key {
    /// Times its effect committed.
    executions: u32,
    /// When the stored result expires (scenario time): commit + TTL.
    expires: Nanos,
    /// A delivery claimed it and its handler is still running.
    in_progress: bool,
}

/// Binds every hop to 127.0.0.1 and starts accepting.
/// Every hop is bound before any accepts, so that a chain hop knows where the next one listens.
pub(crate) async fn start(shared: &Arc<Shared>) -> Result<Servers, EmulateError> {
    let mut addrs = Vec::new();
    let mut listeners = Vec::new();
    for target in &shared.targets {
        // A real endpoint in place of the hop: nothing to bind, its callers go there.
        if let Some(t) = target {
            addrs.push(t.addr);
            listeners.push(None);
            continue;
        }
        let socket = tokio::net::TcpSocket::new_v4().map_err(io_failure)?;
        socket.set_reuseaddr(true).map_err(io_failure)?;
        socket.bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).map_err(io_failure)?;
        let listener = socket.listen(4096).map_err(io_failure)?;
        addrs.push(listener.local_addr().map_err(io_failure)?);
        listeners.push(Some(listener));
    }
    let _ = shared.addrs.set(addrs.clone());
    let mut accept = Vec::new();
    for ((index, spec), listener) in shared.spec.hops.iter().enumerate().zip(listeners) {
        let Some(listener) = listener else { continue };
        let hop = Arc::new(Hop {
            index,
            workers: Semaphore::new(spec.workers as usize),
            room: spec.workers.saturating_add(spec.queue_limit),
            inside: AtomicU32::new(0),
            busy: AtomicU32::new(0),
            rng: Mutex::new(crate::engine::stream(shared.seed, shared.replication, StreamKind::Service, index as u32)),
            keys: Mutex::new(HashMap::new()),
            settled: tokio::sync::Notify::new(),
        });
        let shared = Arc::clone(shared);
        accept.push(tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                let (hop, shared) = (Arc::clone(&hop), Arc::clone(&shared));
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let (hop, shared) = (Arc::clone(&hop), Arc::clone(&shared));
                        // The attempt is served in a task of its own: a client that timed out
                        // closes its connection, which drops this future, but the hop goes on
                        // with the work it took in (the simulator's model: a hop serves every
                        // attempt it admitted, and the work done after the caller left is wasted
                        // or, when it has an effect, a duplicate). The task ends with the run.
                        shared.serving.fetch_add(1, Ordering::SeqCst);
                        let received = std::time::Instant::now();
                        let served = tokio::spawn(async move {
                            let response = handle(&hop, &shared, &req).await;
                            shared.serving.fetch_sub(1, Ordering::SeqCst);
                            response
                        });
                        async move {
                            let mut response =
                                served.await.unwrap_or_else(|_| reply(StatusCode::SERVICE_UNAVAILABLE, None));
                            // The wall time the hop held the attempt, from its request read to its
                            // reply: the caller takes it from its round trip to get the loopback's.
                            let held = received.elapsed().as_nanos() as u64;
                            response.headers_mut().insert(SERVED_HEADER, hyper::header::HeaderValue::from(held));
                            Ok::<_, Infallible>(response)
                        }
                    });
                    // A client that timed out closes its connection; that ends this one (not
                    // the attempt's service, above).
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        }));
    }
    Ok(Servers { addrs, accept })
}

fn io_failure(e: std::io::Error) -> EmulateError {
    EmulateError::Failed(format!("emulate: cannot listen on 127.0.0.1: {e}"))
}

fn header(req: &Request<Incoming>, name: &str) -> Option<u64> {
    req.headers().get(name)?.to_str().ok()?.parse().ok()
}

fn reply(status: StatusCode, retry_after_s: Option<f64>) -> Response<Full<Bytes>> {
    let mut builder = Response::builder().status(status);
    if let Some(s) = retry_after_s {
        builder = builder.header(hyper::header::RETRY_AFTER, format!("{s:.6}"));
    }
    builder.body(Full::new(Bytes::new())).unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

/// Leaves the hop's room when dropped, whatever path the reply took.
struct Inside<'a> {
    hop: &'a Hop,
    shared: &'a Shared,
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.hop.inside.fetch_sub(1, Ordering::SeqCst);
        let b = self.shared.bucket(self.shared.clock.now());
        let mut r = self.shared.record.lock().expect("record lock");
        r.hop_series[self.hop.index][b].left += 1;
    }
}

/// A service in progress, counted in `busy` (the load-dependent service time reads it) until
/// it ends or its task is stopped.
struct Busy<'a>(&'a Hop);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One attempt: counted when it is sent (on loopback, when it is received), carried over the
/// hop's network delay to the hop, served there, and its reply carried back over another draw
/// of the delay (docs/MODEL.md: an attempt is counted at its send, and each leg takes its own
/// draw). The delays are waited out here, holding no worker.
async fn handle(hop: &Hop, shared: &Shared, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let h = hop.index;
    let network = &shared.spec.hops[h].network;
    let sent = shared.clock.now();
    let attempt = header(req, ATTEMPT_HEADER).unwrap_or(1);
    {
        let mut guard = shared.record.lock().expect("record lock");
        let r = &mut *guard;
        r.hops[h].count_attempt(&mut r.hop_series[h][shared.bucket(sent)], attempt > 1);
    }
    let leg = || if network.is_zero() { 0 } else { network.sample(&mut *hop.rng.lock().expect("rng lock"), 0) };
    let there = leg();
    if there > 0 {
        shared.sleep_until(sent.saturating_add(there)).await;
    }
    let response = serve(hop, shared, req).await;
    let back = leg();
    if back > 0 {
        shared.sleep_until(shared.clock.now().saturating_add(back)).await;
    }
    response
}

/// The attempt at the hop, from its arrival to its reply.
async fn serve(hop: &Hop, shared: &Shared, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let h = hop.index;
    let spec = &shared.spec;
    let arrived = shared.clock.now();
    let key = header(req, REQUEST_HEADER).unwrap_or(0);
    let tenant = header(req, TENANT_HEADER).map_or(0, |t| (t as usize).min(spec.tenants.len() - 1));
    let fail = |status: StatusCode, retry_after_s: Option<f64>| {
        let mut r = shared.record.lock().expect("record lock");
        r.hop_series[h][shared.bucket(shared.clock.now())].failures += 1;
        reply(status, retry_after_s)
    };
    let mut slow = 1.0;
    for f in spec.faults.iter().filter(|f| f.hop == h && f.from <= arrived && arrived < f.to) {
        match f.kind {
            FaultKind::Outage { .. } => return fail(StatusCode::SERVICE_UNAVAILABLE, None),
            FaultKind::Throttle { retry_after } => {
                let wall = shared.clock.wall(retry_after).as_secs_f64();
                return fail(StatusCode::TOO_MANY_REQUESTS, Some(wall));
            }
            FaultKind::ErrorRate { p } => {
                if hop.rng.lock().expect("rng lock").random::<f64>() < p {
                    return fail(StatusCode::SERVICE_UNAVAILABLE, None);
                }
            }
            FaultKind::Hang => {
                // No answer while the fault lasts: the caller's timeout fires first.
                shared.sleep_until(f.to).await;
                return fail(StatusCode::SERVICE_UNAVAILABLE, None);
            }
            FaultKind::Slow { factor } => slow *= factor,
            // Refused before the run (`check_supported`).
            FaultKind::LostReply { .. } | FaultKind::Capacity { .. } | FaultKind::CacheFlush => {}
        }
    }
    let inside = hop.inside.fetch_add(1, Ordering::SeqCst) + 1;
    if inside > hop.room {
        hop.inside.fetch_sub(1, Ordering::SeqCst);
        shared.record.lock().expect("record lock").hops[h].overflow += 1;
        return fail(StatusCode::SERVICE_UNAVAILABLE, None);
    }
    let _inside = Inside { hop, shared };
    {
        let busy = hop.busy.load(Ordering::SeqCst);
        let mut r = shared.record.lock().expect("record lock");
        let bucket = &mut r.hop_series[h][shared.bucket(arrived)];
        bucket.entered += 1;
        bucket.in_flight_max = bucket.in_flight_max.max(inside);
        bucket.queue_len_max = bucket.queue_len_max.max(inside.saturating_sub(busy));
    }
    let Ok(_permit) = hop.workers.acquire().await else {
        return fail(StatusCode::SERVICE_UNAVAILABLE, None);
    };
    let busy = hop.busy.fetch_add(1, Ordering::SeqCst) + 1;
    let busy_guard = Busy(hop);
    let start = shared.clock.now();
    let drawn = spec.hops[h].service.sample(&mut *hop.rng.lock().expect("rng lock"), busy);
    let service = (drawn as f64 * slow) as Nanos;
    {
        let wait = start.saturating_sub(arrived);
        let mut r = shared.record.lock().expect("record lock");
        let c = &mut r.hops[h];
        c.services_started += 1;
        c.queue_wait_ns_sum += u128::from(wait);
        let bucket = &mut r.hop_series[h][shared.bucket(start)];
        bucket.queue_wait_max_ns = bucket.queue_wait_max_ns.max(wait);
    }
    shared.sleep_until(start.saturating_add(service)).await;
    drop(busy_guard);
    let end = shared.clock.now();
    let crashed = spec.crash_during(h, 0, start, start.saturating_add(service));
    if let Some(crashed) = service_ended(hop, shared, (start, end), crashed, (key, tenant)) {
        return crashed;
    }
    let succeed = || {
        let mut r = shared.record.lock().expect("record lock");
        let b = shared.bucket(shared.clock.now());
        r.hops[h].ok_replies += 1;
        r.hop_series[h][b].successes += 1;
        reply(StatusCode::OK, None)
    };
    // The handler reaches the store after the service time, before the effect and the
    // downstream call: a live stored result is returned with nothing run again, a key in
    // progress gets a 409 (or waits), and otherwise this delivery claims the key; the claim
    // commits below when the handler succeeds and is released on any other way out.
    let claim = match spec.hops[h].idempotency.as_ref().filter(|_| spec.hops[h].effect) {
        Some(store) => match check_key(hop, shared, store, (key, tenant)).await {
            Stored::Claimed(claim) => Some(claim),
            Stored::Returned => return succeed(),
            Stored::Conflict => return fail(StatusCode::CONFLICT, None),
        },
        None => None,
    };
    // A chain hop calls the next one over its socket with the edge's policy, holding its worker
    // until the call ends; a crash of this hop meanwhile stops the job at the crash instant, and
    // dropping the call closes its connections (the simulator cancels them).
    if let Some(edge) = spec.hops[h].calls.first() {
        let next = shared.addrs.get().expect("every hop is bound before any accepts")[edge.hop];
        let caller = Caller::Hop { to: edge.hop, tenant, policy: edge.policy };
        let downstream = super::client::call(shared, caller, next, key, shared.clock.now());
        let ok = match spec.crash_during(h, 0, shared.clock.now(), Nanos::MAX) {
            None => downstream.await,
            Some((at, _)) => tokio::select! {
                ok = downstream => ok,
                () = shared.sleep_until(at) => {
                    let mut r = shared.record.lock().expect("record lock");
                    r.hops[h].crashed_in_service += 1;
                    r.hop_series[h][shared.bucket(shared.clock.now())].failures += 1;
                    return reply(StatusCode::SERVICE_UNAVAILABLE, None);
                }
            },
        };
        if !ok {
            return fail(StatusCode::SERVICE_UNAVAILABLE, None);
        }
    }
    if let Some(claim) = claim {
        claim.settle(true);
    }
    succeed()
}

/// What the idempotency store answered a delivery.
enum Stored<'a> {
    /// The delivery holds the key: its handler runs.
    Claimed(Claim<'a>),
    /// A live stored result: counted `deduplicated`, answered 200 with nothing run.
    Returned,
    /// Another delivery holds the key (`in_progress = "conflict"`): a retryable 409.
    Conflict,
}

/// Looks request `key` up in the hop's store, as the simulator's `check_key` does.
async fn check_key<'a>(
    hop: &'a Hop,
    shared: &'a Shared,
    store: &IdempotencySpec,
    (key, tenant): (u64, usize),
) -> Stored<'a> {
    loop {
        // Created before the look, so that a settle between the look and the wait is not missed.
        let settled = hop.settled.notified();
        // The store's lock is not held while the record's is taken (`service_ended` takes the
        // record's, then the store's). `None`: in progress, and this delivery waits.
        let answer = {
            let mut keys = hop.keys.lock().expect("keys lock");
            let k = keys.entry(key).or_default();
            if k.in_progress {
                (store.in_progress == InProgress::Conflict).then_some(Stored::Conflict)
            } else if k.executions > 0 && shared.clock.now() < k.expires {
                Some(Stored::Returned)
            } else {
                k.in_progress = true;
                Some(Stored::Claimed(Claim { hop, shared, key, tenant, ttl: store.ttl, settled: false }))
            }
        };
        // `in_progress = "wait"`: the worker is held until the key is settled, then look again.
        let Some(answer) = answer else {
            settled.await;
            continue;
        };
        let mut r = shared.record.lock().expect("record lock");
        match answer {
            Stored::Returned => {
                r.hops[hop.index].deduplicated += 1;
                r.tenants[tenant].deduplicated += 1;
            }
            Stored::Conflict => {
                r.hops[hop.index].in_progress_conflicts += 1;
                r.tenants[tenant].in_progress_conflicts += 1;
            }
            Stored::Claimed(_) => {}
        }
        return answer;
    }
}

/// A key this delivery holds in progress: [`Claim::settle`] commits or releases it; dropped
/// unsettled (a failed downstream call, a crash while waiting on it) it is released.
struct Claim<'a> {
    hop: &'a Hop,
    shared: &'a Shared,
    key: u64,
    tenant: usize,
    ttl: Nanos,
    settled: bool,
}

impl Claim<'_> {
    /// The handler ended: on success the effect commits and the key completes, live for the
    /// TTL (a key that had committed before and expired: a duplicate); on failure it is released.
    fn settle(mut self, ok: bool) {
        self.settle_now(ok);
    }

    fn settle_now(&mut self, ok: bool) {
        self.settled = true;
        let now = self.shared.clock.now();
        let replay = {
            let mut keys = self.hop.keys.lock().expect("keys lock");
            let k = keys.get_mut(&self.key).expect("a claimed key is in the store");
            k.in_progress = false;
            let replay = k.executions > 0;
            if ok {
                k.executions += 1;
                k.expires = now.saturating_add(self.ttl);
            }
            replay
        };
        {
            let mut r = self.shared.record.lock().expect("record lock");
            let h = self.hop.index;
            if !ok {
                r.hops[h].released += 1;
                r.tenants[self.tenant].released += 1;
            } else {
                r.hops[h].executions += 1;
                if replay {
                    r.hops[h].duplicates_ttl_expired += 1;
                    r.tenants[self.tenant].duplicates_ttl_expired += 1;
                }
            }
        }
        self.hop.settled.notify_waiters();
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.settle_now(false);
        }
    }
}

/// The service of request `key` of tenant `tenant` ran from `start` to `end`: counted, and the
/// effect of a hop without an idempotency store committed; the 503 to send when a crash
/// (`reset`) stopped it.
fn service_ended(
    hop: &Hop,
    shared: &Shared,
    (start, end): (Nanos, Nanos),
    crashed: Option<(Nanos, InService)>,
    (key, tenant): (u64, usize),
) -> Option<Response<Full<Bytes>>> {
    let (h, spec) = (hop.index, &shared.spec);
    let mut r = shared.record.lock().expect("record lock");
    r.hops[h].busy_ns += end.saturating_sub(start);
    if let Some((_, InService::Reset)) = crashed {
        r.hops[h].crashed_in_service += 1;
        r.hop_series[h][shared.bucket(end)].failures += 1;
        return Some(reply(StatusCode::SERVICE_UNAVAILABLE, None));
    }
    let b = shared.bucket(end);
    r.hops[h].served += 1;
    r.hop_series[h][b].served += 1;
    // An effect hop without a store commits at service end; every re-execution is a duplicate.
    // (With a store, the key is looked up next: `check_key`.)
    if spec.hops[h].effect && spec.hops[h].idempotency.is_none() {
        let mut keys = hop.keys.lock().expect("keys lock");
        let k = keys.entry(key).or_default();
        if k.executions > 0 {
            r.hops[h].duplicates_no_key += 1;
            r.tenants[tenant].duplicates_no_key += 1;
        }
        k.executions += 1;
        r.hops[h].executions += 1;
    }
    None
}
