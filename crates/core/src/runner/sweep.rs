//! Sweeps: the grid of `--vary` values, its deterministic shards, and running the cells.
//!
//! A cell is one point of the cartesian product of the `--vary` lists, in the order given (the
//! first `--vary` changes slowest). Every cell is the scenario with the cell's overrides, runs the
//! same variants, and uses the scenario's master seed: cells differ only in what was varied
//! (common random numbers across cells as well as across variants). A shard K/N takes the cells
//! i with i mod N = K − 1, so shards are balanced across the grid and need no coordination.

use super::compare::{self, Comparison};
use super::progress::Progress;
use super::{simulate, thread_pool, StatRow};
use crate::scenario::overrides::parse_value;
use crate::scenario::{Override, Scenario, Variant};
use rayon::prelude::*;
use std::time::Instant;

/// Most cells a grid may have (a limit on everything: a typo like `=1,…,1e6` should not start
/// a month of computing).
pub const CELLS_MAX: usize = 100_000;

/// Paths a sweep may not vary: the grid must share the scenario's identity and seeds.
const FIXED_PATHS: [(&str, &str); 3] = [
    ("seed", "every cell uses the scenario's master seed (common random numbers); use --seed to change it"),
    ("replications", "every cell runs the same replications; use --replications to change them"),
    ("name", "the scenario's name identifies the sweep; rename the file's `name` instead"),
];

/// One varied parameter: an override path and its values, as typed.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// Override path, e.g. `tenant.main.clients`.
    pub path: String,
    /// The values, parsed like `--set` values (TOML, else a bare string).
    pub values: Vec<toml::Value>,
}

/// The cartesian product of the axes.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    /// Axes in the order given; the first changes slowest.
    pub axes: Vec<Axis>,
}

/// Two values of one axis that mean the same (`10ms` and `10000us`, `2` and `2.0`), if any.
#[allow(clippy::wildcard_enum_match_arm, reason = "a TOML value, not a kind: other shapes compare as their TOML text")]
fn same_values(values: &[toml::Value]) -> Option<(String, String)> {
    let key = |v: &toml::Value| -> String {
        match v {
            toml::Value::Integer(i) => format!("n{}", *i as f64),
            toml::Value::Float(x) => format!("n{x}"),
            toml::Value::String(s) => match crate::scenario::raw::parse_duration(s) {
                Ok(ns) => format!("d{ns}"),
                Err(_) => format!("s{s}"),
            },
            other => format!("v{other}"),
        }
    };
    let mut seen: std::collections::HashMap<String, &toml::Value> = std::collections::HashMap::new();
    for v in values {
        if let Some(first) = seen.insert(key(v), v) {
            return Some((show_value(first), show_value(v)));
        }
    }
    None
}

