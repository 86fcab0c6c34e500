//! The plain-language reading of a run's key results ("decorrelated cut the peak by 2.9× vs
//! none [95% CI …]"), computed from the data: nothing here is a canned conclusion.
//!
//! Variants of one comparison share their seeds (common random numbers), so replication i of
//! every variant saw the same arrivals: ratios are taken per replication and their mean gets a
//! Student-t interval, which is much tighter than comparing two independent means.

use super::data::SweepData;
use super::data::{ReportData, VariantData};
use super::format::{fmt_num, fmt_secs};
use crate::metrics::catalogue::{Better, Metric};
use crate::metrics::stats::Stat;

/// A ratio between two variants: mean of the paired per-replication ratios and its 95% CI.
#[derive(Clone, Debug, PartialEq)]
pub struct Ratio {
    /// Mean ratio.
    pub mean: f64,
    /// 95% confidence interval (None with fewer than two pairs).
    pub ci95: Option<[f64; 2]>,
    /// Replications that formed a pair.
    pub pairs: usize,
}

/// `numerator / denominator`, paired by replication where both values exist and the denominator
/// is positive; falls back to the ratio of means (no CI) when fewer than two pairs exist.
pub fn paired_ratio(numerator: &Stat, denominator: &Stat) -> Option<Ratio> {
    let ratios: Vec<Option<f64>> = numerator
        .values
        .iter()
        .zip(&denominator.values)
        .filter_map(|(n, d)| match (n, d) {
            (Some(n), Some(d)) if *d > 0.0 => Some(Some(n / d)),
            _ => None,
        })
        .collect();
    if ratios.len() >= 2 {
        let pairs = ratios.len();
        let s = Stat::from_values(ratios);
        return Some(Ratio { mean: s.mean?, ci95: s.ci95, pairs });
    }
    let (n, d) = (numerator.mean?, denominator.mean?);
    (d > 0.0).then(|| Ratio { mean: n / d, ci95: None, pairs: ratios.len() })
}

fn ci_text(ratio: &Ratio) -> String {
    match ratio.ci95 {
        Some([lo, hi]) => {
            format!("[95% CI {}–{}×, paired over {} replications]", fmt_num(lo), fmt_num(hi), ratio.pairs)
        }
        None => "[no CI: too few paired replications]".into(),
    }
}

/// `mean [95% CI lo–hi]` of `metric`, scaled and with the unit its catalogue entry gives.
fn mean_ci(s: &Stat, metric: Metric) -> String {
    let (scale, unit) = (metric.def().unit.scale(), metric.def().unit.suffix());
    let Some(mean) = s.mean else { return "n/a".into() };
    match s.ci95 {
        Some([lo, hi]) if hi > lo => {
            format!("{}{unit} [95% CI {}–{}{unit}]", fmt_num(mean * scale), fmt_num(lo * scale), fmt_num(hi * scale))
        }
        _ => format!("{}{unit}", fmt_num(mean * scale)),
    }
}

/// Variants with a mean for `metric`, lowest first (ties keep run order).
fn ranked(data: &ReportData, metric: Metric) -> Vec<(&VariantData, &Stat)> {
    let mut list: Vec<(&VariantData, &Stat)> = data
        .variants
        .iter()
        .filter_map(|v| v.metrics.get(metric).filter(|s| s.mean.is_some()).map(|s| (v, s)))
        .collect();
    list.sort_by(|a, b| a.1.mean.partial_cmp(&b.1.mean).unwrap_or(std::cmp::Ordering::Equal));
    list
}

