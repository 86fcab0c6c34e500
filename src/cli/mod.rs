//! The command line: raw flags (clap) become a validated job before any work starts.

// The doc comments of the arguments are clap's help text, read in a terminal: `<scenario name>`
// there is a placeholder, not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

pub(crate) mod table;

use crate::report;
use crate::runner::{memory, run_study, RunOptions};
use crate::scenario::{parse_assignment, Override, Scenario, ScenarioError};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// retrystorm: simulate retry storms and compare retry policies.
#[derive(Debug, Parser)]
#[command(name = "retrystorm", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a scenario (its variants, or the scenario itself) and write results.
    Run(RunArgs),
    /// Run variants on common random numbers: the scenario's own, or one per jitter strategy.
    Compare(CompareArgs),
    /// Check a scenario: errors and invariant warnings; touches nothing.
    Validate {
        /// Scenario file (TOML).
        scenario: String,
        /// Override a field, e.g. --set policy.client.jitter=full (repeatable).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        set: Vec<String>,
    },
    /// Size a retry budget against a provider window and an idempotency TTL.
    Budget(crate::cli::budget_args::BudgetArgs),
    /// Run a grid of parameter values (each cell with CIs); shardable with --shard K/N.
    Sweep(crate::cli::sweep::SweepArgs),
    /// Join sweep shard directories into output identical to the unsharded sweep.
    Merge(crate::cli::sweep::MergeArgs),
    /// Re-render all charts and the report from a finished run's files, without simulating.
    Plot(crate::cli::plot::PlotArgs),
    /// Write a commented scenario from a planner's numbers or your own trace, histogram and config.
    Init(crate::cli::init::InitArgs),
    /// The capacity question: the smallest value of a parameter meeting every requirement.
    Plan(crate::cli::plan::PlanArgs),
    /// Run the scenario in real time on 127.0.0.1: real HTTP servers, real clients and timers.
    Emulate(crate::cli::emulate::EmulateArgs),
    /// How close to the cliff: P(metastable) over two settings and each row's tipping boundary.
    Map(crate::cli::map::MapArgs),
    /// A rare overload's probability (e.g. tipping on its own within an hour) by multilevel splitting.
    Rare(crate::cli::rare::RareArgs),
    /// Print the JSON Schema of the scenario format (for editor completion of scenario files).
    Schema(crate::cli::schema::SchemaArgs),
}

/// Options shared by `run`, `compare` and `sweep`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario file (TOML).
    pub(crate) scenario: String,
    /// Master seed (overrides the file's), 0 to 9223372036854775807.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_seed)]
    pub seed: Option<u64>,
    /// Replications per variant (overrides the file's).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_count::<u32>)]
    pub replications: Option<u32>,
    /// Override a field, e.g. --set hop.api.workers=4 (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
    /// Output directory (default: output/<scenario name>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Worker threads (default: one per core; at most 1024). Results do not depend on it.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_count::<usize>)]
    pub threads: Option<usize>,
    /// No progress bar and no table on stdout.
    #[arg(long)]
    pub quiet: bool,
    /// Wide stdout: table blocks up to 160 columns, prose lines unwrapped (default: every line
    /// fits 100 columns, a laptop's terminal).
    #[arg(long)]
    pub wide: bool,
    /// Write into --out even if it holds files retrystorm did not write (they are left alone).
    #[arg(long)]
    pub force: bool,
    /// Refuse runs whose memory estimate exceeds SIZE (e.g. 8GiB; default: half the machine's).
    #[arg(long, value_name = "SIZE", value_parser = crate::runner::memory::parse_size)]
    pub max_memory: Option<u64>,
}

#[derive(Debug, Args)]
struct CompareArgs {
    #[command(flatten)]
    run: RunArgs,
    /// Jitter strategies to compare (default: the scenario's variants, else
    /// none,exponential,full,equal,decorrelated).
    #[arg(long, value_delimiter = ',')]
    jitter: Vec<String>,
    /// Variant the others are compared with (paired differences; default: the first).
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    #[command(flatten)]
    emulation: crate::cli::emulate::CompareEmulation,
}

/// What went wrong, and which exit code it maps to.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad scenario, argument or output directory: exit code 2.
    #[error("{0}")]
    BadInput(String),
    /// Anything else: exit code 1.
    #[error("{0}")]
    Failure(String),
}

impl From<ScenarioError> for CliError {
    fn from(e: ScenarioError) -> Self {
        CliError::BadInput(e.to_string())
    }
}

