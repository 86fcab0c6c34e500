//! `retrystorm map`: the probability of a metastable outcome over two settings, each row's
//! tipping boundary, and `merge` of map shards.

use super::{cell_variants, overrides, table, CliError, RunArgs};
use crate::report::map as map_files;
use crate::runner::map::{run_map, runs_max, Axis, Definition, MapFile, MapJob, Spacing, MAP_VERSION};
use crate::runner::progress::Progress;
use crate::runner::sweep::Shard;
use crate::scenario::raw::RawMap;
use crate::scenario::{Override, Scenario, Variant};
use clap::Args;
use std::path::PathBuf;

/// `--x-spacing`, `--y-spacing`: the command line's names of [`Spacing`] (the runner derives no
/// CLI trait).
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum SpacingFlag {
    /// Evenly spaced values.
    Linear,
    /// Evenly spaced logarithms (both ends positive).
    Log,
}

impl From<SpacingFlag> for Spacing {
    fn from(flag: SpacingFlag) -> Self {
        match flag {
            SpacingFlag::Linear => Spacing::Linear,
            SpacingFlag::Log => Spacing::Log,
        }
    }
}

/// Flags of `map`.
#[derive(Debug, Args)]
pub struct MapArgs {
    #[command(flatten)]
    /// Scenario and run options (`--replications`: the most per cell).
    pub run: RunArgs,
    /// The x axis, bisected for each row's boundary: a `--set` path and its range, e.g.
    /// --x tenant.clients.arrival.rate_per_s=10.0..60.0 (default: the scenario's [map] x).
    #[arg(long, value_name = "PATH=LO..HI")]
    pub x: Option<String>,
    /// The y axis: one row per value, e.g. --y fault.0.to=21s..50s (default: [map] y).
    #[arg(long, value_name = "PATH=LO..HI")]
    pub y: Option<String>,
    /// Points per axis: N for both or NX,NY (default: [map] points, else 10).
    #[arg(long, value_name = "N|NX,NY")]
    pub points: Option<String>,
    /// Spacing of the x axis's points.
    #[arg(long, value_enum)]
    pub x_spacing: Option<SpacingFlag>,
    /// Spacing of the y axis's points.
    #[arg(long, value_enum)]
    pub y_spacing: Option<SpacingFlag>,
    /// How long after the trigger ended a run is judged (default: [map] hold, else 60s).
    #[arg(long, value_name = "DURATION")]
    pub hold: Option<String>,
    /// The span before the judging instant that goodput and backlog are read over (default:
    /// [map] window, else 10s, at most the hold).
    #[arg(long, value_name = "DURATION")]
    pub window: Option<String>,
    /// Goodput below this share of the arriving requests counts as overloaded, 0 < share ≤ 1
    /// (default: [map] goodput_share, else 0.5).
    #[arg(long, allow_negative_numbers = true)]
    pub goodput_share: Option<f64>,
    /// Bisection steps per row, 0 to 20 (default: [map] bisect, else 4).
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse_count::<u32>)]
    pub bisect: Option<u32>,
    /// Run every replication in every cell (default: a cell stops once its 95% interval is on
    /// one side of 50%).
    #[arg(long)]
    pub full: bool,
    /// Run every replication to the scenario's horizon and report how long stuck runs take to
    /// leave their storm (slower: runs are not cut at the judging instant).
    #[arg(long)]
    pub leave: bool,
    /// Jitter strategies each cell runs (default: the scenario's variants, else
    /// none,exponential,full,equal,decorrelated).
    #[arg(long, value_delimiter = ',')]
    pub jitter: Vec<String>,
    /// Run only rows i with i mod N = K − 1, e.g. --shard 2/3; join with `retrystorm merge`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
}

fn bad(e: impl ToString) -> CliError {
    CliError::BadInput(e.to_string())
}

/// Most replications per cell.
const REPLICATIONS_MAX: u32 = 10_000;

fn spacing(flag: Option<SpacingFlag>, file: Option<&str>, field: &str) -> Result<Spacing, CliError> {
    match (flag, file) {
        (Some(s), _) => Ok(s.into()),
        (None, None) => Ok(Spacing::Linear),
        (None, Some("linear")) => Ok(Spacing::Linear),
        (None, Some("log")) => Ok(Spacing::Log),
        (None, Some(other)) => Err(bad(format!("[map] {field} = \"{other}\": give \"linear\" or \"log\""))),
    }
}

