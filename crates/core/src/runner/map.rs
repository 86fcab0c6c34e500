//! `retrystorm map`: the probability of a metastable outcome over two settings, and per row the
//! tipping boundary found by bisection (docs/MODEL.md, "Metastability maps").
//!
//! A cell is the scenario with the cell's two `--set` values; every cell and every bisection probe
//! uses replications 0, 1, … of the scenario's master seed (common random numbers: cells differ
//! only in what was varied). A replication runs only until its outcome is decided (the judging
//! instant `trigger_end + hold`, [`crate::metrics::metastable`]); a cell stops adding replications
//! once its Wilson interval is on one side of ½ (unless `full`). A shard K/N takes the rows
//! i with i mod N = K − 1: each row's bisection needs its own cells only.

use super::plan_range::{Kind, Range};
use super::progress::Progress;
use crate::metrics::catalogue::Metric;
use crate::metrics::metastable::{Judge, Judged};
use crate::metrics::stats::wilson;
use crate::metrics::summary::scalars;
use crate::model::{sim, SimSpec};
use crate::scenario::Variant;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Version of `map.json`'s layout.
pub const MAP_VERSION: u32 = 1;
/// The level of every interval of the map.
pub const LEVEL: f64 = 0.95;
/// Judged replications a cell runs at least before it may stop early.
pub const MIN_REPLICATIONS: u32 = 5;
/// Most points per axis.
pub const POINTS_MAX: usize = 200;

/// How an axis spaces its points.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Spacing {
    /// Evenly spaced values.
    #[default]
    Linear,
    /// Evenly spaced logarithms (both ends positive).
    Log,
}

impl Spacing {
    /// `linear` or `log`.
    pub fn word(self) -> &'static str {
        match self {
            Spacing::Linear => "linear",
            Spacing::Log => "log",
        }
    }
}

/// One axis of the map: a `--set` path, its range, its points and their spacing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    /// The `--set` path.
    pub path: String,
    /// What its values are.
    pub kind: Kind,
    /// Lowest value (seconds for durations).
    pub lo: f64,
    /// Highest value.
    pub hi: f64,
    /// Points on the axis, `lo` and `hi` included.
    pub points: usize,
    /// Their spacing.
    pub spacing: Spacing,
    /// How reports read it in the scenario's terms (a fault's end as its length); absent: the
    /// path and its values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reading: Option<Reading>,
}

/// An axis read in the scenario's terms: values shown less `offset`, under `label`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reading {
    /// What the shown values are, e.g. `length of the slow fault (fault.0.to − 20 s)`.
    pub label: String,
    /// Subtracted from a value to show it (seconds for durations).
    pub offset: f64,
}

impl Axis {
    /// Parses `PATH=LO..HI` (`flag` names the flag or field in messages) with its points and
    /// spacing.
    pub fn parse(flag: &str, text: &str, points: usize, spacing: Spacing) -> Result<Axis, String> {
        let range = Range::parse(text, None).map_err(|e| e.replace("--vary", flag))?;
        if range.lo >= range.hi {
            return Err(format!("{flag} `{text}`: LO must be below HI, e.g. {}=10..60", range.path));
        }
        if !(2..=POINTS_MAX).contains(&points) {
            return Err(format!("--points {points}: give 2 to {POINTS_MAX} points per axis"));
        }
        if spacing == Spacing::Log && range.lo <= 0.0 {
            return Err(format!("{flag} `{text}`: a log axis needs LO above 0; give a positive LO or a linear axis"));
        }
        let axis =
            Axis { path: range.path, kind: range.kind, lo: range.lo, hi: range.hi, points, spacing, reading: None };
        if axis.kind == Kind::Integer {
            let values = axis.values();
            if values.windows(2).any(|w| w[0] == w[1]) {
                let span = (axis.hi - axis.lo) as usize + 1;
                return Err(format!(
                    "{flag} `{text}`: {points} points of whole numbers repeat values; give at most {span} points or a wider range"
                ));
            }
        }
        Ok(axis)
    }

    fn range(&self) -> Range {
        Range { path: self.path.clone(), kind: self.kind, lo: self.lo, hi: self.hi, resolution: self.resolution() }
    }