/// A result file that could not be written after the inputs were accepted: not bad input, so
/// exit code 1 for every command (an unusable `--out` is refused earlier, with exit code 2).
impl From<report::files::OutputError> for CliError {
    fn from(e: report::files::OutputError) -> Self {
        CliError::Failure(e.to_string())
    }
}

/// Re-rendering: a directory that holds no readable run is the caller's to fix (2); a chart or
/// page that cannot be written is a failure (1).
impl From<report::RenderError> for CliError {
    fn from(e: report::RenderError) -> Self {
        match e {
            report::RenderError::Read(e) => CliError::BadInput(e.to_string()),
            report::RenderError::Write(e) => e.into(),
        }
    }
}

impl CliError {
    /// The process exit code.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::BadInput(_) => 2,
            CliError::Failure(_) => 1,
        }
    }
}

/// Most worker threads `--threads` accepts: more only costs memory (each has a stack).
pub const THREADS_MAX: usize = 1024;

/// `--seed`: an integer the scenario format can also hold (TOML integers are signed 64-bit),
/// refused rather than clamped when out of range.
pub fn parse_seed(text: &str) -> Result<u64, String> {
    let max = i64::MAX as u64;
    match text.trim().parse::<i128>() {
        Ok(n) if n < 0 => Err(format!("is negative; give an integer from 0 to {max}")),
        Ok(n) if n > i128::from(max) => Err(format!("is beyond the range; give an integer from 0 to {max}")),
        Ok(n) => Ok(n as u64),
        Err(_) => Err(format!("is not an integer; give one from 0 to {max}")),
    }
}

/// A non-negative count flag (`--replications`, `--threads`): negative numbers are named as such.
pub fn parse_count<T: TryFrom<u64>>(text: &str) -> Result<T, String> {
    match text.trim().parse::<i128>() {
        Ok(n) if n < 0 => Err("is negative; give a whole number".to_string()),
        Ok(n) => u64::try_from(n)
            .ok()
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| "is too large for this flag; give a smaller whole number".to_string()),
        Err(_) => Err("is not a whole number".to_string()),
    }
}

/// Refuses `--threads` outside 1..=[`THREADS_MAX`] (shared by `run`, `compare` and `sweep`).
pub fn check_threads(threads: Option<usize>) -> Result<(), CliError> {
    match threads {
        Some(0) => Err(CliError::BadInput("--threads 0: give at least 1 thread, or leave it out for one per core".into())),
        Some(n) if n > THREADS_MAX => Err(CliError::BadInput(format!(
            "--threads {n}: at most {THREADS_MAX}; more threads than cores only cost memory (leave it out for one per core)"
        ))),
        _ => Ok(()),
    }
}

/// Default jitter strategies of `compare`.
pub const DEFAULT_JITTERS: [&str; 5] = ["none", "exponential", "full", "equal", "decorrelated"];

/// The message for required arguments left out: each named, with an example command that gives
/// them (clap lists them on lines of their own, which the one-line message would drop).
fn missing_arguments(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let missing: Vec<String> = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::Strings(names)) => names.clone(),
        Some(ContextValue::String(name)) => vec![name.clone()],
        _ => Vec::new(),
    };
    let example = |name: &str| -> Option<&'static str> {
        match name.split([' ', '=']).next().unwrap_or(name) {
            "--vary" => Some("retrystorm plan scenarios/outage-herd.toml --vary hop.api.workers=1..64"),
            "<SCENARIO>" => Some("retrystorm run scenarios/outage-herd.toml"),
            "<FILE>" => Some("retrystorm init checkout.toml --rate 800 --capacity 1000"),
            "--emulate" => Some(
                "retrystorm compare scenarios/outage-herd.toml --emulate --time-scale 2 (--time-scale, --max-seconds, --max-requests and --allow-late apply only with --emulate)",
            ),
            _ => None,
        }
    };
    let examples: Vec<&str> = missing.iter().filter_map(|m| example(m)).collect();
    let names = if missing.is_empty() { "a required argument".to_string() } else { missing.join(", ") };
    match examples.first() {
        Some(eg) => format!("missing {names}; for example: {eg} (see --help)"),
        None => format!("missing {names} (see --help)"),
    }
}

