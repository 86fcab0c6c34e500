//! Memory estimate before anything is allocated: a scenario whose run would exhaust memory is
//! refused up front with the estimate and the fix (`--max-memory`, default half the machine's
//! memory), instead of aborting with out-of-memory minutes later.
//!
//! The estimate is an upper bound of the large allocations: per-client state of the runs in
//! flight (one per thread), the time series, retry-delay samples and latency histograms of the
//! runs in flight or finished ahead of their turn (`runner::aggregate::window` bounds them),
//! every replication's scalar metrics, the tallest chart's bitmap and, for sweeps, every cell's
//! loaded scenario and results.

use crate::metrics::{HopBucket, TenantBucket, RETRY_DELAY_RETRIES, RETRY_DELAY_SAMPLES_MAX};
use crate::model::arrivals::tenant_requests;
use crate::model::breaker::BreakerState;
use crate::model::budget::Scope;
use crate::model::{Arrival, SimSpec};
use crate::scenario::tenants::BYTES_PER_CLIENT_MAX;
use crate::scenario::Scenario;
use std::mem::size_of;

/// Many short runs each allocate and free their state; glibc's allocator hands freed memory of
/// a thread's arena back to the system at once (`madvise`) and the next run faults it in again,
/// which cost more system time than the simulation itself at a 1-second horizon (M/M/1 × 2,000
/// replications: 0.45 s of system time against 0.8 s of user time). Keep freed memory for reuse
/// (it is the peak anyway, and released at exit) and serve allocations below 32 MiB from the
/// arenas rather than fresh maps. Called once, before the first pool of simulation threads.
pub fn keep_freed_memory() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(target_os = "linux")]
        // SAFETY: mallopt only changes the allocator's parameters (it takes the arena's lock).
        unsafe {
            libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
            libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        }
    });
}

/// An estimate: total bytes, the parts it adds up, and the events one replication processes.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Upper bound of the memory the command needs, in bytes.
    pub bytes: u64,
    /// What the bytes are (name, bytes), largest first.
    pub parts: Vec<(String, u64)>,
    /// A lower bound of the events over all runs (for the long-run note): first tries only.
    pub events: f64,
}

/// Bytes one run holds per client, for its clients and their client-scoped retry state (dense:
/// one budget and/or breaker state per client in a `Vec`, `model/sim/scoped.rs`).
fn client_bytes(spec: &SimSpec) -> u64 {
    spec.tenants
        .iter()
        .map(|t| {
            let policy = &spec.policies[t.policy];
            let budget = policy.budget.as_ref().filter(|b| b.scope == Scope::Client);
            let breaker = policy.breaker.as_ref().is_some_and(|b| b.scope == Scope::Client);
            let scoped =
                budget.map_or(0, |b| b.kind.state_bytes()) + if breaker { size_of::<BreakerState>() as u64 } else { 0 };
            u64::from(t.clients) * (BYTES_PER_CLIENT_MAX + scoped)
        })
        .sum()
}

/// Bytes a run holds from its end until its variant's results take it in (`runner::aggregate`):
/// its time series, delay samples and latency histograms.
pub(crate) fn run_bytes(spec: &SimSpec) -> u64 {
    let buckets = spec.bucket_count() as u64;
    let per_bucket = spec.hops.len() as u64 * size_of::<HopBucket>() as u64
        + spec.tenants.len() as u64 * size_of::<TenantBucket>() as u64
        + balanced_replicas(spec) * size_of::<crate::metrics::ReplicaBucket>() as u64;
    let latency = spec.tenants.iter().map(|t| latency_bytes(tenant_requests(spec, t))).fold(0, u64::saturating_add);
    buckets.saturating_mul(per_bucket).saturating_add(delay_sample_bytes(spec)).saturating_add(latency)
}

/// Bytes of the latencies of a tenant that issues `requests` in a run (`metrics::Latencies`):
/// its exact samples while they fit (the room made for them, `latencies::room_for`), else the
/// larger of those samples at their most and the counts of the histogram they move into.
fn latency_bytes(requests: f64) -> u64 {
    let exact = crate::metrics::latencies::EXACT_MAX;
    if requests <= exact as f64 {
        crate::metrics::latencies::room_for(requests) as u64 * 8
    } else {
        (exact as u64 * 8).max(crate::metrics::new_latency_histogram().distinct_values() as u64 * 8)
    }
}