fn duration(flag: Option<&str>, file: Option<u64>, name: &str, default_s: f64) -> Result<f64, CliError> {
    match (flag, file) {
        (Some(text), _) => crate::engine::time::parse_duration(text)
            .map(|ns| ns as f64 / 1e9)
            .map_err(|e| bad(format!("--{name} {text}: {e}; give a duration such as 60s"))),
        (None, Some(ns)) => Ok(ns as f64 / 1e9),
        (None, None) => Ok(default_s),
    }
}

/// The map's axes and definition from the flags over the scenario's `[map]`.
fn header_of(args: &MapArgs, scenario: &Scenario, variants: &[Variant]) -> Result<MapFile, CliError> {
    let file = scenario.map.clone().unwrap_or_default();
    let RawMap { x, y, points, x_spacing, y_spacing, hold, window, goodput_share, replications, bisect, leave } = file;
    let example = "e.g. retrystorm map scenarios/metastability-map.toml, or give --x PATH=LO..HI --y PATH=LO..HI";
    let x_text = args
        .x
        .clone()
        .or(x)
        .ok_or_else(|| bad(format!("map needs an x axis: --x PATH=LO..HI or [map] x; {example}")))?;
    let y_text = args
        .y
        .clone()
        .or(y)
        .ok_or_else(|| bad(format!("map needs a y axis: --y PATH=LO..HI or [map] y; {example}")))?;
    let (nx, ny) = match (&args.points, points) {
        (Some(text), _) => {
            let parse = |s: &str| s.trim().parse::<usize>().ok();
            match text.split_once(',') {
                Some((a, b)) => parse(a).zip(parse(b)),
                None => parse(text).map(|n| (n, n)),
            }
            .ok_or_else(|| {
                bad(format!("--points {text}: give N (both axes) or NX,NY, e.g. --points 20 or --points 20,10"))
            })?
        }
        (None, Some(n)) => {
            let n = usize::try_from(n)
                .map_err(|_| bad(format!("[map] points = {n}: give a whole number from 2 to 200")))?;
            (n, n)
        }
        (None, None) => (10, 10),
    };
    let xs = spacing(args.x_spacing, x_spacing.as_deref(), "x_spacing")?;
    let ys = spacing(args.y_spacing, y_spacing.as_deref(), "y_spacing")?;
    let mut x_axis = Axis::parse("--x", &x_text, nx, xs).map_err(bad)?;
    let mut y_axis = Axis::parse("--y", &y_text, ny, ys).map_err(bad)?;
    x_axis.read_in(&scenario.base, &y_axis.path);
    y_axis.read_in(&scenario.base, &x_axis.path);
    if x_axis.path == y_axis.path {
        return Err(bad(format!("--x and --y both vary `{}`; give two different paths", x_axis.path)));
    }
    for path in [&x_axis.path, &y_axis.path] {
        if ["seed", "replications", "name"].contains(&path.as_str()) {
            return Err(bad(format!(
                "`{path}` cannot be a map axis: every cell shares the scenario's seed, replications and name"
            )));
        }
    }
    let hold_s = duration(args.hold.as_deref(), hold.map(|d| d.0), "hold", 60.0)?;
    if hold_s <= 0.0 {
        return Err(bad("--hold 0: give a positive duration, e.g. --hold 60s"));
    }
    let window_s = duration(args.window.as_deref(), window.map(|d| d.0), "window", 10f64.min(hold_s))?;
    if window_s <= 0.0 || window_s > hold_s {
        return Err(bad(format!(
            "--window {window_s} s: give a positive duration at most the hold ({hold_s} s): the window ends at the judging instant and must not reach back into the trigger"
        )));
    }
    let goodput_share = args.goodput_share.or(goodput_share).unwrap_or(0.5);
    if !(goodput_share > 0.0 && goodput_share <= 1.0) {
        return Err(bad(format!("--goodput-share {goodput_share}: give a share above 0 and at most 1, e.g. 0.5")));
    }
    let replications = match (args.run.replications, replications) {
        (Some(r), _) => r,
        (None, Some(r)) => {
            u32::try_from(r).map_err(|_| bad(format!("[map] replications = {r}: give 1 to {REPLICATIONS_MAX}")))?
        }
        (None, None) => 20,
    };
    if replications == 0 || replications > REPLICATIONS_MAX {
        return Err(bad(format!("--replications {replications}: give 1 to {REPLICATIONS_MAX} replications per cell")));
    }
    let bisect_steps = match (args.bisect, bisect) {
        (Some(b), _) => b,
        (None, Some(b)) => u32::try_from(b).map_err(|_| bad(format!("[map] bisect = {b}: give 0 to 20")))?,
        (None, None) => 4,
    };
    if bisect_steps > 20 {
        return Err(bad(format!("--bisect {bisect_steps}: give 0 to 20 steps (each halves the bracket)")));
    }
    Ok(MapFile {
        version: MAP_VERSION,
        scenario: scenario.name.clone(),
        seed: scenario.seed,
        model: crate::scenario::model_digest(&scenario.base, variants),
        shard: None,
        x: x_axis,
        y: y_axis,
        definition: Definition {
            hold_s,
            window_s,
            goodput_share,
            replications,
            full: args.full,
            bisect_steps,
            leave: args.leave || leave.unwrap_or(false),
        },
        variants: variants.iter().map(|v| v.name.clone()).collect(),
        rows: Vec::new(),
    })
}