/// A negative number after a flag that takes a value (`--resolution -1`, `--outage -5s`) is that
/// flag's value, not an unknown flag: it is attached (`--resolution=-1`) so that the flag's own
/// check names it, instead of clap's "unexpected argument '-1'". Only `--long` flags of the
/// command given, whose clap definition takes a value, and only a token that is `-` followed by
/// a digit, `.`, `inf` or `nan`.
fn negative_values_attached(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory;
    let command = Cli::command();
    let Some(sub) = args.iter().skip(1).find_map(|a| a.to_str().filter(|a| !a.starts_with('-'))) else { return args };
    let Some(sub) = command.find_subcommand(sub) else { return args };
    let takes_value =
        |long: &str| sub.get_arguments().any(|a| a.get_long() == Some(long) && a.get_action().takes_values());
    let negative = |v: &str| {
        v.strip_prefix('-').is_some_and(|r| {
            r.starts_with(|c: char| c.is_ascii_digit() || c == '.')
                || ["inf", "nan"].iter().any(|w| r.to_ascii_lowercase().starts_with(w))
        })
    };
    let mut out = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].to_str().and_then(|a| a.strip_prefix("--")).filter(|f| !f.contains('=') && takes_value(f));
        let next = args.get(i + 1).and_then(|a| a.to_str()).filter(|v| negative(v));
        if let (Some(flag), Some(value)) = (flag, next) {
            out.push(format!("--{flag}={value}").into());
            i += 2;
        } else {
            out.push(args[i].clone());
            i += 1;
        }
    }
    out
}

/// A value a flag's parser refused: the flag, the value, why, and what the flag takes (its
/// help line, or clap's list of possible values), on one line.
fn invalid_value(e: &clap::Error, subcommand: Option<&str>) -> String {
    use clap::error::{ContextKind, ContextValue};
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(s)) => Some(s.join(", ")),
        _ => None,
    };
    let arg = text(ContextKind::InvalidArg).unwrap_or_else(|| "a flag".into());
    let flag = arg.split([' ', '=']).next().unwrap_or(&arg).to_string();
    let value = text(ContextKind::InvalidValue).unwrap_or_default();
    let first = e.to_string();
    let first = first.lines().next().unwrap_or("").to_string();
    // clap's own reason, after the "for '--flag <X>': " part.
    let why = first.rsplit_once("': ").map_or("is not valid", |(_, w)| w).trim().to_string();
    let fix = match text(ContextKind::ValidValue) {
        Some(valid) => format!("give one of {valid}"),
        None => {
            use clap::CommandFactory;
            let command = Cli::command();
            let long = flag.trim_start_matches('-');
            // The help of the command at hand: two commands may give one flag different meanings
            // (`rare --target` is a level, `compare --target` an endpoint).
            let help = command
                .get_subcommands()
                .filter(|c| subcommand.is_none_or(|s| c.get_name() == s))
                .flat_map(|c| c.get_arguments())
                .find(|a| a.get_long() == Some(long))
                .and_then(|a| a.get_help().map(|h| h.to_string()));
            match help {
                Some(h) => format!("{flag} takes: {}", h.trim_end_matches('.')),
                None => "see --help".into(),
            }
        }
    };
    if why.contains("; ") {
        // The flag's own parser said what is wrong and how to fix it.
        return format!("invalid value '{value}' for '{arg}': {why} (see --help)");
    }
    let why = if value.starts_with('-') && why.contains("is not in 0..") {
        "is negative".to_string()
    } else if why.starts_with("is ") {
        why
    } else {
        format!("is not valid ({why})")
    };
    format!("invalid value '{value}' for '{flag}': {why}; {fix} (see --help)")
}

