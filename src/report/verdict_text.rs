//! The verdict in words: the last lines of stdout and the report's "Verdict" section.

use super::values;
use crate::metrics::objective::{Scoped, Verdict as Met};
use crate::runner::verdict::{Candidate, Verdict};

/// The verdict as plain lines (no Markdown), given the candidates it was computed from.
pub fn verdict_lines(verdict: &Verdict, candidates: &[Candidate]) -> Vec<String> {
    let criteria: Vec<String> = verdict.objective.rank.iter().map(|c| c.to_string()).collect();
    let mut lines = vec![format!(
        "Verdict: ranked by {}; paired 95% intervals on the same seeds, a shared rank means indistinguishable{}",
        criteria.join(", then "),
        if verdict.single_replication { " (one replication: no confidence, ranked on single values)" } else { "" }
    )];
    let find = |name: &str| candidates.iter().find(|c| c.name == name).map(|c| &c.metrics);
    for r in &verdict.ranking {
        let Some(metrics) = find(&r.variant) else { continue };
        let values: Vec<String> = verdict
            .objective
            .rank
            .iter()
            .map(|c| {
                format!("{} {}", label(&c.metric, metrics), values::value(c.metric.metric, c.metric.stat(metrics)))
            })
            .collect();
        let why = match &r.behind_on {
            Some(on) if on == "requirements" => " (behind: misses a requirement)".to_string(),
            Some(on) => format!(" (behind on {on})"),
            None if verdict.ranking.iter().filter(|o| o.rank == r.rank).count() > 1 => {
                format!(" (indistinguishable: shares rank {})", r.rank)
            }
            None => String::new(),
        };
        let meets = match r.meets_all {
            Some(true) => "  ✓ meets every requirement",
            Some(false) => "  ✗ misses a requirement",
            None => "",
        };
        lines.push(format!("  {}. {}{why}: {}{meets}", r.rank, r.variant, values.join(", ")));
    }
    for (i, req) in verdict.objective.require.iter().enumerate() {
        let met: Vec<&str> = verdict
            .ranking
            .iter()
            .filter(|r| r.requirements.get(i).is_some_and(|x| x.verdict == Met::Met))
            .map(|r| r.variant.as_str())
            .collect();
        let missed: Vec<String> = verdict
            .ranking
            .iter()
            .filter(|r| r.requirements.get(i).is_some_and(|x| x.verdict == Met::NotMet))
            .map(|r| {
                let x = &r.requirements[i];
                let shown = x.bound.map_or("a replication without a value".to_string(), |b| {
                    format!("95% bound {}", values::plain(req.metric.metric, b))
                });
                format!("{} ({shown})", r.variant)
            })
            .collect();
        lines.push(format!(
            "  requirement {req}: met by {}; not met by {}",
            if met.is_empty() { "none".into() } else { met.join(", ") },
            if missed.is_empty() { "none".into() } else { missed.join(", ") }
        ));
    }
    lines
}

fn label(metric: &crate::metrics::objective::MetricRef, _metrics: &Scoped) -> String {
    let words = metric.metric.def().label.trim_end_matches(" (s)");
    match metric.scope {
        crate::metrics::catalogue::Scope::Global => words.to_string(),
        _ => format!("{} at {}", words, metric.name),
    }
}