/// Runs a map (or one shard of its rows) and writes its files.
pub fn run(args: MapArgs) -> Result<(), CliError> {
    super::check_threads(args.run.threads)?;
    super::check_jitters(&args.jitter)?;
    let shard = args.shard.as_deref().map(Shard::parse).transpose().map_err(bad)?;
    let mut base = overrides(&args.run)?;
    // `--replications` is the most per cell, not the scenario's.
    base.retain(|o| o.path != "replications");
    let first = Scenario::load(&args.run.scenario, &base)?;
    let probe = cell_variants(&first, &args.jitter)?;
    let mut header = header_of(&args, &first, &probe)?;
    header.shard = shard.map(|s| format!("{}/{}", s.index, s.count));
    let file = args.run.scenario.clone();
    let (x_axis, y_axis) = (header.x.clone(), header.y.clone());
    let jitters = args.jitter.clone();
    let load = move |x: f64, y: f64| -> Result<Vec<Variant>, String> {
        let mut list: Vec<Override> = base.clone();
        list.push(Override { path: x_axis.path.clone(), value: x_axis.set_value(x) });
        list.push(Override { path: y_axis.path.clone(), value: y_axis.set_value(y) });
        let cell = || format!("the cell {}, {}", x_axis.setting(x), y_axis.setting(y));
        let s = Scenario::load(&file, &list).map_err(|e| format!("{}: {e}", cell()))?;
        cell_variants(&s, &jitters).map_err(|e| format!("{}: {e}", cell()))
    };
    // The memory a map holds: one run per thread (no series are aggregated); the largest of the
    // four corners.
    let threads = args.run.threads.unwrap_or_else(rayon::current_num_threads);
    let (lo_hi_x, lo_hi_y) = ([header.x.lo, header.x.hi], [header.y.lo, header.y.hi]);
    let mut worst: Option<crate::runner::memory::Estimate> = None;
    for x in lo_hi_x {
        for y in lo_hi_y {
            let variants = load(x, y).map_err(bad)?;
            let mut one = first.clone();
            one.replications = 1;
            let e = crate::runner::memory::estimate_run(&one, &variants, threads);
            if worst.as_ref().is_none_or(|w| e.bytes > w.bytes) {
                worst = Some(e);
            }
        }
    }
    if let Some(e) = &worst {
        super::check_memory(e, &args.run)?;
    }
    let rows: Vec<usize> = (0..header.y.points).filter(|&i| shard.is_none_or(|s| s.contains(i))).collect();
    let out = args.run.out.clone().unwrap_or_else(|| {
        let dir = PathBuf::from("output").join(&first.name).join("map");
        shard.map_or(dir.clone(), |s| dir.join(format!("shard-{}-of-{}", s.index, s.count)))
    });
    let claim = super::claim(&out, args.run.force)?;
    for w in &first.warnings {
        eprintln!("{}", crate::cli::warning_text(w));
    }
    let pool = crate::runner::thread_pool(args.run.threads);
    let progress = Progress::new(!args.run.quiet, runs_max(&header, rows.len()));
    let job = MapJob { header: &header, rows, progress: &progress };
    let map = pool.install(|| run_map(&job, &load));
    progress.finish();
    let map = map.map_err(bad)?;
    if let Some(w) = unobservable_warning(&map) {
        eprintln!("{w}");
    }
    let written = super::write_claimed(&claim, |dir| map_files::write_map(dir, &map))?;
    if !args.run.quiet {
        let width = if args.run.wide { table::WIDE } else { table::WIDTH };
        print!("{}", map_files::map_text(&map, &|line| table::fit(line, width)));
        print!("{}", table::fit(&format!("wrote {written} files to {}", out.display()), width));
    }
    Ok(())
}

