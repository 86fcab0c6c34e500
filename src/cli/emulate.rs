//! `retrystorm emulate`: the scenario on real sockets (`crate::emulate`), one measured run per
//! variant, written as a run's files.

use super::{check_jitters, claim, parse_seed, result_command, table, CliError};
use crate::emulate::{self, ClientMode, Connections, EmulateError, Options};
use crate::metrics::catalogue::Metric;
use crate::metrics::stats::StatRow;
use crate::runner::{ComparedRow, Emulation, MeasuredComparison, Study};
use crate::scenario::{parse_assignment, Override, Scenario, Variant};
use clap::Args;
use std::path::PathBuf;

/// Flags of `emulate`.
#[derive(Debug, Args)]
pub struct EmulateArgs {
    /// Scenario file (TOML).
    scenario: String,
    /// Wall seconds per scenario second: 10 runs the scenario 10× slower than its clock.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    time_scale: f64,
    /// Jitter strategies, one emulated run each (default: the scenario's variants, else itself).
    #[arg(long, value_delimiter = ',')]
    jitter: Vec<String>,
    /// Override a field, e.g. --set tenant.main.clients=1000 (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
    /// Master seed (overrides the file's).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_seed)]
    seed: Option<u64>,
    /// Output directory (default: output/<scenario name>-emulated).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Stop each run after this many wall seconds, whatever is still in flight (at most 3600).
    #[arg(long, default_value_t = 120.0, allow_negative_numbers = true)]
    max_seconds: f64,
    /// Refuse scenarios that plan more logical requests than this per run.
    #[arg(long, default_value_t = 20_000)]
    max_requests: u64,
    /// Run even when this machine's timers are later than a tenth of the mean service time.
    #[arg(long)]
    allow_late: bool,
    /// Emulated runs per variant (1 to 50), run k with the arrival times of simulated
    /// replication k: more than one gives the measurement a 95% interval of its own.
    #[arg(long, default_value_t = 1)]
    runs: u32,
    /// A real endpoint in place of a hop, e.g. --target api=http://127.0.0.1:8080/ (repeatable;
    /// 127.0.0.1 only unless --allow-remote-target). Its callers send the scenario's requests
    /// there and count its replies.
    #[arg(long = "target", value_name = "HOP=URL")]
    targets: Vec<String>,
    /// Let --target name an endpoint off this machine (the scenario's load goes there).
    #[arg(long)]
    allow_remote_target: bool,
    /// Whose code decides the backoff: `policy` (the simulator's) or `backon` (the backon
    /// crate's exponential backoff with its jitter; needs jitter = "equal").
    #[arg(long, value_name = "policy|backon", default_value = "policy", value_parser = parse_client)]
    client: ClientMode,
    /// CPU work each attempt costs its client before it is sent, e.g. 0.2ms (busy wall time),
    /// with all clients on one thread: one client process whose event loop congests when the
    /// herd retries at once (a Python asyncio or Node client). Default: none.
    #[arg(long, value_name = "DURATION")]
    client_work: Option<String>,
    /// How callers hold their connections: `per-attempt` (a new connection for every attempt)
    /// or `pooled` (keep-alive connections reused, as HTTP client libraries do: one pool for
    /// the clients, one for the hops' calls to each hop).
    #[arg(long, value_name = "per-attempt|pooled", default_value = "per-attempt", value_parser = parse_connections)]
    connections: Connections,
    /// Write into --out even if it holds files retrystorm did not write.
    #[arg(long)]
    force: bool,
    /// No table on stdout.
    #[arg(long)]
    quiet: bool,
}

/// Refuses time scales and limits outside their ranges, naming the flag and the fix.
fn check_options(args: &EmulateArgs) -> Result<Options, CliError> {
    if !(args.time_scale.is_finite() && (0.01..=1000.0).contains(&args.time_scale)) {
        return Err(CliError::BadInput(format!(
            "--time-scale {}: give a number from 0.01 to 1000 (wall seconds per scenario second; 1 = real time)",
            args.time_scale
        )));
    }
    if !(args.max_seconds.is_finite() && args.max_seconds > 0.0 && args.max_seconds <= 3600.0) {
        return Err(CliError::BadInput(format!(
            "--max-seconds {}: give a number of wall seconds above 0 and at most 3600",
            args.max_seconds
        )));
    }
    if args.max_requests == 0 {
        return Err(CliError::BadInput("--max-requests 0: give at least 1".into()));
    }
    check_runs("--runs", args.runs)?;
    let client_work = args.client_work.as_deref().map(parse_client_work).transpose()?;
    Ok(Options {
        time_scale: args.time_scale,
        max_seconds: args.max_seconds,
        max_requests: args.max_requests,
        allow_late: args.allow_late,
        client: args.client,
        client_work,
        connections: args.connections,
        runs: args.runs,
        targets: targets(&args.targets, args.allow_remote_target)?,
    })
}