/// Bytes of one replication's scalar metrics, kept for every replication (their intervals and
/// the paired differences): a row for the system, each hop, tenant and balanced replica.
fn scalar_bytes(spec: &SimSpec) -> u64 {
    let rows = 1 + spec.hops.len() as u64 + spec.tenants.len() as u64 + balanced_replicas(spec);
    let row =
        crate::metrics::catalogue::Metric::ALL.len() * size_of::<(crate::metrics::catalogue::Metric, Option<f64>)>();
    // Each row is a `Vec`: its entries plus the vector's own header.
    rows * (row + size_of::<Vec<()>>()) as u64
}

/// Bytes of a replication's retry-delay samples: the entry hop's retries only, at most
/// [`RETRY_DELAY_SAMPLES_MAX`] per retry number, for the retry numbers the tenants' policies
/// reach (below [`RETRY_DELAY_RETRIES`]), and never more samples of one retry number than the
/// requests that could make it — not the cap of every retry number, which a run of 3 attempts
/// never fills (it overstated metastable-collapse's need 9-fold).
fn delay_sample_bytes(spec: &SimSpec) -> u64 {
    let retries = spec
        .tenants
        .iter()
        .map(|t| spec.policies[t.policy].attempts_max.saturating_sub(1) as usize)
        .max()
        .unwrap_or(0)
        .min(RETRY_DELAY_RETRIES);
    let per_retry = requests(spec).ceil().clamp(0.0, RETRY_DELAY_SAMPLES_MAX as f64) as u64;
    (retries as u64).saturating_mul(per_retry).saturating_mul(8)
}

/// The bytes of each distinct allocation among `held` (its address and size) once: tables and
/// traces that several specs share through an `Arc` are held once.
fn distinct_bytes(held: impl Iterator<Item = (usize, u64)>) -> u64 {
    let mut seen: Vec<usize> = Vec::new();
    let mut bytes = 0u64;
    for (at, size) in held {
        if !seen.contains(&at) {
            seen.push(at);
            bytes = bytes.saturating_add(size);
        }
    }
    bytes
}

/// Bytes of the traces the variants replay, held once per file (`scenario::trace` caches them):
/// a timestamp per request, or a (start, rate) pair per interval.
fn trace_bytes(variants: &[crate::scenario::Variant]) -> u64 {
    distinct_bytes(variants.iter().flat_map(|v| &v.spec.tenants).filter_map(|t| match &t.arrival {
        Arrival::Trace(trace) => Some((
            std::sync::Arc::as_ptr(&trace.data) as usize,
            match &*trace.data {
                crate::model::trace::TraceData::Times { times, .. } => times.len() as u64 * 8,
                crate::model::trace::TraceData::Rates { steps, .. } => steps.len() as u64 * 16,
            },
        )),
        Arrival::Herd { .. }
        | Arrival::Poisson { .. }
        | Arrival::Closed { .. }
        | Arrival::Profile { .. }
        | Arrival::Ramp { .. } => None,
    }))
}

/// Replicas of the hops with more than one (each has its own series).
fn balanced_replicas(spec: &SimSpec) -> u64 {
    spec.hops.iter().map(|h| h.replicas.count).filter(|&n| n > 1).map(u64::from).sum()
}

/// Bytes one run holds for its cache stores and replica states: a cache hop's store bound
/// ([`crate::model::cache::Store::bytes_bound`]) and every replica a hop may have (with
/// autoscaling of replicas, its `max`, all allocated from the start).
fn state_bytes(spec: &SimSpec) -> u64 {
    let caches: u64 = spec
        .hops
        .iter()
        .filter_map(|h| h.cache())
        .map(|c| crate::model::cache::Store::bytes_bound(c.keys, c.capacity))
        .sum();
    let replicas: u64 = spec.hops.iter().map(|h| u64::from(h.replicas.count)).sum();
    caches.saturating_add(replicas.saturating_mul(crate::model::sim::replica_state_bytes()))
}

