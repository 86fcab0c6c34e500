//! Retry budgets over time: per tenant whose policy has a budget, the tokens left in the budget
//! instance at its retry decisions (left) and the retries it denied per second (right), one line
//! per variant. Drawn from the `budget_tokens` and `budget_denied` columns of `timeseries.csv`.

use super::key::with_key;
use super::load::{draw_time_mesh, fault_key, rate, shade_faults, spike_key, time_axis, variant_lines_key, POINTS_MAX};
use super::narrow;
use super::{downsample, DrawResult, FONT};
use crate::report::charts::palette::draw_variant_line;
use crate::report::data::ReportData;
use crate::runner::SERIES_COLUMNS;
use plotters::coord::Shift;
use plotters::prelude::*;

fn column(name: &str) -> usize {
    SERIES_COLUMNS.iter().position(|c| *c == name).expect("a series column")
}

/// Tenants (by index) whose budget made a retry decision in some variant: tokens or denials.
pub fn budget_tenants(data: &ReportData) -> Vec<usize> {
    let (tokens, denied) = (column("budget_tokens"), column("budget_denied"));
    let tenants = data.variants.first().map_or(0, |v| v.tenant_series.len());
    (0..tenants)
        .filter(|&t| {
            data.variants.iter().any(|v| {
                v.tenant_series.get(t).is_some_and(|s| s.rows.iter().any(|r| r[tokens] != 0.0 || r[denied] != 0.0))
            })
        })
        .collect()
}

/// One row per budgeted tenant: tokens (left), denials/s (right).
pub fn draw_budget<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &ReportData) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let title = format!(
        "{}: retry budget per tenant — tokens and denials (mean of {})",
        data.scenario,
        crate::report::format::count_of(u64::from(data.replications), "replication")
    );
    let root = narrow::titled(root, &title, 24)?;
    let mut key = variant_lines_key(data);
    key.extend(fault_key(data, None));
    key.extend(spike_key(data));
    let root = with_key(&root, &key)?;
    let tenants = budget_tenants(data);
    if tenants.is_empty() {
        return super::empty::one_line(&root, "no retry budget made a decision in any variant: nothing to draw", BLACK);
    }
    let first = &data.variants[0];
    let (t_max, unit) = time_axis(data);
    let (tokens_col, denied_col) = (column("budget_tokens"), column("budget_denied"));
    let panels = root.split_evenly((tenants.len(), 2));
    for (p, panel) in panels.iter().enumerate() {
        let (t, denials) = (tenants[p / 2], p % 2 == 1);
        let name = &first.tenant_series[t].name;
        let lines: Vec<Vec<(f64, f64)>> = data
            .variants
            .iter()
            .map(|v| {
                let s = &v.tenant_series[t];
                if denials {
                    rate(s, denied_col, data.bucket_s, unit)
                } else {
                    // Tokens are a level after each bucket's decisions: drawn at the bucket's end.
                    let pts: Vec<(f64, f64)> = s
                        .rows
                        .iter()
                        .enumerate()
                        .map(|(b, r)| ((b + 1) as f64 * data.bucket_s / unit.secs, r[tokens_col]))
                        .collect();
                    downsample(&pts, POINTS_MAX)
                }
            })
            .collect();
        if !denials && lines.iter().flatten().all(|p| p.1 == 0.0) {
            let text = format!(
                "tenant {name}: no tokens to draw — its budget counts a window (ratio, Finagle, adaptive throttle), not tokens; denials on the right"
            );
            super::empty::one_line(panel, &text, BLACK)?;
            continue;
        }
        let y_max = lines.iter().flatten().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.1;
        let what = if denials { "retries denied by the budget (per s)" } else { "tokens left at retry decisions" };
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("tenant {name}: {what}"), (FONT, 17))
            .margin(10)
            .margin_right(20)
            .x_label_area_size(44)
            .y_label_area_size(78)
            .build_cartesian_2d(0.0..t_max, 0.0..y_max)?;
        draw_time_mesh(&mut chart, (unit.desc, if denials { "denied/s" } else { "tokens" }), false)?;
        shade_faults(&mut chart, first, None, (t_max, 0.0, y_max), unit)?;
        let styles = crate::report::charts::Lines::of(data);
        for i in styles.order() {
            draw_variant_line!(chart, styles, i, lines[i].iter().copied(), 2)?;
        }
    }
    Ok(())
}