/// Parses every `--target`, refusing two for one hop (one would silently replace the other).
fn targets(texts: &[String], remote: bool) -> Result<Vec<emulate::Target>, CliError> {
    let parsed: Vec<emulate::Target> = texts
        .iter()
        .map(|t| emulate::Target::parse(t, remote))
        .collect::<Result<_, _>>()
        .map_err(CliError::BadInput)?;
    if let Some(i) = crate::scenario::names::first_duplicate(parsed.iter().map(|t| t.hop.as_str())) {
        return Err(CliError::BadInput(format!(
            "--target {}: hop `{}` already has a --target; give one endpoint per hop",
            texts[i], parsed[i].hop
        )));
    }
    Ok(parsed)
}

/// Longest `--client-work`: 100 ms of CPU per attempt.
const CLIENT_WORK_MAX_NS: u64 = 100_000_000;

/// `--client-work DURATION`: above 0 and at most 100 ms.
fn parse_client_work(text: &str) -> Result<std::time::Duration, CliError> {
    let ns = crate::engine::time::parse_duration(text).map_err(|_| {
        CliError::BadInput(format!("--client-work {text}: not a duration (a number and a unit); give e.g. 0.2ms"))
    })?;
    if ns == 0 || ns > CLIENT_WORK_MAX_NS {
        return Err(CliError::BadInput(format!(
            "--client-work {text}: give a duration above 0 and at most 100ms (CPU work per attempt), e.g. 0.2ms"
        )));
    }
    Ok(std::time::Duration::from_nanos(ns))
}

/// Most emulated runs per variant.
const RUNS_MAX: u32 = 50;

/// Refuses a count of emulated runs per variant (given as `flag`) outside 1 to [`RUNS_MAX`].
fn check_runs(flag: &str, runs: u32) -> Result<(), CliError> {
    if (1..=RUNS_MAX).contains(&runs) {
        return Ok(());
    }
    Err(CliError::BadInput(format!(
        "{flag} {runs}: give 1 to {RUNS_MAX} emulated runs per variant (each takes the scenario's wall time)"
    )))
}

/// Runs every variant `options.runs` times on loopback (run `k` on simulated replication `k`'s
/// arrivals), variant by variant as [`crate::runner::assemble`] reads them: the records and
/// each run's overhead.
fn measure(
    seed: u64,
    variants: &[Variant],
    checked: &[emulate::Preflight],
    options: &Options,
    quiet: bool,
) -> Result<(Vec<crate::metrics::RunRecord>, Vec<Emulation>), CliError> {
    let mut records = Vec::with_capacity(variants.len() * options.runs as usize);
    let mut measured: Vec<Emulation> = Vec::new();
    for (v, checked) in variants.iter().zip(checked) {
        // A warning about the machine or the scenario, once per variant however many runs say it,
        // with how many did: `(in 7 of 10 runs)`.
        let mut warned: Vec<(String, u32)> = Vec::new();
        let mut stopped: Vec<(String, u32)> = Vec::new();
        for k in 0..options.runs {
            if !quiet {
                let which =
                    if options.runs > 1 { format!(" (run {} of {})", k + 1, options.runs) } else { String::new() };
                eprintln!("emulating `{}`{which} on 127.0.0.1 at --time-scale {} …", v.name, options.time_scale);
            }
            // Wall seconds the run should take: the scenario's horizon at the time scale, at most
            // --max-seconds.
            let expected = (crate::engine::time::ns_to_secs(v.spec.horizon) * options.time_scale)
                .min(options.max_seconds)
                .ceil() as u64;
            let (record, emulation) = crate::runner::progress::timed(!quiet, "of wall time", expected, || {
                emulate::run(&v.spec, (seed, u64::from(k)), options, checked)
            })?;
            for w in &emulation.warnings {
                count_once(&mut warned, w);
            }
            if let Some(why) = &record.truncated {
                count_once(&mut stopped, why);
            }
            records.push(record);
            measured.push(emulation);
        }
        for (w, n) in &warned {
            eprintln!("{}", crate::cli::warning_text(&format!("`{}`: {w}{}", v.name, in_runs(*n, options.runs))));
        }
        for (why, n) in &stopped {
            let text = format!(
                "emulated `{}` stopped early ({why}){}; its results are partial",
                v.name,
                in_runs(*n, options.runs)
            );
            eprintln!("{}", crate::cli::warning_text(&text));
        }
    }
    Ok((records, measured))
}

