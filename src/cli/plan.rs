//! `retrystorm plan`: the smallest (or largest) value of a parameter that meets every requirement.

use super::{overrides, CliError, RunArgs};
use crate::metrics::objective::Requirement;
use crate::report::plan as plan_files;
use crate::runner::plan::{
    capacity_cannot_help, exhausted_per_run, judge, monotonicity_warnings, search, Across, PlanFile, ProbeMetrics,
    VariantPlan, MAX_ACROSS_VALUES,
};
use crate::runner::plan_range::{Find, Range, ACROSS};
use crate::runner::sweep::Shard;
use crate::runner::{run_study, RunOptions};
use crate::scenario::input_file;
use crate::scenario::{Override, Scenario, ScenarioError, Variant};
use clap::Args;
use std::path::PathBuf;

/// `--find`: the command line's names of [`Find`] (the runner derives no CLI trait).
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum FindFlag {
    /// The smallest value meeting every requirement (larger is better: workers, capacity).
    Smallest,
    /// The largest value still meeting every requirement (larger is worse: clients, arrival rate).
    Largest,
}

impl From<FindFlag> for Find {
    fn from(flag: FindFlag) -> Self {
        match flag {
            FindFlag::Smallest => Find::Smallest,
            FindFlag::Largest => Find::Largest,
        }
    }
}

/// Flags of `plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    /// Scenario and run options.
    pub run: RunArgs,
    /// The parameter and its range: whole numbers (--vary hop.api.workers=1..256), numbers
    /// (--vary tenant.main.arrival.rate_per_s=100.0..2000.0) or durations (--vary
    /// hop.api.service.mean=5ms..50ms).
    #[arg(long, value_name = "PATH=LO..HI")]
    pub vary: String,
    /// `smallest`: the smallest value meeting every requirement (larger is better, e.g. workers);
    /// `largest`: the largest value still meeting them (larger is worse, e.g. clients or a rate).
    #[arg(long, value_enum, default_value_t = FindFlag::Smallest)]
    pub find: FindFlag,
    /// Where the search stops, in the range's unit (e.g. 1, 0.5, 1ms); default 1 for whole
    /// numbers, else the power of ten at or below 1% of the range.
    #[arg(long, value_name = "STEP")]
    pub resolution: Option<String>,
    /// A requirement, e.g. --require 'success_ratio >= 0.999' (repeatable; default: the
    /// scenario's [objective] require).
    #[arg(long, value_name = "METRIC OP NUMBER")]
    pub require: Vec<String>,
    /// Jitter strategies to plan for (default: the scenario's variants, else the scenario).
    #[arg(long, value_delimiter = ',')]
    pub jitter: Vec<String>,
    /// A second setting, swept at every value of its grid while the first (--vary) is searched
    /// at each: the frontier and the cheapest combination, e.g. --across
    /// policy.client.max_attempts=4..14 (at most 64 values).
    #[arg(long, value_name = "PATH=LO..HI")]
    pub across: Option<String>,
    /// The --across grid step, in its unit (default 1 for whole numbers, else the power of ten at
    /// or below 10% of its range).
    #[arg(long, value_name = "STEP", requires = "across")]
    pub across_step: Option<String>,
    /// Plan only the K-th of N slices of the variants (i mod N = K − 1); join with `retrystorm merge`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
}

fn bad(e: impl ToString) -> CliError {
    CliError::BadInput(e.to_string())
}

fn variants_of(scenario: &Scenario, jitters: &[String]) -> Result<Vec<Variant>, ScenarioError> {
    if jitters.is_empty() {
        Ok(scenario.run_variants())
    } else {
        scenario.jitter_variants(jitters)
    }
}