/// Key findings, one sentence each, in the order a reader asks them.
pub fn key_findings(data: &ReportData) -> Vec<String> {
    if data.variants.len() == 1 {
        return single_variant(&data.variants[0]);
    }
    // The headline is what happens after the trigger: success, the post-recovery peak and the
    // time over capacity lead; the peak during the trigger comes after them.
    let trigger = data.variants.iter().any(|v| v.setup.trigger_end_s.is_some());
    let mut out = Vec::new();
    // What was not observed comes first: a cut run's totals are no outcome.
    let (verdict, _) = super::verdict_text::for_data(data);
    let unobserved = verdict.recommended.is_none() && verdict.answer.starts_with("No recommendation");
    if unobserved {
        out.push(format!("Not observed: {}", verdict.answer.trim_start_matches("No recommendation: ")));
    } else {
        out.extend(success_finding(data));
    }
    out.extend(tenant_finding(data));
    out.extend(peak_finding(data, PEAK_AFTER));
    if trigger {
        out.extend(spread_finding(
            data,
            Metric::TimeOverCapacityAfterS,
            "Time the first hop spent above capacity after the trigger ended",
        ));
    }
    out.extend(spread_finding(data, Metric::Amplification, "Retries multiplied traffic at the first hop"));
    out.extend(peak_finding(data, if trigger { PEAK_TRIGGER } else { PEAK_DURING }));
    out.extend(tradeoff_finding(data));
    out.extend(duplicates_finding(data));
    out.extend(recovery_finding(data));
    out.extend(latency_finding(data));
    out
}

/// Which peak a finding reads: its metrics and words.
struct PeakKind {
    peak: Metric,
    over: Metric,
    words: &'static str,
    short: &'static str,
}

const PEAK_DURING: PeakKind = PeakKind {
    peak: Metric::PeakAttemptsPerS,
    over: Metric::PeakOverCapacity,
    words: "Peak load at the first hop",
    short: "the peak",
};

const PEAK_TRIGGER: PeakKind = PeakKind {
    peak: Metric::PeakAttemptsPerS,
    over: Metric::PeakOverCapacity,
    words: "Peak during the trigger at the first hop (the whole run's peak)",
    short: "the peak during the trigger",
};

const PEAK_AFTER: PeakKind = PeakKind {
    peak: Metric::PeakAfterPerS,
    over: Metric::PeakAfterOverCapacity,
    words: "What hit the first hop after the trigger ended (peak after recovery)",
    short: "the post-recovery peak",
};

fn peak_finding(data: &ReportData, kind: PeakKind) -> Vec<String> {
    // A variant that lost every request sends nothing after the trigger: no credit for that.
    let mut list = ranked(data, kind.peak);
    if kind.peak == Metric::PeakAfterPerS {
        list.retain(|(v, _)| v.mean(Metric::SuccessRatio).is_some_and(|s| s > 0.0));
    }
    if list.len() < 2 {
        return Vec::new();
    }
    // As the charts do: × capacity when that means something, attempts/s when capacity is absent
    // or so far above that the ratio reads 0.0000142×.
    let largest_ratio = data.variants.iter().filter_map(|v| v.mean(kind.over)).fold(0.0, f64::max);
    let describe = |v: &VariantData, s: &Stat| match v.mean(kind.over).filter(|_| largest_ratio >= 0.05) {
        Some(r) => format!("{}× capacity", fmt_num(r)),
        None => format!("{} attempts/s", fmt_num(s.mean.unwrap_or(0.0))),
    };
    let (best, best_s) = list[0];
    if list.iter().all(|(_, s)| s.mean == best_s.mean) {
        return vec![format!("{}: the same in every variant, {}.", kind.words, describe(best, best_s))];
    }
    let ranking: Vec<String> = list.iter().map(|(v, s)| format!("{} {}", v.name, describe(v, s))).collect();
    let mut out = vec![format!("{}, lowest first: {}.", kind.words, ranking.join(", "))];
    // Against the worst (the size of the effect) and the runner-up (is the winner really ahead?).
    let mut rivals = vec![list[list.len() - 1]];
    if list.len() > 2 {
        rivals.push(list[1]);
    }
    for (rival, rival_s) in rivals {
        let Some(ratio) = paired_ratio(rival_s, best_s) else { continue };
        // A gap inside the metric's tie threshold (0.1× capacity after recovery) is no claim.
        let within_tie = match (best.mean(kind.over), rival.mean(kind.over)) {
            (Some(b), Some(r)) => crate::metrics::objective::Tie::default_for(kind.over).ties(b, r),
            _ => false,
        };
        let separated = ratio.ci95.is_none_or(|c| c[0] > 1.0) && !within_tie;
        // A lower load bought by dead-lettering more is said with the dead letters.
        let dlq = match (best.mean(Metric::Dlq), rival.mean(Metric::Dlq)) {
            (Some(b), Some(r)) if b > r => {
                format!(
                    ", but it dead-lettered {} requests per run against {}'s {}",
                    fmt_num(b),
                    rival.name,
                    fmt_num(r)
                )
            }
            _ => String::new(),
        };
        out.push(if separated {
            format!(
                "{} cut {} by {}× vs {} {}{dlq}.",
                best.name,
                kind.short,
                fmt_num(ratio.mean),
                rival.name,
                ci_text(&ratio)
            )
        } else {
            format!(
                "{}'s {} is not distinguishable from {}'s: ratio {}× {}.",
                best.name,
                kind.short.trim_start_matches("the "),
                rival.name,
                fmt_num(ratio.mean),
                ci_text(&ratio)
            )
        });
    }
    out
}