/// Counts `text` in `seen` (first-seen order kept).
fn count_once(seen: &mut Vec<(String, u32)>, text: &str) {
    match seen.iter_mut().find(|(t, _)| t == text) {
        Some((_, n)) => *n += 1,
        None => seen.push((text.to_string(), 1)),
    }
}

/// ` (in 7 of 10 runs)` after a warning that came from runs of several, nothing for one run.
fn in_runs(n: u32, runs: u32) -> String {
    if runs > 1 {
        format!(" (in {n} of {runs} runs)")
    } else {
        String::new()
    }
}

fn parse_client(text: &str) -> Result<ClientMode, String> {
    match text {
        "policy" => Ok(ClientMode::Policy),
        "backon" => Ok(ClientMode::Backon),
        other => Err(format!("`{other}` is not a client mode; give policy or backon")),
    }
}

fn parse_connections(text: &str) -> Result<Connections, String> {
    match text {
        "per-attempt" => Ok(Connections::PerAttempt),
        "pooled" => Ok(Connections::Pooled),
        other => Err(format!("`{other}` is not a connection mode; give per-attempt or pooled")),
    }
}

impl From<EmulateError> for CliError {
    fn from(e: EmulateError) -> Self {
        match e {
            EmulateError::Refused(m) => CliError::BadInput(m),
            EmulateError::Failed(m) => CliError::Failure(m),
        }
    }
}

/// Runs `emulate`.
pub fn run(args: EmulateArgs) -> Result<(), CliError> {
    let options = check_options(&args)?;
    let mut overrides: Vec<Override> =
        args.set.iter().map(|s| parse_assignment(s).map_err(CliError::BadInput)).collect::<Result<_, _>>()?;
    if let Some(seed) = args.seed {
        let seed = i64::try_from(seed).map_err(|_| CliError::BadInput(format!("--seed {seed}: beyond the range")))?;
        overrides.push(Override { path: "seed".into(), value: toml::Value::Integer(seed) });
    }
    let scenario = Scenario::load(&args.scenario, &overrides)?;
    let variants = if args.jitter.is_empty() {
        scenario.run_variants()
    } else {
        check_jitters(&args.jitter)?;
        scenario.jitter_variants(&args.jitter)?
    };
    // Everything refused before anything runs or is written.
    let checked: Vec<emulate::Preflight> = variants
        .iter()
        .map(|v| {
            emulate::preflight(&v.spec, &options).map_err(|e| match e {
                EmulateError::Refused(m) if variants.len() > 1 => {
                    CliError::BadInput(format!("variant `{}`: {m}", v.name))
                }
                EmulateError::Refused(m) => CliError::BadInput(m),
                EmulateError::Failed(m) => CliError::Failure(m),
            })
        })
        .collect::<Result<_, _>>()?;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("output").join(format!("{}-emulated", scenario.name)));
    let claim = claim(&out, args.force)?;
    let (records, measured) = measure(scenario.seed, &variants, &checked, &options, args.quiet)?;
    let wall_s = measured.iter().map(|e| e.wall_s).sum();
    let mut study = crate::runner::assemble(&scenario, &variants, records, options.runs, wall_s);
    study.emulation = Some(merge(&measured));
    study.provenance.command = result_command(std::env::args());
    study.provenance.overrides = args.set.clone();
    let written = crate::report::write_study(&claim, &study).map_err(|e| CliError::Failure(e.to_string()))?;
    if !args.quiet {
        print!("{}", table::summary_table(&study, table::WIDTH));
        if let Some(e) = &study.emulation {
            let mut text = format!(
                "measured on 127.0.0.1: timers {:.3} ms off their deadlines on average (p99 {:.3} ms) over {} sleeps; connection set-up {:.3} ms (p99 {:.3} ms) over {}; {:.1} s of wall time\n{}\n",
                e.timer_lateness_mean_s * 1e3,
                e.timer_lateness_p99_s * 1e3,
                e.timer_samples,
                e.connect_mean_s * 1e3,
                e.connect_p99_s * 1e3,
                connection_words(e),
                e.wall_s,
                cpu_words(e).trim_start_matches("; ")
            );
            if let Some(advice) = e.client_delays.advice() {
                text.push_str(&advice);
                text.push('\n');
            }
            print!("{}", table::fit(&text, table::WIDTH));
        }
        println!("wrote {} files to {}", written.len(), out.display());
    }
    Ok(())
}