/// Parses `std::env::args` and runs the command.
pub fn main_with_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> Result<(), CliError> {
    let args = negative_values_attached(args.into_iter().collect());
    // The command given (the first word that is not a flag), for the flag help in messages.
    let subcommand = args.iter().skip(1).find_map(|a| a.to_str().filter(|a| !a.starts_with('-'))).map(str::to_string);
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) if e.kind() == clap::error::ErrorKind::MissingRequiredArgument => {
            return Err(CliError::BadInput(missing_arguments(&e)));
        }
        Err(e)
            if matches!(e.kind(), clap::error::ErrorKind::ValueValidation | clap::error::ErrorKind::InvalidValue) =>
        {
            return Err(CliError::BadInput(invalid_value(&e, subcommand.as_deref())));
        }
        Err(e) if e.use_stderr() => {
            // clap's message starts with its own "error: " and adds usage lines: keep one line.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            // Keep clap's "did you mean" (its `tip:` line), dropping the usage lines.
            let tip =
                text.lines().find_map(|l| l.trim().strip_prefix("tip: ")).map(|t| format!("; {t}")).unwrap_or_default();
            return Err(CliError::BadInput(format!("{first}{tip} (see --help)")));
        }
        Err(e) => {
            print!("{e}");
            return Ok(());
        }
    };
    match cli.command {
        Command::Run(args) => run(args, None, None),
        Command::Compare(args) => {
            let jitters = if args.jitter.is_empty() { None } else { Some(args.jitter) };
            let emulation = args.emulation.options()?;
            run_with(args.run, Some(jitters), args.baseline, emulation)
        }
        Command::Validate { scenario, set } => validate(&scenario, &set),
        Command::Budget(args) => crate::cli::budget_args::run(args),
        Command::Sweep(args) => crate::cli::sweep::run(args),
        Command::Merge(args) => crate::cli::sweep::merge(args),
        Command::Plot(args) => crate::cli::plot::run(args),
        Command::Init(args) => crate::cli::init::run(args),
        Command::Plan(args) => crate::cli::plan::run(args),
        Command::Emulate(args) => crate::cli::emulate::run(args),
        Command::Map(args) => crate::cli::map::run(args),
        Command::Rare(args) => crate::cli::rare::run(args),
        Command::Schema(args) => crate::cli::schema::run(args),
    }
}

/// The `--set`, `--seed` and `--replications` overrides of `args`.
pub fn overrides(args: &RunArgs) -> Result<Vec<Override>, CliError> {
    overrides_of(&args.set, args.seed, args.replications)
}

/// The overrides of `--set` assignments, `--seed` and `--replications`.
pub fn overrides_of(set: &[String], seed: Option<u64>, replications: Option<u32>) -> Result<Vec<Override>, CliError> {
    let mut list: Vec<Override> =
        set.iter().map(|s| parse_assignment(s).map_err(CliError::BadInput)).collect::<Result<_, _>>()?;
    if let Some(seed) = seed {
        // parse_seed refused anything beyond i64::MAX.
        let seed = i64::try_from(seed).map_err(|_| CliError::BadInput(format!("--seed {seed}: beyond the range")))?;
        list.push(Override { path: "seed".into(), value: toml::Value::Integer(seed) });
    }
    if let Some(r) = replications {
        list.push(Override { path: "replications".into(), value: toml::Value::Integer(i64::from(r)) });
    }
    Ok(list)
}

/// `run` (compare = None) and `compare` (Some(jitters), None meaning the defaults); differences
/// are against the variant named `baseline` (default: the first).
fn run(args: RunArgs, compare: Option<Option<Vec<String>>>, baseline: Option<String>) -> Result<(), CliError> {
    run_with(args, compare, baseline, None)
}

/// Where a study's scenario comes from: a file (the command line), or text the caller already
/// holds (the Python package's TOML string or dict), named `name` in messages.
#[derive(Clone, Debug)]
pub enum ScenarioInput {
    /// A scenario file.
    File(String),
    /// Scenario text; relative data paths are read from the current directory.
    Text {
        /// What messages call it (`<string>`).
        name: String,
        /// The TOML.
        text: String,
    },
}

/// The flags of `run` and `compare` that decide what is simulated, as the command line gives
/// them. The CLI and the Python package both turn them into a [`StudyJob`] with [`study_job`]:
/// one definition of every default.
#[derive(Clone, Debug, Default)]
pub struct StudyFlags {
    /// `--set PATH=VALUE`, in order.
    pub set: Vec<String>,
    /// `--seed` (at most `i64::MAX`).
    pub seed: Option<u64>,
    /// `--replications`.
    pub replications: Option<u32>,
    /// `--threads`.
    pub threads: Option<usize>,
    /// `--max-memory` in bytes (None: half the machine's).
    pub max_memory: Option<u64>,
    /// `compare` (Some: its `--jitter` list, empty for the default) or `run` (None).
    pub compare: Option<Vec<String>>,
    /// `compare --baseline`.
    pub baseline: Option<String>,
}

/// A study ready to run: the scenario, the variants the command simulates, the baseline's
/// index, and what the caller should print before it starts.
#[derive(Clone, Debug)]
pub struct StudyJob {
    /// The loaded scenario (overrides applied).
    pub scenario: Scenario,
    /// What runs, in order.
    pub variants: Vec<crate::scenario::Variant>,
    /// Index of the baseline in `variants`.
    pub baseline: usize,
    /// Worker threads (None: one per core).
    pub threads: Option<usize>,
    /// The accepted memory estimate.
    pub estimate: memory::Estimate,
    /// Notes on what the flags did (`--jitter` replacing the scenario's variants).
    pub notes: Vec<String>,
    /// The `--set` overrides as given (recorded in the provenance).
    pub set: Vec<String>,
}

