//! The verdict in words: the last lines of stdout, the report's "Verdict" section and
//! `summary.json`'s `verdict.answer` / `trade_off`. The first line answers: the recommendation,
//! "no variant meets every requirement; closest: …" with the `retrystorm plan` command that finds
//! the capacity that would, or that the variants compare conditions rather than policies.

use super::data::ReportData;
use super::setup::HopInfo;
use super::values;
use crate::metrics::catalogue::{MetricScope, Unit};
use crate::metrics::objective::{MetricRef, Scoped, Verdict as Met};
use crate::runner::verdict::{separates_by, Candidate, Ranked, Verdict};
use crate::runner::{Provenance, Study};
use std::cmp::Ordering;

/// What the words need besides the ranking: where the run came from (for the `plan` command)
/// and the hops (their names and workers).
pub struct Context<'a> {
    /// The scenario file, overrides and command line.
    pub provenance: &'a Provenance,
    /// The hops of the first variant.
    pub hops: &'a [HopInfo],
    /// The variants when they are jitter strategies (`compare` without `[[variant]]`s): `plan`
    /// needs them as `--jitter`.
    pub jitters: Option<String>,
    /// The run's horizon in seconds (for the fix when runs were cut at the drain limit).
    pub horizon_s: Option<f64>,
}

/// The variants' names joined with commas when every variant is named after the strategy its
/// clients use (the variants `compare` makes from `--jitter`).
fn jitters<'a>(variants: impl Iterator<Item = (&'a str, &'a super::setup::Setup)>) -> Option<String> {
    let mut names = Vec::new();
    for (name, setup) in variants {
        if !super::setup::named_after_strategy(name, setup) {
            return None;
        }
        names.push(name);
    }
    (names.len() > 1).then(|| names.join(","))
}

/// The verdict of a study, with its answer and trade-offs in words, and its lines.
pub fn for_study(study: &Study) -> (Verdict, Vec<String>) {
    let (v, parts) = parts_for_study(study);
    (v, parts.lines())
}

/// The verdict of a study and its lines in parts ([`VerdictParts`]).
pub fn parts_for_study(study: &Study) -> (Verdict, VerdictParts) {
    let setups: Vec<super::setup::Setup> = study.variants.iter().map(|v| super::setup::setup_of(&v.spec)).collect();
    let candidates: Vec<Candidate> = study
        .variants
        .iter()
        .zip(&setups)
        .map(|(v, s)| {
            Candidate::new(&v.name, &v.metrics, &v.hops, &v.tenants)
                .with_setup(super::setup::label_of(&v.name, s), super::setup::condition_of(s))
        })
        .collect();
    let hops = setups.first().map_or(&[][..], |s| &s.hops[..]);
    let mut v = study.verdict_of(&candidates);
    let jitters = jitters(study.variants.iter().zip(&setups).map(|(v, s)| (v.name.as_str(), s)));
    let horizon_s = setups.first().map(|s| s.horizon_s);
    explain(&mut v, &candidates, &Context { provenance: &study.provenance, hops, jitters, horizon_s });
    let parts = verdict_parts(&v, &candidates);
    (v, parts)
}

/// The verdict of a run's files (`plot`, `report.html`), as [`for_study`].
pub fn for_data(data: &ReportData) -> (Verdict, Vec<String>) {
    let candidates: Vec<Candidate> = data.variants.iter().map(|v| v.candidate()).collect();
    let mut v = crate::runner::verdict::verdict(&data.objective, &candidates);
    let hops = data.variants.first().map_or(&[][..], |v| &v.setup.hops[..]);
    let jitters = jitters(data.variants.iter().map(|v| (v.name.as_str(), &v.setup)));
    let horizon_s = data.variants.first().map(|v| v.setup.horizon_s);
    explain(&mut v, &candidates, &Context { provenance: &data.provenance, hops, jitters, horizon_s });
    let lines = verdict_lines(&v, &candidates);
    (v, lines)
}

fn candidate<'a, 'b>(candidates: &'b [Candidate<'a>], name: &str) -> Option<&'b Candidate<'a>> {
    candidates.iter().find(|c| c.name == name)
}

fn label_of(candidates: &[Candidate], name: &str) -> String {
    candidate(candidates, name).map_or_else(|| name.to_string(), |c| c.label.clone())
}

