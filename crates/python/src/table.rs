//! The result tables in columns: `.summary` from a run's [`Summary`] (the values summary.json
//! holds) and `.timeseries` in long form from its mean series (timeseries.csv's values).

use retrystorm::metrics::catalogue::Unit;
use retrystorm::report::summary::Summary;
use retrystorm::runner::SERIES_COLUMNS;

/// One column's values.
#[derive(Clone, Debug)]
pub enum Column {
    /// UTF-8 strings.
    Text(Vec<String>),
    /// 64-bit floats, None for a null.
    Float(Vec<Option<f64>>),
    /// 64-bit integers, None for a null.
    Int(Vec<Option<i64>>),
}

impl Column {
    fn len(&self) -> usize {
        match self {
            Column::Text(v) => v.len(),
            Column::Float(v) => v.len(),
            Column::Int(v) => v.len(),
        }
    }
}

/// A table: named columns of equal length.
#[derive(Clone, Debug)]
pub struct Columns {
    /// Column names, in order.
    pub names: Vec<String>,
    /// Their values.
    pub columns: Vec<Column>,
}

impl Columns {
    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, Column::len)
    }
}

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// A CSV file a command wrote (`sweep.csv`, `plan.csv`, `map.csv`) as a table: a column whose
/// every non-empty cell is a number is a float column (empty cells null), any other is text.
pub fn csv_table(text: &str) -> Result<Columns, String> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let names: Vec<String> = reader.headers().map_err(|e| e.to_string())?.iter().map(str::to_string).collect();
    let mut cells: Vec<Vec<String>> = vec![Vec::new(); names.len()];
    for record in reader.records() {
        let record = record.map_err(|e| e.to_string())?;
        for (column, cell) in cells.iter_mut().zip(record.iter()) {
            column.push(cell.to_string());
        }
    }
    let columns = cells
        .into_iter()
        .map(|column| {
            let numbers: Option<Vec<Option<f64>>> = column
                .iter()
                .map(|c| if c.is_empty() { Some(None) } else { c.parse::<f64>().ok().map(Some) })
                .collect();
            match numbers {
                Some(values) if values.iter().any(Option::is_some) => Column::Float(values),
                Some(_) | None => Column::Text(column),
            }
        })
        .collect();
    Ok(Columns { names, columns })
}

/// A unit's name in the `unit` column.
fn unit_name(unit: Unit) -> &'static str {
    match unit {
        Unit::Count => "count",
        Unit::Times => "times",
        Unit::Share => "share",
        Unit::Seconds => "s",
        Unit::PerSecond => "per_s",
        Unit::Flag => "flag",
    }
}

/// `.summary`: one row per variant × scope × metric, the values of summary.json.
pub fn summary_table(summary: &Summary) -> Columns {
    let (mut variant, mut scope, mut metric, mut unit) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut mean, mut low, mut high) = (Vec::new(), Vec::new(), Vec::new());
    for v in &summary.variants {
        let scoped = |kind: &str, rows: &[retrystorm::report::summary::Scoped]| {
            rows.iter().map(|s| (format!("{kind}:{}", s.name), s.metrics.clone())).collect::<Vec<_>>()
        };
        let mut rows = vec![("system".to_string(), v.metrics.clone())];
        rows.extend(scoped("hop", &v.hops));
        rows.extend(scoped("tenant", &v.tenants));
        rows.extend(scoped("replica", &v.replicas));
        for (name, row) in rows {
            for (m, stat) in row.iter() {
                variant.push(v.name.clone());
                scope.push(name.clone());
                metric.push(m.name().to_string());
                unit.push(unit_name(m.def().unit).to_string());
                mean.push(stat.mean);
                low.push(stat.ci95.map(|c| c[0]));
                high.push(stat.ci95.map(|c| c[1]));
            }
        }
    }
    Columns {
        names: names(&["variant", "scope", "metric", "mean", "ci_low", "ci_high", "unit"]),
        columns: vec![
            Column::Text(variant),
            Column::Text(scope),
            Column::Text(metric),
            Column::Float(mean),
            Column::Float(low),
            Column::Float(high),
            Column::Text(unit),
        ],
    }
}

/// One mean series: variant, scope (`hop:NAME`, `tenant:NAME`), rows from t = 0.
pub struct Series<'a> {
    /// The variant.
    pub variant: &'a str,
    /// `hop:NAME` or `tenant:NAME`.
    pub scope: String,
    /// Per bucket, the value of each of [`SERIES_COLUMNS`].
    pub rows: &'a [[f64; SERIES_COLUMNS.len()]],
}

/// `.timeseries` in long form: variant, replication (null: the mean over the replications, the
/// one series a run keeps), t_s, scope, metric, value.
pub fn timeseries_table<'a>(series: impl Iterator<Item = Series<'a>>, bucket_s: f64, buckets: usize) -> Columns {
    let (mut variant, mut t, mut scope, mut metric, mut value) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for s in series {
        for (b, row) in s.rows.iter().take(buckets).enumerate() {
            for (name, &x) in SERIES_COLUMNS.iter().zip(row) {
                variant.push(s.variant.to_string());
                t.push(Some(b as f64 * bucket_s));
                scope.push(s.scope.clone());
                metric.push((*name).to_string());
                value.push(Some(x));
            }
        }
    }
    let rows = variant.len();
    Columns {
        names: names(&["variant", "replication", "t_s", "scope", "metric", "value"]),
        columns: vec![
            Column::Text(variant),
            Column::Int(vec![None; rows]),
            Column::Float(t),
            Column::Text(scope),
            Column::Text(metric),
            Column::Float(value),
        ],
    }
}