/// How many connections a run opened, and whether its callers pooled them.
fn connection_words(e: &Emulation) -> String {
    let opened = if e.pooled {
        format!("{} pooled connections (opened, then reused)", e.connections)
    } else {
        format!("{} connections (one per attempt)", e.connections)
    };
    if e.loopback_samples == 0 {
        return opened;
    }
    format!(
        "{opened}; loopback {:.3} ms per request and reply (p99 {:.3} ms)",
        e.loopback_mean_s * 1e3,
        e.loopback_p99_s * 1e3
    )
}

/// One emulation record over several runs: sums, means weighted by samples, the largest p99.
fn merge(runs: &[Emulation]) -> Emulation {
    let weighted = |value: fn(&Emulation) -> f64, weight: fn(&Emulation) -> u64| {
        let total: u64 = runs.iter().map(weight).sum();
        if total == 0 {
            0.0
        } else {
            runs.iter().map(|e| value(e) * weight(e) as f64).sum::<f64>() / total as f64
        }
    };
    let max = |value: fn(&Emulation) -> f64| runs.iter().map(value).fold(0.0, f64::max);
    Emulation {
        emulated: true,
        time_scale: runs.first().map_or(1.0, |e| e.time_scale),
        wall_s: runs.iter().map(|e| e.wall_s).sum(),
        timer_lateness_calibration_mean_s: max(|e| e.timer_lateness_calibration_mean_s),
        timer_lateness_mean_s: weighted(|e| e.timer_lateness_mean_s, |e| e.timer_samples),
        timer_lateness_p99_s: max(|e| e.timer_lateness_p99_s),
        timer_samples: runs.iter().map(|e| e.timer_samples).sum(),
        connect_mean_s: weighted(|e| e.connect_mean_s, |e| e.connections),
        connect_p99_s: max(|e| e.connect_p99_s),
        connections: runs.iter().map(|e| e.connections).sum(),
        pooled: runs.iter().any(|e| e.pooled),
        loopback_mean_s: weighted(|e| e.loopback_mean_s, |e| e.loopback_samples),
        loopback_p99_s: max(|e| e.loopback_p99_s),
        loopback_samples: runs.iter().map(|e| e.loopback_samples).sum(),
        cpu_s: runs.iter().map(|e| e.cpu_s).sum(),
        cpu_share: runs.iter().map(|e| e.cpu_share).try_fold(0.0f64, |m, s| s.map(|s| m.max(s))),
        // Each warning once, with how many of the runs gave it: `… (in 7 of 10 runs)`.
        warnings: {
            let mut seen = Vec::new();
            for w in runs.iter().flat_map(|e| &e.warnings) {
                count_once(&mut seen, w);
            }
            seen.into_iter().map(|(w, n)| format!("{w}{}", in_runs(n, runs.len() as u32))).collect()
        },
        client_delays: runs.iter().fold(Default::default(), |fit, e| fit.merged(&e.client_delays)),
        comparison: None,
    }
}

/// `compare --emulate`'s flags (each needs `--emulate`).
#[derive(Debug, Args)]
pub struct CompareEmulation {
    /// After the simulation, run each variant once on real sockets (127.0.0.1) and put the
    /// measurement next to the simulation's 95% prediction interval.
    #[arg(long)]
    pub emulate: bool,
    /// With --emulate: wall seconds per scenario second.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true, requires = "emulate")]
    time_scale: f64,
    /// With --emulate: stop each emulated run after this many wall seconds (at most 3600).
    #[arg(long, default_value_t = 120.0, allow_negative_numbers = true, requires = "emulate")]
    max_seconds: f64,
    /// With --emulate: refuse variants that plan more logical requests than this.
    #[arg(long, default_value_t = 20_000, requires = "emulate")]
    max_requests: u64,
    /// With --emulate: run even when this machine's timers are too late for the service time.
    #[arg(long, requires = "emulate")]
    allow_late: bool,
    /// With --emulate: emulated runs per variant (1 to 50), run k on simulated replication k's
    /// arrivals; with more than one, each metric's measured runs are compared with the
    /// simulated replications by a permutation test of their means.
    #[arg(long, default_value_t = 1, requires = "emulate")]
    emulate_runs: u32,
    /// With --emulate: a real endpoint in place of a hop (as `emulate --target`).
    #[arg(long = "target", value_name = "HOP=URL", requires = "emulate")]
    targets: Vec<String>,
    /// With --emulate: let --target name an endpoint off this machine.
    #[arg(long, requires = "emulate")]
    allow_remote_target: bool,
    /// With --emulate: CPU work each attempt costs its client, all clients on one thread (as
    /// `emulate --client-work`).
    #[arg(long, value_name = "DURATION", requires = "emulate")]
    client_work: Option<String>,
    /// With --emulate: how callers hold their connections (as `emulate --connections`).
    #[arg(long, value_name = "per-attempt|pooled", default_value = "per-attempt", value_parser = parse_connections, requires = "emulate")]
    connections: Connections,
}