/// A criterion's metric in words (`succeeded`, `p99 latency of successes at db`, `succeeded at
/// each tenant`).
pub fn label(metric: &MetricRef) -> String {
    let words = metric.metric.def().label.trim_end_matches(" (s)").to_string();
    match metric.scope {
        MetricScope::Global => words,
        MetricScope::Tenant if metric.is_every_tenant() => format!("{words} at each tenant"),
        MetricScope::Hop | MetricScope::Tenant => format!("{} at {}", words, metric.name),
    }
}

/// The ranked metrics' values of one variant (`succeeded 96.7% ±0.06 pp, …`).
fn values_of(verdict: &Verdict, metrics: &Scoped) -> String {
    let parts: Vec<String> = verdict
        .objective
        .rank
        .iter()
        .map(|c| {
            let shown = verdict.shown(c);
            format!("{} {}", label(&shown), values::value(shown.metric, shown.stat(metrics)))
        })
        .collect();
    parts.join(", ")
}

/// How `a`'s mean of criterion `i` compares with `b`'s: `+0.41 pp succeeded (0.86× the
/// failures)`, `1.8× the peak after recovery ÷ capacity`.
fn difference_words(verdict: &Verdict, i: usize, a: &Candidate, b: &Candidate) -> String {
    let c = &verdict.objective.rank[i];
    let shown = verdict.shown(c);
    let mean = |x: &Candidate| shown.stat(&x.metrics).and_then(|s| s.mean);
    let name = label(&shown);
    match (mean(a), mean(b)) {
        (Some(ma), Some(mb)) if c.compares_loss() => {
            let pp = (ma - mb) * 100.0;
            let failures = if 1.0 - mb > 0.0 {
                format!(" ({}× the failures)", sig2((1.0 - ma) / (1.0 - mb)))
            } else {
                String::new()
            };
            format!("{}{} pp {name}{failures}", if pp >= 0.0 { "+" } else { "−" }, sig2(pp.abs()))
        }
        (Some(ma), Some(mb)) if shown.metric.def().unit == Unit::Share => {
            let pp = (ma - mb) * 100.0;
            format!("{}{} pp {name}", if pp >= 0.0 { "+" } else { "−" }, sig2(pp.abs()))
        }
        (Some(ma), Some(mb)) if mb != 0.0 && ma / mb > 0.0 => {
            format!("{}× the {name}", sig2(ma / mb))
        }
        (ma, mb) => format!(
            "{name} {} against {}",
            ma.map_or("–".into(), |x| values::plain(shown.metric, x)),
            mb.map_or("–".into(), |x| values::plain(shown.metric, x))
        ),
    }
}

/// Two significant digits (at least the units: 254× not 250×).
fn sig2(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return values::sig3(x);
    }
    let mag = x.abs().log10().floor() as i32;
    values::grouped(x, (1 - mag).clamp(0, 6) as usize)
}

/// What `a` trades against `reference` on the ranked metrics, in words (`None` when they do not
/// differ significantly on any: nothing is traded).
fn trade_words(verdict: &Verdict, a: &Candidate, reference: &Candidate) -> Option<String> {
    let objective = &verdict.objective;
    let mut gains = Vec::new();
    let mut costs = Vec::new();
    for i in 0..objective.rank.len() {
        match separates_by(objective, i, a, reference, false) {
            Some(Ordering::Less) => gains.push(difference_words(verdict, i, a, reference)),
            Some(Ordering::Greater) => costs.push(difference_words(verdict, i, a, reference)),
            _ => {}
        }
    }
    Some(match (gains.is_empty(), costs.is_empty()) {
        (true, true) => return None,
        (false, true) => format!("{} at no cost on the ranked metrics", gains.join(" and ")),
        (true, false) => format!("{} for nothing in return", costs.join(" and ")),
        (false, false) => format!("{} for {}", gains.join(" and "), costs.join(" and ")),
    })
}

/// A shell word: quoted when it holds anything but plain characters.
fn shell(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// What a requirement's compared value is: the one-sided 95% bound over the replications, or
/// with one replication that run's value (the bound of one value is the value: no confidence).
fn bound_word(verdict: &Verdict) -> &'static str {
    if verdict.single_replication {
        "one run's value"
    } else {
        "95% bound"
    }
}

