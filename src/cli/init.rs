//! `retrystorm init FILE`: writes a commented scenario from a capacity planner's numbers
//! (`--clients` or `--rate`, `--capacity`, `--outage`, `--hops`, `--preset`) or from their own
//! files (`--from` a request trace, a latency histogram, a retry config), validated before it is
//! written so that `run` accepts it as is.

use super::CliError;
use crate::engine::NS_PER_S;
use crate::model::{Arrival, Dist};
use crate::scenario::raw::{parse_duration, RawArrival, RawDist};
use crate::scenario::{import, input_file, Scenario};
use clap::Args;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Flags of `init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The scenario file to write (refused if it exists, unless --force).
    pub file: PathBuf,
    /// Closed-loop clients, each sending its next request --think after the previous ends.
    #[arg(long, conflicts_with = "rate")]
    pub clients: Option<u32>,
    /// Open-loop Poisson arrivals, requests per second.
    #[arg(long, allow_negative_numbers = true)]
    pub rate: Option<f64>,
    /// Pause of a closed-loop client between requests.
    #[arg(long, default_value = "1s")]
    pub think: String,
    /// Requests per second each hop serves (default: twice the offered load).
    #[arg(long, allow_negative_numbers = true)]
    pub capacity: Option<f64>,
    /// An outage of the last hop of this length, starting 30 s in.
    #[arg(long)]
    pub outage: Option<String>,
    /// Hop names, in call order.
    #[arg(long, value_delimiter = ',', default_value = "api")]
    pub hops: Vec<String>,
    /// A retry-policy preset for the clients (aws-standard, grpc, envoy, …).
    #[arg(long)]
    pub preset: Option<String>,
    /// Your own data: a request trace CSV, a latency histogram CSV, a retry config (repeatable).
    #[arg(long = "from", value_name = "FILE")]
    pub from: Vec<PathBuf>,
    /// Which entry of an imported config (`service/method`, route, instance or profile).
    #[arg(long)]
    pub select: Option<String>,
    /// Overwrite FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

/// What a `--from` file is.
enum Source {
    Trace { path: String, mean_rate: f64, period_s: f64 },
    Histogram { path: String, mean_s: f64, unit: Option<String> },
    Config { path: String },
}

/// An error in an imported config is the user's `--from` file (and `--select`) to fix, not a line
/// of the file `init` would have written: the importer's message (after the generated file's
/// location) as `--from FILE: …`, with `select = "X"` said as the flag, `--select X`.
fn import_message(error: &str) -> Option<String> {
    let at = error.find("import`: ")?;
    let message = &error[at + "import`: ".len()..];
    let mut out = String::new();
    let mut rest = message;
    while let Some(i) = rest.find("select = \"") {
        out.push_str(&rest[..i]);
        let value = &rest[i + "select = \"".len()..];
        let end = value.find('"').unwrap_or(value.len());
        out.push_str("--select ");
        out.push_str(&value[..end]);
        rest = value.get(end + 1..).unwrap_or("");
    }
    out.push_str(rest);
    Some(format!("--from {out}"))
}

/// A preset the scenario refused is the user's `--preset` to fix, not a line of the file `init`
/// would have written: `--preset aws: unknown preset … (did you mean `aws-standard`?)`.
fn preset_message(error: &str, preset: Option<&str>) -> Option<String> {
    const AT: &str = "`policy.client.preset`: ";
    let at = error.find(AT)?;
    Some(format!("--preset {}: {}", preset?, &error[at + AT.len()..]))
}