impl CompareEmulation {
    /// The emulator's options, if `--emulate` was given (checked like `emulate`'s flags).
    pub fn options(&self) -> Result<Option<Options>, CliError> {
        if !self.emulate {
            return Ok(None);
        }
        check_runs("--emulate-runs", self.emulate_runs)?;
        let (time_scale, max_seconds) = (self.time_scale, self.max_seconds);
        let flags = EmulateArgs {
            scenario: String::new(),
            time_scale,
            jitter: Vec::new(),
            set: Vec::new(),
            seed: None,
            out: None,
            max_seconds,
            max_requests: self.max_requests,
            allow_late: self.allow_late,
            client: ClientMode::Policy,
            client_work: self.client_work.clone(),
            connections: self.connections,
            runs: self.emulate_runs,
            targets: self.targets.clone(),
            allow_remote_target: self.allow_remote_target,
            force: false,
            quiet: true,
        };
        check_options(&flags).map(Some)
    }
}

/// The metrics `compare --emulate` puts side by side.
const SIDE_BY_SIDE: [Metric; 6] = [
    Metric::Amplification,
    Metric::PeakOverCapacity,
    Metric::PeakAfterOverCapacity,
    Metric::SuccessRatio,
    Metric::Duplicates,
    Metric::RecoveryTimeS,
];

/// Refuses, before anything runs, variants the emulator cannot run (or this machine cannot time).
pub fn preflight_all(variants: &[Variant], options: &Options) -> Result<Vec<emulate::Preflight>, CliError> {
    variants
        .iter()
        .map(|v| {
            emulate::preflight(&v.spec, options).map_err(|e| match e {
                EmulateError::Refused(m) => CliError::BadInput(format!("--emulate, variant `{}`: {m}", v.name)),
                EmulateError::Failed(m) => CliError::Failure(m),
            })
        })
        .collect()
}

/// Runs every variant once on loopback, writes the measured run to `out`, and returns the text
/// that puts it next to `simulated`: per variant and metric, the simulation's mean and 95%
/// prediction interval for one run, the measurement, and whether it falls inside.
pub fn side_by_side(
    scenario: &Scenario,
    variants: &[Variant],
    simulated: &Study,
    options: &Options,
    checked: &[emulate::Preflight],
    out: &std::path::Path,
    claim: &crate::report::Claim,
) -> Result<String, CliError> {
    let (records, measured) = measure(scenario.seed, variants, checked, options, false)?;
    let wall_s = measured.iter().map(|e| e.wall_s).sum();
    let mut study = crate::runner::assemble(scenario, variants, records, options.runs, wall_s);
    let mut emulation = merge(&measured);
    emulation.comparison = Some(comparison(simulated, &study, &emulation));
    study.emulation = Some(emulation.clone());
    study.provenance = simulated.provenance.clone();
    // The measured load over the simulated range and the comparison's rows as a table, beside
    // the emulated run's own files (and in its manifest), before its report, which shows both.
    let comparison_rows = emulation.comparison.clone().unwrap_or_default();
    let before = |dir: &std::path::Path, files: &mut Vec<std::path::PathBuf>| {
        let path = dir.join(COMPARISON_CSV);
        crate::report::files::write_atomic(&path, &comparison_csv(&comparison_rows))?;
        files.push(path);
        let figure = crate::report::charts::measured::MeasuredLoad { simulated, measured: &study };
        crate::report::charts::render(dir, &figure, files).map(|_| ())
    };
    let written =
        crate::report::write_study_with(claim, &study, &before).map_err(|e| CliError::Failure(e.to_string()))?;
    let mut text = comparison_text(emulation.comparison.as_ref().expect("compared"));
    text.push_str(&table::fit(
        &format!(
            "wrote {} files of the measured run to {} (report.html leads with this comparison; {COMPARISON_CSV} holds it; load_measured.png: the measured load over the simulated range)\n",
            written.len(),
            out.display()
        ),
        table::WIDTH,
    ));
    Ok(text)
}

/// The file holding the comparison's rows.
pub const COMPARISON_CSV: &str = "comparison.csv";