/// The `retrystorm plan` command that finds the workers (capacity) that meet the requirements:
/// on the hop a failed requirement names, else the first; from its workers to 32 times as many;
/// with the run's `--set`, `--seed`, `--replications` and `--jitter`.
pub fn plan_command(verdict: &Verdict, closest: &Ranked, ctx: &Context) -> Option<String> {
    let failed_hop = closest
        .requirements
        .iter()
        .zip(&verdict.objective.require)
        .find(|(r, q)| r.verdict == Met::NotMet && q.metric.scope == MetricScope::Hop)
        .map(|(_, q)| q.metric.name.as_str());
    let hop = match failed_hop {
        Some(name) => ctx.hops.iter().find(|h| h.name == name)?,
        None => ctx.hops.first()?,
    };
    if hop.cache.is_some() {
        return None;
    }
    let file = if ctx.provenance.scenario_file.is_empty() { "SCENARIO.toml" } else { &ctx.provenance.scenario_file };
    let hi = (hop.workers.saturating_mul(32)).max(hop.workers + 1);
    let mut words = vec![
        "retrystorm".to_string(),
        "plan".into(),
        shell(file),
        "--vary".into(),
        shell(&format!("hop.{}.workers={}..{hi}", hop.name, hop.workers)),
    ];
    for o in &ctx.provenance.overrides {
        words.push("--set".into());
        words.push(shell(o));
    }
    let args = &ctx.provenance.command;
    let given_jitter = args.iter().any(|a| a == "--jitter" || a.starts_with("--jitter="));
    if let (Some(j), false) = (&ctx.jitters, given_jitter) {
        words.push("--jitter".into());
        words.push(shell(j));
    }
    for flag in ["--seed", "--replications", "--jitter"] {
        for (i, a) in args.iter().enumerate() {
            let value = if a == flag {
                args.get(i + 1).cloned()
            } else {
                a.strip_prefix(&format!("{flag}=")).map(String::from)
            };
            if let Some(v) = value {
                words.push(flag.into());
                words.push(shell(&v));
            }
        }
    }
    Some(words.join(" "))
}

/// Fills `verdict.answer` and each non-dominated variant's `trade_off` against the
/// recommendation.
pub fn explain(verdict: &mut Verdict, candidates: &[Candidate], ctx: &Context) {
    // The recommendation of each condition (its first-ranked variant).
    let mut firsts: Vec<usize> = Vec::new();
    for (i, r) in verdict.ranking.iter().enumerate() {
        if i == 0 || r.condition != verdict.ranking[i - 1].condition {
            firsts.push(i);
        }
    }
    for (g, &first) in firsts.iter().enumerate() {
        let end = firsts.get(g + 1).copied().unwrap_or(verdict.ranking.len());
        let Some(reference) = candidate(candidates, &verdict.ranking[first].variant) else { continue };
        for k in first + 1..end {
            if !verdict.ranking[k].pareto_front {
                continue;
            }
            if let Some(c) = candidate(candidates, &verdict.ranking[k].variant) {
                verdict.ranking[k].trade_off = trade_words(verdict, c, reference);
            }
        }
    }
    verdict.answer = answer(verdict, candidates, ctx, &firsts);
}