    /// Checks an axis read from a file as [`Axis::parse`] checks one given: its range, its
    /// points and its spacing.
    fn check(&self) -> Result<(), String> {
        let text = format!("{}={}..{}", self.path, self.range().show(self.lo), self.range().show(self.hi));
        if !(self.lo.is_finite() && self.hi.is_finite() && self.lo < self.hi) {
            return Err(format!("`{text}`: lo {} must be below hi {}", self.lo, self.hi));
        }
        if self.lo.abs().max(self.hi.abs()) > super::plan_range::VALUE_MAX {
            return Err(format!("`{text}`: an end beyond ±{:e}", super::plan_range::VALUE_MAX));
        }
        if !(2..=POINTS_MAX).contains(&self.points) {
            return Err(format!("points {}: map runs 2 to {POINTS_MAX} points per axis", self.points));
        }
        if self.spacing == Spacing::Log && self.lo <= 0.0 {
            return Err(format!("spacing log with lo {}: a log axis needs lo above 0", self.lo));
        }
        if self.kind == Kind::Integer && self.values().windows(2).any(|w| w[0] == w[1]) {
            return Err(format!("points {}: whole numbers in {}..{} repeat values", self.points, self.lo, self.hi));
        }
        Ok(())
    }

    /// The finest step the axis's values are written at.
    fn resolution(&self) -> f64 {
        match self.kind {
            Kind::Integer => 1.0,
            Kind::Real | Kind::Duration => 10f64.powf(((self.hi - self.lo) * 1e-3).log10().floor()),
        }
    }

    /// The value at position `t` in [0, 1] of the axis's scale, snapped to its kind.
    pub fn at(&self, t: f64) -> f64 {
        let x = match self.spacing {
            Spacing::Linear => self.lo + t * (self.hi - self.lo),
            Spacing::Log => (self.lo.ln() + t * (self.hi.ln() - self.lo.ln())).exp(),
        };
        self.snap(x)
    }

    /// The position of `x` on the axis's scale (0 at `lo`, 1 at `hi`).
    pub fn position(&self, x: f64) -> f64 {
        match self.spacing {
            Spacing::Linear => (x - self.lo) / (self.hi - self.lo),
            Spacing::Log => (x.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln()),
        }
    }

    fn snap(&self, x: f64) -> f64 {
        // At the axis's resolution (a thousandth of its span, as a power of ten), written
        // without binary noise: `15.56`, `25.33 s`, not `15.5555555556`.
        let x = match self.kind {
            Kind::Integer => x.round(),
            Kind::Real | Kind::Duration => {
                let res = self.resolution();
                let decimals = (-res.log10()).ceil().max(0.0) as usize;
                format!("{:.decimals$}", (x / res).round() * res).parse().expect("a formatted float parses")
            }
        };
        x.clamp(self.lo, self.hi)
    }

    /// The grid's values, `lo` first.
    pub fn values(&self) -> Vec<f64> {
        (0..self.points).map(|i| self.at(i as f64 / (self.points - 1) as f64)).collect()
    }

    /// The `--set` override of value `x`.
    pub fn set_value(&self, x: f64) -> toml::Value {
        self.range().toml_value(x)
    }

    /// `path = value`, as `run --set path=value` takes it (the value in TOML).
    pub fn setting(&self, x: f64) -> String {
        let value = self.set_value(x);
        let text = value.as_str().map_or_else(|| value.to_string(), str::to_string);
        format!("{} = {text}", self.path)
    }

    /// `x` in the axis's unit, for people (in the scenario's terms when the axis has a reading).
    pub fn show(&self, x: f64) -> String {
        self.range().show(self.shown(x))
    }

    /// `x` as reports show it: less the reading's offset.
    pub fn shown(&self, x: f64) -> f64 {
        x - self.reading.as_ref().map_or(0.0, |r| r.offset)
    }

    /// What the axis is, for a chart's axis or a table's heading: the reading's label with the
    /// path it comes from, else the path.
    pub fn describe(&self) -> String {
        self.reading.as_ref().map_or_else(|| self.path.clone(), |r| r.label.clone())
    }

    /// The axis in the scenario's terms: `fault.N.to` (with the fault's start fixed, not on
    /// `other`, the map's other axis) reads as the fault's length.
    pub fn read_in(&mut self, spec: &crate::model::SimSpec, other: &str) {
        let Some(n) = self.path.strip_prefix("fault.").and_then(|r| r.strip_suffix(".to")) else { return };
        let Some(fault) = n.parse::<usize>().ok().and_then(|k| spec.faults.get(k)) else { return };
        if self.kind != Kind::Duration || other == format!("fault.{n}.from") {
            return;
        }
        let from = crate::engine::time::ns_to_secs(fault.from);
        self.reading = Some(Reading {
            label: format!(
                "length of the {} fault (fault.{n}.to − {})",
                fault.kind.name(),
                crate::engine::time::duration_words(fault.from)
            ),
            offset: from,
        });
    }
}

/// What the map counts and how hard it tries.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Definition {
    /// Seconds after the trigger's end a run is judged at.
    pub hold_s: f64,
    /// Seconds before that instant the rates are summed over.
    pub window_s: f64,
    /// Goodput below this share of the arriving requests is overloaded.
    pub goodput_share: f64,
    /// Most replications per cell and per bisection probe.
    pub replications: u32,
    /// Every cell runs all its replications (no early stop).
    pub full: bool,
    /// Bisection steps per row.
    pub bisect_steps: u32,
    /// Runs go on to the scenario's horizon to measure how long stuck ones take to leave their
    /// storm (otherwise each stops at its judging instant).
    pub leave: bool,
}