/// `comparison.csv`: one row per variant and metric, simulated beside measured.
fn comparison_csv(c: &MeasuredComparison) -> Vec<u8> {
    crate::report::format::csv_bytes(|w| {
        w.write_record(["variant", "metric", "simulated", "measured", c.judged_by.as_str()])?;
        for r in &c.rows {
            w.write_record([&r.variant, &r.metric, &r.simulated, &r.measured, &r.verdict])?;
        }
        Ok(())
    })
}

/// The comparison as the terminal shows it: the method, the table within 100 columns, the notes.
fn comparison_text(c: &MeasuredComparison) -> String {
    use std::fmt::Write as _;
    let mut text = table::fit(&format!("\n{}:\n", c.method), table::WIDTH);
    let (metric_w, sim_w, meas_w) = if c.judged_by == "inside" { (30, 28, 12) } else { (30, 20, 20) };
    let _ = writeln!(
        text,
        "  {:<16} {:<metric_w$} {:>sim_w$} {:>meas_w$}  {}",
        "variant", "metric", "simulated", "measured", c.judged_by
    );
    for r in &c.rows {
        let _ = writeln!(
            text,
            "  {:<16} {:<metric_w$} {:>sim_w$} {:>meas_w$}  {}",
            r.variant, r.metric, r.simulated, r.measured, r.verdict
        );
    }
    for note in &c.notes {
        for line in note.lines() {
            text.push_str(&table::fit(line, table::WIDTH));
            if !text.ends_with('\n') {
                text.push('\n');
            }
        }
    }
    text
}