fn answer(verdict: &Verdict, candidates: &[Candidate], ctx: &Context, firsts: &[usize]) -> String {
    let ranking = &verdict.ranking;
    if ranking.is_empty() {
        return "No variant to judge.".into();
    }
    if verdict.compares_conditions {
        let aspects: Vec<&str> = differing_aspects(candidates);
        let mut text = format!(
            "These variants compare conditions, not policies: they differ in {} — no condition is ranked above another ({} is not something to choose)",
            aspects.join(" and "),
            match aspects.as_slice() {
                ["faults"] => "a fault",
                ["load"] => "a load",
                ["hops"] => "a topology",
                _ => "a condition",
            }
        );
        let best: Vec<String> = firsts
            .iter()
            .enumerate()
            .filter(|&(g, &f)| firsts.get(g + 1).copied().unwrap_or(ranking.len()) - f > 1)
            .map(|(_, &f)| {
                format!(
                    "{} (under {})",
                    label_of(candidates, &ranking[f].variant),
                    ranking[f].condition.as_deref().unwrap_or("")
                )
            })
            .collect();
        if best.is_empty() {
            text.push_str("; each condition has one variant, so nothing is ranked.");
        } else {
            text.push_str(&format!("; best within each condition: {}.", best.join("; ")));
        }
        return text;
    }
    if let Some(reason) = verdict.abstain_reason.as_deref().filter(|_| !verdict.observed) {
        return format!("No recommendation: {reason}. {}", unobserved_fix(candidates, ctx));
    }
    let first = &ranking[0];
    let values = candidate(candidates, &first.variant).map(|c| values_of(verdict, &c.metrics));
    let values = values.map(|v| format!(": {v}")).unwrap_or_default();
    if ranking.len() == 1 && first.meets_all != Some(false) {
        let meets = if first.meets_all == Some(true) { " It meets every requirement." } else { "" };
        return format!(
            "One variant ({}), so nothing is ranked{values}.{meets} Compare retry strategies with `retrystorm compare`.",
            label_of(candidates, &first.variant)
        );
    }
    let tied: Vec<String> =
        ranking.iter().take_while(|r| r.rank == first.rank).map(|r| label_of(candidates, &r.variant)).collect();
    let recommended = if tied.len() > 1 {
        format!(
            "any of {} (indistinguishable under the tie thresholds; {} shown)",
            tied.join(", "),
            label_of(candidates, &first.variant)
        )
    } else {
        label_of(candidates, &first.variant)
    };
    match first.meets_all {
        Some(false) => {
            let n = verdict.objective.require.len();
            let met = |r: &Ranked| r.requirements.iter().filter(|x| x.verdict == Met::Met).count();
            let best = ranking.iter().map(met).max().unwrap_or(0);
            let closest = ranking.iter().find(|r| met(r) == best).unwrap_or(first);
            let missed: Vec<String> = closest
                .requirements
                .iter()
                .zip(&verdict.objective.require)
                .filter(|(r, _)| r.verdict == Met::NotMet)
                .map(|(r, q)| {
                    let shown = r.bound.map_or("a replication without a value".to_string(), |b| {
                        format!("{} {}", bound_word(verdict), values::plain(q.metric.metric, b))
                    });
                    format!("{q} ({shown})")
                })
                .collect();
            let plan = plan_command(verdict, closest, ctx)
                .map(|c| format!("; to find the capacity that would meet them: {c}"))
                .unwrap_or_default();
            format!(
                "No variant meets every requirement; closest: {} (meets {} of {n}; misses {}){plan}",
                label_of(candidates, &closest.variant),
                met(closest),
                missed.join(", ")
            )
        }
        Some(true) => {
            format!("Recommended: {recommended} — meets every requirement{values}{}", caveats(verdict, candidates))
        }
        None => format!("Recommended: {recommended}{values}{}", caveats(verdict, candidates)),
    }
}

/// What to change so that the outcomes are observed: a horizon long enough for the backlog left
/// at the cut to drain at the first hop's capacity (runs drain for up to 2 × horizon), or more
/// capacity when that would take too long.
fn unobserved_fix(candidates: &[Candidate], ctx: &Context) -> String {
    use crate::metrics::catalogue::Metric;
    let Some(horizon) = ctx.horizon_s else {
        return "Extend the horizon (runs drain for up to 2 × horizon) or raise max_events.".into();
    };
    let mean = |c: &Candidate, m: Metric| c.metrics.global.get(m).and_then(|s| s.mean);
    let drain = candidates
        .iter()
        .filter_map(|c| Some(mean(c, Metric::InFlight)? / mean(c, Metric::CapacityPerS).filter(|&x| x > 0.0)?))
        .fold(0.0f64, f64::max);
    if drain > 0.0 && drain > 100.0 * horizon {
        return format!(
            "The requests left in flight would take {} to drain at the first hop's capacity: add capacity (workers, replicas) or shorten the service time rather than the wait.",
            super::format::fmt_secs(drain)
        );
    }
    let needed = horizon + drain / 2.0;
    let nice = if needed > horizon { nice_up(needed) } else { nice_up(2.0 * horizon) };
    format!(
        "Extend the horizon to ≥ {} (runs drain for up to 2 × horizon; `--set horizon={}s`), or raise max_events if it was the limit.",
        super::format::fmt_secs(nice),
        values::grouped(nice, 0).replace(',', "")
    )
}