impl Definition {
    /// The judge the definition describes.
    pub fn judge(&self) -> Judge {
        let ns = |s: f64| (s * 1e9).round() as u64;
        Judge { hold: ns(self.hold_s), window: ns(self.window_s), goodput_share: self.goodput_share }
    }
}

/// The estimates of one cell (or bisection probe) of one variant.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Estimate {
    /// Replications run.
    pub runs: u32,
    /// Of which judged (stable or metastable).
    pub judged: u32,
    /// Of which metastable.
    pub metastable: u32,
    /// Replications that could not be judged (no trigger, arrivals or the run ended before the
    /// judging instant): never counted either way.
    pub not_observable: u32,
    /// metastable ÷ judged (None when nothing was judged).
    pub p: Option<f64>,
    /// Wilson's 95% interval of `p`.
    pub p_ci95: Option<[f64; 2]>,
    /// Median recovery time (s) among the runs that recovered.
    pub recovery_median_s: Option<f64>,
    /// Median peak after the trigger ÷ capacity over the judged runs.
    pub peak_after_over_capacity_median: Option<f64>,
    /// With `leave`: of the metastable runs, those that left their storm before the horizon.
    pub left: Option<u32>,
    /// With `leave`: each metastable run's time to leave its storm (s from the trigger's end), in
    /// replication order; null for a run still stuck at the horizon (censored there).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leave_s: Vec<Option<f64>>,
    /// With `leave`: the median time (s from the trigger's end) metastable runs took to leave,
    /// counting those still stuck at the horizon as later than any (censored); None when half or
    /// more were still stuck.
    pub leave_median_s: Option<f64>,
}

/// Which side of ½ an estimate's interval is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The interval is below ½: the configuration does not tip (most runs stay stable).
    Stable,
    /// The interval is above ½: it tips.
    Tips,
    /// The interval holds ½, or nothing was judged.
    Undecided,
}

impl Estimate {
    /// The side of ½ the interval is on.
    pub fn side(&self) -> Side {
        match self.p_ci95 {
            Some([_, hi]) if hi < 0.5 => Side::Stable,
            Some([lo, _]) if lo > 0.5 => Side::Tips,
            Some(_) | None => Side::Undecided,
        }
    }

    /// Does the point estimate say it tips (p ≥ ½)?
    pub fn tips(&self) -> Option<bool> {
        self.p.map(|p| p >= 0.5)
    }
}

/// One cell of one variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapCell {
    /// Index on the x axis.
    pub x_index: usize,
    /// The x value (seconds for durations).
    pub x: f64,
    /// The two settings, `path = value`, as `run --set` takes them.
    pub settings: [String; 2],
    /// The estimates.
    #[serde(flatten)]
    pub estimate: Estimate,
}

/// A bisection probe between two cells.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// The x value probed.
    pub x: f64,
    /// The estimates there.
    #[serde(flatten)]
    pub estimate: Estimate,
}

/// Where a row's boundary is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundaryStatus {
    /// Between two probed values: `x` and `interval` say where.
    Found,
    /// No cell of the row tips: the boundary is beyond the axis's end that tips least.
    NoneTip,
    /// Every cell tips.
    AllTip,
    /// The row tips on and off along the axis (not monotone), or too little was judged.
    Unclear,
}

/// A row's tipping boundary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Boundary {
    /// Where it is.
    pub status: BoundaryStatus,
    /// The boundary: the middle of the last bisection bracket.
    pub x: Option<f64>,
    /// Between the nearest values decided on each side (Wilson interval beyond ½), or the
    /// bracket's ends where the probes next to it were undecided.
    pub interval: Option<[f64; 2]>,
    /// True when larger x tips (the usual direction for load); false when smaller x tips.
    pub tips_above: Option<bool>,
    /// The bisection's probes, in order.
    pub probes: Vec<Probe>,
}

/// One row (one y value) of one variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantRow {
    /// The variant.
    pub variant: String,
    /// Cells, x ascending.
    pub cells: Vec<MapCell>,
    /// The tipping boundary along x.
    pub boundary: Boundary,
}

/// One row of the map: a y value and every variant's cells there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapRow {
    /// Index on the y axis.
    pub y_index: usize,
    /// The y value.
    pub y: f64,
    /// Per variant, in the map's variant order.
    pub variants: Vec<VariantRow>,
}