/// Why a study could not start.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The scenario (or an override's value) is invalid.
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// A flag is invalid.
    #[error("{0}")]
    BadInput(String),
    /// The memory estimate exceeds the limit.
    #[error("{0}")]
    Memory(String),
}

impl From<JobError> for CliError {
    fn from(e: JobError) -> Self {
        CliError::BadInput(e.to_string())
    }
}

impl From<CliError> for JobError {
    fn from(e: CliError) -> Self {
        match e {
            CliError::BadInput(m) | CliError::Failure(m) => JobError::BadInput(m),
        }
    }
}

/// `run`'s and `compare`'s flags → the scenario, its variants and the checked resources: every
/// refusal before anything runs.
pub fn study_job(input: &ScenarioInput, flags: &StudyFlags) -> Result<StudyJob, JobError> {
    check_threads(flags.threads)?;
    let overrides = overrides_of(&flags.set, flags.seed, flags.replications)?;
    let scenario = match input {
        ScenarioInput::File(path) => Scenario::load(path, &overrides)?,
        ScenarioInput::Text { name, text } => Scenario::from_source(name, text, &overrides)?,
    };
    let mut notes = Vec::new();
    let variants = match &flags.compare {
        None => scenario.run_variants(),
        Some(jitters) if jitters.is_empty() => cell_variants(&scenario, jitters)?,
        Some(jitters) => {
            check_jitters(jitters)?;
            if !scenario.variants.is_empty() {
                let names: Vec<&str> = scenario.variants.iter().map(|v| v.name.as_str()).collect();
                notes.push(format!(
                    "note: --jitter replaces the scenario's {} variant(s) ({}): each strategy runs on the base scenario without their settings; leave out --jitter to compare them",
                    names.len(),
                    names.join(", ")
                ));
            }
            scenario.jitter_variants(jitters)?
        }
    };
    let baseline = baseline_index(&variants, flags.baseline.as_deref())?;
    let threads = flags.threads.unwrap_or_else(rayon::current_num_threads);
    let estimate = memory::estimate_run(&scenario, &variants, threads);
    memory::check(&estimate, flags.max_memory.unwrap_or_else(default_memory_limit)).map_err(JobError::Memory)?;
    Ok(StudyJob { scenario, variants, baseline, threads: flags.threads, estimate, notes, set: flags.set.clone() })
}

/// Simulates `job` (a progress bar on stderr when `progress`), its provenance naming `command`,
/// differences against its baseline.
pub fn run_job(job: &StudyJob, progress: bool, command: Vec<String>) -> crate::runner::Study {
    let options = RunOptions { threads: job.threads, progress };
    let mut study = run_study(&job.scenario, &job.variants, &options);
    study.provenance.command = command;
    study.provenance.overrides = job.set.clone();
    study.set_baseline(job.baseline);
    study
}

