//! The compact table `run` and `compare` print: one row per variant, key metrics with CIs.

use crate::metrics::catalogue::Metric;
use crate::report::format::table_cell as cell;
use crate::runner::Study;
use std::fmt::Write;

/// The table's metric columns; headings are the catalogue's short labels.
const COLUMNS: [Metric; 8] = [
    Metric::Attempts,
    Metric::Amplification,
    Metric::PeakOverCapacity,
    Metric::SuccessRatio,
    Metric::Dlq,
    Metric::LatencySP99,
    Metric::CompletionTimeS,
    Metric::RecoveryTimeS,
];

/// The metric whose paired difference vs the baseline the table shows.
pub const DIFF_METRIC: Metric = Metric::Attempts;

/// The table as text.
pub fn summary_table(study: &Study) -> String {
    let mut rows: Vec<Vec<String>> =
        vec![std::iter::once("variant".to_string()).chain(COLUMNS.iter().map(|m| m.def().short.to_string())).collect()];
    // With several variants, one more column: the paired difference of attempts vs the baseline.
    let baseline = study.comparisons.first().map(|c| c.baseline.as_str());
    if baseline.is_some() {
        rows[0].push(format!("Δ{DIFF_METRIC}"));
    }
    for v in &study.variants {
        let mut row = vec![v.name.clone()];
        row.extend(COLUMNS.iter().map(|&m| cell(v.metrics.get(m))));
        if baseline.is_some() {
            let diff = study.comparisons.iter().find(|c| c.variant == v.name);
            let paired = diff.and_then(|c| c.metrics.iter().find(|(m, _)| *m == DIFF_METRIC)).map(|(_, d)| &d.paired);
            row.push(if diff.is_some() { cell(paired) } else { "baseline".into() });
        }
        rows.push(row);
    }
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} replication(s), seed {}, mean ±95% CI half-width{}",
        study.scenario,
        study.replications,
        study.seed,
        baseline.map(|b| format!("; Δ: paired difference vs {b} (same seeds)")).unwrap_or_default()
    );
    for row in rows {
        let line: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:>w$}")).collect();
        let _ = writeln!(out, "{}", line.join("  "));
    }
    out
}

/// The verdict lines that end stdout.
pub fn verdict_text(study: &Study) -> String {
    let verdict = study.verdict();
    let candidates: Vec<crate::runner::verdict::Candidate> = study
        .variants
        .iter()
        .map(|v| crate::runner::verdict::Candidate::new(&v.name, &v.metrics, &v.hops, &v.tenants))
        .collect();
    let mut out = String::new();
    for line in crate::report::verdict_text::verdict_lines(&verdict, &candidates) {
        let _ = writeln!(out, "{line}");
    }
    out
}