fn spread_finding(data: &ReportData, metric: Metric, lead: &str) -> Option<String> {
    let list = ranked(data, metric);
    let ((low, low_s), (high, high_s)) = (list.first()?, list.last()?);
    if low_s.mean == high_s.mean {
        return Some(format!("{lead}: {} in every variant.", mean_ci(low_s, metric)));
    }
    Some(format!(
        "{lead}: from {} ({}) to {} ({}).",
        mean_ci(low_s, metric),
        low.name,
        mean_ci(high_s, metric),
        high.name
    ))
}

/// Names of the variants whose mean equals the first (or last) of `list`, joined with "and".
fn tied(list: &[(&VariantData, &Stat)], last: bool) -> String {
    let end = if last { list[list.len() - 1].1.mean } else { list[0].1.mean };
    let names: Vec<&str> = list.iter().filter(|(_, s)| s.mean == end).map(|(v, _)| v.name.as_str()).collect();
    names.join(" and ")
}

/// With two or more tenants: the tenant whose success the variants differ most on (as a ratio of
/// the failures), each variant's success there. Said only when the difference is significant.
fn tenant_finding(data: &ReportData) -> Option<String> {
    let names: Vec<&str> = data.variants.first()?.tenants.iter().map(|(n, _)| n.as_str()).collect();
    if names.len() < 2 || data.variants.len() < 2 {
        return None;
    }
    fn stat_of<'a>(v: &'a VariantData, t: &str) -> Option<&'a Stat> {
        v.tenants
            .iter()
            .find(|(n, _)| n == t)
            .and_then(|(_, r)| r.get(Metric::SuccessRatio))
            .filter(|s| s.mean.is_some())
    }
    let mut best: Option<(&str, f64)> = None;
    for t in &names {
        let losses: Vec<f64> = data.variants.iter().filter_map(|v| stat_of(v, t)?.mean.map(|m| 1.0 - m)).collect();
        let (lo, hi) = losses.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &l| (lo.min(l), hi.max(l)));
        let spread = if hi <= lo {
            1.0
        } else if lo <= 0.0 {
            f64::INFINITY
        } else {
            hi / lo
        };
        if best.is_none_or(|(_, b)| spread > b) {
            best = Some((t, spread));
        }
    }
    let (tenant, _) = best?;
    let mut list: Vec<(&VariantData, &Stat)> =
        data.variants.iter().filter_map(|v| Some((v, stat_of(v, tenant)?))).collect();
    list.sort_by(|a, b| b.1.mean.partial_cmp(&a.1.mean).unwrap_or(std::cmp::Ordering::Equal));
    let ((top, top_s), (low, low_s)) = (list.first()?, list.last()?);
    let d = crate::runner::compare::difference(top_s, low_s).paired;
    if !d.ci95.is_some_and(|[lo, hi]| lo > 0.0 || hi < 0.0) {
        return Some(format!(
            "Tenants: no tenant's success differs significantly between variants (largest gap at {tenant}: {} with {} against {} with {}).",
            share(top_s), top.name, share(low_s), low.name
        ));
    }
    let failures = match (top_s.mean, low_s.mean) {
        (Some(t), Some(l)) if t < 1.0 => format!(", {}× the failures", fmt_num((1.0 - l) / (1.0 - t))),
        _ => String::new(),
    };
    Some(format!(
        "Tenants: {tenant} is where the variants differ most: it succeeded {} with {} against {} with {}{failures}.",
        share(top_s),
        top.name,
        share(low_s),
        low.name
    ))
}