fn show_value(v: &toml::Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

impl Grid {
    /// Parses `--vary PATH=V1,V2,…` flags. Commas inside brackets, braces or quotes belong to
    /// the value (`--vary 'hop.api.service={dist="constant", mean="2ms"},…'`).
    pub fn parse(vary: &[String]) -> Result<Grid, String> {
        if vary.is_empty() {
            return Err(
                "sweep needs at least one --vary PATH=V1,V2,…, e.g. --vary tenant.main.clients=1000,10000".into()
            );
        }
        let mut axes: Vec<Axis> = Vec::new();
        for text in vary {
            let axis = parse_axis(text)?;
            if axes.iter().any(|a| a.path == axis.path) {
                return Err(format!(
                    "--vary {}: the path is varied twice; list all its values in one --vary",
                    axis.path
                ));
            }
            if let Some((a, b)) = same_values(&axis.values) {
                return Err(format!(
                    "--vary {}: the values `{a}` and `{b}` are the same; list each value once",
                    axis.path
                ));
            }
            axes.push(axis);
        }
        let grid = Grid { axes };
        let cells = grid.axes.iter().try_fold(1usize, |n, a| n.checked_mul(a.values.len()));
        match cells {
            Some(n) if n <= CELLS_MAX => Ok(grid),
            _ => Err(format!("the grid has more than {CELLS_MAX} cells; vary fewer values or split the study")),
        }
    }

    /// Number of cells.
    pub fn cells(&self) -> usize {
        self.axes.iter().map(|a| a.values.len()).product()
    }

    /// The value index of each axis in cell `cell` (mixed radix, last axis fastest).
    pub fn coordinates(&self, mut cell: usize) -> Vec<usize> {
        assert!(cell < self.cells(), "cell {cell} outside a grid of {}", self.cells());
        let mut coordinates = vec![0; self.axes.len()];
        for (a, axis) in self.axes.iter().enumerate().rev() {
            coordinates[a] = cell % axis.values.len();
            cell /= axis.values.len();
        }
        coordinates
    }

    /// The overrides that make cell `cell`, one per axis.
    pub fn overrides(&self, cell: usize) -> Vec<Override> {
        let coordinates = self.coordinates(cell);
        self.axes
            .iter()
            .zip(coordinates)
            .map(|(a, i)| Override { path: a.path.clone(), value: a.values[i].clone() })
            .collect()
    }
}

fn parse_axis(text: &str) -> Result<Axis, String> {
    let example = "write PATH=V1,V2,…, e.g. --vary tenant.main.clients=1000,10000";
    let (path, list) = text.split_once('=').ok_or_else(|| format!("--vary `{text}`: no `=`; {example}"))?;
    let path = path.trim();
    if path.is_empty() || path.split('.').any(str::is_empty) {
        return Err(format!("--vary `{text}`: the path `{path}` has an empty segment; {example}"));
    }
    if let Some((_, why)) = FIXED_PATHS.iter().find(|(p, _)| *p == path) {
        return Err(format!("--vary {path}: cannot be varied: {why}"));
    }
    // `1..4` (plan's range): every whole number from 1 to 4; any other range is refused with
    // how to list its values.
    let expanded: Vec<String>;
    let raw = match range_of(list) {
        Some(Ok((lo, hi))) if hi.saturating_sub(lo) >= 10_000 => {
            return Err(format!("--vary {path}={}: {} values are too many for a sweep; list fewer", list.trim(), hi - lo + 1))
        }
        Some(Ok((lo, hi))) => {
            expanded = (lo..=hi).map(|v| v.to_string()).collect();
            expanded.iter().map(String::as_str).collect()
        }
        Some(Err(())) => {
            return Err(format!(
                "--vary {path}={}: sweep takes a list of values (a range only of whole numbers, `1..4` for 1,2,3,4); list them, e.g. --vary {path}=V1,V2,V3",
                list.trim()
            ))
        }
        None => split_top_level(list),
    };
    if raw.iter().any(|v| v.trim().is_empty()) {
        return Err(format!("--vary `{text}`: an empty value; {example}"));
    }
    let values: Vec<toml::Value> = raw.iter().map(|v| parse_value(v.trim())).collect();
    if let Some(i) = (1..values.len()).find(|&i| values[..i].contains(&values[i])) {
        return Err(format!("--vary {path}: the value `{}` is listed twice", raw[i].trim()));
    }
    Ok(Axis { path: path.to_string(), values })
}

/// `A..B` (or `A..=B`) as a range: `Some(Ok((A, B)))` for whole numbers with A ≤ B, `Some(Err(()))`
/// for any other range (real numbers, durations, A > B), `None` when `list` is no range.
fn range_of(list: &str) -> Option<Result<(i64, i64), ()>> {
    let list = list.trim();
    if list.starts_with(['"', '\'', '[', '{']) || list.contains(',') {
        return None;
    }
    let (a, b) = list.split_once("..")?;
    let b = b.strip_prefix('=').unwrap_or(b);
    match (a.trim().parse::<i64>(), b.trim().parse::<i64>()) {
        (Ok(lo), Ok(hi)) if lo <= hi => Some(Ok((lo, hi))),
        _ => Some(Err(())),
    }
}

/// Splits at commas that are not inside `[]`, `{}` or a quoted string.
fn split_top_level(list: &str) -> Vec<&str> {
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0);
    let mut parts = Vec::new();
    for (i, c) in list.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                parts.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&list[start..]);
    parts
}

/// A deterministic slice of a grid: shard `index` (1-based) of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// K in K/N, 1 ≤ K ≤ N.
    pub index: usize,
    /// N in K/N.
    pub count: usize,
}

impl Shard {
    /// Parses `K/N`.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let fix = "write K/N with 1 ≤ K ≤ N, e.g. --shard 2/3";
        let (k, n) = text.split_once('/').ok_or_else(|| format!("--shard `{text}`: {fix}"))?;
        let (Ok(index), Ok(count)) = (k.trim().parse::<usize>(), n.trim().parse::<usize>()) else {
            return Err(format!("--shard `{text}`: K and N must be whole numbers; {fix}"));
        };
        if index == 0 || count == 0 || index > count || count > CELLS_MAX {
            return Err(format!("--shard `{text}`: {fix} (N at most {CELLS_MAX})"));
        }
        Ok(Shard { index, count })
    }

    /// True when cell `cell` belongs to this shard.
    pub fn contains(&self, cell: usize) -> bool {
        cell % self.count == self.index - 1
    }
}

/// One cell, loaded and ready to run.
#[derive(Clone, Debug)]
pub struct Cell {
    /// Index in the whole grid.
    pub index: usize,
    /// The scenario with the cell's overrides.
    pub scenario: Scenario,
    /// What the cell simulates (the same names in every cell).
    pub variants: Vec<Variant>,
}

/// What one cell produced: system metrics per variant and paired differences vs the baseline.
#[derive(Clone, Debug)]
pub struct CellResult {
    /// Index in the whole grid.
    pub index: usize,
    /// Per variant, in order: name and system metrics.
    pub variants: Vec<(String, StatRow)>,
    /// Differences of the other variants against the baseline.
    pub comparisons: Vec<Comparison>,
    /// Why replications stopped early, if any did (`variant: replication N: reason`).
    pub truncated: Vec<String>,
}