/// Judges every variant's metrics, measured against simulated.
fn comparison(simulated: &Study, measured: &Study, e: &Emulation) -> MeasuredComparison {
    // One measured run is one more draw: it is judged against the simulation's prediction
    // interval for one run. Several are a sample: judged by a permutation test of the two
    // samples' means (`stats::permutation_p`), which assumes no shape of the distribution —
    // a metric with two modes (runs that stick in overload and runs that recover) measured a
    // few times is judged by how often the simulated replications fall that way, where Welch's
    // interval would read the few runs' spread as the distribution's.
    let runs = measured.replications.max(1) as usize;
    let method = if runs == 1 {
        format!(
            "simulated ({} replications: mean and 95% prediction interval for one run) vs measured on real sockets at 127.0.0.1 (one run, --time-scale {})",
            simulated.replications, e.time_scale
        )
    } else {
        format!(
            "simulated ({} replications) vs measured on real sockets at 127.0.0.1 ({runs} runs, --time-scale {}, run k on replication k's arrivals): means and 95% confidence intervals; `agree` when a permutation test of the two samples finds their means' difference likely (p ≥ 0.05)",
            simulated.replications, e.time_scale
        )
    };
    let verdict_heading = if runs == 1 { "inside" } else { "agree" };
    let mut rows_out = Vec::new();
    let (mut inside, mut judged_count, mut unjudged) = (0, 0, 0);
    // What the twins of the runs judged apart say (several runs only).
    let mut twin_notes = Vec::new();
    let present = |row: &StatRow, metric: Metric| -> Vec<f64> {
        row.get(metric).map(|s| s.values.iter().flatten().copied().collect()).unwrap_or_default()
    };
    for (sim, meas) in simulated.variants.iter().zip(&measured.variants) {
        // The system's metrics, then, in a chain, each later hop's amplification: where the
        // layers' retries multiply.
        let mut rows: Vec<(String, Metric, &StatRow, &StatRow)> =
            SIDE_BY_SIDE.iter().map(|&m| (m.def().label.to_string(), m, &sim.metrics, &meas.metrics)).collect();
        for ((name, sim_hop), (_, meas_hop)) in sim.hops.iter().zip(&meas.hops).skip(1) {
            let m = Metric::Amplification;
            rows.push((format!("hop {name} · {}", m.def().label), m, sim_hop, meas_hop));
        }
        for (label, metric, sim_row, meas_row) in rows {
            let values = present(sim_row, metric);
            let measured_values = present(meas_row, metric);
            let sim_mean = sim_row.mean(metric);
            let got = meas_row.mean(metric);
            // Recovery time is read off the series in whole buckets: the interval is widened by
            // that resolution, one bucket each side.
            let resolution =
                if metric == Metric::RecoveryTimeS { crate::engine::time::ns_to_secs(simulated.bucket) } else { 0.0 };
            // A degenerate interval (no spread) is a point: inside only at that value (to rounding).
            let holds = |[lo, hi]: [f64; 2], x: f64| {
                x >= lo - resolution - 1e-9 * lo.abs().max(1.0) && x <= hi + resolution + 1e-9 * hi.abs().max(1.0)
            };
            // One run: the prediction interval it must fall in; several: the permutation test.
            let judged = if runs == 1 {
                crate::metrics::stats::prediction_interval(&values, metric.interval(), 0.95).zip(got).map(
                    |(interval, x)| {
                        (
                            format!(
                                "{} [{}, {}]",
                                shown(metric, sim_mean.unwrap_or(x)),
                                shown(metric, interval[0]),
                                shown(metric, interval[1])
                            ),
                            holds(interval, x),
                        )
                    },
                )
            } else {
                let draws = crate::metrics::stats::PERMUTATION_DRAWS;
                crate::metrics::stats::permutation_p(&measured_values, &values, resolution, draws)
                    .map(|p| (mean_cell(metric, &values), p >= 0.05))
            };
            let (simulated_cell, verdict) = match (sim_mean, judged) {
                (Some(_), Some((cell, ok))) => {
                    judged_count += 1;
                    inside += usize::from(ok);
                    if !ok && runs > 1 {
                        // Replications 0 to N−1, whose arrivals the N runs replay, each with a value.
                        let twins: Option<Vec<f64>> =
                            sim_row.get(metric).and_then(|s| s.values.iter().take(runs).copied().collect());
                        let note = twins.filter(|t| t.len() == runs).and_then(|t| {
                            twins_note(&format!("`{}` {label}", sim.name), &t, &values, &measured_values, resolution)
                        });
                        twin_notes.extend(note);
                    }
                    (cell, if ok { "yes" } else { "NO" })
                }
                (Some(m), _) if got.is_some() => {
                    unjudged += 1;
                    (shown(metric, m), "-")
                }
                (Some(m), _) => (shown(metric, m), "- (none measured)"),
                (None, _) => (format!("none ({})", metric.def().null_means), "-"),
            };
            let got_cell = match got {
                None => "none".to_string(),
                Some(g) if runs == 1 => shown(metric, g),
                Some(_) => mean_cell(metric, &measured_values),
            };
            rows_out.push(ComparedRow {
                variant: sim.name.clone(),
                metric: label,
                simulated: simulated_cell,
                measured: got_cell,
                verdict: verdict.to_string(),
            });
        }
    }
    let mut notes: Vec<String> = Vec::new();
    for note in twin_notes {
        notes.push(note);
    }
    notes.push(if runs == 1 {
        format!(
            "{inside} of {judged_count} measurements fall inside the simulation's 95% prediction interval (about 1 in 20 falls outside by chance alone; recovery times, read in whole {} s buckets, get one bucket each side).",
            crate::engine::time::ns_to_secs(simulated.bucket)
        )
    } else if judged_count == 0 {
        "No metric could be judged: too few values on a side (runs or replications) for any answer below 0.05; give more --emulate-runs or --replications.".to_string()
    } else {
        format!(
            "{inside} of {judged_count} measured samples agree with the simulated ones (about 1 in 20 disagrees by chance alone; recovery times, read in whole {} s buckets, get one bucket of slack){}.",
            crate::engine::time::ns_to_secs(simulated.bucket),
            if unjudged > 0 {
                format!("; {unjudged} marked `-` have too few values on a side for any answer below 0.05")
            } else {
                String::new()
            }
        )
    });
    notes.push(format!(
        "what the simulation leaves out, measured: timers {:.3} ms off their deadlines on average (p99 {:.3} ms; raw lateness {:.3} ms, corrected); connection set-up {:.3} ms (p99 {:.3} ms) over {}; {:.1} s of wall time{}.",
        e.timer_lateness_mean_s * 1e3,
        e.timer_lateness_p99_s * 1e3,
        e.timer_lateness_calibration_mean_s * 1e3,
        e.connect_mean_s * 1e3,
        e.connect_p99_s * 1e3,
        connection_words(e),
        e.wall_s,
        cpu_words(e)
    ));
    if let Some(advice) = e.client_delays.advice() {
        notes.push(advice);
    }
    MeasuredComparison { method, judged_by: verdict_heading.to_string(), rows: rows_out, notes }
}