/// `map.json`: everything a map found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapFile {
    /// Layout version.
    pub version: u32,
    /// Scenario name.
    pub scenario: String,
    /// Master seed.
    pub seed: u64,
    /// The model's digest ([`crate::scenario::model_digest`] of the scenario as run; empty in
    /// a file written before it was recorded, which `merge` refuses).
    #[serde(default)]
    pub model: String,
    /// `K/N` for a shard; None for a whole map.
    pub shard: Option<String>,
    /// The x axis (the one bisected).
    pub x: Axis,
    /// The y axis (one row per value).
    pub y: Axis,
    /// What is counted.
    pub definition: Definition,
    /// Variant names, in order.
    pub variants: Vec<String>,
    /// Rows, y ascending (a shard's rows only).
    pub rows: Vec<MapRow>,
}

impl Estimate {
    /// Checks the counts and the estimate against the rules a run obeys: judged and not
    /// observable runs make up the runs, at most `replications`; metastable ≤ judged; p is
    /// metastable ÷ judged (None with nothing judged) and its interval Wilson's; left ≤ metastable.
    fn check(&self, replications: u32) -> Result<(), String> {
        let e = self;
        if e.runs > replications || u64::from(e.judged) + u64::from(e.not_observable) != u64::from(e.runs) {
            return Err(format!(
                "runs {} is not judged {} + not_observable {} (at most the {replications} replications)",
                e.runs, e.judged, e.not_observable
            ));
        }
        if e.metastable > e.judged {
            return Err(format!("metastable {} is more than judged {}", e.metastable, e.judged));
        }
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9;
        let p = (e.judged > 0).then(|| f64::from(e.metastable) / f64::from(e.judged));
        let ci = (e.judged > 0).then(|| wilson(e.metastable as usize, e.judged as usize, LEVEL));
        let same_p = match (e.p, p) {
            (Some(a), Some(b)) => close(a, b),
            (None, None) => true,
            (Some(_) | None, _) => false,
        };
        if !same_p {
            let shown = e.p.map_or("null".to_string(), |p| p.to_string());
            return Err(format!("p {shown} is not metastable/judged = {}/{}", e.metastable, e.judged));
        }
        let same_ci = match (e.p_ci95, ci) {
            (Some([a, b]), Some([c, d])) => close(a, c) && close(b, d),
            (None, None) => true,
            (Some(_) | None, _) => false,
        };
        if !same_ci {
            return Err(format!("p_ci95 is not Wilson's 95% interval of {}/{}", e.metastable, e.judged));
        }
        if e.left.is_some_and(|l| l > e.metastable) {
            return Err(format!("left {:?} is more than metastable {}", e.left, e.metastable));
        }
        Ok(())
    }
}

impl MapFile {
    /// Checks a map file against what `map` writes, as `merge` requires of a shard: the layout
    /// version, axes and definition `map` accepts, the shard label, and every row and cell: each
    /// row's index within the y axis and in this shard's share (`i mod N = K − 1`), given once,
    /// at its y value; each variant's cells at the x axis's points in order; every estimate
    /// consistent (`Estimate::check`). The error names the field.
    pub fn check(&self) -> Result<(), String> {
        if self.version != MAP_VERSION {
            return Err(format!("version {}: this retrystorm reads map files of version {MAP_VERSION}", self.version));
        }
        for (name, axis) in [("x", &self.x), ("y", &self.y)] {
            axis.check().map_err(|e| format!("axis {name}: {e}"))?;
        }
        let d = &self.definition;
        if !(d.hold_s > 0.0 && d.hold_s.is_finite() && d.window_s > 0.0 && d.window_s <= d.hold_s) {
            return Err(format!(
                "definition: hold_s {} and window_s {} are not 0 < window ≤ hold",
                d.hold_s, d.window_s
            ));
        }
        if !(d.goodput_share > 0.0 && d.goodput_share <= 1.0) {
            return Err(format!("definition: goodput_share {} is not in (0, 1]", d.goodput_share));
        }
        if d.replications == 0 || d.replications > 10_000 || d.bisect_steps > 20 {
            return Err(format!(
                "definition: replications {} or bisect_steps {} is beyond what map runs (1 to 10000, 0 to 20)",
                d.replications, d.bisect_steps
            ));
        }
        if self.variants.is_empty() {
            return Err("variants: none".into());
        }
        let shard = match &self.shard {
            Some(label) => Some(super::sweep::Shard::parse(label).map_err(|e| format!("shard \"{label}\": {e}"))?),
            None => None,
        };
        let (xs, ys) = (self.x.values(), self.y.values());
        let mut seen = vec![false; self.y.points];
        for row in &self.rows {
            let i = row.y_index;
            let at = format!("row y_index {i}");
            if i >= self.y.points {
                return Err(format!("{at}: beyond the y axis's {} points", self.y.points));
            }
            if std::mem::replace(&mut seen[i], true) {
                return Err(format!("{at}: given twice"));
            }
            if let Some(s) = shard.filter(|s| !s.contains(i)) {
                return Err(format!(
                    "{at}: not a row of shard {}/{} (rows i with i mod {} = {})",
                    s.index,
                    s.count,
                    s.count,
                    s.index - 1
                ));
            }
            if row.y != ys[i] {
                return Err(format!("{at}: y {} is not the axis's value there ({})", row.y, ys[i]));
            }
            let names: Vec<&String> = row.variants.iter().map(|v| &v.variant).collect();
            if names != self.variants.iter().collect::<Vec<_>>() {
                return Err(format!("{at}: variants {names:?} are not the map's {:?}", self.variants));
            }
            for v in &row.variants {
                let at = format!("{at}, variant `{}`", v.variant);
                let indices: Vec<usize> = v.cells.iter().map(|c| c.x_index).collect();
                if indices != (0..self.x.points).collect::<Vec<_>>() {
                    return Err(format!("{at}: cells at x_index {indices:?}, not the x axis's 0..{}", self.x.points));
                }
                for c in &v.cells {
                    let at = format!("{at}, cell x_index {}", c.x_index);
                    if c.x != xs[c.x_index] {
                        return Err(format!("{at}: x {} is not the axis's value there ({})", c.x, xs[c.x_index]));
                    }
                    c.estimate.check(d.replications).map_err(|e| format!("{at}: {e}"))?;
                }
                for probe in &v.boundary.probes {
                    if !(self.x.lo..=self.x.hi).contains(&probe.x) {
                        return Err(format!("{at}: a bisection probe at x {} is outside the axis", probe.x));
                    }
                    probe.estimate.check(d.replications).map_err(|e| format!("{at}, probe at x {}: {e}", probe.x))?;
                }
            }
        }
        Ok(())
    }
}