/// [`run`], then (`compare --emulate`) each variant once on real sockets, side by side.
fn run_with(
    args: RunArgs,
    compare: Option<Option<Vec<String>>>,
    baseline: Option<String>,
    emulation: Option<crate::emulate::Options>,
) -> Result<(), CliError> {
    let flags = StudyFlags {
        set: args.set.clone(),
        seed: args.seed,
        replications: args.replications,
        threads: args.threads,
        max_memory: args.max_memory,
        compare: compare.map(Option::unwrap_or_default),
        baseline,
    };
    let job = study_job(&ScenarioInput::File(args.scenario.clone()), &flags)?;
    for note in &job.notes {
        eprint!("{}", table::fit(note, table::WIDTH));
    }
    note_long_run(&job.estimate, &args);
    let (scenario, variants) = (&job.scenario, &job.variants);
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("output").join(&scenario.name));
    // `--emulate`: every refusal (features, request cap, timers) before anything runs or is
    // written, and the measured run's directory beside the simulated one.
    let checked = match &emulation {
        Some(options) => Some(crate::cli::emulate::preflight_all(variants, options)?),
        None => None,
    };
    let claim = claim(&out, args.force)?;
    let emulated = match (&emulation, checked) {
        (Some(options), Some(checked)) => {
            let mut name = out.file_name().map(|n| n.to_os_string()).unwrap_or_else(|| "run".into());
            name.push("-emulated");
            let dir = out.with_file_name(name);
            let dir_claim = crate::cli::claim(&dir, args.force)?;
            Some((options, checked, dir, dir_claim))
        }
        (Some(_) | None, _) => None,
    };
    for w in &scenario.warnings {
        eprintln!("{}", crate::cli::warning_text(w));
    }
    let study = run_job(&job, !args.quiet, result_command(std::env::args()));
    let runs = study.variants.iter().map(|v| (format!("`{}`", v.name), v.truncated.as_slice()));
    for w in truncation_warnings(runs, scenario.replications as usize) {
        eprintln!("{w}");
    }
    // The directory was checked before simulating: a failure now is an I/O failure, not bad input.
    let written = report::write_study(&claim, &study).map_err(|e| CliError::Failure(e.to_string()))?;
    if !args.quiet {
        // `--wide`: table blocks up to 160 columns and prose lines whole.
        let width = if args.wide { table::WIDE } else { table::WIDTH };
        print!("{}", table::study_text(&study, width, &replicas::replicas_text(&study)));
        println!("wrote {} files to {}", written.len(), out.display());
    }
    if let Some((options, checked, dir, dir_claim)) = emulated {
        let text = crate::cli::emulate::side_by_side(scenario, variants, &study, options, &checked, &dir, &dir_claim)?;
        print!("{text}");
    }
    Ok(())
}

/// A warning as printed: `warning: …` wrapped to 100 columns (continuation lines indented).
pub fn warning_text(w: &str) -> String {
    table::fit(&format!("warning: {w}"), table::WIDTH).trim_end().to_string()
}

/// The default limit: half the machine's memory (`MemTotal` of /proc/meminfo), else 4 GiB.
/// One warning per reason runs stopped early ([`crate::runner::truncations`]) instead of one
/// line per run: how many of all the runs, then each group (a variant or a sweep cell's variant)
/// with how many of its `runs_each` runs, wrapped to 100 columns.
pub fn truncation_warnings<'a>(
    groups: impl IntoIterator<Item = (String, &'a [String])>,
    runs_each: usize,
) -> Vec<String> {
    crate::runner::truncations(groups, runs_each)
        .into_iter()
        .map(|t| {
            let header = format!(
                "warning: {} of {} runs stopped early ({}); their results are partial:",
                t.stopped, t.total, t.why
            );
            // The header wraps as any prose line does; the groups follow on lines of their own,
            // each group kept whole.
            let mut text = table::fit(&header, table::WIDTH);
            let mut line = String::from(" ");
            for (i, (g, n)) in t.groups.iter().enumerate() {
                let item = format!(" {g} {n} of {runs_each}{}", if i + 1 < t.groups.len() { "," } else { "" });
                if line.chars().count() + item.chars().count() > table::WIDTH {
                    text.push_str(&line);
                    text.push('\n');
                    line = String::from(" ");
                }
                line.push_str(&item);
            }
            text.push_str(&line);
            text
        })
        .collect()
}

pub fn default_memory_limit() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib.saturating_mul(1024))
    });
    total.map_or(4 << 30, |t| t / 2)
}

/// Refuses a command whose memory estimate exceeds `--max-memory` (bad input: the scenario or
/// flags ask for too much); notes long runs.
pub fn check_memory(estimate: &memory::Estimate, args: &RunArgs) -> Result<(), CliError> {
    let limit = args.max_memory.unwrap_or_else(default_memory_limit);
    memory::check(estimate, limit).map_err(CliError::BadInput)?;
    note_long_run(estimate, args);
    Ok(())
}

/// Notes on stderr a run of over a billion events (unless `--quiet`).
fn note_long_run(estimate: &memory::Estimate, args: &RunArgs) {
    if !args.quiet && estimate.events > 1e9 {
        eprintln!(
            "note: at least {:.1e} events to simulate (more if retries multiply them); this may take a while (Ctrl-C stops it)",
            estimate.events
        );
    }
}

/// Refuses a `--jitter` list naming a strategy twice (two identical variants).
pub fn check_jitters(jitters: &[String]) -> Result<(), CliError> {
    match crate::scenario::names::first_duplicate(jitters.iter().map(String::as_str)) {
        Some(i) => Err(CliError::BadInput(format!(
            "--jitter {}: `{}` is given twice; list each strategy once",
            jitters.join(","),
            jitters[i]
        ))),
        None => Ok(()),
    }
}