/// `x` rounded up to 1, 2 or 5 times a power of ten.
fn nice_up(x: f64) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return x;
    }
    let p = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * p).find(|&v| v >= x).unwrap_or(10.0 * p)
}

/// What the recommendation's answer must add: the tenant the variants differ most on, and a
/// variant that delivered significantly more than the recommended one (a gain on a later
/// criterion bought by failing more is a trade-off, stated, not hidden).
fn caveats(verdict: &Verdict, candidates: &[Candidate]) -> String {
    use crate::metrics::objective::Criterion;
    let Some(first) = verdict.ranking.first().and_then(|r| candidate(candidates, &r.variant)) else {
        return String::new();
    };
    let mut out = String::new();
    if let Some(tenant) = &verdict.tenant {
        let success = Criterion::parse(&format!("tenant.{tenant}.success_ratio")).expect("catalogued");
        let mean = |c: &Candidate| success.metric.stat(&c.metrics).and_then(|s| s.mean);
        let others: Vec<String> = candidates
            .iter()
            .filter(|c| c.name != first.name)
            .filter_map(|c| Some(format!("{} {:.2}%", c.label, mean(c)? * 100.0)))
            .collect();
        if !others.is_empty() {
            out.push_str(&format!(
                " ({tenant} is the tenant where the variants differ most; there {} succeeded)",
                others.join(", ")
            ));
        }
    }
    let system = Criterion::parse("success_ratio").expect("catalogued");
    let objective = crate::metrics::objective::Objective::with_default_ties(vec![system], Vec::new());
    let words = Verdict { objective: objective.clone(), tenant: None, ..verdict.clone() };
    let better: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| c.name != first.name)
        .filter(|c| separates_by(&objective, 0, c, first, false) == Some(Ordering::Less))
        .collect();
    let success = |c: &Candidate| objective.rank[0].metric.stat(&c.metrics).and_then(|s| s.mean).unwrap_or(0.0);
    if let Some(most) = better.iter().max_by(|a, b| success(a).total_cmp(&success(b))) {
        let others = match better.len() {
            1 => String::new(),
            n => format!(" and {}", crate::report::format::count_of(n as u64 - 1, "other variant")),
        };
        out.push_str(&format!(
            ". A trade-off: {}{others} delivered significantly more, within the tie threshold ({}: {})",
            most.label,
            most.label,
            difference_words(&words, 0, most, first)
        ));
    }
    out
}

/// The aspects of the condition (faults, load, hops) that differ between candidates.
fn differing_aspects<'a>(candidates: &'a [Candidate]) -> Vec<&'a str> {
    let Some(first) = candidates.first() else { return Vec::new() };
    first
        .condition
        .iter()
        .enumerate()
        .filter(|(i, _)| candidates.iter().any(|c| c.condition.get(*i) != first.condition.get(*i)))
        .map(|(_, (aspect, _))| aspect.as_str())
        .collect()
}

/// One line of the verdict's ranking: the heading of a condition, or a variant's entry.
#[derive(Clone, Debug)]
pub enum RankLine {
    /// `under faults: …:` — the variants that follow share this condition.
    Condition(String),
    /// One variant.
    Entry(RankEntry),
}

/// A variant's entry in the ranking, in parts, so that stdout can draw it as a table row.
#[derive(Clone, Debug)]
pub struct RankEntry {
    /// `3.`, or `·` for the one variant of its condition.
    pub place: String,
    /// The variant as people read it (`none — immediate retry`).
    pub label: String,
    /// On the Pareto front (among two or more).
    pub front: bool,
    /// Why it is not higher: ` (behind on latency_s_p99)`, or empty.
    pub why: String,
    /// The ranked metric (index in the objective's `rank`) that placed it below the variant
    /// before it, if one did.
    pub behind: Option<usize>,
    /// Each ranked metric's value, in the objective's order.
    pub values: Vec<String>,
    /// `  ✓ meets every requirement`, `  ✗ misses a requirement`, or empty.
    pub meets: &'static str,
}

impl RankEntry {
    /// The entry as one line of the verdict.
    pub fn line(&self, labels: &[String]) -> String {
        let values: Vec<String> = labels.iter().zip(&self.values).map(|(l, v)| format!("{l} {v}")).collect();
        format!(
            "  {} {}{}{}: {}{}",
            self.place,
            self.label,
            if self.front { " ◆" } else { "" },
            self.why,
            values.join(", "),
            self.meets
        )
    }
}