/// Bytes the variants' caches hold in Zipf key tables (one f64 per key), each distinct table
/// once: specs with the same keys and exponent share one (`KeyDistribution::zipf`).
fn key_table_bytes(variants: &[crate::scenario::Variant]) -> u64 {
    distinct_bytes(variants.iter().flat_map(|v| &v.spec.hops).filter_map(|h| h.cache()).filter_map(|c| {
        match &c.distribution {
            crate::model::cache::KeyDistribution::Zipf { cdf, .. } => {
                Some((cdf.as_ptr() as usize, cdf.len() as u64 * 8))
            }
            crate::model::cache::KeyDistribution::Uniform => None,
        }
    }))
}

/// Requests one replication issues (an upper bound for open loops: the highest rate throughout).
pub fn requests(spec: &SimSpec) -> f64 {
    spec.tenants.iter().map(|t| tenant_requests(spec, t)).sum()
}

/// Requests that may be waiting at once in one run of `spec` (an upper bound's main term): the
/// open-loop arrivals beyond the entry hop's capacity, integrated over the horizon (the backlog an
/// overload builds), at most the requests the run issues. Closed loops and herds are bounded by
/// their clients, counted with the clients. Retries that multiply the backlog are not counted.
pub fn pending_requests(spec: &SimSpec) -> f64 {
    let Some(capacity) = spec.run_shape().hops.first().and_then(|h| h.capacity_per_s) else { return 0.0 };
    let mut starts: Vec<u64> = vec![0];
    for t in &spec.tenants {
        if let Arrival::Profile { steps } = &t.arrival {
            starts.extend(steps.iter().map(|s| s.0).filter(|&s| s < spec.horizon));
        }
    }
    starts.sort_unstable();
    starts.dedup();
    let rate_at = |at: u64| -> f64 {
        spec.tenants
            .iter()
            .map(|t| match &t.arrival {
                Arrival::Poisson { rate_per_s } => *rate_per_s,
                Arrival::Ramp { from_rate_per_s, rate_per_s, .. } => rate_per_s.max(*from_rate_per_s),
                Arrival::Profile { steps } => steps.iter().take_while(|s| s.0 <= at).last().map_or(0.0, |s| s.1),
                Arrival::Trace(trace) => trace.mean_rate_per_s(),
                Arrival::Herd { .. } | Arrival::Closed { .. } => 0.0,
            })
            .sum()
    };
    let excess: f64 = starts
        .iter()
        .enumerate()
        .map(|(i, &from)| {
            let to = starts.get(i + 1).copied().unwrap_or(spec.horizon);
            (rate_at(from) - capacity).max(0.0) * (to.saturating_sub(from)) as f64 / 1e9
        })
        .sum();
    excess.min(requests(spec))
}

/// Fewest events per request per hop: a first try costs at least this many queued events at
/// each hop (arrivals answered in place and retries run ahead cost none; the bundled scenarios
/// run 1.5 to 120 per request per hop, the high end from retries multiplying down a chain).
pub const EVENTS_PER_REQUEST_HOP_MIN: f64 = 1.5;

/// A lower bound of the events of one replication: its requests' first tries at every hop.
/// Retries can multiply it by up to `max_attempts` per hop of a chain, which no estimate made
/// before the run can tell from a calm run (lb-sinkholing allows 10,000 attempts and makes
/// about 1.3 per request), so only this bound is stated.
fn events(spec: &SimSpec) -> f64 {
    requests(spec) * EVENTS_PER_REQUEST_HOP_MIN * spec.hops.len() as f64
}

/// The most variants, and the most tenants, a run's charts draw (`report::charts::cap` chooses
/// which and says what was left out).
pub const CHART_PANELS_MAX: usize = 24;

/// The tallest chart's bitmap: charts grow with variants × (hops + tenants) panels, but draw at
/// most [`CHART_PANELS_MAX`] variants and tenants.
fn chart_bytes(spec: &SimSpec, variants: usize) -> u64 {
    let most = CHART_PANELS_MAX as u64;
    let (v, h, t) = ((variants as u64).min(most), spec.hops.len() as u64, (spec.tenants.len() as u64).min(most));
    let height = 200 + 240 * v + 400 * h + 36 * h.max(t) * (v + 1);
    1800 * height * 3
}