/// A share's mean as a percentage with two decimals (`99.58%`).
fn share(s: &Stat) -> String {
    s.mean.map_or("n/a".into(), |m| format!("{:.2}%", m * 100.0))
}

fn success_finding(data: &ReportData) -> Option<String> {
    let list = ranked(data, Metric::SuccessRatio);
    let ((low, low_s), (high, high_s)) = (list.first()?, list.last()?);
    let dlq = |v: &VariantData| {
        v.mean(Metric::Dlq).map(|d| format!(", {} dead-lettered per run", fmt_num(d))).unwrap_or_default()
    };
    if low_s.mean == high_s.mean {
        let dlqs: Vec<f64> = data.variants.iter().filter_map(|v| v.mean(Metric::Dlq)).collect();
        let same_dlq = dlqs.windows(2).all(|w| w[0] == w[1]);
        let dlq_words = if same_dlq {
            dlq(high)
        } else {
            let (lo, hi) = dlqs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
            format!(", {}–{} dead-lettered per run", fmt_num(lo), fmt_num(hi))
        };
        return Some(format!("Every variant delivered {}% of requests{dlq_words}.", fmt_num(high_s.mean? * 100.0)));
    }
    Some(format!(
        "Success: {} delivered the most, {} of requests{}; {} the fewest, {}{}.",
        tied(&list, true),
        mean_ci(high_s, Metric::SuccessRatio),
        dlq(high),
        tied(&list, false),
        mean_ci(low_s, Metric::SuccessRatio),
        dlq(low)
    ))
}

/// The lowest peak is no win if it came from giving up: say so when the lowest-peak variant
/// delivered clearly fewer requests than the best one (the CIs do not overlap).
fn tradeoff_finding(data: &ReportData) -> Option<String> {
    let (calm, calm_peak) = *ranked(data, Metric::PeakAttemptsPerS).first()?;
    let successes = ranked(data, Metric::SuccessRatio);
    let (best, best_s) = *successes.last()?;
    let calm_s = calm.metrics.get(Metric::SuccessRatio)?;
    // Only a peak that is lower beyond the noise is a trade-off.
    let lower = best
        .metrics
        .get(Metric::PeakAttemptsPerS)
        .and_then(|b| paired_ratio(b, calm_peak))
        .is_some_and(|r| r.ci95.is_some_and(|c| c[0] > 1.0));
    if !lower {
        return None;
    }
    let (calm_hi, best_lo) = (calm_s.ci95?[1], best_s.ci95?[0]);
    (calm_hi < best_lo).then(|| {
        format!(
            "Trade-off: {}'s lower peak came with fewer successes ({} vs {} for {}).",
            calm.name,
            mean_ci(calm_s, Metric::SuccessRatio),
            mean_ci(best_s, Metric::SuccessRatio),
            tied(&successes, true)
        )
    })
}

fn duplicates_finding(data: &ReportData) -> Option<String> {
    let list = ranked(data, Metric::Duplicates);
    let (worst, worst_s) = list.last()?;
    if worst_s.mean? == 0.0 {
        return Some("No side effect was executed twice in any variant.".into());
    }
    let (best, best_s) = list.first()?;
    Some(format!(
        "Duplicated side effects: {} per run with {}, {} with {}.",
        mean_ci(worst_s, Metric::Duplicates),
        worst.name,
        mean_ci(best_s, Metric::Duplicates),
        best.name
    ))
}