/// A variant's result over one replication.
struct Outcome {
    judged: Judged,
    recovery_s: Option<f64>,
    peak_after: Option<f64>,
    /// Seconds a metastable run took to leave its storm (`leave` only; None: still stuck).
    leave_s: Option<f64>,
}

/// `spec` shortened to stop at its judging instant (nothing after it changes the judgement) or,
/// with `leave`, at its horizon (no drain: the time to leave is read while requests arrive); None
/// when the instant is past the horizon or there is no trigger (not observable: nothing to run).
pub fn cut_at_judgement(spec: &SimSpec, judge: &Judge, leave: bool) -> Option<SimSpec> {
    let at = judge.at(&spec.run_shape())?;
    if at > spec.horizon {
        return None;
    }
    let mut cut = spec.clone();
    if !leave {
        cut.horizon = at;
    }
    cut.drain_limit = cut.horizon;
    Some(cut)
}

fn run_one(spec: Option<&SimSpec>, judge: &Judge, seed: u64, replication: u32) -> Outcome {
    let Some(spec) = spec else {
        return Outcome { judged: Judged::NotObservable, recovery_s: None, peak_after: None, leave_s: None };
    };
    let record = sim::run(spec, seed, u64::from(replication));
    let shape = spec.run_shape();
    let judged = judge.judge(&record, &shape);
    let row = scalars(&record, &shape).global;
    let get = |m: Metric| row.iter().find(|(k, _)| *k == m).and_then(|(_, v)| *v);
    let (recovery_s, peak_after) = match judged {
        Judged::Stable => (get(Metric::RecoveryTimeS), get(Metric::PeakAfterOverCapacity)),
        Judged::Metastable => (None, get(Metric::PeakAfterOverCapacity)),
        Judged::NotObservable => (None, None),
    };
    let leave_s = judge.time_to_leave(&record, &shape).map(crate::engine::time::ns_to_secs);
    Outcome { judged, recovery_s, peak_after, leave_s }
}

fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    Some(if n % 2 == 1 { xs[n / 2] } else { (xs[n / 2 - 1] + xs[n / 2]) / 2.0 })
}