/// What the program holds whatever the scenario: its code, the thread pool's stacks, the
/// allocator's arenas and the report's templates. Measured: the peak resident memory of the
/// smallest bundled runs (mm1, mmc) is 16-17 MiB, of which the parts above account for 5.
const PROGRAM_BYTES: u64 = 12 << 20;

/// The estimate of `run`/`compare`: `variants` variants of `scenario` on `threads` threads.
pub fn estimate_run(scenario: &Scenario, variants: &[crate::scenario::Variant], threads: usize) -> Estimate {
    let tasks = (variants.len() as u64).saturating_mul(u64::from(scenario.replications));
    let in_flight = tasks.min(threads.max(1) as u64);
    let clients = variants.iter().map(|v| client_bytes(&v.spec)).max().unwrap_or(0);
    let run = variants.iter().map(|v| run_bytes(&v.spec)).max().unwrap_or(0);
    let held = (super::aggregate::window(threads, run) as u64).min(tasks);
    let scalars = variants.iter().map(|v| scalar_bytes(&v.spec)).fold(0, u64::saturating_add);
    let chart = chart_bytes(&scenario.base, variants.len());
    // Aggregated mean series (8 f64 per bucket and scope) and their timeseries.csv rows.
    let replicas = variants.iter().map(|v| balanced_replicas(&v.spec)).max().unwrap_or(0);
    let scopes = (scenario.base.hops.len() + scenario.base.tenants.len()) as u64 + replicas;
    let output =
        (variants.len() as u64).saturating_mul(scenario.base.bucket_count() as u64).saturating_mul(scopes * 160);
    let events: f64 = variants.iter().map(|v| events(&v.spec)).sum::<f64>() * f64::from(scenario.replications);
    let state = variants.iter().map(|v| state_bytes(&v.spec)).max().unwrap_or(0);
    // A request waiting in a backlog holds at most what a herd client does (call, attempt, event).
    let pending = variants.iter().map(|v| pending_requests(&v.spec)).fold(0.0, f64::max);
    let pending_bytes = (pending * BYTES_PER_CLIENT_MAX as f64).min(u64::MAX as f64) as u64;
    let tables = key_table_bytes(variants);
    let mut parts = vec![
        (format!("clients and their retry state, {in_flight} run(s) at a time"), in_flight.saturating_mul(clients)),
        (
            format!("cache stores and replica states, {in_flight} run(s) at a time (fewer cache.keys or a smaller cache.capacity, fewer replicas or a lower autoscale.max)"),
            in_flight.saturating_mul(state),
        ),
        (
            format!("requests waiting in an overload's backlog, {in_flight} run(s) at a time (arrivals beyond the entry hop's capacity: a lower rate or more workers)"),
            in_flight.saturating_mul(pending_bytes),
        ),
        (format!("Zipf key tables of {} variant(s)", variants.len()), tables),
        ("the traces replayed".to_string(), trace_bytes(variants)),
        (format!("time series of up to {held} run(s) in flight or waiting their turn"), held.saturating_mul(run)),
        (
            format!(
                "per-replication metrics of {}",
                crate::engine::text::count_of(u64::from(scenario.replications), "replication")
            ),
            scalars.saturating_mul(u64::from(scenario.replications)),
        ),
        ("the tallest chart".to_string(), chart),
        ("mean series and timeseries.csv".to_string(), output),
        ("the program itself".to_string(), PROGRAM_BYTES),
    ];
    parts.sort_by_key(|p| std::cmp::Reverse(p.1));
    Estimate { bytes: parts.iter().map(|p| p.1).fold(0, u64::saturating_add), parts, events }
}

/// Metrics counted per variant of a sweep cell (its rows in sweep.json and sweep.csv).
const SWEEP_METRICS: u64 = 40;

/// Bytes per sweep row (one metric of one variant in one cell) while `sweep` holds its files'
/// text and reads sweep.json back for its charts and report (text, parsed JSON tree, statistics).
/// Measured (docs/TESTING.md "Runaway scenarios"): the peak live heap grows 1.1 MB
/// per cell of 5 variants at 1 replication, 5.5 KB per row as counted here; plus each
/// replication's value in text, tree and statistics.
const SWEEP_ROW_BYTES: u64 = 6_000;
const SWEEP_ROW_BYTES_PER_REPLICATION: u64 = 64;

