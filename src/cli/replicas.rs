//! The per-replica lines `run` and `compare` print after the table for hops with several
//! replicas: where the balancer sent the traffic, what failed, what was ejected.

use crate::metrics::catalogue::Metric;
use crate::report::format::fmt_num;
use crate::runner::Study;
use std::fmt::Write;

/// Replicas listed per variant; the rest are counted.
const SHOWN: usize = 8;

/// The lines (empty without balanced hops).
pub fn replicas_text(study: &Study) -> String {
    let mut out = String::new();
    if study.variants.iter().all(|v| v.replicas.is_empty()) {
        return out;
    }
    out.push_str("Per replica (mean over replications: share of the hop's attempts, failed replies, ejections, time out of rotation):\n");
    for v in &study.variants {
        let mean = |row: &crate::metrics::stats::StatRow, m: Metric| row.get(m).and_then(|s| s.mean).unwrap_or(0.0);
        let parts: Vec<String> = v
            .replicas
            .iter()
            .take(SHOWN)
            .map(|(name, row)| {
                format!(
                    "{name} {}% · {} failed · {} ejected · {} s out",
                    fmt_num(100.0 * mean(row, Metric::TrafficShare)),
                    fmt_num(mean(row, Metric::FailedReplies)),
                    fmt_num(mean(row, Metric::Ejections)),
                    fmt_num(mean(row, Metric::OutOfRotationS))
                )
            })
            .collect();
        let more = v.replicas.len().saturating_sub(SHOWN);
        let tail = if more > 0 { format!(" | … {more} more in summary.json") } else { String::new() };
        let _ = writeln!(out, "  {}: {}{tail}", v.name, parts.join(" | "));
    }
    out
}