/// A flag's number as typed: plain, or in exponent form when huge (`1e308`, not 309 digits).
fn number(x: f64) -> String {
    if x.abs() >= 1e15 {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Most workers a hop may have (the scenario's own limit on `hop.NAME.workers`).
const WORKERS_MAX: u64 = 10_000_000;
/// Longest `--outage`, in hours and nanoseconds.
const OUTAGE_MAX_H: u64 = 24;
const OUTAGE_MAX_NS: u64 = OUTAGE_MAX_H * 3600 * NS_PER_S;

fn bad(message: String) -> CliError {
    CliError::BadInput(format!("init: {message}"))
}

/// Writes the scenario.
pub fn run(args: InitArgs) -> Result<(), CliError> {
    if args.file.exists() && !args.force {
        return Err(bad(format!("`{}` exists; choose another file or add --force", args.file.display())));
    }
    let out_dir = args.file.parent().map(Path::to_path_buf).unwrap_or_default();
    let sources = args.from.iter().map(|f| classify(f, &out_dir)).collect::<Result<Vec<_>, _>>()?;
    let name = args.file.display().to_string();
    // Validate as `run` will (paths relative to the file's directory) before writing anything.
    let validate = |text: &str| {
        Scenario::from_source(&name, text, &[]).map_err(|e| {
            let text = e.to_string();
            bad(import_message(&text)
                .or_else(|| preset_message(&text, args.preset.as_deref()))
                .unwrap_or_else(|| format!("the generated scenario does not validate: {text}")))
        })
    };
    // A first draft gives the resolved policy and the hops' capacities by the one definition
    // validate prints; the file written states those and sizes its horizon from them.
    let (draft, facts) = scenario_text(&args, &sources, None)?;
    let sizing = sizing(&facts, &validate(&draft)?.base);
    let (text, _) = scenario_text(&args, &sources, Some(&sizing))?;
    let scenario = validate(&text)?;
    crate::report::files::write_atomic(&args.file, text.as_bytes()).map_err(|e| bad(e.to_string()))?;
    for w in &scenario.warnings {
        eprintln!("{}", crate::cli::warning_text(w));
    }
    if let Some(w) = &sizing.never_drains {
        eprintln!("warning: {w}");
    }
    let (lines, warnings) = super::load_check::load_check(&scenario.base);
    for line in lines {
        println!("{line}");
    }
    for w in warnings {
        eprintln!("{}", crate::cli::warning_text(&w));
    }
    println!("wrote {name}; run it with: retrystorm compare {name}");
    Ok(())
}

/// `path` as the scenario will name it: relative to the scenario's directory when possible.
fn relative_to(path: &Path, dir: &Path) -> String {
    let abs = |p: &Path| std::fs::canonicalize(if p.as_os_str().is_empty() { Path::new(".") } else { p }).ok();
    match (abs(path), abs(dir)) {
        (Some(p), Some(d)) => {
            if let Ok(rest) = p.strip_prefix(&d) {
                return rest.display().to_string();
            }
            // One level up at most keeps the scenario readable; else the absolute path.
            match d.parent().and_then(|up| p.strip_prefix(up).ok()) {
                Some(rest) => format!("../{}", rest.display()),
                None => p.display().to_string(),
            }
        }
        _ => path.display().to_string(),
    }
}

fn classify(file: &Path, out_dir: &Path) -> Result<Source, CliError> {
    let shown = file.display().to_string();
    let text_head = || -> Result<String, CliError> {
        use std::io::{BufRead, BufReader, Read};
        // A regular file (through `input_file`: a FIFO would block here) of any size: only its
        // head is read, at most 64 lines of the first MiB, to tell what it is.
        let f = input_file::open(file, input_file::Limit { bytes: u64::MAX, holder: "a --from file" })
            .map_err(|e| bad(format!("--from {shown}: cannot read it: {e}")))?;
        let mut head = String::new();
        for line in BufReader::new(f.take(1 << 20)).lines().take(64) {
            let line = line.map_err(|e| bad(format!("--from {shown}: not text: {e}")))?;
            head.push_str(&line);
            head.push('\n');
        }
        Ok(head)
    };
    let head = text_head()?;
    let path = relative_to(file, out_dir);
    import::begin(Path::new(""));
    let lower = shown.to_ascii_lowercase();
    if [".csv", ".tsv", ".txt", ".hgrm"].iter().any(|e| lower.ends_with(e)) {
        let header = head.lines().find(|l| !l.trim_start().starts_with('#')).unwrap_or("").to_ascii_lowercase();
        let cols: Vec<&str> = header.split(',').map(|c| c.trim().trim_matches('"')).collect();
        let hgrm = lower.ends_with(".hgrm");
        let is_hist = hgrm
            || cols.iter().any(|c| ["le", "upper", "upper_bound", "bucket"].contains(c))
            || cols.contains(&"totalcount");
        if is_hist {
            let mut d: RawDist = toml::from_str("dist = \"empirical\"").expect("valid");
            d.file = Some(shown.clone());
            d.unit = (hgrm || cols.contains(&"totalcount")).then(|| "ms".to_string());
            let unit = d.unit.clone();
            let dist = crate::scenario::empirical::dist(&d, "--from")
                .map_err(|e| bad(format!("--from {shown}: {}", e.message)))?;
            let Dist::Empirical(e) = dist else { unreachable!("empirical") };
            return Ok(Source::Histogram { path, mean_s: e.mean_ns() / NS_PER_S as f64, unit });
        }
        let mut a: RawArrival = toml::from_str("kind = \"trace\"").expect("valid");
        a.file = Some(shown.clone());
        let arrival =
            crate::scenario::trace::arrival(&a, "--from").map_err(|e| bad(format!("--from {shown}: {}", e.message)))?;
        let Arrival::Trace(t) = arrival else { unreachable!("trace") };
        let period_s = t.data.period() as f64 / NS_PER_S as f64;
        return Ok(Source::Trace { path, mean_rate: t.mean_rate_per_s(), period_s });
    }
    if import::detect(&shown, &head).is_some() {
        return Ok(Source::Config { path });
    }
    Err(bad(format!(
        "--from {shown}: not a trace or histogram (.csv) nor a retry config (gRPC .json, Envoy or resilience4j .yaml, AWS config)"
    )))
}

/// Share of the capacity below it a hop's workers must keep its callee busy with a backlog.
const KEEP_BUSY: f64 = 0.95;

/// Mean-value analysis of one hop's workers as a closed loop (a backlog keeps every worker
/// busy): each of `n` workers spends `own` s on its own service (a delay: it has the worker to
/// itself), then calls a `c`-server station of `per_call` s per call (the callee; per_call = 0:
/// no callee). Seidmann's approximation puts the c servers as one of per_call ÷ c plus a delay of
/// per_call × (c − 1) ÷ c. Returns the completions per second.
fn closed_loop_throughput(n: u64, own: f64, c: u64, per_call: f64) -> f64 {
    let delay = own + per_call * (c.saturating_sub(1)) as f64 / c.max(1) as f64;
    let single = per_call / c.max(1) as f64;
    let mut queue = 0.0;
    let mut x = 0.0;
    for k in 1..=n {
        let r = single * (1.0 + queue);
        x = k as f64 / (delay + r);
        queue = x * r;
    }
    x
}

/// Workers of each hop of the chain and what the hop completes with a backlog (per second).
/// The last hop gets ⌈C × service⌉; hop i the fewest, from ⌈C × (n − i) × service⌉ up, whose
/// closed loop through the next hop (waiting in its queue: `closed_loop_throughput`) completes
/// at least `KEEP_BUSY` of what the next hop can (at most C). Held on a healthy callee only, as
/// the one capacity definition counts, the first hop's workers would wait in the callee's queue
/// at the stated load and complete less: 12 workers for 600/s over api → db at 10 ms complete
/// ≈ 505/s with a backlog, so an outage's backlog at 500/s never drained.
fn chain_workers(capacity: f64, service_s: f64, hops: usize) -> Vec<(u64, f64)> {
    let mut out = vec![(0, 0.0); hops];
    for i in (0..hops).rev() {
        let plain = (capacity * service_s * (hops - i) as f64).ceil().max(1.0) as u64;
        if i + 1 == hops {
            out[i] = (plain, plain as f64 / service_s);
            continue;
        }
        let (c, below) = out[i + 1];
        let per_call = c as f64 / below;
        let target = KEEP_BUSY * below.min(capacity);
        // The throughput grows with the workers: double, then bisect (each analysis is O(n)).
        let reaches = |n: u64| closed_loop_throughput(n, service_s, c, per_call) >= target;
        let (mut lo, mut hi) = (plain, plain);
        while !reaches(hi) && hi < WORKERS_MAX {
            lo = hi;
            hi = (hi * 2).min(WORKERS_MAX);
        }
        if reaches(lo) {
            hi = lo;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if reaches(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        out[i] = (hi, closed_loop_throughput(hi, service_s, c, per_call));
    }
    out
}

/// What the draft fixed that the horizon depends on.
struct Facts {
    /// Offered first attempts per second.
    offered: f64,
    /// Closed-loop clients (at most this many requests wait at once).
    clients: Option<u32>,
    /// The outage's start and length (s).
    outage: Option<(f64, f64)>,
    /// The horizon without an outage (s): a trace's period or 120 s.
    base_horizon: f64,
    /// What the chain completes per second with a backlog (`chain_workers`).
    backlogged: f64,
}

/// The horizon chosen from the validated draft, and why.
struct Sizing {
    /// Horizon in whole seconds.
    horizon_s: f64,
    /// Comment lines explaining it (without `# `).
    why: Vec<String>,
    /// Each hop's capacity by the one definition (`SimSpec::capacity_per_s`).
    capacities: Vec<Option<f64>>,
    /// Set when the outage's backlog never drains (offered load at or above capacity).
    never_drains: Option<String>,
}

/// Time left after the outage to watch the recovery once the backlog is estimated drained.
const WATCH_S: f64 = 60.0;

/// The horizon: the outage, the time to drain what it backs up, and a minute to watch.
///
/// The estimate (docs/MODEL.md, `retrystorm init`): while the outage lasts T s, at most λ·T
/// requests back up (every arrival still waiting when it ends, none given up; a closed loop at
/// most its clients). Afterwards they drain at the spare capacity C − λ, C the smallest hop
/// capacity, in B ÷ (C − λ) s; the last retries of requests failed during the outage land up to
/// the policy's retry spread R (its un-jittered delays summed) after it ends, so the drain takes
/// at least R. The bound is high when the policy gives requests up during the outage (they leave
/// no backlog); a horizon too long only costs simulated time, one too short reads "metastable".
fn sizing(facts: &Facts, spec: &crate::model::SimSpec) -> Sizing {
    let capacities: Vec<Option<f64>> = (0..spec.hops.len()).map(|h| spec.capacity_per_s(h)).collect();
    let Some((from, length)) = facts.outage else {
        return Sizing { horizon_s: facts.base_horizon, why: Vec::new(), capacities, never_drains: None };
    };
    let end = from + length;
    let capacity = capacities.iter().flatten().copied().fold(f64::INFINITY, f64::min);
    let lambda = facts.offered;
    let policy = &spec.policies[spec.tenants[0].policy];
    let spread_s = (1..policy.attempts_max).map(|r| policy.delay_upper_bound(r) as f64 / NS_PER_S as f64).sum::<f64>();
    let fallback = facts.base_horizon.max(end + WATCH_S);
    if lambda >= capacity {
        let never = format!(
            "the offered load ≈ {lambda:.0}/s is at or above the capacity {capacity:.0}/s: the backlog the outage builds never drains, so no horizon covers it (runs will read metastable); give --capacity above the load"
        );
        let why = vec![format!(
            "horizon: the outage ends at {end:.0} s + {WATCH_S:.0} s to watch; the offered load ≈ {lambda:.0}/s is at or above the capacity {capacity:.0}/s, so the backlog it builds never drains."
        )];
        return Sizing { horizon_s: fallback.ceil(), why, capacities, never_drains: Some(never) };
    }
    let mut backlog = lambda * length;
    let bound = match facts.clients {
        Some(c) if f64::from(c) < backlog => {
            backlog = f64::from(c);
            format!("at most its {c} closed-loop clients")
        }
        _ => format!("≈ {lambda:.0}/s × {length:.0} s"),
    };
    // With a backlog the first hop's workers also wait in the next hop's queue: the chain
    // completes `backlogged` (≤ the capacity), and that less the load drains it.
    let completes = facts.backlogged.min(capacity);
    if lambda >= completes {
        let never = format!(
            "the offered load ≈ {lambda:.0}/s is at or above what the chain completes with a backlog (≈ {completes:.0}/s): the backlog the outage builds never drains, so no horizon covers it (runs will read metastable); give a higher --capacity"
        );
        let why = vec![format!(
            "horizon: the outage ends at {end:.0} s + {WATCH_S:.0} s to watch; the load ≈ {lambda:.0}/s is at or above what the chain completes with a backlog (≈ {completes:.0}/s), so its backlog never drains."
        )];
        return Sizing { horizon_s: fallback.ceil(), why, capacities, never_drains: Some(never) };
    }
    let drain = backlog / (completes - lambda);
    let drain_s = drain.max(spread_s);
    let horizon_s = (end + drain_s + WATCH_S).max(facts.base_horizon);
    // Whole tens of seconds, never shorter than the estimate.
    let horizon_s = (horizon_s / 10.0).ceil() * 10.0;
    let why = vec![
        format!("horizon: the outage ends at {end:.0} s; while it lasts up to {backlog:.0} requests back up ({bound}),"),
        format!(
            "which drain at what the chain completes with a backlog less the load, {completes:.0} − {lambda:.0} = {:.0}/s, in ≈ {drain:.0} s",
            completes - lambda
        ),
        format!("(at least the policy's retry spread, {spread_s:.1} s; the capacity by validate's definition is {capacity:.0}/s);"),
        format!("+ {WATCH_S:.0} s to watch the recovery. An upper bound: requests given up during the outage leave no backlog."),
    ];
    Sizing { horizon_s, why, capacities, never_drains: None }
}

fn scenario_text(args: &InitArgs, sources: &[Source], sizing: Option<&Sizing>) -> Result<(String, Facts), CliError> {
    let trace = sources.iter().find_map(|s| match s {
        Source::Trace { path, mean_rate, period_s } => Some((path, *mean_rate, *period_s)),
        Source::Histogram { .. } | Source::Config { .. } => None,
    });
    let histogram = sources.iter().find_map(|s| match s {
        Source::Histogram { path, mean_s, unit } => Some((path, *mean_s, unit)),
        Source::Trace { .. } | Source::Config { .. } => None,
    });
    let config = sources.iter().find_map(|s| match s {
        Source::Config { path } => Some(path),
        Source::Trace { .. } | Source::Histogram { .. } => None,
    });
    if let (Some(select), None) = (&args.select, config) {
        return Err(bad(format!(
            "--select {select}: chooses an entry of an imported retry config, and no --from names one; add --from CONFIG (a gRPC service config, an Envoy route, a resilience4j file or an AWS config) or leave out --select"
        )));
    }
    if trace.is_some() && (args.rate.is_some() || args.clients.is_some()) {
        return Err(bad("--from a trace sets the arrivals; leave out --rate and --clients".into()));
    }
    for h in &args.hops {
        if h.is_empty() || h.contains('.') || h.contains('"') {
            return Err(bad(format!("--hops: `{h}` is not a hop name (non-empty, no `.` or quote)")));
        }
    }
    if let Some(twice) = args.hops.iter().enumerate().find_map(|(i, h)| args.hops[..i].contains(h).then_some(h)) {
        return Err(bad(format!("--hops: `{twice}` is named twice; give each hop of the chain its own name")));
    }
    let outage =
        args.outage.as_deref().map(|o| parse_duration(o).map_err(|e| bad(format!("--outage: {e}")))).transpose()?;
    match (outage, args.outage.as_deref()) {
        (Some(0), Some(o)) => {
            return Err(bad(format!("--outage {o}: an outage needs a length above 0; give e.g. --outage 20s")))
        }
        (Some(d), Some(o)) if d > OUTAGE_MAX_NS => {
            return Err(bad(format!(
                "--outage {o}: longer than {OUTAGE_MAX_H}h; init writes a run of 30 s + the outage + its drain + 60 s, and a longer outage is a run of days of simulated traffic: give at most --outage {OUTAGE_MAX_H}h"
            )))
        }
        _ => {}
    }
    let think = parse_duration(&args.think).map_err(|e| bad(format!("--think: {e}")))?;
    let service_s = histogram.map_or(0.010, |h| h.1);
    // Offered load in requests per second, for the default capacity.
    let offered = match (trace, args.rate, args.clients) {
        (Some(t), _, _) => t.1,
        (None, Some(r), _) if r.is_finite() && r > 0.0 => r,
        (None, Some(r), _) => {
            return Err(bad(format!("--rate {}: give a positive number of requests per second", number(r))))
        }
        (None, None, Some(0)) => return Err(bad("--clients 0: give at least one client".into())),
        (None, None, Some(c)) => f64::from(c) / (think as f64 / NS_PER_S as f64 + service_s),
        (None, None, None) => 100.0,
    };
    let capacity = match args.capacity {
        Some(c) if c.is_finite() && c > 0.0 => c,
        Some(c) => return Err(bad(format!("--capacity {}: give a positive number of requests per second", number(c)))),
        None => 2.0 * offered,
    };
    if offered > capacity && args.capacity.is_some() && args.rate.is_some() {
        return Err(bad(format!(
            "--rate {offered} exceeds --capacity {capacity}: every hop would be overloaded before any fault (its backlog grows from t = 0 and every variant looks metastable); give --capacity above --rate, e.g. --capacity {}",
            (2.0 * offered).ceil()
        )));
    }
    // A hop's worker stays held while it waits on the next hop's reply, so hop i of n is busy
    // (n − i) service times per request: it gets the workers for C requests/s of that, and the
    // stated capacity holds at every hop (the one definition, `SimSpec::capacity_per_s`).
    let hops = args.hops.len();
    let sized = chain_workers(capacity, service_s, hops);
    let workers_at = |i: usize| sized[i].0;
    // The first hop is the busiest (it holds a worker for every hop after it): refuse a capacity
    // its workers cannot reach, naming the flag that set it.
    if capacity * service_s * hops as f64 > WORKERS_MAX as f64 {
        let most = (WORKERS_MAX as f64 / (service_s * hops as f64)).floor();
        let (flag, fix) = match (args.capacity, args.rate) {
            (Some(c), _) => (format!("--capacity {}", number(c)), format!("give at most --capacity {most:.0}")),
            (None, Some(r)) => (
                format!("--rate {} (capacity defaults to twice the rate)", number(r)),
                format!("give at most --rate {:.0}, or a --capacity of at most {most:.0}", (most / 2.0).floor()),
            ),
            (None, None) => (
                format!("the offered load {offered:.0}/s (capacity defaults to twice it)"),
                format!("give a --capacity of at most {most:.0}"),
            ),
        };
        return Err(bad(format!(
            "{flag}: hop `{}` would need more than {WORKERS_MAX} workers ({service_s} s busy per request); {fix}",
            args.hops[0]
        )));
    }
    let outage_from = 30.0;
    let facts = Facts {
        offered,
        clients: if trace.is_none() { args.clients } else { None },
        outage: outage.map(|o| (outage_from, o as f64 / NS_PER_S as f64)),
        base_horizon: trace.map_or(120.0, |t| t.2),
        backlogged: sized[0].1,
    };
    let horizon = sizing.map_or_else(
        || facts.base_horizon.max(outage.map_or(0.0, |o| outage_from + o as f64 / 1e9 + WATCH_S)),
        |z| z.horizon_s,
    );
    // The capacity said in the header: the smallest hop's by the one definition once validated.
    let capacity = sizing.and_then(|z| z.capacities.iter().flatten().copied().reduce(f64::min)).unwrap_or(capacity);
    let name = args.file.file_stem().map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(
        w,
        "# {name}: written by `retrystorm init`; edit freely, then `retrystorm compare {}`.",
        args.file.display()
    );
    let _ = writeln!(w, "#");
    let _ = writeln!(w, "# What it models: {}.", describe(args, trace.is_some(), offered, capacity, outage));
    if offered > capacity {
        let _ = writeln!(
            w,
            "# Note: the offered load (≈ {offered:.0}/s) exceeds the capacity ({capacity:.0}/s): the hops are overloaded even without a fault."
        );
    }
    let _ = writeln!(w, "# `retrystorm validate` prints each retry policy as resolved and where each value came from.");
    let _ = writeln!(w, "\nname = {}", toml_str(&name));
    let _ = writeln!(w, "seed = 1");
    for line in sizing.map_or(&[][..], |z| &z.why[..]) {
        let _ = writeln!(w, "# {line}");
    }
    let _ = writeln!(
        w,
        "horizon = \"{}s\"      # no new requests after this; the run drains up to 2 × horizon",
        horizon.ceil()
    );
    let _ = writeln!(w, "replications = 5       # independent runs per variant: results carry 95% CIs");
    let _ = writeln!(w, "\n[[tenant]]\nname = \"clients\"");
    match (trace, args.clients) {
        (Some((path, rate, period)), _) => {
            let _ = writeln!(w, "clients = 1000         # the trace's requests are spread over this many clients");
            let _ = writeln!(
                w,
                "arrival = {{ kind = \"trace\", file = {}, loop = true }}   # {rate:.1} requests/s on average over {period:.0} s; time_scale = 10 replays 10× faster, volume_scale = 3 triples the volume",
                toml_str(path)
            );
        }
        (None, Some(c)) => {
            let _ = writeln!(w, "clients = {c}");
            let _ = writeln!(
                w,
                "arrival = {{ kind = \"closed\", start = \"0s\", spread = \"1s\", think = \"{}\" }}   # each client waits `think` after a request ends",
                args.think
            );
        }
        (None, None) => {
            let _ = writeln!(w, "clients = 1000         # open-loop requests are spread over this many clients");
            let _ = writeln!(w, "arrival = {{ kind = \"poisson\", rate_per_s = {offered:?} }}");
        }
    }
    let _ = writeln!(w, "policy = \"client\"");
    let _ = writeln!(w, "\n[policy.client]        # the clients' retry policy");
    if let Some(path) = config {
        let _ = writeln!(w, "import = {}   # fields written below override the imported ones", toml_str(path));
        if let Some(sel) = &args.select {
            let _ = writeln!(w, "select = {}", toml_str(sel));
        }
    }
    match (&args.preset, config) {
        (Some(p), _) => {
            let _ = writeln!(w, "preset = {}   # any field written here overrides the preset", toml_str(p));
        }
        (None, Some(_)) => {}
        (None, None) => {
            let _ = writeln!(
                w,
                "jitter = \"full\"        # none | exponential | full | equal | decorrelated | proportional | schedule"
            );
            let _ = writeln!(w, "base = \"100ms\"\nmultiplier = 2.0\ncap = \"10s\"\nmax_attempts = 4");
        }
    }
    if args.hops.len() > 1 {
        let _ = writeln!(w, "\n[policy.inner]         # how each hop retries the next one");
        let _ = writeln!(w, "jitter = \"full\"\nbase = \"25ms\"\ncap = \"1s\"\nmax_attempts = 3");
    }
    for (i, hop) in args.hops.iter().enumerate() {
        let _ = writeln!(w, "\n[[hop]]\nname = {}", toml_str(hop));
        let workers = workers_at(i);
        let busy = service_s * (hops - i) as f64;
        let held = if i + 1 < hops {
            format!(" (its service + {} held on the hops it calls)", hops - i - 1)
        } else {
            String::new()
        };
        // The capacity validate prints (the one definition), once the draft validated.
        let cap = sizing.and_then(|z| z.capacities.get(i).copied().flatten()).unwrap_or(workers as f64 / busy);
        let _ = writeln!(
            w,
            "workers = {workers}            # workers ÷ (service + held downstream): {workers} ÷ {busy:.4} s busy per request{held} ≈ {cap:.0} requests/s"
        );
        match histogram {
            Some((path, mean, unit)) => {
                let unit = unit.as_ref().map(|u| format!(", unit = {}", toml_str(u))).unwrap_or_default();
                let _ = writeln!(
                    w,
                    "service = {{ dist = \"empirical\", file = {}{unit} }}   # measured, mean {:.1} ms",
                    toml_str(path),
                    mean * 1e3
                );
            }
            None => {
                let _ = writeln!(w, "service = {{ dist = \"exponential\", mean = \"10ms\" }}   # or empirical: file = \"latency.csv\", or p50/p99");
            }
        }
        if i + 1 < args.hops.len() {
            let _ = writeln!(w, "downstream_policy = \"inner\"");
        }
    }
    if let Some(o) = outage {
        let last = args.hops.last().expect("at least one hop");
        let _ = writeln!(w, "\n[[fault]]               # the dependency goes down; what hits it when it comes back?");
        let _ = writeln!(
            w,
            "hop = {}\nkind = \"outage\"\nfrom = \"{outage_from}s\"\nto = \"{}s\"",
            toml_str(last),
            outage_from + o as f64 / 1e9
        );
    }
    Ok((s, facts))
}

fn describe(args: &InitArgs, trace: bool, offered: f64, capacity: f64, outage: Option<u64>) -> String {
    let load = if trace {
        "a replayed traffic trace".to_string()
    } else if let Some(c) = args.clients {
        format!("{c} closed-loop clients (≈ {offered:.0} requests/s)")
    } else {
        format!("{offered} requests/s (Poisson)")
    };
    let outage = outage.map_or(String::new(), |o| {
        format!(", an outage of {} for {:.0} s", args.hops.last().map_or("", String::as_str), o as f64 / 1e9)
    });
    format!("{load} through {} at ≈ {capacity:.0} requests/s capacity{outage}", args.hops.join(" → "))
}

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use crate::cli::{main_with_args, CliError};
    use crate::scenario::Scenario;

    fn init(args: &[&str]) -> Result<(), CliError> {
        main_with_args(["retrystorm", "init"].iter().chain(args).map(std::ffi::OsString::from))
    }

    #[test]
    fn init_sizes_workers_so_the_stated_capacity_holds_at_every_hop() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("checkout.toml");
        let path = file.to_str().expect("utf-8");
        init(&[path, "--rate", "800", "--capacity", "1000", "--outage", "20s", "--hops", "api,db"]).expect("written");
        let scenario = Scenario::load(path, &[]).expect("valid");
        let spec = &scenario.base;
        // db: 10 workers of 10 ms for 1,000/s. api holds its worker for its own 10 ms and db's
        // 10 ms (20 workers for 1,000/s by the capacity definition), and more: with a backlog
        // its workers also wait in db's queue, so it gets the workers that keep db ≥ 95% busy.
        let db = spec.capacity_per_s(1).expect("bounded");
        assert!((1000.0..1100.0).contains(&db), "db: capacity {db}");
        let api = spec.hops[0].workers;
        assert!(api > 20, "api: {api} workers");
        let below = super::closed_loop_throughput(u64::from(api) - 1, 0.010, 10, 0.010);
        let at = super::closed_loop_throughput(u64::from(api), 0.010, 10, 0.010);
        assert!(below < 950.0 && at >= 950.0, "api's {api} workers complete {at}/s, one fewer {below}/s");
        let (_, warnings) = crate::cli::load_check::load_check(spec);
        assert!(warnings.is_empty(), "800/s on 1,000/s is not overloaded: {warnings:?}");
        // More load than capacity is refused, naming both flags.
        let over = dir.path().join("over.toml");
        let Err(CliError::BadInput(m)) =
            init(&[over.to_str().unwrap(), "--rate", "1200", "--capacity", "1000", "--hops", "api,db"])
        else {
            panic!("rate above capacity is bad input")
        };
        assert!(m.contains("--rate 1200") && m.contains("--capacity"), "{m}");
        assert!(!over.exists());
    }

    #[test]
    fn the_closed_loop_throughput_matches_exact_mean_value_analysis_where_it_is_exact() {
        // One server downstream (c = 1): Seidmann's approximation is exact MVA. Two workers,
        // own 10 ms, callee 10 ms: by hand, n = 1: R = 10 ms, X = 1 ÷ 20 ms = 50/s, Q = 0.5;
        // n = 2: R = 10 × 1.5 = 15 ms, X = 2 ÷ 25 ms = 80/s.
        assert!((super::closed_loop_throughput(2, 0.010, 1, 0.010) - 80.0).abs() < 1e-9);
        // Many workers saturate the callee: X → c ÷ per_call.
        let x = super::closed_loop_throughput(400, 0.010, 6, 0.010);
        assert!((599.0..=600.0).contains(&x), "{x}");
        // No callee: every worker completes 1 ÷ own.
        assert!((super::closed_loop_throughput(7, 0.010, 1, 0.0) - 700.0).abs() < 1e-9);
    }

    #[test]
    fn the_load_check_warns_of_a_hop_overloaded_before_any_fault() {
        // The old sizing: api's 10 workers for 1,000/s of its own 10 ms, but held 10 ms more on
        // db: 10 ÷ 20 ms = 500/s against 800/s offered.
        let text = "name = \"x\"\nhorizon = \"60s\"\n[[tenant]]\nname = \"c\"\nclients = 10\narrival = { kind = \"poisson\", rate_per_s = 800.0 }\npolicy = \"p\"\n[policy.p]\njitter = \"full\"\n[policy.inner]\njitter = \"full\"\n[[hop]]\nname = \"api\"\nworkers = 10\nservice = { dist = \"constant\", mean = \"10ms\" }\ndownstream_policy = \"inner\"\n[[hop]]\nname = \"db\"\nworkers = 10\nservice = { dist = \"constant\", mean = \"10ms\" }\n";
        let scenario = Scenario::from_source("x.toml", text, &[]).expect("valid");
        assert_eq!(scenario.base.capacity_per_s(0), Some(500.0));
        assert_eq!(scenario.base.capacity_per_s(1), Some(1000.0));
        let (lines, warnings) = crate::cli::load_check::load_check(&scenario.base);
        assert!(lines[0].contains("800/s") && lines[0].contains("500/s"), "{lines:?}");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("hop api is overloaded before any fault"), "{warnings:?}");
    }
}