/// The estimate of a sweep: every cell's scenario and results held, plus the largest cell's run,
/// plus (with `read_back`: an unsharded sweep draws its charts from sweep.json) its output rows.
pub fn estimate_sweep(cells: &[(&Scenario, &[crate::scenario::Variant])], threads: usize, read_back: bool) -> Estimate {
    let mut worst: Option<Estimate> = None;
    let mut held: u64 = 0;
    let mut rows: u64 = 0;
    let mut row_bytes: u64 = 0;
    let mut events = 0.0;
    for (scenario, variants) in cells {
        let cell_rows = variants.len() as u64 * SWEEP_METRICS;
        rows = rows.saturating_add(cell_rows);
        let per_row = SWEEP_ROW_BYTES + SWEEP_ROW_BYTES_PER_REPLICATION * u64::from(scenario.replications);
        row_bytes = row_bytes.saturating_add(cell_rows.saturating_mul(per_row));
        let e = estimate_run(scenario, variants, threads);
        events += e.events;
        // A loaded cell keeps its source and parsed table; its results keep ~40 metrics per
        // variant with every replication's value.
        let results = variants.len() as u64 * SWEEP_METRICS * (u64::from(scenario.replications) * 8 + 96);
        held = held.saturating_add(scenario.base_bytes()).saturating_add(results);
        if worst.as_ref().is_none_or(|w| e.bytes > w.bytes) {
            worst = Some(e);
        }
    }
    let mut estimate = worst.unwrap_or(Estimate { bytes: 0, parts: Vec::new(), events: 0.0 });
    estimate.parts.push((format!("{} loaded cell(s) and their results", cells.len()), held));
    if read_back {
        estimate
            .parts
            .push((format!("sweep.json and sweep.csv, {rows} rows, held and read back for the charts"), row_bytes));
    }
    estimate.parts.sort_by_key(|p| std::cmp::Reverse(p.1));
    estimate.bytes = estimate.parts.iter().map(|p| p.1).fold(0, u64::saturating_add);
    estimate.events = events;
    estimate
}

/// Bytes `merge` holds per byte of the shard files (`sweep.json`, `sweep.csv`) it reads: their
/// text and rows, the merged files, and the merged `sweep.json` read back as `plot` would (tree
/// and statistics) for the charts. Measured (docs/TESTING.md "Runaway scenarios"):
/// peak RSS 29.6 and 30.1 times the input bytes merging 2 and 4 shards of 200- and 100-cell
/// sweeps.
const MERGE_BYTES_PER_INPUT_BYTE: u64 = 32;

/// The most bytes `merge` reads from one input file under `limit`: all the input
/// [`check_merge`] accepts. The sizes were checked before reading; this bound stops the read of
/// a file whose size was misreported or grew since.
pub fn merge_file_limit(limit: u64) -> u64 {
    limit / MERGE_BYTES_PER_INPUT_BYTE
}

/// Refuses a `merge` of `shards` shard directories holding `input_bytes` of `sweep.json` and
/// `sweep.csv` (their sizes, known before anything is read) when the memory it would need
/// exceeds `limit` bytes.
pub fn check_merge(input_bytes: u64, shards: usize, limit: u64) -> Result<(), String> {
    let bytes = input_bytes.saturating_mul(MERGE_BYTES_PER_INPUT_BYTE);
    if bytes <= limit {
        return Ok(());
    }
    Err(format!(
        "merge would need about {} of memory ({shards} shard(s) holding {} of sweep.json and sweep.csv, held, merged and read back for the charts), more than the limit of {}; merge the shards of a smaller grid or raise --max-memory",
        show_bytes(bytes),
        show_bytes(input_bytes),
        show_bytes(limit)
    ))
}

/// Parses a `--max-memory` size: `512MiB`, `8GiB`, `2G`, `1500M`, or bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" | "tib" => 1024.0f64.powi(4),
        other => return Err(format!("unknown unit `{other}`; write e.g. 8GiB, 512MiB or a number of bytes")),
    };
    let value: f64 =
        number.parse().map_err(|_| "is not a size; write e.g. 8GiB, 512MiB or a number of bytes".to_string())?;
    let bytes = value * scale;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < 2f64.powi(63)) {
        return Err("must be a positive size below 8 EiB, e.g. 8GiB".to_string());
    }
    Ok(bytes as u64)
}

