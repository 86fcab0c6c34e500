//! The table `run` and `compare` print. With several variants it leads with what differs: one
//! row per metric (system, hop or tenant) whose paired difference between variants is
//! significant, one column per variant, the verdict's metrics first (`cli::differs`); the metrics
//! equal in every variant collapse to one line. A single variant shows its headline metrics.

use super::differs::{differing, metric_label};
use crate::metrics::catalogue::Metric;
use crate::report::values;
use crate::runner::Study;
use std::fmt::Write;

/// Rows of one variant when there is nothing to compare (a single variant, or nothing differs):
/// every whole-system metric with a value other than 0, and each hop's mean queue wait.
fn plain_rows(v: &crate::runner::VariantResult) -> Vec<(String, Vec<String>)> {
    let mut rows: Vec<(String, Vec<String>)> = v
        .metrics
        .iter()
        .filter(|(m, s)| *m != Metric::Events && s.mean.is_some_and(|x| x != 0.0))
        .map(|(m, s)| (format!("system · {}", metric_label(*m)), vec![values::value(*m, Some(s))]))
        .collect();
    for (name, row) in &v.hops {
        if let Some(s) = row.get(Metric::QueueWaitSMean) {
            rows.push((
                format!("hop {name} · {}", metric_label(Metric::QueueWaitSMean)),
                vec![values::value(Metric::QueueWaitSMean, Some(s))],
            ));
        }
    }
    rows
}

/// The metric whose paired difference vs the baseline the sweep table shows.
pub const DIFF_METRIC: Metric = Metric::Attempts;

/// The widest a line of stdout gets by default (a laptop's terminal): the table's variant
/// columns continue in another block past it, and prose lines wrap ([`fit`]).
pub const WIDTH: usize = 100;

/// The table's width with `--wide`, which also leaves prose lines whole.
pub const WIDE: usize = 160;