/// The variants every cell runs, as `compare` would choose them.
pub(crate) fn cell_variants(
    scenario: &Scenario,
    jitters: &[String],
) -> Result<Vec<crate::scenario::Variant>, ScenarioError> {
    if !jitters.is_empty() {
        scenario.jitter_variants(jitters)
    } else if !scenario.variants.is_empty() {
        Ok(scenario.variants.clone())
    } else {
        scenario.jitter_variants(&DEFAULT_JITTERS.map(String::from))
    }
}

/// Do `a` and `b` name the same existing directory (after resolving links and `..`)?
pub(crate) fn same_dir(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Writes a command's files into the claimed directory with `write` (given the directory; it
/// returns the files it wrote), then the manifest (removing the files of an earlier run that
/// this one did not write); a failure part-way is exit code 1 naming the complete files.
pub(crate) fn write_claimed(
    claim: &report::Claim,
    write: impl FnOnce(&std::path::Path) -> Result<Vec<PathBuf>, report::files::OutputError>,
) -> Result<usize, CliError> {
    let mut written = Vec::new();
    let result = write(claim.dir()).and_then(|files| {
        written = files;
        claim.finish(&written)
    });
    match result {
        Ok(()) => Ok(written.len()),
        Err(e) => Err(CliError::Failure(report::files::partial_failure(&e, &claim.abandon(&written)))),
    }
}

/// Refuses a shard whose content breaks the rules a real run obeys (`checked`, the file's own
/// check) or that does not say which model it came from (written before merges checked it).
pub(crate) fn check_shard(path: &std::path::Path, checked: Result<(), String>, model: &str) -> Result<(), CliError> {
    checked.map_err(|why| {
        CliError::BadInput(format!("`{}`: {why}; this file was edited or damaged: run its shard again", path.display()))
    })?;
    if model.is_empty() {
        return Err(CliError::BadInput(format!(
            "`{}`: no `model` digest (written before merge checked the model): run its shard again",
            path.display()
        )));
    }
    Ok(())
}

/// The refusal of a shard whose model digest differs from the first shard's.
pub(crate) fn model_mismatch(
    path: &std::path::Path,
    model: &str,
    first: &std::path::Path,
    first_model: &str,
) -> String {
    format!(
        "`{}`: model {model} is not `{}`'s {first_model}: the shards ran different models (another scenario file, --set or data file); run every shard from one scenario and one command",
        path.display(),
        first.display()
    )
}

/// Refuses a merge whose output directory is one of the directories it reads (writing there
/// would overwrite a shard's files: data loss).
pub(crate) fn check_merge_out(dirs: &[PathBuf], out: &std::path::Path) -> Result<(), CliError> {
    match dirs.iter().find(|d| same_dir(d, out)) {
        Some(input) => Err(CliError::BadInput(format!(
            "merge --out `{}` is one of the shard directories it reads (`{}`); give a separate output directory",
            out.display(),
            input.display()
        ))),
        None => Ok(()),
    }
}

/// Claims output directory `out` (see [`report::Claim`]): refusals are bad input.
pub fn claim(out: &std::path::Path, force: bool) -> Result<report::Claim, CliError> {
    report::Claim::new(out, force).map_err(|e| match e {
        report::ClaimError::Refused(m) => CliError::BadInput(m),
        report::ClaimError::Io(e) => CliError::BadInput(format!("{e}; choose another --out")),
    })
}

/// The command line without what cannot change results (the binary's path, `--out`,
/// `--threads`, `--quiet`, `--wide`), so that summary.json stays identical whatever those are.
pub fn result_command(args: impl Iterator<Item = String>) -> Vec<String> {
    let mut out = vec!["retrystorm".to_string()];
    let mut args = args.skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" | "--threads" => {
                args.next();
            }
            "--quiet" | "--wide" => {}
            _ if a.starts_with("--out=") || a.starts_with("--threads=") => {}
            _ => out.push(a),
        }
    }
    out
}

/// The index of the variant named `name` (None: the first), or a message listing the names.
pub fn baseline_index(variants: &[crate::scenario::Variant], name: Option<&str>) -> Result<usize, CliError> {
    let Some(name) = name else { return Ok(0) };
    variants.iter().position(|v| v.name == name).ok_or_else(|| {
        let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
        CliError::BadInput(format!("--baseline {name}: no variant has that name; choose one of: {}", names.join(", ")))
    })
}

