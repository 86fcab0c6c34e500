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
        if line.chars().count() <= width {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        // A command line to copy is continued with ` \` as a shell reads it.
        if line.trim_start().starts_with("retrystorm ") {
            out.push_str(&continued_command(line, width));
            continue;
        }
        let indent = line.chars().take_while(|c| *c == ' ').count();
        for wrapped in crate::engine::text::wrap_words(&line[indent..], indent, width) {
            out.push_str(&wrapped);
            out.push('\n');
        }
    }
    out
}

/// A long command line broken between its words (never inside quotes) with ` \` at the end of
/// each line but the last, so it can still be copied into a shell; continuation lines indented
/// two more than the first.
fn continued_command(line: &str, width: usize) -> String {
    let indent = line.chars().take_while(|c| *c == ' ').count();
    // Words, with a quoted stretch kept inside its word.
    let mut words: Vec<String> = Vec::new();
    let mut quote: Option<char> = None;
    let mut word = String::new();
    for c in line[indent..].chars() {
        match (quote, c) {
            (None, ' ') => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                continue;
            }
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            _ => {}
        }
        word.push(c);
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut out = String::new();
    let mut current = " ".repeat(indent);
    let mut has_word = false;
    for w in words {
        if has_word && current.chars().count() + 1 + w.chars().count() + 2 > width {
            out.push_str(&current);
            out.push_str(" \\\n");
            current = " ".repeat(indent + 2);
            has_word = false;
        }
        if has_word {
            current.push(' ');
        }
        current.push_str(&w);
        has_word = true;
    }
    out.push_str(&current);
    out.push('\n');
    out
}