/// Runs `plan`.
pub fn run(args: PlanArgs) -> Result<(), CliError> {
    if args.run.threads == Some(0) {
        return Err(bad("--threads 0: give at least 1 thread, or leave it out for one per core"));
    }
    let find = Find::from(args.find);
    let range = Range::parse(&args.vary, args.resolution.as_deref()).map_err(bad)?;
    let path = range.path.clone();
    let across = args
        .across
        .as_deref()
        .map(|a| Range::parse_flag(ACROSS, a, args.across_step.as_deref()))
        .transpose()
        .map_err(bad)?;
    if let Some(a) = &across {
        if a.path == path {
            return Err(bad(format!("--across {}: the same setting as --vary; give a second setting, e.g. --across policy.client.max_attempts=4..14", a.path)));
        }
        let n = a.steps() as usize + 1;
        if n > MAX_ACROSS_VALUES {
            return Err(bad(format!(
                "--across {}={}..{}: {n} values at step {}, each a full search; give at most {MAX_ACROSS_VALUES} with a wider --across-step",
                a.path,
                a.show(a.lo),
                a.show(a.hi),
                a.show(a.resolution)
            )));
        }
    }
    let at_values: Vec<Option<f64>> = across.as_ref().map_or(vec![None], |a| a.grid().into_iter().map(Some).collect());
    let shard = args.shard.as_deref().map(Shard::parse).transpose().map_err(bad)?;
    let base = overrides(&args.run)?;
    let scenario = Scenario::load(&args.run.scenario, &base)?;
    let requirements: Vec<Requirement> = if args.require.is_empty() {
        scenario.objective.require.clone()
    } else {
        args.require
            .iter()
            .map(|r| Requirement::parse(r).map_err(|e| bad(format!("--require: {e}"))))
            .collect::<Result<_, _>>()?
    };
    if requirements.is_empty() {
        return Err(bad("plan needs at least one requirement: --require 'success_ratio >= 0.999' (or `require` in the scenario's [objective])"));
    }
    let hops: Vec<&str> = scenario.base.hops.iter().map(|h| h.name.as_str()).collect();
    let tenants: Vec<&str> = scenario.base.tenants.iter().map(|t| t.name.as_str()).collect();
    for r in &requirements {
        r.metric.check_names(&hops, &tenants).map_err(|e| bad(format!("--require: {e}")))?;
    }
    let names: Vec<String> = variants_of(&scenario, &args.jitter)?.iter().map(|v| v.name.clone()).collect();
    // A bad value fails before anything runs: both ends of the range (at both ends of the second
    // setting's) must load.
    let load = |value: f64, at: Option<f64>| -> Result<(Scenario, Vec<Variant>), CliError> {
        let mut sets: Vec<Override> = base.clone();
        let mut shown = Vec::new();
        for (r, x) in std::iter::once((&range, value)).chain(across.as_ref().zip(at)) {
            let set = r.toml_value(x);
            #[allow(
                clippy::wildcard_enum_match_arm,
                reason = "a TOML value, not a kind: any other shape is shown as TOML"
            )]
            let text = match &set {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            shown.push(format!("{}={text}", r.path));
            sets.push(Override { path: r.path.clone(), value: set });
        }
        let shown = shown.join(" ");
        let s = Scenario::load(&args.run.scenario, &sets).map_err(|e| bad(format!("{shown}: {e}")))?;
        let variants = variants_of(&s, &args.jitter).map_err(|e| bad(format!("{shown}: {e}")))?;
        Ok((s, variants))
    };
    for at in [at_values[0], at_values[at_values.len() - 1]] {
        load(range.lo, at)?;
        load(range.hi, at)?;
    }
    let out = args.run.out.clone().unwrap_or_else(|| {
        let dir = PathBuf::from("output").join(&scenario.name).join("plan");
        shard.map_or(dir.clone(), |s| dir.join(format!("shard-{}-of-{}", s.index, s.count)))
    });
    let claim = super::claim(&out, args.run.force)?;
    for w in &scenario.warnings {
        eprintln!("{}", crate::cli::warning_text(w));
    }
    let options = RunOptions { threads: args.run.threads, progress: false };
    let mut plans = Vec::new();
    for (index, name) in names.iter().enumerate() {
        if shard.is_some_and(|s| !s.contains(index)) {
            continue;
        }
        for &at in &at_values {
            // Requests that ran out of attempts, run by run, at each value probed.
            let mut exhausted: Vec<(f64, Vec<Option<f64>>)> = Vec::new();
            let mut probe = |value: f64| -> Result<_, CliError> {
                let (s, variants) = load(value, at)?;
                let variant = variants.into_iter().nth(index).expect("every value loads the same variants");
                let study = run_study(&s, std::slice::from_ref(&variant), &options);
                let v = &study.variants[0];
                if !args.run.quiet {
                    let second =
                        across.as_ref().zip(at).map_or(String::new(), |(a, x)| format!(", {}={}", a.path, a.show(x)));
                    eprintln!("plan: {name} at {path}={}{second}", range.show(value));
                }
                exhausted.push((value, exhausted_per_run(&v.metrics)));
                let metrics =
                    ProbeMetrics { global: v.metrics.clone(), hops: v.hops.clone(), tenants: v.tenants.clone() };
                Ok(judge(value, &metrics, &requirements))
            };
            let (chosen, probes) = search(&range, find, &mut probe)?;
            let mut warnings = monotonicity_warnings(&probes, &requirements, &range, find);
            // Nothing found for the smallest: is it capacity's to fix? Requests that ran out of
            // attempts during a fault, as many at the bottom of the range as at the top, are not.
            let top = probes.last().filter(|_| chosen.is_none() && find == Find::Smallest).cloned();
            if let (Some(top), Some(fault)) = (top, fault_words(&scenario)) {
                // The bottom's probe is not one of the search's (a merge re-checks those): it is
                // run for this comparison only.
                let bottom = match probes.first().filter(|p| p.value < top.value) {
                    Some(p) => p.clone(),
                    None => probe(range.lo)?,
                };
                let of = |value: f64| exhausted.iter().find(|(v, _)| *v == value).map(|(_, e)| e.clone());
                let missed = crate::report::plan::missed_requirements(&top);
                if let Some(w) = capacity_cannot_help(
                    &of(top.value).unwrap_or_default(),
                    &of(bottom.value).unwrap_or_default(),
                    &missed,
                    Some(&fault),
                ) {
                    warnings.push(w);
                }
            }
            plans.push(VariantPlan { variant: name.clone(), index, chosen, probes, warnings, at });
        }
    }
    let plan = PlanFile {
        scenario: scenario.name.clone(),
        seed: scenario.seed,
        replications: scenario.replications,
        model: crate::scenario::model_digest(&scenario.base, &variants_of(&scenario, &args.jitter)?),
        version: crate::report::summary::VERSION.to_string(),
        parameter: path.clone(),
        kind: range.kind,
        find,
        lo: range.lo,
        hi: range.hi,
        resolution: range.resolution,
        across: across.as_ref().map(Across::of),
        requirements: requirements.iter().map(ToString::to_string).collect(),
        variants: names,
        shard: shard.map(|s| format!("{}/{}", s.index, s.count)),
        plans,
    };
    let written = super::write_claimed(&claim, |dir| plan_files::write_plan(dir, &plan))?;
    if !args.run.quiet {
        let width = if args.run.wide { super::table::WIDE } else { super::table::WIDTH };
        for line in plan_files::answer_lines(&plan) {
            print!("{}", super::table::fit(&line, width));
        }
        println!("wrote {written} files to {}", out.display());
    }
    Ok(())
}