/// The verdict in parts: the answer, how it ranks, the ranked metrics' labels, the ranking, and
/// what follows it (the Pareto front's trade-offs and the requirements).
#[derive(Clone, Debug)]
pub struct VerdictParts {
    /// The answer, first.
    pub answer: String,
    /// `Verdict: ranked by …`.
    pub rule: String,
    /// The ranked metrics in words (`succeeded`, `p99 latency at db`).
    pub labels: Vec<String>,
    /// The ranking.
    pub ranking: Vec<RankLine>,
    /// The Pareto front, its trade-offs and the requirements.
    pub tail: Vec<String>,
}

impl VerdictParts {
    /// The verdict as plain lines: the answer, how it ranks, one line per variant, the tail.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![self.answer.clone(), self.rule.clone()];
        lines.extend(self.ranking.iter().map(|r| match r {
            RankLine::Condition(c) => format!("  under {c}:"),
            RankLine::Entry(e) => e.line(&self.labels),
        }));
        lines.extend(self.tail.iter().cloned());
        lines
    }
}

/// The verdict as plain lines (no Markdown): the answer, how it ranks, one line per variant, the
/// Pareto front's trade-offs and the requirements.
pub fn verdict_lines(verdict: &Verdict, candidates: &[Candidate]) -> Vec<String> {
    verdict_parts(verdict, candidates).lines()
}

/// The ranked metrics in words, each as the tables show it.
fn labels_of(verdict: &Verdict) -> Vec<String> {
    verdict.objective.rank.iter().map(|c| label(&verdict.shown(c))).collect()
}