/// How the values read: means ±95% CI half-widths, or why there is no ±.
fn precision_note(study: &Study) -> String {
    if study.replications < 2 {
        "1 replication: values without ± (a 95% confidence interval needs at least 2 replications)".into()
    } else {
        let few = if (study.replications as usize) < crate::metrics::stats::USEFUL_REPLICATIONS_MIN {
            // An emulated study's replications are its runs.
            let flag = if study.emulation.is_some() { "--runs" } else { "--replications" };
            format!(
                "; too few for a useful interval: with {} replications each interval spans over four standard errors each side (use {flag} 10)",
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

/// The table as text, its lines at most `width` columns wide where they can be; every variant's
/// column, in blocks.
pub fn summary_table(study: &Study, width: usize) -> String {
    table_of(study, width, None, true)
}

/// The table's variant columns in stdout's order: the baseline (the comparisons'), then the verdict's ranking, so its leaders stand side by side. When they would take more than
/// [`BLOCKS_MAX`] blocks of `width`, only the first block's (the baseline and the leaders that
/// fit beside it; the rows then drop `system · ` to make room). None: every column in the
/// study's order (`--wide`, a single variant, nothing differs).
fn leader_columns(study: &Study, ranking: &[String], width: usize) -> Option<Vec<usize>> {
    let d = differing(study);
    if width >= WIDE || study.variants.len() < 2 || d.rows.is_empty() {
        return None;
    }
    let names: Vec<String> = study
        .variants
        .iter()
        .map(|v| crate::report::setup::label_of(&v.name, &crate::report::setup::setup_of(&v.spec)))
        .collect();
    let col_w = |c: usize| {
        2 + d.rows.iter().map(|r| r.cells[c].chars().count()).chain([names[c].chars().count()]).max().unwrap_or(0)
    };
    let baseline =
        study.comparisons.first().and_then(|c| study.variants.iter().position(|v| v.name == c.baseline)).unwrap_or(0);
    let mut order: Vec<usize> = std::iter::once(baseline)
        .chain(ranking.iter().filter_map(|name| study.variants.iter().position(|v| &v.name == name)))
        .collect();
    let mut seen = Vec::new();
    order.retain(|c| {
        !seen.contains(c) && {
            seen.push(*c);
            true
        }
    });
    // Greedy blocks, as `render` lays them out: how many columns each block takes.
    let blocks = |label_w: usize| -> Vec<usize> {
        let mut sizes = vec![0usize];
        let mut line_w = 2 + label_w;
        for &c in &order {
            let last = sizes.last_mut().expect("a block");
            if *last > 0 && line_w + col_w(c) > width {
                sizes.push(1);
                line_w = 2 + label_w + col_w(c);
            } else {
                *last += 1;
                line_w += col_w(c);
            }
        }
        sizes
    };
    let full = blocks(d.rows.iter().map(|r| r.label.chars().count() + 2).max().unwrap_or(0));
    if full.len() <= BLOCKS_MAX {
        return Some(order);
    }
    let short = blocks(d.rows.iter().map(|r| short_label(&r.label).chars().count() + 2).max().unwrap_or(0));
    order.truncate(short[0]);
    Some(order)
}

/// The most blocks of variant columns stdout prints by default; past it, only the leaders'.
const BLOCKS_MAX: usize = 2;

/// A row's label in the leaders-only table: whole-system rows without their `system · `.
fn short_label(label: &str) -> &str {
    label.strip_prefix("system · ").unwrap_or(label)
}

/// The first line of stdout: the scenario, its variants, seed and how the values read.
fn header_line(study: &Study) -> String {
    format!(
        "{}: {}, seed {}; {}\n",
        study.scenario,
        crate::report::format::count_of(study.variants.len() as u64, "variant"),
        study.seed,
        precision_note(study)
    )
}

/// [`summary_table`] with only `columns` (in that order) when given, and a line naming the
/// variants left out; `header`: opened by [`header_line`].
fn table_of(study: &Study, width: usize, columns: Option<&[usize]>, header: bool) -> String {
    let mut out = String::new();
    // Column headings as people read them: `none — immediate retry`, not `none`.
    let names: Vec<String> = study
        .variants
        .iter()
        .map(|v| crate::report::setup::label_of(&v.name, &crate::report::setup::setup_of(&v.spec)))
        .collect();
    if header {
        out.push_str(&header_line(study));
    }
    if names.len() < 2 {
        render(&mut out, &names, &plain_rows(&study.variants[0]), width);
        return fit(&out, width);
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
        let some = columns.is_some_and(|c| c.len() < names.len());
        let _ = writeln!(
            out,
            "What differs: {} figure(s) whose {rule} {baseline} excludes 0 for some variant; * = used by the verdict{}",
            differs.rows.len(),
            if some {
                "; the baseline and the verdict's leaders side by side, whole-system rows unless a hop or tenant is named"
            } else {
                ""
            }
        );
        let pick = |cells: &[String]| -> Vec<String> {
            columns.map_or_else(|| cells.to_vec(), |cols| cols.iter().map(|&c| cells[c].clone()).collect())
        };
        let rows: Vec<(String, Vec<String>)> = differs
            .rows
            .iter()
            .map(|r| {
                let label = if some { short_label(&r.label) } else { r.label.as_str() };
                (format!("{}{label}", if r.objective { "* " } else { "  " }), pick(&r.cells))
            })
            .collect();
        render(&mut out, &pick(&names), &rows, width);
        if let Some(cols) = columns.filter(|c| c.len() < names.len()) {
            let _ = writeln!(
                out,
                "  the other {} (ranked above): report.html and summary.json have every column; --wide prints them here",
                crate::report::format::count_of((names.len() - cols.len()) as u64, "variant")
            );
        }
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

/// What `run` and `compare` print: the answer and a compact ranking first (one row per variant,
/// a column per ranked metric), then what differs with the verdict's leaders side by side (every
/// variant with `--wide`), `replicas` (the replica lines), and the Pareto front's trade-offs and
/// the requirements.
pub fn study_text(study: &Study, width: usize, replicas: &str) -> String {
    let (verdict, parts) = crate::report::verdict_text::parts_for_study(study);
    let ranking: Vec<String> = verdict.ranking.iter().map(|r| r.variant.clone()).collect();
    let columns = leader_columns(study, &ranking, width);
    let mut out = fit(&header_line(study), width);
    let mut head = String::new();
    let _ = writeln!(head, "{}", parts.answer);
    // One variant: nothing is ranked, so no ranking rule.
    if study.variants.len() > 1 {
        let _ = writeln!(head, "{}", parts.rule);
    }
    let head = if width < WIDE { head.replacen(": retrystorm ", ":\n  retrystorm ", 1) } else { head };
    out.push_str(&fit(&head, width));
    out.push_str(&ranking_table(&parts, width));
    out.push_str(&table_of(study, width, columns.as_deref(), false));
    out.push_str(&fit(replicas, width));
    let mut tail = String::new();
    for line in &parts.tail {
        let _ = writeln!(tail, "{line}");
    }
    out.push_str(&fit(&tail, width));
    out
}

/// The ranking as a table: `place name ◆`, one column per ranked metric (its header wrapped over
/// two lines where it is wider than its values) with `‹` after the value that placed the variant
/// below the one before it, and `req` (✓/✗) when there are requirements.
fn ranking_table(parts: &crate::report::verdict_text::VerdictParts, width: usize) -> String {
    use crate::report::verdict_text::{RankEntry, RankLine};
    let entries: Vec<&RankEntry> = parts
        .ranking
        .iter()
        .filter_map(|r| match r {
            RankLine::Entry(e) => Some(e),
            RankLine::Condition(_) => None,
        })
        .collect();
    if entries.len() < 2 {
        // One variant: the answer already gave its values; nothing is ranked.
        return String::new();
    }
    let has_req = entries.iter().any(|e| !e.meets.is_empty());
    let name = |e: &RankEntry| format!("{} {}{}", e.place, e.label, if e.front { " ◆" } else { "" });
    let name_w = entries.iter().map(|e| name(e).chars().count()).max().unwrap_or(0);
    let cell = |e: &RankEntry, k: usize| {
        let v = e.values.get(k).map_or("", String::as_str);
        if e.behind == Some(k) {
            format!("{v} ‹")
        } else {
            format!("{v}  ")
        }
    };
    let value_w: Vec<usize> = (0..parts.labels.len())
        .map(|k| entries.iter().map(|e| cell(e, k).chars().count()).max().unwrap_or(0))
        .collect();
    // A header wider than its values wraps onto two lines at the space nearest its middle.
    let headers: Vec<[String; 2]> = parts
        .labels
        .iter()
        .zip(&value_w)
        .map(|(l, &w)| {
            let l = format!("{l}  ");
            if l.chars().count() <= w {
                return [String::new(), l];
            }
            let mid = l.chars().count() / 2;
            let cut = l.trim_end().char_indices().filter(|(_, c)| *c == ' ').min_by_key(|(i, _)| i.abs_diff(mid));
            cut.map_or([String::new(), l.clone()], |(i, _)| [format!("{}  ", &l[..i]), l[i + 1..].to_string()])
        })
        .collect();
    let col_w: Vec<usize> =
        headers.iter().zip(&value_w).map(|(h, &w)| w.max(h[0].chars().count()).max(h[1].chars().count())).collect();
    let mut out = String::new();
    for row in 0..2 {
        let mut line = format!("  {:name_w$}", "");
        for (h, w) in headers.iter().zip(&col_w) {
            let _ = write!(line, "  {:>w$}", h[row]);
        }
        if has_req && row == 1 {
            line.push_str("req");
        }
        if !line.trim().is_empty() {
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    for r in &parts.ranking {
        let e = match r {
            RankLine::Condition(c) => {
                let _ = writeln!(out, "  under {c}:");
                continue;
            }
            RankLine::Entry(e) => e,
        };
        let mut line = format!("  {:name_w$}", name(e));
        for (k, w) in col_w.iter().enumerate() {
            let _ = write!(line, "  {:>w$}", cell(e, k));
        }
        if has_req {
            let _ = write!(line, "{:>2}", e.meets.trim().chars().next().map_or(String::new(), String::from));
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    if entries.iter().any(|e| e.behind.is_some()) {
        let _ = writeln!(
            out,
            "  ‹ the metric that placed a variant below the one before it (smaller differences are ties)"
        );
    }
    fit(&out, width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_command_is_continued_with_a_backslash_outside_quotes() {
        let cmd = "  retrystorm plan scenarios/overload-shedding.toml --vary hop.server.workers=2..64 --find smallest --require 'success_ratio >= 0.99' --out /tmp/plan";
        let text = fit(cmd, WIDTH);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() > 1, "{text}");
        for l in &lines {
            assert!(l.chars().count() <= WIDTH, "{l}");
        }
        for l in &lines[..lines.len() - 1] {
            assert!(l.ends_with(" \\"), "{l}");
        }
        assert!(lines[1].starts_with("    --") || lines[1].starts_with("    '"), "{text}");
        // Joined back as a shell would, it is the command again; the quoted part stays whole.
        let joined: Vec<&str> = lines.iter().map(|l| l.trim().trim_end_matches('\\').trim()).collect();
        assert_eq!(joined.join(" "), cmd.trim());
        assert!(lines.iter().any(|l| l.contains("'success_ratio >= 0.99'")), "{text}");
        // A short command is left alone.
        assert_eq!(fit("retrystorm run x.toml", WIDTH), "retrystorm run x.toml\n");
    }
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