fn validate(path: &str, set: &[String]) -> Result<(), CliError> {
    let list: Vec<Override> =
        set.iter().map(|s| parse_assignment(s).map_err(CliError::BadInput)).collect::<Result<_, _>>()?;
    let scenario = Scenario::load(path, &list)?;
    for w in &scenario.warnings {
        println!("{}", crate::cli::warning_text(w));
    }
    let s = &scenario.base;
    // Every line within 100 columns, as run's and compare's.
    let ok = format!(
        "ok: `{}`: {}, {}, {}, {}, {}, seed {}",
        scenario.name,
        crate::report::format::count_of(s.tenants.len() as u64, "tenant"),
        crate::report::format::count_of(s.hops.len() as u64, "hop"),
        crate::report::format::count_of(s.faults.len() as u64, "fault"),
        crate::report::format::count_of(scenario.variants.len() as u64, "variant"),
        crate::report::format::count_of(u64::from(scenario.replications), "replication"),
        scenario.seed
    );
    print!("{}", table::fit(&ok, table::WIDTH));
    for line in scenario.policy_report() {
        println!("{line}");
    }
    let (lines, warnings) = load_check::load_check(s);
    for line in lines {
        print!("{}", table::fit(&line, table::WIDTH));
    }
    for w in warnings {
        println!("{}", crate::cli::warning_text(&w));
    }
    Ok(())
}

pub(crate) mod budget_args;
pub(crate) mod differs;
pub(crate) mod emulate;
pub(crate) mod init;
pub(crate) mod load_check;
pub(crate) mod map;
pub(crate) mod plan;
pub(crate) mod plot;
pub(crate) mod rare;
pub(crate) mod replicas;
pub(crate) mod schema;
pub(crate) mod sweep;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_required_argument_is_named_with_an_example() {
        let args = ["retrystorm", "plan", "scenarios/outage-herd.toml"].map(std::ffi::OsString::from);
        let Err(CliError::BadInput(message)) = main_with_args(args) else { panic!("plan without --vary is bad input") };
        assert!(message.contains("--vary") && message.contains("for example: retrystorm plan"), "{message}");
    }

    #[test]
    fn an_emulation_flag_without_emulate_says_what_it_needs() {
        let args =
            ["retrystorm", "compare", "scenarios/outage-herd.toml", "--time-scale", "2"].map(std::ffi::OsString::from);
        let Err(CliError::BadInput(message)) = main_with_args(args) else { panic!("bad input") };
        assert!(message.contains("missing --emulate") && message.contains("apply only with --emulate"), "{message}");
    }

    #[test]
    fn runs_stopped_early_are_one_warning_per_reason() {
        let drain = "drain limit reached at 70.000 s with requests still in flight";
        let a = vec![format!("replication 0: {drain}"), format!("replication 2: {drain}")];
        let b = vec![format!("replication 1: {drain}"), "replication 2: max_events = 10 reached".to_string()];
        let none: Vec<String> = Vec::new();
        let groups = [
            ("`a`".to_string(), a.as_slice()),
            ("`b`".to_string(), b.as_slice()),
            ("`c`".to_string(), none.as_slice()),
        ];
        let warnings = truncation_warnings(groups, 3);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].lines().all(|l| l.chars().count() <= 100), "{}", warnings[0]);
        assert_eq!(warnings[0].lines().last(), Some("  `a` 2 of 3, `b` 1 of 3"));
        assert_eq!(
            warnings[0].replace("\n  ", " "),
            format!("warning: 3 of 9 runs stopped early ({drain}); their results are partial: `a` 2 of 3, `b` 1 of 3")
        );
        assert_eq!(
            warnings[1],
            "warning: 1 of 9 runs stopped early (max_events = 10 reached); their results are partial:\n  `b` 1 of 3"
        );
        // Many groups wrap at 100 columns.
        let names: Vec<(String, Vec<String>)> =
            (0..30).map(|i| (format!("`variant-{i}`"), vec![format!("replication 0: {drain}")])).collect();
        let warnings = truncation_warnings(names.iter().map(|(n, t)| (n.clone(), t.as_slice())), 1);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].lines().count() > 3 && warnings[0].lines().skip(1).all(|l| l.chars().count() <= 100));
        assert!(warnings[0].contains("`variant-29` 1 of 1") && warnings[0].starts_with("warning: 30 of 30 runs"));
    }
}
