//! `tenant_load` with many tenants: one column per tenant stops being readable beyond a handful,
//! so above [`COLUMNS_MAX`] tenants the [`TOP`] with the most attempts (summed over variants and
//! time) keep their own column, in file order, and the rest are summed into one "others" column
//! named in the legend.

use crate::metrics::stats::StatRow;
use crate::report::data::{ReportData, VariantData};
use crate::runner::{column_index, MeanSeries, SERIES_COLUMNS};

/// A tenant's load: its attempts.
const ATTEMPTS: usize = column_index(&SERIES_COLUMNS, "attempts");

/// The most tenant columns drawn one per tenant.
pub const COLUMNS_MAX: usize = 5;
/// Tenants drawn individually when there are more than [`COLUMNS_MAX`].
pub const TOP: usize = 4;

/// Which tenants get a column and which are summed.
pub struct Grouping {
    /// Indices drawn individually, in file order.
    pub top: Vec<usize>,
    /// Indices summed into "others", in file order.
    pub rest: Vec<usize>,
}

/// None when every tenant gets its own column.
pub fn grouping(data: &ReportData) -> Option<Grouping> {
    let n = data.variants.first().map_or(0, |v| v.tenant_series.len());
    if n <= COLUMNS_MAX {
        return None;
    }
    let load = |t: usize| -> f64 {
        data.variants
            .iter()
            .filter_map(|v| v.tenant_series.get(t))
            .flat_map(|s| s.rows.iter().map(|r| r[ATTEMPTS]))
            .sum()
    };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| load(b).total_cmp(&load(a)).then(a.cmp(&b)));
    let mut top: Vec<usize> = order[..TOP].to_vec();
    let mut rest: Vec<usize> = order[TOP..].to_vec();
    top.sort_unstable();
    rest.sort_unstable();
    Some(Grouping { top, rest })
}

/// The legend line naming the tenants summed into "others".
pub fn others_key(data: &ReportData, g: &Grouping) -> String {
    let names: Vec<&str> = g.rest.iter().map(|&t| data.variants[0].tenant_series[t].name.as_str()).collect();
    let listed = if names.len() > 6 {
        format!("{}, … {}", names[..5].join(", "), names[names.len() - 1])
    } else {
        names.join(", ")
    };
    format!("others = {} tenants with less load, summed ({listed})", names.len())
}

/// One column of a variant's row: the series, the tenant's metrics (None for "others").
pub type Column<'a> = (MeanSeries, Option<&'a StatRow>);

/// The columns of `v`: its top tenants, then "others" (the element-wise sum of the rest).
pub fn columns<'a>(v: &'a VariantData, g: &Grouping) -> Vec<Column<'a>> {
    let mut out: Vec<Column<'a>> =
        g.top.iter().map(|&t| (v.tenant_series[t].clone(), v.tenants.get(t).map(|x| &x.1))).collect();
    let buckets = g.rest.iter().map(|&t| v.tenant_series[t].rows.len()).max().unwrap_or(0);
    let mut rows = vec![[0.0; crate::runner::SERIES_COLUMNS.len()]; buckets];
    for &t in &g.rest {
        for (sum, row) in rows.iter_mut().zip(&v.tenant_series[t].rows) {
            for (s, x) in sum.iter_mut().zip(row) {
                *s += x;
            }
        }
    }
    out.push((MeanSeries { name: format!("others ({} tenants summed)", g.rest.len()), rows }, None));
    out
}