/// For measured runs judged apart from the simulation: their twins, the simulated replications
/// whose arrivals they replay (0 to N−1), judged by the same test against all the replications.
/// Those few replications are a draw of their own; when they too stand apart, so would a
/// perfect emulation of them, and the `NO` says as much about the arrivals replayed as about the
/// emulation. `None` where the test cannot answer.
fn twins_note(what: &str, twins: &[f64], all: &[f64], measured: &[f64], resolution: f64) -> Option<String> {
    let p = crate::metrics::stats::permutation_p(twins, all, resolution, crate::metrics::stats::PERMUTATION_DRAWS)?;
    let mean = |xs: &[f64]| crate::metrics::stats::mean_sd(xs).0;
    let reading = if p < 0.05 {
        format!("they too stand apart from all the replications (p = {p:.3}), so a perfect emulation of these arrivals would be judged `NO` as well: compare the runs with their twins")
    } else {
        format!("they do not stand apart from all the replications (p = {p:.3}): the difference is the emulation's")
    };
    Some(format!(
        "{what}: the {} runs (mean {}) replay replications 0–{}, whose own mean is {} against {} over all {}; {reading}.",
        measured.len(),
        num(mean(measured)),
        twins.len() - 1,
        num(mean(twins)),
        num(mean(all)),
        all.len()
    ))
}

/// "mean ±half-width" of `xs` (95% confidence interval of the mean).
fn mean_cell(metric: Metric, xs: &[f64]) -> String {
    let (mean, sd) = crate::metrics::stats::mean_sd(xs);
    let scale = metric.def().unit.scale();
    let half = crate::metrics::stats::ci_half_width(sd, xs.len(), 0.95) * scale;
    // The half-width to the mean's decimals, in the mean's unit (pp for a share).
    let mean_text = num(mean * scale);
    let decimals = mean_text.split_once('.').map_or(0, |(_, d)| d.len());
    let unit = if scale == 100.0 { " pp" } else { "" };
    format!("{mean_text}{} ±{half:.decimals$}{unit}", if scale == 100.0 { "%" } else { "" })
}

/// `x` of `metric` as the comparison shows it: a share in %, anything else plain.
fn shown(metric: Metric, x: f64) -> String {
    match metric.def().unit {
        crate::metrics::catalogue::Unit::Share => format!("{}%", num(x * 100.0)),
        crate::metrics::catalogue::Unit::Count
        | crate::metrics::catalogue::Unit::Times
        | crate::metrics::catalogue::Unit::Seconds
        | crate::metrics::catalogue::Unit::PerSecond
        | crate::metrics::catalogue::Unit::Flag => num(x),
    }
}

/// A value with 4 significant digits, plain.
fn num(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{x:.digits$}")
}

/// "; CPU 12.3 s (the busiest run used 31% of the cores)", or nothing where not measured.
fn cpu_words(e: &Emulation) -> String {
    match (e.cpu_s, e.cpu_share) {
        (Some(cpu), Some(share)) => {
            format!("; CPU {cpu:.1} s (the busiest run used {:.0}% of the cores)", share * 100.0)
        }
        (Some(_) | None, _) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::{count_once, in_runs, twins_note};

    #[test]
    fn a_warning_of_several_runs_is_counted_once() {
        let mut seen = Vec::new();
        for w in ["slow timers", "few cores", "slow timers", "slow timers"] {
            count_once(&mut seen, w);
        }
        assert_eq!(seen, vec![("slow timers".to_string(), 3), ("few cores".to_string(), 1)]);
        assert_eq!(in_runs(3, 4), " (in 3 of 4 runs)");
        assert_eq!(in_runs(1, 1), "");
    }

    /// 100 replications spread evenly over [0.55, 0.65] (mean 0.60), all but the first three.
    fn replications(first: [f64; 3]) -> Vec<f64> {
        first.into_iter().chain((3..100).map(|i| 0.55 + 0.1 * f64::from(i) / 99.0)).collect()
    }

    #[test]
    fn a_no_is_read_with_the_twins_of_its_runs() {
        let measured = [0.57, 0.79, 0.64];
        // Twins far above the rest: replayed perfectly, they would be judged apart too.
        let high = [0.61, 0.75, 0.63];
        let note = twins_note("`v` peak", &high, &replications(high), &measured, 0.0).expect("an answer");
        assert!(note.contains("replay replications 0–2, whose own mean is 0.6633"), "{note}");
        assert!(note.contains("they too stand apart"), "{note}");
        // Twins like the rest: the runs' difference is their own.
        let usual = [0.60, 0.59, 0.61];
        let note = twins_note("`v` peak", &usual, &replications(usual), &measured, 0.0).expect("an answer");
        assert!(note.contains("they do not stand apart") && note.contains("the emulation's"), "{note}");
        // Too few values for the test to answer: no note.
        assert_eq!(twins_note("`v` peak", &[0.7], &[0.6, 0.61], &measured, 0.0), None);
    }
}