/// `text` with every line longer than `width` (below [`WIDE`]) broken at spaces; the continuation lines are
/// indented two more than the line's own indent. Table rows (fitted by [`render`]) are left as
/// they are unless a single column with its label is wider than `width`; a line that is a
/// `retrystorm …` command stays whole, to be copied.
pub fn fit(text: &str, width: usize) -> String {
    if width >= WIDE {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        // A command line to copy stays whole.
        if line.chars().count() <= width || line.trim_start().starts_with("retrystorm ") {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let indent = line.chars().take_while(|c| *c == ' ').count();
        let mut current = " ".repeat(indent);
        let mut has_word = false;
        for word in line[indent..].split(' ') {
            if has_word && current.chars().count() + 1 + word.chars().count() > width {
                out.push_str(current.trim_end());
                out.push('\n');
                current = " ".repeat(indent + 2);
                has_word = false;
            }
            if has_word {
                current.push(' ');
            }
            current.push_str(word);
            has_word = true;
        }
        out.push_str(current.trim_end());
        out.push('\n');
    }
    out
}

/// How the values read: means ±95% CI half-widths, or why there is no ±.
fn precision_note(study: &Study) -> String {
    if study.replications < 2 {
        "1 replication: values without ± (a 95% confidence interval needs at least 2 replications)".into()
    } else {
        let few = if (study.replications as usize) < crate::metrics::stats::USEFUL_REPLICATIONS_MIN {
            format!(
                "; too few for a useful interval: with {} replications each interval spans over four standard errors each side (use --replications 10)",
                study.replications
            )
        } else {
            String::new()
        };
        format!(
            "{} replications: mean ±95% CI half-width (in pp for percentages; \"exact\": all agree; [low–high] where the interval is kept within the metric's range){few}",
            study.replications
        )
    }
}

/// `rows` (label, cells) under `names`, the variant columns split into blocks that fit `width`.
fn render(out: &mut String, names: &[String], rows: &[(String, Vec<String>)], width: usize) {
    let label_w = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let col_w: Vec<usize> = (0..names.len())
        .map(|c| rows.iter().map(|r| r.1[c].chars().count()).chain([names[c].chars().count()]).max().unwrap_or(0))
        .collect();
    let mut start = 0;
    while start < names.len() {
        let mut end = start + 1;
        let mut line_w = 2 + label_w + 2 + col_w[start];
        while end < names.len() && line_w + 2 + col_w[end] <= width {
            line_w += 2 + col_w[end];
            end += 1;
        }
        let mut line = format!("  {:label_w$}", "");
        for c in start..end {
            let w = col_w[c];
            let _ = write!(line, "  {:>w$}", names[c]);
        }
        let _ = writeln!(out, "{}", line.trim_end());
        for (label, cells) in rows {
            let mut line = format!("  {label:label_w$}");
            for c in start..end {
                let w = col_w[c];
                let _ = write!(line, "  {:>w$}", cells[c]);
            }
            let _ = writeln!(out, "{line}");
        }
        start = end;
    }
}

/// The table as text, its lines at most `width` columns wide where they can be.
pub fn summary_table(study: &Study, width: usize) -> String {
    let mut out = String::new();
    // Column headings as people read them: `none — immediate retry`, not `none`.
    let names: Vec<String> = study
        .variants
        .iter()
        .map(|v| crate::report::data::label_of(&v.name, &crate::report::data::setup_of(&v.spec)))
        .collect();
    let _ =
        writeln!(out, "{}: {} variant(s), seed {}; {}", study.scenario, names.len(), study.seed, precision_note(study));
    if names.len() < 2 {
        render(&mut out, &names, &plain_rows(&study.variants[0]), width);
        return out;
    }
    let baseline = study.comparisons.first().map_or(names[0].as_str(), |c| {
        study.variants.iter().position(|v| v.name == c.baseline).map_or(c.baseline.as_str(), |i| names[i].as_str())
    });
    let differs = differing(study);
    let rule = if study.replications < 2 {
        "single paired difference vs".to_string()
    } else {
        "paired 95% interval vs".to_string()
    };
    if differs.rows.is_empty() {
        let _ = writeln!(
            out,
            "What differs: nothing (no metric's {rule} {baseline} excludes 0); the values, as {baseline} has them (non-zero system metrics):"
        );
        render(&mut out, &names[..1], &plain_rows(&study.variants[0]), width);
    } else {
        let _ = writeln!(
            out,
            "What differs: {} figure(s) whose {rule} {baseline} excludes 0 for some variant; * = used by the verdict",
            differs.rows.len()
        );
        let rows: Vec<(String, Vec<String>)> = differs
            .rows
            .iter()
            .map(|r| (format!("{}{}", if r.objective { "* " } else { "  " }, r.label), r.cells.clone()))
            .collect();
        render(&mut out, &names, &rows, width);
    }
    if !differs.implied.is_empty() {
        let _ = writeln!(
            out,
            "  not repeated beside their ratio (same requests or capacity in every variant): {}",
            differs.implied.join(", ")
        );
    }
    if !differs.equal_system.is_empty() || differs.equal_scoped > 0 {
        let names: Vec<&str> = differs.equal_system.iter().map(|m| m.name()).collect();
        let scoped = if differs.equal_scoped > 0 {
            format!("; and {} per-hop/per-tenant figure(s)", differs.equal_scoped)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "Equal in every variant: {}{scoped}",
            if names.is_empty() { "—".into() } else { names.join(", ") }
        );
    }
    fit(&out, width)
}

/// The verdict lines that end stdout (the answer first).
pub fn verdict_text(study: &Study, width: usize) -> String {
    let mut out = String::new();
    for line in crate::report::verdict_text::for_study(study).1 {
        // A command to copy goes on a line of its own, which `fit` leaves whole.
        let line = if width < WIDE { line.replacen(": retrystorm ", ":\n  retrystorm ", 1) } else { line };
        let _ = writeln!(out, "{line}");
    }
    fit(&out, width)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::{run_study, RunOptions};
    use crate::scenario::{parse_assignment, Scenario};

    fn study(name: &str, sets: &[&str]) -> Study {
        let overrides: Vec<_> = sets.iter().map(|s| parse_assignment(s).expect("valid --set")).collect();
        let path = format!("{}/scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        let s = Scenario::load(&path, &overrides).expect("bundled scenario loads");
        let mut study = run_study(&s, &s.run_variants(), &RunOptions { threads: Some(2), progress: false });
        study.set_baseline(0);
        study
    }

    /// The table's rows: (label, cells) of every line under the header (first block only).
    fn rows(text: &str) -> Vec<String> {
        text.lines()
            .skip_while(|l| !l.starts_with("What differs"))
            .skip(2)
            .take_while(|l| l.starts_with("  "))
            .map(String::from)
            .collect()
    }

    #[test]
    fn chain_amplification_leads_with_the_db_amplification() {
        let study = study("chain-amplification", &[]);
        // `--wide`: these tests read the prose lines whole (tests/cli.rs checks the 100 columns).
        let text = summary_table(&study, WIDE);
        let rows = rows(&text);
        // The verdict ranks by the db's amplification: 64× with retries at every layer, 4× at the top only.
        assert!(rows[0].starts_with("  * hop db · amplification ↓"), "{text}");
        assert!(rows[0].contains("64× (exact)") && rows[0].contains("4× (exact)"), "{text}");
        // System metrics equal in both variants collapse to one line; no ±0.000 anywhere.
        assert!(text.contains("Equal in every variant: attempts, retries, amplification, succeeded"), "{text}");
        let zero_half = text.split('±').skip(1).any(|t| {
            let half: String = t.chars().take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',').collect();
            !half.chars().any(|c| ('1'..='9').contains(&c))
        });
        assert!(!zero_half && !text.contains("null"), "{text}");
    }

    #[test]
    fn webhook_duplicates_and_the_quiet_tenant_are_shown_where_they_differ() {
        let d = differing(&study("webhook-ttl", &[]));
        let first = &d.rows[0];
        assert_eq!(first.metric, Metric::Duplicates);
        // The TTL-expired count and the consumer hop repeat it: folded into the row, not repeated.
        assert!(first.label.contains("= duplicates (TTL expired)") && first.label.contains("(= hop consumer)"));
        assert_eq!(first.cells[0], "0 (exact)");
        assert!(!d.rows.iter().skip(1).any(|r| r.metric == Metric::DuplicatesTtlExpired), "{:?}", d.rows);

        let d = differing(&study("noisy-neighbor", &[]));
        let quiet =
            d.rows.iter().find(|r| r.label == "tenant quiet · succeeded ↑").expect("quiet tenant's success differs");
        // Shares print as percentages with their CI in percentage points.
        assert!(quiet.cells.iter().all(|c| c.contains('%') && c.ends_with(" pp")), "{quiet:?}");
    }

    #[test]
    fn one_replication_prints_no_interval_and_says_why() {
        let study = study("chain-amplification", &["replications=1"]);
        let text = summary_table(&study, WIDE);
        assert!(text.contains("values without ± (a 95% confidence interval needs at least 2 replications)"), "{text}");
        assert!(!rows(&text).iter().any(|r| r.contains('±')), "{text}");
    }

    #[test]
    fn nothing_differs_collapses_and_shows_the_values_once() {
        let study = study("idempotency-in-flight", &[]);
        let text = summary_table(&study, WIDE);
        assert!(text.contains("What differs: nothing"), "{text}");
        assert!(text.contains("system · keys released"), "{text}");
        assert!(text.lines().any(|l| l.starts_with("Equal in every variant: attempts")), "{text}");
    }

    #[test]
    fn fit_wraps_long_lines_under_their_indent_and_leaves_short_ones() {
        let text = "short line\n  a b c d e f g h\n";
        assert_eq!(fit(text, 10), "short line\n  a b c d\n    e f g\n    h\n");
        assert_eq!(fit(text, 100), text);
        // A word longer than the width keeps a line of its own.
        assert_eq!(fit("x abcdefghijkl y", 5), "x\n  abcdefghijkl\n  y\n");
    }
}