/// `1.5 GiB`: bytes for messages.
pub fn show_bytes(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", units[unit])
    }
}

/// Refuses `estimate` above `limit` bytes, naming the largest parts and the fixes.
pub fn check(estimate: &Estimate, limit: u64) -> Result<(), String> {
    if estimate.bytes <= limit {
        return Ok(());
    }
    let parts: Vec<String> = estimate
        .parts
        .iter()
        .filter(|p| p.1 > 0)
        .take(3)
        .map(|(what, b)| format!("{what}: {}", show_bytes(*b)))
        .collect();
    Err(format!(
        "this run would need about {} of memory ({}), more than the limit of {}; use fewer clients, replications, variants, cells or tenants, a wider bucket, fewer --threads, or raise --max-memory",
        show_bytes(estimate.bytes),
        parts.join("; "),
        show_bytes(limit)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("8GiB"), Ok(8 << 30));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("-1G").is_err());
        assert!(parse_size("0").is_err());
        assert!(parse_size("12 parsecs").is_err());
        assert_eq!(show_bytes(1536 << 20), "1.5 GiB");
        assert_eq!(show_bytes(10), "10 B");
    }

    #[test]
    fn the_event_estimate_is_a_lower_bound_within_3x_of_a_calm_run() {
        // lb-sinkholing allows 10,000 attempts a request and makes about 1.3: the old estimate
        // (attempts_max × 4 per request per hop) said 4.3e10 events for 3.2e6 run.
        for (name, sets) in [("stability-lb-sinkholing", "replications=1"), ("mm1", "replications=1")] {
            let path = format!("{}/../../scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
            let scenario =
                Scenario::load(&path, &[crate::scenario::parse_assignment(sets).expect("valid")]).expect("valid");
            let variants: Vec<_> = scenario.run_variants().into_iter().take(1).collect();
            let estimate = estimate_run(&scenario, &variants, 1).events;
            let study = crate::runner::run_study(
                &scenario,
                &variants,
                &crate::runner::RunOptions { threads: Some(1), progress: false },
            );
            let run = study.events as f64;
            assert!(estimate <= run && run <= 3.0 * estimate, "{name}: estimated {estimate:.3e}, ran {run:.3e}");
        }
    }
}

/// Cache stores and replica states in the estimate (tests/state_memory.rs runs the
/// refusal from the command line).
#[cfg(test)]
mod state_tests {
    use super::*;
    use crate::model::cache::Store;

    /// A cache of `keys` keys holding up to `capacity` entries in front of a database.
    pub(crate) fn cached(keys: u32, capacity: u32) -> String {
        include_str!("../../../../tests/fixtures/cache-sized.toml")
            .replace("KEYS", &keys.to_string())
            .replace("CAPACITY", &capacity.to_string())
    }

    fn part(s: &Scenario, threads: usize, name: &str) -> u64 {
        let e = estimate_run(s, &s.run_variants(), threads);
        e.parts
            .iter()
            .find(|(n, _)| n.starts_with(name))
            .map(|p| p.1)
            .unwrap_or_else(|| panic!("no part {name}: {e:?}"))
    }

    #[test]
    fn the_backlog_is_the_arrivals_beyond_capacity_over_time() {
        let mm1 = |arrival: &str| {
            let text = include_str!("../../../../scenarios/mm1.toml")
                .replace("arrival = { kind = \"poisson\", rate_per_s = 800.0 }", arrival);
            Scenario::from_source("mm1.toml", &text, &[]).expect("valid").base
        };
        // Capacity 1,000/s (one worker, 1 ms): 800/s builds nothing.
        assert_eq!(pending_requests(&mm1("arrival = { kind = \"poisson\", rate_per_s = 800.0 }")), 0.0);
        // 1,500/s for the 250 s horizon: 500/s × 250 s wait.
        let steady = pending_requests(&mm1("arrival = { kind = \"poisson\", rate_per_s = 1500.0 }"));
        assert!((steady - 125_000.0).abs() < 1e-6, "{steady}");
        // A 10 s spike to 3,000/s in a profile of 500/s: only the spike's 2,000/s × 10 s.
        let spike =
            "arrival = { kind = \"profile\", steps = [[\"0s\", 500.0], [\"100s\", 3000.0], [\"110s\", 500.0]] }";
        let spiked = pending_requests(&mm1(spike));
        assert!((spiked - 20_000.0).abs() < 1e-6, "{spiked}");
    }