/// A warning when no run of the map could be judged, with what usually causes it.
fn unobservable_warning(map: &MapFile) -> Option<String> {
    let judged: u32 = map.rows.iter().flat_map(|r| &r.variants).flat_map(|v| &v.cells).map(|c| c.estimate.judged).sum();
    (judged == 0 && !map.rows.is_empty()).then(|| {
        crate::cli::warning_text(&format!(
            "no run could be judged (every cell is not observable): the judging instant, the trigger's end + {} s, must come before the horizon, and a run must not be cut before it (max_events); shorten --hold, lengthen the horizon (--set horizon=…) or raise max_events",
            map.definition.hold_s
        ))
    })
}

/// Joins `map --shard K/N` directories into the whole map's files (each `map.json` read through
/// the input-file limit `max_bytes`).
pub fn merge(dirs: &[PathBuf], out: Option<PathBuf>, force: bool, max_bytes: u64) -> Result<(), CliError> {
    use crate::scenario::input_file;
    let limit = input_file::Limit { bytes: max_bytes, holder: "a map shard's file (1/32 of --max-memory)" };
    let mut shards: Vec<(PathBuf, MapFile)> = Vec::new();
    for dir in dirs {
        let path = dir.join("map.json");
        let text = input_file::read_text(&path, limit).map_err(|e| bad(format!("`{}`: {e}", path.display())))?;
        let map: MapFile =
            serde_json::from_str(&text).map_err(|e| bad(format!("`{}`: not a map file: {e}", path.display())))?;
        super::check_shard(&path, map.check(), &map.model)?;
        shards.push((path, map));
    }
    let (first_path, first) = &shards[0];
    for (path, m) in &shards[1..] {
        if m.model != first.model {
            return Err(bad(super::model_mismatch(path, &m.model, first_path, &first.model)));
        }
    }
    let header = |m: &MapFile| MapFile { shard: None, rows: Vec::new(), ..m.clone() };
    for (path, m) in &shards[1..] {
        if header(m) != header(first) {
            return Err(bad(format!(
                "`{}` is a different map from `{}` (scenario, seed, axes, definition or variants differ)",
                path.display(),
                first_path.display()
            )));
        }
    }
    let counts: Vec<Option<&str>> =
        shards.iter().map(|(_, m)| m.shard.as_deref().and_then(|s| s.split('/').nth(1))).collect();
    if counts.iter().any(|c| c.is_none() || *c != counts[0]) {
        return Err(bad("merge needs shards of one map, each written by `map --shard K/N` with the same N"));
    }
    let mut rows: Vec<_> = shards.iter().flat_map(|(_, m)| m.rows.iter().cloned()).collect();
    rows.sort_by_key(|r| r.y_index);
    for i in 0..first.y.points {
        let n = rows.iter().filter(|r| r.y_index == i).count();
        if n != 1 {
            let what = if n == 0 { "missing: run its shard" } else { "given twice" };
            return Err(bad(format!("row {i} of the map is {what}")));
        }
    }
    let merged = MapFile { rows, ..header(first) };
    let out = out.unwrap_or_else(|| dirs[0].parent().map_or(PathBuf::from("merged"), |p| p.join("merged")));
    super::check_merge_out(dirs, &out)?;
    let claim = super::claim(&out, force)?;
    let written = super::write_claimed(&claim, |dir| map_files::write_map(dir, &merged))?;
    print!("{}", map_files::map_text(&merged, &|line| table::fit(line, table::WIDTH)));
    println!("merged {} map shard(s) into {} ({written} files)", shards.len(), out.display());
    Ok(())
}