fn recovery_finding(data: &ReportData) -> Option<String> {
    if !data.shows_recovery() {
        return None;
    }
    let mut parts = Vec::new();
    // Race only variants that recovered in every replication (a mean over the few that did would
    // flatter a metastable one) and that delivered something (a variant that gave up on every
    // request "recovers" at once: nobody is left retrying).
    let list: Vec<_> = ranked(data, Metric::RecoveryTimeS)
        .into_iter()
        .filter(|(v, s)| v.mean(Metric::SuccessRatio).is_none_or(|r| r > 0.0) && s.values.iter().all(Option::is_some))
        .collect();
    if let Some((fast, fast_s)) = list.first() {
        // Recovering fastest by dead-lettering more is said with the dead letters.
        let fewest =
            list.iter().filter_map(|(v, _)| Some((*v, v.mean(Metric::Dlq)?))).min_by(|a, b| a.1.total_cmp(&b.1));
        let fastest = tied(&list, false);
        let alone = !fastest.contains(" and ");
        let dlq = match (fast.mean(Metric::Dlq), fewest) {
            (Some(f), Some((other, o))) if f > o && alone => format!(
                ", but it dead-lettered {} requests per run against {}'s {}",
                fmt_num(f),
                other.name,
                fmt_num(o)
            ),
            _ => String::new(),
        };
        parts.push(format!(
            "{fastest} recovered fastest, {} after the last disturbance{dlq}",
            mean_ci(fast_s, Metric::RecoveryTimeS)
        ));
    }
    // Each replication's outcome is one of recovered, metastable (the trigger ended and the system
    // stayed overloaded) and not observable (no trigger, nothing succeeded or was attempted after
    // it, or it lasted to the end): only the second is "never recovered".
    let mut never_everywhere = true;
    let mut metastable = Vec::new();
    for v in &data.variants {
        let ones = |m: Metric| {
            v.metrics.get(m).map(|s| (s.values.iter().filter(|x| **x == Some(1.0)).count(), s.values.len()))
        };
        let Some((stuck, n)) = ones(Metric::Metastable) else { continue };
        never_everywhere &= stuck == n;
        if stuck > 0 {
            metastable.push(format!("{} never recovered (metastable) in {stuck} of {n} replications", v.name));
        }
        if let Some((unseen, n)) = ones(Metric::RecoveryUnobservable).filter(|(k, _)| *k > 0) {
            let cut = ones(Metric::RecoveryCutOff).map_or(0, |(k, _)| k);
            let why = if cut == unseen {
                "the run was cut off at a limit before its backlog drained"
            } else if v.setup.trigger_end_s.is_none() {
                "it has no fault or load spike to recover from"
            } else {
                "nothing succeeded or was attempted after the trigger, or it lasted to the end"
            };
            metastable
                .push(format!("{}'s recovery could not be observed in {unseen} of {n} replications ({why})", v.name));
        }
    }
    if never_everywhere && !metastable.is_empty() {
        return Some("Recovery: no variant recovered in any replication (metastable throughout).".into());
    }
    parts.extend(metastable);
    (!parts.is_empty()).then(|| format!("Recovery: {}.", parts.join("; ")))
}

fn latency_finding(data: &ReportData) -> Option<String> {
    let list = ranked(data, Metric::LatencySP99);
    let ((low, low_s), (high, high_s)) = (list.first()?, list.last()?);
    if low.name == high.name {
        return None;
    }
    if low_s.mean == high_s.mean {
        return Some(format!("p99 latency of succeeded requests: {} in every variant.", fmt_secs(low_s.mean?)));
    }
    Some(format!(
        "p99 latency of succeeded requests: {} with {}, {} with {}.",
        fmt_secs(low_s.mean?),
        low.name,
        fmt_secs(high_s.mean?),
        high.name
    ))
}