/// The results of a sweep's cells (all of them, or one shard's).
#[derive(Clone, Debug)]
pub struct SweepResult {
    /// Cells in ascending index order.
    pub cells: Vec<CellResult>,
    /// Events processed across all runs.
    pub events: u64,
    /// Wall-clock seconds (not part of the determinism contract).
    pub wall_s: f64,
    /// Threads used.
    pub threads: usize,
}

/// Runs `cells` on `threads` threads (None: one per core); `baseline` indexes the variants.
///
/// Cells run in parallel with each other and so do their runs; results are collected in cell
/// order, so nothing depends on the thread count.
pub fn run_cells(cells: &[Cell], baseline: usize, threads: Option<usize>, progress: bool) -> SweepResult {
    let runs: usize = cells.iter().map(|c| c.variants.len() * c.scenario.replications as usize).sum();
    let pool = thread_pool(threads);
    let progress = Progress::new(progress, runs as u64);
    let started = Instant::now();
    let results: Vec<(CellResult, u64)> = pool.install(|| {
        cells
            .par_iter()
            .map(|cell| {
                let study = simulate(&cell.scenario, &cell.variants, &progress);
                let truncated = study
                    .variants
                    .iter()
                    .flat_map(|v| v.truncated.iter().map(move |t| format!("{}: {t}", v.name)))
                    .collect();
                let result = CellResult {
                    index: cell.index,
                    comparisons: compare::comparisons(&study.variants, baseline),
                    variants: study.variants.into_iter().map(|v| (v.name, v.metrics)).collect(),
                    truncated,
                };
                (result, study.events)
            })
            .collect()
    });
    progress.finish();
    let events = results.iter().map(|(_, e)| e).sum();
    SweepResult {
        cells: results.into_iter().map(|(c, _)| c).collect(),
        events,
        wall_s: started.elapsed().as_secs_f64(),
        threads: pool.current_num_threads(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_number_range_expands_and_other_ranges_say_how_to_list() {
        let axis = parse_axis("hop.api.workers=1..4").expect("a range");
        let want: Vec<toml::Value> = (1..=4).map(toml::Value::Integer).collect();
        assert_eq!(axis.values, want);
        assert_eq!(parse_axis("hop.api.workers=2..=3").expect("a range").values.len(), 2);
        let e = parse_axis("hop.api.service.mean=1ms..5ms").unwrap_err();
        assert!(
            e.contains("sweep takes a list of values") && e.contains("e.g. --vary hop.api.service.mean=V1,V2,V3"),
            "{e}"
        );
        assert!(parse_axis("hop.api.workers=4..1").unwrap_err().contains("sweep takes a list"));
        // A list is still a list.
        assert_eq!(parse_axis("hop.api.workers=1,2").expect("a list").values.len(), 2);
    }

    fn grid(vary: &[&str]) -> Grid {
        Grid::parse(&vary.iter().map(|s| s.to_string()).collect::<Vec<_>>()).expect("valid grid")
    }

    #[test]
    fn first_axis_changes_slowest() {
        let g = grid(&["a.x=1,2,3", "b.y=full,equal"]);
        assert_eq!(g.cells(), 6);
        let cells: Vec<Vec<usize>> = (0..6).map(|c| g.coordinates(c)).collect();
        assert_eq!(cells, vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1], vec![2, 0], vec![2, 1]]);
        let o = g.overrides(3);
        assert_eq!((o[0].path.as_str(), &o[0].value), ("a.x", &toml::Value::Integer(2)));
        assert_eq!(o[1].value, toml::Value::String("equal".into()));
    }

    #[test]
    fn commas_inside_values_do_not_split() {
        let g = grid(&[r#"hop.api.service={dist="constant", mean="1ms"},{dist="exponential", mean="2ms"}"#]);
        assert_eq!(g.cells(), 2);
        assert!(g.axes[0].values[1].get("dist").is_some());
    }

    #[test]
    fn bad_grids_say_what_to_do() {
        let parse = |v: &[&str]| Grid::parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap_err();
        assert!(parse(&[]).contains("at least one --vary"));
        assert!(parse(&["seed=1,2"]).contains("--seed"));
        assert!(parse(&["a.b=1,,2"]).contains("empty value"));
        assert!(parse(&["a.b=1,2,1"]).contains("listed twice"));
        assert!(parse(&["a.b=1", "a.b=2"]).contains("varied twice"));
        assert!(parse(&["a.b"]).contains("no `=`"));
    }

    #[test]
    fn shards_partition_the_grid() {
        let cells = 10;
        let shards: Vec<Shard> = (1..=3).map(|k| Shard::parse(&format!("{k}/3")).expect("valid")).collect();
        let owned = |s: &Shard| (0..cells).filter(|&c| s.contains(c)).collect::<Vec<_>>();
        let mut all: Vec<usize> = shards.iter().flat_map(owned).collect();
        all.sort_unstable();
        assert_eq!(all, (0..cells).collect::<Vec<_>>());
        assert_eq!(owned(&shards[1]), vec![1, 4, 7]);
        assert!(shards[2].contains(5) && !shards[2].contains(6));
        for bad in ["0/3", "4/3", "1/0", "a/b", "3"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }
}