/// Runs replications 0, 1, … of `spec` (already cut) until `def.replications`, or (unless
/// `def.full`) until at least [`MIN_REPLICATIONS`] are judged and the interval is on one side
/// of ½; counts each run on `progress` and the ones skipped at the end.
fn estimate(spec: Option<&SimSpec>, def: &Definition, seed: u64, progress: &Progress) -> Estimate {
    let judge = def.judge();
    let mut e = Estimate::default();
    let (mut recovery, mut peaks, mut leave) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..def.replications {
        let o = run_one(spec, &judge, seed, r);
        progress.inc();
        e.runs += 1;
        match o.judged {
            Judged::Stable => e.judged += 1,
            Judged::Metastable => {
                e.judged += 1;
                e.metastable += 1;
                // Still stuck at the horizon: later than any run that left.
                leave.push(o.leave_s.unwrap_or(f64::INFINITY));
            }
            Judged::NotObservable => e.not_observable += 1,
        }
        recovery.extend(o.recovery_s);
        peaks.extend(o.peak_after);
        if e.judged > 0 {
            e.p = Some(f64::from(e.metastable) / f64::from(e.judged));
            e.p_ci95 = Some(wilson(e.metastable as usize, e.judged as usize, LEVEL));
        }
        // Nothing to judge (no trigger, or past the horizon): more runs cannot change that.
        if spec.is_none() || (!def.full && e.judged >= MIN_REPLICATIONS && e.side() != Side::Undecided) {
            break;
        }
    }
    progress.inc_by(u64::from(def.replications - e.runs));
    e.recovery_median_s = median(recovery);
    e.peak_after_over_capacity_median = median(peaks);
    if def.leave {
        e.leave_s = leave.iter().map(|t| t.is_finite().then_some(*t)).collect();
        e.left = Some(leave.iter().filter(|t| t.is_finite()).count() as u32);
        e.leave_median_s = median(leave).filter(|m| m.is_finite());
    }
    e
}

/// Loads the variants of the cell at (x, y): the scenario with both settings.
pub type Loader<'a> = dyn Fn(f64, f64) -> Result<Vec<Variant>, String> + Sync + 'a;

/// What [`run_map`] needs besides the loader.
pub struct MapJob<'a> {
    /// The header of the file to fill (its `rows` are ignored).
    pub header: &'a MapFile,
    /// Rows to run (y indices): all, or a shard's.
    pub rows: Vec<usize>,
    /// Progress over the most runs the map can take.
    pub progress: &'a Progress,
}

/// Most runs a map of `rows` rows can take (the progress bar's length).
pub fn runs_max(header: &MapFile, rows: usize) -> u64 {
    let per_row = header.x.points as u64 + u64::from(header.definition.bisect_steps);
    per_row * rows as u64 * header.variants.len() as u64 * u64::from(header.definition.replications)
}

/// Runs the map's cells and bisections; the file's rows are the job's, y ascending.
pub fn run_map(job: &MapJob, load: &Loader) -> Result<MapFile, String> {
    let h = job.header;
    let (xs, ys) = (h.x.values(), h.y.values());
    let judge = h.definition.judge();
    // Every cell of the job's rows, loaded (and cut) up front: a bad value fails before any run.
    let cells: Vec<(usize, usize, Vec<Option<SimSpec>>)> = job
        .rows
        .iter()
        .flat_map(|&yi| (0..xs.len()).map(move |xi| (yi, xi)))
        .map(|(yi, xi)| {
            let variants = load(xs[xi], ys[yi])?;
            Ok((yi, xi, variants.iter().map(|v| cut_at_judgement(&v.spec, &judge, h.definition.leave)).collect()))
        })
        .collect::<Result<_, String>>()?;
    let tasks: Vec<(usize, usize)> =
        (0..cells.len()).flat_map(|c| (0..h.variants.len()).map(move |v| (c, v))).collect();
    let estimates: Vec<Estimate> =
        tasks.par_iter().map(|&(c, v)| estimate(cells[c].2[v].as_ref(), &h.definition, h.seed, job.progress)).collect();
    let mut rows: Vec<MapRow> = job
        .rows
        .iter()
        .map(|&yi| MapRow {
            y_index: yi,
            y: ys[yi],
            variants: h
                .variants
                .iter()
                .map(|name| VariantRow {
                    variant: name.clone(),
                    cells: Vec::new(),
                    boundary: Boundary {
                        status: BoundaryStatus::Unclear,
                        x: None,
                        interval: None,
                        tips_above: None,
                        probes: Vec::new(),
                    },
                })
                .collect(),
        })
        .collect();
    for (&(c, v), e) in tasks.iter().zip(estimates) {
        let (yi, xi, _) = cells[c];
        let row = rows.iter_mut().find(|r| r.y_index == yi).expect("a row per job row");
        row.variants[v].cells.push(MapCell {
            x_index: xi,
            x: xs[xi],
            settings: [h.x.setting(xs[xi]), h.y.setting(ys[yi])],
            estimate: e,
        });
    }
    // Bisection per row and variant.
    let work: Vec<(usize, usize)> = (0..rows.len()).flat_map(|r| (0..h.variants.len()).map(move |v| (r, v))).collect();
    let boundaries: Vec<Result<Boundary, String>> = work
        .par_iter()
        .map(|&(r, v)| {
            let y = rows[r].y;
            let probe = |x: f64| -> Result<Estimate, String> {
                let variants = load(x, y)?;
                let spec = cut_at_judgement(&variants[v].spec, &judge, h.definition.leave);
                Ok(estimate(spec.as_ref(), &h.definition, h.seed, job.progress))
            };
            bisect(&h.x, &rows[r].variants[v].cells, h.definition.bisect_steps, job.progress, &h.definition, probe)
        })
        .collect();
    for (&(r, v), b) in work.iter().zip(boundaries) {
        rows[r].variants[v].boundary = b?;
    }
    Ok(MapFile { rows, ..h.clone() })
}