fn single_variant(v: &VariantData) -> Vec<String> {
    let get = |metric: Metric| v.metrics.get(metric);
    let mut out = Vec::new();
    // Success and what happens after the trigger lead; the peak during the trigger follows.
    if let Some(s) = get(Metric::SuccessRatio) {
        let dlq = v.mean(Metric::Dlq).map(|d| format!("; {} dead-lettered per run", fmt_num(d))).unwrap_or_default();
        out.push(format!("{} of requests succeeded{dlq}.", mean_ci(s, Metric::SuccessRatio)));
    }
    let trigger = v.setup.trigger_end_s.is_some();
    if let Some(after) = get(Metric::PeakAfterOverCapacity).filter(|s| trigger && s.mean.is_some()) {
        let over = get(Metric::TimeOverCapacityAfterS)
            .and_then(|s| s.mean)
            .map(|t| format!(", above capacity for {} after the trigger ended", fmt_secs(t)))
            .unwrap_or_default();
        out.push(format!(
            "Peak load after recovery at the first hop: {} capacity{over}.",
            mean_ci(after, Metric::PeakAfterOverCapacity)
        ));
    }
    if let Some(peak) = get(Metric::PeakAttemptsPerS) {
        let capacity =
            v.mean(Metric::PeakOverCapacity).map(|r| format!(", {}× capacity", fmt_num(r))).unwrap_or_default();
        let which = if trigger { "Peak during the trigger at the first hop" } else { "Peak load at the first hop" };
        out.push(format!("{which}: {} attempts/s{capacity}.", mean_ci(peak, Metric::PeakAttemptsPerS)));
    }
    if let Some(a) = get(Metric::Amplification) {
        out.push(format!("Amplification: {} attempts per logical request.", mean_ci(a, Metric::Amplification)));
    }
    if let Some(d) = get(Metric::Duplicates).filter(|d| d.mean.is_some_and(|m| m > 0.0)) {
        out.push(format!("Duplicated side effects: {} per run.", mean_ci(d, Metric::Duplicates)));
    }
    if let Some(p99) = get(Metric::LatencySP99).and_then(|s| s.mean) {
        out.push(format!("p99 latency of succeeded requests: {}.", fmt_secs(p99)));
    }
    out
}

/// Where in a sweep a cell sits, in words: `clients=1000, base=50ms`.
pub fn cell_words(data: &SweepData, cell: usize) -> String {
    let mut rest = cell;
    let mut parts = Vec::new();
    for axis in data.axes.iter().rev() {
        let n = axis.labels.len().max(1);
        let short = axis.path.rsplit('.').next().unwrap_or(&axis.path);
        parts.push(format!("{short}={}", axis.labels[rest % n]));
        rest /= n;
    }
    parts.reverse();
    parts.join(", ")
}

/// The metrics a sweep's findings rank, each with whether lower is better. Built at compile time:
/// a metric without a better direction in the catalogue fails the build, not a run.
const SWEEP_HEADLINES: [(Metric, bool); 4] = [
    with_direction(Metric::PeakAfterOverCapacity),
    with_direction(Metric::SuccessRatio),
    with_direction(Metric::Amplification),
    with_direction(Metric::PeakOverCapacity),
];

/// `metric` with whether lower is better; evaluated in a `const`, so `Better::Neither` is a
/// compile error.
const fn with_direction(metric: Metric) -> (Metric, bool) {
    match metric.def().better {
        Better::Lower => (metric, true),
        Better::Higher => (metric, false),
        Better::Neither => panic!("a sweep finding ranks a metric that has a better direction"),
    }
}