/// The scenario's faults in words (`outage on api 0s–10s`), `None` without any.
fn fault_words(scenario: &Scenario) -> Option<String> {
    let spec = &scenario.base;
    let show = crate::engine::time::duration_words;
    let words: Vec<String> = spec
        .faults
        .iter()
        .map(|f| format!("{} on {} {}–{}", f.kind.name(), spec.hops[f.hop].name, show(f.from), show(f.to)))
        .collect();
    (!words.is_empty()).then(|| words.join(", "))
}

/// Joins `plan --shard K/N` directories into the unsharded plan's files (byte-identical); each
/// `plan.json` is read through [`input_file`] (a regular file of at most `max_bytes`).
pub fn merge(dirs: &[PathBuf], out: Option<PathBuf>, force: bool, max_bytes: u64) -> Result<(), CliError> {
    let mut shards: Vec<(PathBuf, PlanFile)> = Vec::new();
    let limit = input_file::Limit { bytes: max_bytes, holder: "a plan shard's file (1/32 of --max-memory)" };
    for dir in dirs {
        let path = dir.join("plan.json");
        let text = input_file::read_text(&path, limit).map_err(|e| {
            let hint = if matches!(e, input_file::InputError::TooBig { .. }) {
                "; raise --max-memory if the machine can hold it"
            } else if e.is_wrong_file() {
                "; merge takes directories written by `retrystorm plan --shard K/N`"
            } else {
                ""
            };
            bad(format!("`{}`: {e}{hint}", path.display()))
        })?;
        let plan: PlanFile =
            serde_json::from_str(&text).map_err(|e| bad(format!("`{}`: not a plan file: {e}", path.display())))?;
        super::check_shard(&path, plan.check(), &plan.model)?;
        shards.push((path, plan));
    }
    let (first_path, first) = &shards[0];
    for (path, p) in &shards[1..] {
        if p.model != first.model {
            return Err(bad(super::model_mismatch(path, &p.model, first_path, &first.model)));
        }
    }
    let header = |p: &PlanFile| PlanFile { shard: None, plans: Vec::new(), ..p.clone() };
    let counts: Vec<Option<&str>> =
        shards.iter().map(|(_, p)| p.shard.as_deref().and_then(|s| s.split('/').nth(1))).collect();
    for (path, p) in &shards[1..] {
        if header(p) != header(first) {
            return Err(bad(format!(
                "`{}` is a different plan from `{}` (scenario, seed, replications, version, parameter, range, resolution, direction, requirements or variants differ)",
                path.display(),
                first_path.display()
            )));
        }
    }
    if counts.iter().any(|c| c.is_none() || *c != counts[0]) {
        return Err(bad("merge needs shards of one plan, each written by `plan --shard K/N` with the same N"));
    }
    let mut plans: Vec<_> = shards.iter().flat_map(|(_, p)| p.plans.iter().cloned()).collect();
    plans.sort_by(|a, b| a.index.cmp(&b.index).then(a.at.unwrap_or(0.0).total_cmp(&b.at.unwrap_or(0.0))));
    // One search per variant, or per variant and value of the second setting.
    let ats: Vec<Option<f64>> =
        first.across.as_ref().map_or(vec![None], |a| a.range().grid().into_iter().map(Some).collect());
    for (i, name) in first.variants.iter().enumerate() {
        let mine: Vec<Option<f64>> = plans.iter().filter(|p| p.index == i).map(|p| p.at).collect();
        if mine != ats {
            let what = if mine.is_empty() {
                "missing: run its shard".to_string()
            } else if mine.len() > ats.len() {
                "given twice".to_string()
            } else {
                format!("searched at {} of the {} values of the second setting", mine.len(), ats.len())
            };
            return Err(bad(format!("variant {i} ({name}) is {what}")));
        }
    }
    let merged = PlanFile { plans, ..header(first) };
    let out = out.unwrap_or_else(|| dirs[0].parent().map_or(PathBuf::from("merged"), |p| p.join("merged")));
    super::check_merge_out(dirs, &out)?;
    let claim = super::claim(&out, force)?;
    let written = super::write_claimed(&claim, |dir| plan_files::write_plan(dir, &merged))?;
    for line in plan_files::answer_lines(&merged) {
        print!("{}", super::table::fit(&line, super::table::WIDTH));
    }
    println!("merged {} plan shard(s) into {} ({written} files)", shards.len(), out.display());
    Ok(())
}