/// The boundary along `cells` (x ascending): where the point estimate crosses ½, narrowed by
/// `steps` probes; `probe` estimates a value between two cells. Probes not run (the bracket
/// reached adjacent whole numbers) are counted on `progress` as skipped.
fn bisect(
    axis: &Axis,
    cells: &[MapCell],
    steps: u32,
    progress: &Progress,
    def: &Definition,
    probe: impl Fn(f64) -> Result<Estimate, String>,
) -> Result<Boundary, String> {
    let skip_all = |status| {
        progress.inc_by(u64::from(steps) * u64::from(def.replications));
        Boundary { status, x: None, interval: None, tips_above: None, probes: Vec::new() }
    };
    let judged: Vec<(f64, &Estimate)> =
        cells.iter().filter(|c| c.estimate.p.is_some()).map(|c| (c.x, &c.estimate)).collect();
    if judged.len() < 2 {
        return Ok(skip_all(BoundaryStatus::Unclear));
    }
    let tips: Vec<bool> = judged.iter().map(|(_, e)| e.tips() == Some(true)).collect();
    if tips.iter().all(|&t| t) {
        return Ok(skip_all(BoundaryStatus::AllTip));
    }
    if tips.iter().all(|&t| !t) {
        return Ok(skip_all(BoundaryStatus::NoneTip));
    }
    let changes = tips.windows(2).filter(|w| w[0] != w[1]).count();
    if changes > 1 {
        return Ok(skip_all(BoundaryStatus::Unclear));
    }
    let i = tips.windows(2).position(|w| w[0] != w[1]).expect("one change");
    let tips_above = tips[i + 1];
    // Bracket: (stable end, tipping end).
    let (mut stable, mut tipping) =
        if tips_above { (judged[i].0, judged[i + 1].0) } else { (judged[i + 1].0, judged[i].0) };
    let mut probes = Vec::new();
    let mut done = 0;
    for _ in 0..steps {
        let t = (axis.position(stable) + axis.position(tipping)) / 2.0;
        let x = axis.at(t);
        if x == stable || x == tipping {
            break;
        }
        let e = probe(x)?;
        done += 1;
        match e.tips() {
            Some(true) => tipping = x,
            Some(false) => stable = x,
            None => {
                probes.push(Probe { x, estimate: e });
                break;
            }
        }
        probes.push(Probe { x, estimate: e });
    }
    progress.inc_by(u64::from(steps - done) * u64::from(def.replications));
    let middle = axis.at((axis.position(stable) + axis.position(tipping)) / 2.0);
    // The interval: from the nearest value decided stable to the nearest decided tipping (the
    // bracket's ends where those are undecided), over every cell and probe of the row.
    let mut all: Vec<(f64, Side)> = cells.iter().map(|c| (c.x, c.estimate.side())).collect();
    all.extend(probes.iter().map(|p| (p.x, p.estimate.side())));
    let toward = |x: f64| if tips_above { x } else { -x };
    let decided_stable = all
        .iter()
        .filter(|(x, s)| *s == Side::Stable && toward(*x) <= toward(stable))
        .map(|(x, _)| *x)
        .max_by(|a, b| toward(*a).total_cmp(&toward(*b)))
        .unwrap_or(if tips_above { axis.lo } else { axis.hi });
    let decided_tips = all
        .iter()
        .filter(|(x, s)| *s == Side::Tips && toward(*x) >= toward(tipping))
        .map(|(x, _)| *x)
        .min_by(|a, b| toward(*a).total_cmp(&toward(*b)))
        .unwrap_or(if tips_above { axis.hi } else { axis.lo });
    let (lo, hi) = if tips_above { (decided_stable, decided_tips) } else { (decided_tips, decided_stable) };
    Ok(Boundary {
        status: BoundaryStatus::Found,
        x: Some(middle),
        interval: Some([lo, hi]),
        tips_above: Some(tips_above),
        probes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(spacing: Spacing) -> Axis {
        Axis::parse("--x", "tenant.a.arrival.rate_per_s=10.0..1000.0", 3, spacing).expect("valid")
    }

    #[test]
    fn axes_space_their_points_linearly_or_by_their_logarithms() {
        assert_eq!(axis(Spacing::Linear).values(), vec![10.0, 505.0, 1000.0]);
        let log = axis(Spacing::Log).values();
        assert!((log[1] - 100.0).abs() < 1e-9, "{log:?}");
        let workers = Axis::parse("--y", "hop.api.workers=1..4", 5, Spacing::Linear);
        assert!(workers.is_err_and(|e| e.contains("repeat values") && e.contains("at most 4 points")));
        let d = Axis::parse("--y", "fault.0.to=21s..51s", 4, Spacing::Linear).expect("durations");
        assert_eq!(d.values(), vec![21.0, 31.0, 41.0, 51.0]);
        assert_eq!(d.setting(31.0), "fault.0.to = 31s");
        assert!(Axis::parse("--x", "a.b=0.0..1.0", 3, Spacing::Log).is_err_and(|e| e.contains("LO above 0")));
    }

    fn cell(x: f64, metastable: u32, judged: u32) -> MapCell {
        let p = f64::from(metastable) / f64::from(judged);
        MapCell {
            x_index: 0,
            x,
            settings: [String::new(), String::new()],
            estimate: Estimate {
                runs: judged,
                judged,
                metastable,
                p: Some(p),
                p_ci95: Some(wilson(metastable as usize, judged as usize, LEVEL)),
                ..Estimate::default()
            },
        }
    }

    fn def() -> Definition {
        Definition {
            hold_s: 1.0,
            window_s: 1.0,
            goodput_share: 0.5,
            replications: 20,
            full: false,
            bisect_steps: 6,
            leave: false,
        }
    }

    #[test]
    fn bisection_narrows_the_bracket_where_the_estimate_crosses_a_half() {
        // A synthetic row on 0..100: the truth tips above 37 (p jumps from 0 to 1).
        let a = Axis::parse("--x", "a.b=0.0..100.0", 5, Spacing::Linear).expect("valid");
        let cells: Vec<MapCell> =
            a.values().iter().map(|&x| if x > 37.0 { cell(x, 20, 20) } else { cell(x, 0, 20) }).collect();
        let progress = Progress::new(false, 0);
        let probe = |x: f64| -> Result<Estimate, String> {
            Ok(if x > 37.0 { cell(x, 20, 20).estimate } else { cell(x, 0, 20).estimate })
        };
        let b = bisect(&a, &cells, 6, &progress, &def(), probe).expect("runs");
        assert_eq!(b.status, BoundaryStatus::Found);
        assert_eq!(b.tips_above, Some(true));
        let [lo, hi] = b.interval.expect("an interval");
        assert!(lo <= 37.0 && 37.0 < hi && hi - lo <= 25.0 / 32.0 + 1e-9, "{lo}..{hi}");
        assert!((b.x.expect("x") - 37.0).abs() < 1.0);
        // Reversed: small values tip (e.g. workers).
        let cells: Vec<MapCell> =
            a.values().iter().map(|&x| if x < 60.0 { cell(x, 20, 20) } else { cell(x, 0, 20) }).collect();
        let probe = |x: f64| -> Result<Estimate, String> {
            Ok(if x < 60.0 { cell(x, 20, 20).estimate } else { cell(x, 0, 20).estimate })
        };
        let b = bisect(&a, &cells, 6, &progress, &def(), probe).expect("runs");
        assert_eq!(b.tips_above, Some(false));
        let [lo, hi] = b.interval.expect("an interval");
        assert!(lo < 60.0 && 60.0 <= hi, "{lo}..{hi}");
        // No crossing, and a row that tips on and off.
        let none: Vec<MapCell> = a.values().iter().map(|&x| cell(x, 1, 20)).collect();
        let fail = |_: f64| -> Result<Estimate, String> { Err("not probed".into()) };
        assert_eq!(bisect(&a, &none, 6, &progress, &def(), fail).expect("runs").status, BoundaryStatus::NoneTip);
        let zigzag: Vec<MapCell> =
            a.values().iter().enumerate().map(|(i, &x)| cell(x, if i % 2 == 1 { 20 } else { 0 }, 20)).collect();
        assert_eq!(bisect(&a, &zigzag, 6, &progress, &def(), fail).expect("runs").status, BoundaryStatus::Unclear);
        progress.finish();
    }

    #[test]
    fn an_undecided_neighbour_widens_the_interval_to_the_next_decided_value() {
        let a = Axis::parse("--x", "a.b=0.0..40.0", 5, Spacing::Linear).expect("valid");
        // 0: stable, 10: stable (undecided: 4 of 12), 20: tips (undecided 8 of 12), 30, 40: tip.
        let cells =
            vec![cell(0.0, 0, 20), cell(10.0, 4, 12), cell(20.0, 8, 12), cell(30.0, 20, 20), cell(40.0, 20, 20)];
        let progress = Progress::new(false, 0);
        let fail = |_: f64| -> Result<Estimate, String> { Ok(cell(15.0, 6, 12).estimate) };
        let b = bisect(&a, &cells, 1, &progress, &def(), fail).expect("runs");
        assert_eq!(b.interval, Some([0.0, 30.0]));
        progress.finish();
    }
}