/// Key findings of a sweep: the range of each headline metric over the grid and which variant
/// wins how many cells.
pub fn sweep_findings(data: &SweepData) -> Vec<String> {
    let cells: usize = data.axes.iter().map(|a| a.labels.len()).product();
    let mut out = Vec::new();
    for (metric, lower_better) in SWEEP_HEADLINES {
        let def = metric.def();
        let words = if metric == Metric::PeakOverCapacity {
            "peak load during the trigger ÷ capacity (the whole run's peak)"
        } else {
            def.words
        };
        let (scale, unit) = (def.unit.scale(), def.unit.suffix());
        let mut points: Vec<(usize, usize, f64)> = Vec::new();
        for cell in 0..cells {
            for v in 0..data.variants.len() {
                if let Some(mean) = data.stat(cell, v, metric).and_then(|s| s.mean) {
                    points.push((cell, v, mean));
                }
            }
        }
        let Some(low) = points.iter().min_by(|a, b| a.2.total_cmp(&b.2)) else { continue };
        let high = points.iter().max_by(|a, b| a.2.total_cmp(&b.2)).expect("non-empty");
        let mut text = format!(
            "{}: from {}{unit} ({} at {}) to {}{unit} ({} at {})",
            capitalised(words),
            fmt_num(low.2 * scale),
            data.variants[low.1],
            cell_words(data, low.0),
            fmt_num(high.2 * scale),
            data.variants[high.1],
            cell_words(data, high.0)
        );
        if data.variants.len() > 1 {
            let mut wins = vec![0usize; data.variants.len()];
            let mut more_dlq = vec![0usize; data.variants.len()];
            let mut contested = 0;
            for cell in 0..cells {
                let here: Vec<&(usize, usize, f64)> = points.iter().filter(|p| p.0 == cell).collect();
                let best = here.iter().map(|p| p.2).fold(
                    if lower_better { f64::INFINITY } else { f64::NEG_INFINITY },
                    |a, b| {
                        if lower_better {
                            a.min(b)
                        } else {
                            a.max(b)
                        }
                    },
                );
                let winners: Vec<usize> = here.iter().filter(|p| p.2 == best).map(|p| p.1).collect();
                if winners.len() == 1 {
                    wins[winners[0]] += 1;
                    contested += 1;
                    // A lower load that comes from dead-lettering more is not praise: count it.
                    let dlq = |v: usize| data.stat(cell, v, Metric::Dlq).and_then(|s| s.mean);
                    let least = (0..data.variants.len()).filter_map(dlq).fold(f64::INFINITY, f64::min);
                    if lower_better && dlq(winners[0]).is_some_and(|d| d > least) {
                        more_dlq[winners[0]] += 1;
                    }
                }
            }
            let ranking: Vec<String> = wins
                .iter()
                .enumerate()
                .filter(|(_, &w)| w > 0)
                .map(|(v, &w)| match more_dlq[v] {
                    0 => format!("{} in {w}", data.variants[v]),
                    m if m == w => {
                        format!("{} in {w}, dead-lettering more than another variant in each", data.variants[v])
                    }
                    m => {
                        format!("{} in {w}, dead-lettering more than another variant in {m} of them", data.variants[v])
                    }
                })
                .collect();
            if !ranking.is_empty() {
                let best = if lower_better { "lowest" } else { "highest" };
                text.push_str(&format!("; {best} by mean: {} (of {contested} cells)", ranking.join(", ")));
            }
        }
        text.push('.');
        out.push(text);
    }
    out
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(xs: &[f64]) -> Stat {
        Stat::from_values(xs.iter().map(|&x| Some(x)).collect())
    }

    #[test]
    fn paired_ratio_pairs_by_replication() {
        // Replication-wise ratios are 2, 2, 2: the CI collapses onto 2 even though the means
        // alone vary a lot between replications.
        let r = paired_ratio(&values(&[20.0, 40.0, 60.0]), &values(&[10.0, 20.0, 30.0])).unwrap();
        assert_eq!(r.mean, 2.0);
        assert_eq!(r.ci95, Some([2.0, 2.0]));
        assert_eq!(r.pairs, 3);
        let one = paired_ratio(&values(&[6.0]), &values(&[3.0])).unwrap();
        assert_eq!((one.mean, one.ci95), (2.0, None));
        assert!(paired_ratio(&values(&[1.0, 2.0]), &values(&[0.0, 0.0])).is_none());
    }
}