    #[test]
    fn runs_held_for_aggregation_do_not_grow_with_replications() {
        let base = Scenario::from_source("s.toml", &cached(1_000, 100), &[]).expect("valid");
        let run = run_bytes(&base.base);
        let at = |replications: u32, threads: usize, name: &str| {
            let mut s = base.clone();
            s.replications = replications;
            part(&s, threads, name)
        };
        let held = at(40, 2, "time series of up to");
        let window = super::super::aggregate::window(2, run) as u64;
        assert_eq!(held, window * run, "the window's runs on 2 threads");
        assert_eq!(at(4_000, 2, "time series of up to"), held, "the same at 40 and 4,000 replications");
        let metrics = at(40, 2, "per-replication metrics");
        assert_eq!(at(4_000, 2, "per-replication metrics"), 100 * metrics, "only the scalars grow");
        assert!(at(4_000, 16, "time series of up to") > held, "more threads hold more runs");
        assert_eq!(at(3, 16, "time series of up to"), 3 * run, "no more runs held than there are");
    }

    #[test]
    fn cache_and_replica_state_are_in_the_estimate() {
        let small = Scenario::from_source("s.toml", &cached(1_000, 100), &[]).expect("valid");
        let big = Scenario::from_source("b.toml", &cached(10_000_000, 10_000_000), &[]).expect("valid");
        // Per run: the key index (4 B a key) and the slots of up to min(keys, capacity) entries.
        let bound = |k, c| Store::bytes_bound(k, c);
        assert!(bound(10_000_000, 10_000_000) >= 10_000_000 * (4 + 2 * 24));
        assert_eq!(bound(1_000, 100), 1_000 * 4 + 2 * 100 * 28, "index + twice the slots and free list");
        assert_eq!(bound(10, 1_000), bound(10, 10), "no more entries than keys");
        let runs =
            |t| part(&big, t, "cache stores and replica states") - part(&small, t, "cache stores and replica states");
        assert_eq!(runs(2), 2 * runs(1), "two runs in flight hold two stores");
        assert_eq!(runs(1), bound(10_000_000, 10_000_000) - bound(1_000, 100));
        // The Zipf table: 8 B a key in every variant's spec.
        assert_eq!(part(&big, 1, "Zipf key tables"), 80_000_000);
        // Variants that differ elsewhere share the table: three variants, one table.
        let text = cached(10_000_000, 100)
            + "[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\nset = { \"hop.db.workers\" = 8 }\n";
        let three = Scenario::from_source("v.toml", &text, &[]).expect("valid");
        let variants = three.run_variants();
        let tables: Vec<_> = variants
            .iter()
            .flat_map(|v| &v.spec.hops)
            .filter_map(|h| h.cache())
            .filter_map(|c| match &c.distribution {
                crate::model::cache::KeyDistribution::Zipf { cdf, .. } => Some(cdf.clone()),
                crate::model::cache::KeyDistribution::Uniform => None,
            })
            .collect();
        assert!(
            tables.len() >= 2 && tables.windows(2).all(|w| std::sync::Arc::ptr_eq(&w[0], &w[1])),
            "one shared table"
        );
        assert_eq!(part(&three, 1, "Zipf key tables"), 80_000_000);
        // Replicas: an autoscaled hop holds the state of every replica up to max.
        let hop = |extra: &str| {
            let text = cached(1_000, 100).replace("workers = 4", &format!("workers = 4\nreplicas = 2\n{extra}"));
            Scenario::from_source("r.toml", &text, &[]).expect("valid")
        };
        let two = part(&hop(""), 1, "cache stores and replica states");
        let up_to_1000 = part(&hop("autoscale = { target = 0.5, max = 1000 }"), 1, "cache stores and replica states");
        assert_eq!(up_to_1000 - two, 998 * crate::model::sim::replica_state_bytes());
    }
}