/// The verdict in parts ([`VerdictParts`]).
pub fn verdict_parts(verdict: &Verdict, candidates: &[Candidate]) -> VerdictParts {
    let objective = &verdict.objective;
    let criteria: Vec<String> = objective
        .rank
        .iter()
        .map(|c| {
            let each = if c.metric.is_every_tenant() { ", tenant by tenant" } else { "" };
            let own = if c.of_successes() { ", only between variants that deliver alike" } else { "" };
            format!("{} (tie within {}{each}{own})", c, objective.tie_of(c).words_for(c))
        })
        .collect();
    let answer = verdict.answer.clone();
    let rule = if verdict.observed {
        format!(
            "Verdict: ranked by {}; a difference within its tie threshold or whose paired 95% interval (same seeds) includes 0 is a tie and the next metric decides; a shared rank means indistinguishable{}",
            criteria.join(", then "),
            if verdict.single_replication { " (one replication: no confidence, ranked on single values)" } else { "" }
        )
    } else {
        format!("Not ranked: the outcomes the ranking needs were not observed; the variants' values on {} as far as they ran:", labels_of(verdict).join(", "))
    };
    let labels = labels_of(verdict);
    let mut ranking = Vec::new();
    let mut lines = Vec::new();
    let mut condition: Option<&str> = None;
    for r in &verdict.ranking {
        let Some(c) = candidate(candidates, &r.variant) else { continue };
        if verdict.compares_conditions && r.condition.as_deref() != condition {
            condition = r.condition.as_deref();
            ranking.push(RankLine::Condition(condition.unwrap_or("").to_string()));
        }
        let shares = verdict.ranking.iter().filter(|o| o.rank == r.rank && o.condition == r.condition).count() > 1;
        let why = match &r.behind_on {
            Some(on) if on == "requirements" => " (behind: misses a requirement)".to_string(),
            Some(on) => format!(" (behind on {on})"),
            None if shares && verdict.observed => format!(" (indistinguishable: shares rank {})", r.rank),
            None => String::new(),
        };
        let meets = match r.meets_all {
            Some(true) => "  ✓ meets every requirement",
            Some(false) => "  ✗ misses a requirement",
            None => "",
        };
        let alone = verdict.ranking.iter().filter(|o| o.condition == r.condition).count() == 1;
        let place = if (alone && verdict.compares_conditions) || !verdict.observed {
            "·".to_string()
        } else {
            format!("{}.", r.rank)
        };
        let values = objective
            .rank
            .iter()
            .map(|k| {
                let shown = verdict.shown(k);
                values::value(shown.metric, shown.stat(&c.metrics))
            })
            .collect();
        ranking.push(RankLine::Entry(RankEntry {
            place,
            label: c.label.clone(),
            front: r.pareto_front && !alone,
            behind: r
                .behind_on
                .as_deref()
                .and_then(|on| objective.rank.iter().position(|k| k.metric.to_string() == on)),
            why,
            values,
            meets,
        }));
    }
    let front: Vec<&Ranked> = verdict
        .ranking
        .iter()
        .filter(|r| r.pareto_front && verdict.ranking.iter().filter(|o| o.condition == r.condition).count() > 1)
        .collect();
    if !front.is_empty() {
        let names: Vec<String> = front.iter().map(|r| label_of(candidates, &r.variant)).collect();
        lines.push(format!(
            "  ◆ Pareto front ({}): no other variant{} is at least as good on every ranked metric and better on one",
            names.join(", "),
            if verdict.compares_conditions { " of its condition" } else { "" }
        ));
        for r in &verdict.ranking {
            if let Some(t) = &r.trade_off {
                let reference = verdict
                    .ranking
                    .iter()
                    .find(|o| o.condition == r.condition)
                    .map_or(String::new(), |o| label_of(candidates, &o.variant));
                lines.push(format!("    {} against {reference}: {t}", label_of(candidates, &r.variant)));
            }
        }
    }
    for (i, req) in objective.require.iter().enumerate() {
        let met: Vec<String> = verdict
            .ranking
            .iter()
            .filter(|r| r.requirements.get(i).is_some_and(|x| x.verdict == Met::Met))
            .map(|r| label_of(candidates, &r.variant))
            .collect();
        let missed: Vec<String> = verdict
            .ranking
            .iter()
            .filter(|r| r.requirements.get(i).is_some_and(|x| x.verdict == Met::NotMet))
            .map(|r| {
                let x = &r.requirements[i];
                let shown = x.bound.map_or("a replication without a value".to_string(), |b| {
                    format!("{} {}", bound_word(verdict), values::plain(req.metric.metric, b))
                });
                format!("{} ({shown})", label_of(candidates, &r.variant))
            })
            .collect();
        let text = match (met.is_empty(), missed.is_empty()) {
            (true, _) => format!("met by no variant; not met by {}", missed.join(", ")),
            (false, true) => format!("met by every variant ({})", met.join(", ")),
            (false, false) => format!("met by {}; not met by {}", met.join(", "), missed.join(", ")),
        };
        lines.push(format!("  requirement {req}: {text}"));
    }
    VerdictParts { answer, rule, labels, ranking, tail: lines }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::catalogue::Metric;
    use crate::metrics::stats::{Stat, StatRow};

    #[test]
    fn the_plan_command_varies_the_hop_a_missed_requirement_names_and_repeats_the_run() {
        let objective =
            crate::metrics::objective::Objective::parse(&[], &["hop.db.peak_over_capacity <= 1".into()]).unwrap();
        let db = StatRow(vec![(Metric::PeakOverCapacity, Stat::from_values(vec![Some(2.0), Some(2.2)]))]);
        let hops = vec![("db".to_string(), db)];
        let global = StatRow(Vec::new());
        let candidates = [Candidate::new("a", &global, &hops, &[])];
        let v = crate::runner::verdict::verdict(&objective, &candidates);
        let hop = |name: &str, workers: u32| HopInfo {
            name: name.into(),
            workers,
            queue_limit: 10,
            service: String::new(),
            capacity_per_s: Some(1.0),
            downstream_policy: None,
            idempotency_ttl_s: None,
            replicas: None,
            cache: None,
        };
        let hops_info = [hop("api", 8), hop("db", 4)];
        let provenance = Provenance {
            command: ["retrystorm", "run", "my file.toml", "--seed", "7", "--set", "a=b c", "--replications=3"]
                .map(String::from)
                .to_vec(),
            overrides: vec!["a=b c".into()],
            scenario_file: "my file.toml".into(),
            scenario_hash: String::new(),
        };
        let ctx = Context { provenance: &provenance, hops: &hops_info, jitters: None, horizon_s: None };
        assert_eq!(
            plan_command(&v, &v.ranking[0], &ctx).unwrap(),
            "retrystorm plan 'my file.toml' --vary hop.db.workers=4..128 --set 'a=b c' --seed 7 --replications 3"
        );
        assert_eq!(shell("it's"), "'it'\\''s'");
    }
}
