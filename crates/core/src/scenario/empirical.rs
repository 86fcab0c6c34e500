//! `service = { dist = "empirical", … }` from a histogram CSV or from percentiles, and
//! `dist = "lognormal"` fitted through two percentiles.

use super::checks::V;
use super::error::Invalid;
use super::import;
use super::input_file::Limit;
use super::raw::{Dur, RawDist};
use crate::model::empirical::{lognormal_from_percentiles, Empirical};
use crate::model::Dist;
use std::sync::Arc;

/// Bucket bound column names (Prometheus `le`, HdrHistogram `Value`).
const BOUND_NAMES: [&str; 5] = ["le", "upper", "upper_bound", "bucket", "value"];
/// Count column names (HdrHistogram `TotalCount` is cumulative).
const COUNT_NAMES: [&str; 4] = ["count", "totalcount", "cumulative_count", "observations"];

fn percentiles(d: &RawDist) -> Vec<(&'static str, f64, Dur)> {
    [
        ("p50", 0.5, d.p50),
        ("p75", 0.75, d.p75),
        ("p90", 0.9, d.p90),
        ("p95", 0.95, d.p95),
        ("p99", 0.99, d.p99),
        ("p999", 0.999, d.p999),
    ]
    .into_iter()
    .filter_map(|(n, p, v)| v.map(|v| (n, p, v)))
    .collect()
}

/// The most a lognormal fitted through two percentiles may have as its mean, in multiples of the
/// higher percentile (σ ≈ 6 through p50 and p99): beyond it the fit is refused.
const LOGNORMAL_MEAN_OVER_TOP_MAX: f64 = 100.0;

/// `dist = "lognormal"` written with two percentiles instead of mean and sd.
pub fn fitted_lognormal(d: &RawDist, at: &str) -> V<Option<Dist>> {
    let given = percentiles(d);
    if given.is_empty() {
        return Ok(None);
    }
    if d.mean.is_some() || d.sd.is_some() || given.len() != 2 {
        return Err(Invalid::at(
            at,
            "a lognormal is given by mean and sd, or by exactly two percentiles (e.g. p50 and p99); not both",
        ));
    }
    let (a, b) = (given[0], given[1]);
    if a.2 .0 == 0 || b.2 .0 <= a.2 .0 {
        return Err(Invalid::at(
            &format!("{at}.{}", b.0),
            format!("is {} but {} is {}; percentiles must be positive and increase", show(b.2 .0), a.0, show(a.2 .0)),
        ));
    }
    let (mu, sigma) = lognormal_from_percentiles((a.1, a.2 .0 as f64), (b.1, b.2 .0 as f64));
    let mean = (mu + sigma * sigma / 2.0).exp();
    // A tail this heavy is no latency anyone measured: the mean alone would outlast the run
    // (p50 = 1ns and p99 = 10s give σ = 9.9 and a mean of 60,000 years).
    if mean > LOGNORMAL_MEAN_OVER_TOP_MAX * b.2 .0 as f64 {
        let years = mean / 1e9 / 86_400.0 / 365.25;
        let mean_words = if mean < 1e18 { show(mean as u64) } else { format!("{years:.1e} years") };
        return Err(Invalid::at(
            &format!("{at}.{}", b.0),
            format!(
                "is {} with {} = {}: the lognormal through them has σ = {sigma:.1} and a mean of {mean_words}, more than {} times {}; check the two percentiles (one is likely mistyped) or describe the latency with dist = \"empirical\"",
                show(b.2 .0),
                a.0,
                show(a.2 .0),
                LOGNORMAL_MEAN_OVER_TOP_MAX,
                b.0
            ),
        ));
    }
    let sd = mean * (sigma * sigma).exp_m1().sqrt();
    Ok(Some(Dist::LogNormal { mean: mean.round() as u64, sd: sd.round() as u64 }))
}

fn show(ns: u64) -> String {
    super::checks::show(ns)
}

/// `dist = "empirical"`.
pub fn dist(d: &RawDist, at: &str) -> V<Dist> {
    let field = |f: &str| format!("{at}.{f}");
    let given = percentiles(d);
    let min = d.min.map_or(0.0, |m| m.0 as f64);
    let knots = match (&d.file, given.is_empty()) {
        (Some(_), false) => {
            return Err(Invalid::at(at, "gives both a histogram file and percentiles; keep one of them"))
        }
        (None, true) => {
            return Err(Invalid::at(
                at,
                "dist `empirical` needs file = \"latency.csv\" (a histogram) or percentiles, e.g. p50 = \"20ms\", p99 = \"120ms\"",
            ))
        }
        (None, false) => {
            let mut knots = vec![(0.0, min)];
            for (name, p, v) in &given {
                let prev = knots[knots.len() - 1].1;
                if (v.0 as f64) < prev {
                    return Err(Invalid::at(
                        &field(name),
                        format!("is {} but the value below it is {}; percentiles must not decrease", show(v.0), show(prev as u64)),
                    ));
                }
                knots.push((*p, v.0 as f64));
            }
            if d.unit.is_some() || d.cumulative.is_some() {
                return Err(Invalid::at(&field(if d.unit.is_some() { "unit" } else { "cumulative" }), "is only used with a histogram file; remove it"));
            }
            knots
        }
        (Some(file), true) => histogram(d, file, min, &field("file"))?,
    };
    let source = match &d.file {
        Some(f) => format!("histogram {f}"),
        None => given.iter().map(|(n, _, v)| format!("{n} {}", show(v.0))).collect::<Vec<_>>().join(", "),
    };
    Ok(Dist::Empirical(Arc::new(Empirical::new(knots, source))))
}

/// Histogram files are small (one row per bucket): a bigger one is refused.
const HISTOGRAM_BYTES_MAX: u64 = 64 << 20;

/// HdrHistogram's text percentile output (`.hgrm`: a `Value Percentile TotalCount
/// 1/(1-Percentile)` header, whitespace-separated rows, `#[Mean …]` footer) as the CSV form of the
/// same table, line for line (other lines become comments) so that errors name the file's lines.
fn hgrm_as_csv(text: &str) -> Option<String> {
    let is_header =
        |l: &str| l.split_whitespace().collect::<Vec<_>>() == ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"];
    text.lines().position(is_header)?;
    let mut out = String::with_capacity(text.len());
    let mut seen_header = false;
    for line in text.lines() {
        if !seen_header && is_header(line) {
            seen_header = true;
            out.push_str("Value,Percentile,TotalCount,Inverse\n");
        } else if seen_header && !line.trim().is_empty() && !line.trim_start().starts_with('#') {
            out.push_str(&line.split_whitespace().collect::<Vec<_>>().join(","));
            out.push('\n');
        } else {
            out.push_str("#\n");
        }
    }
    Some(out)
}

/// Most observations a histogram may hold: counts stay exact whole numbers in an f64.
const COUNT_MAX: f64 = 9_007_199_254_740_992.0;

/// Largest finite bucket bound, in nanoseconds: about 292 years, the most a u64 of ns holds.
const MAX_BOUND_NS: f64 = 1.8e19;

fn histogram(d: &RawDist, file: &str, min: f64, at: &str) -> V<Vec<(f64, f64)>> {
    use std::io::Read;
    let mut text = String::new();
    import::open(file, at, Limit { bytes: HISTOGRAM_BYTES_MAX, holder: "a histogram file" })?
        .read_to_string(&mut text)
        .map_err(|e| Invalid::at(at, format!("cannot read {file} as UTF-8 text: {e}")))?;
    let text = hgrm_as_csv(&text).unwrap_or(text);
    let mut reader =
        csv::ReaderBuilder::new().trim(csv::Trim::All).comment(Some(b'#')).flexible(true).from_reader(text.as_bytes());
    let line_err = |line: u64, m: String| Invalid::at(at, format!("{file} line {line}: {m}"));
    let headers: Vec<String> = reader
        .headers()
        .map_err(|e| line_err(1, format!("cannot read the header row: {e}")))?
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .collect();
    let find = |names: &[&str]| names.iter().find_map(|n| headers.iter().position(|h| h == n));
    let (bound, count) = match (find(&BOUND_NAMES), find(&COUNT_NAMES)) {
        (Some(b), Some(c)) => (b, c),
        _ => {
            return Err(line_err(
                1,
                format!(
                "needs a bucket bound column (le, upper or Value) and a count column (count or TotalCount); it has: {}",
                headers.join(", ")
            ),
            ))
        }
    };
    let cumulative = d
        .cumulative
        .unwrap_or(headers[bound] == "le" || headers[count] == "totalcount" || headers[count] == "cumulative_count");
    let unit = match d.unit.as_deref().unwrap_or("s") {
        "s" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "ns" => 1.0,
        other => {
            return Err(super::checks::unknown(
                &at.replace(".file", ".unit"),
                "time unit",
                other,
                &["s", "ms", "us", "ns"],
            ))
        }
    };
    // (upper bound in ns or +inf, count in the bucket)
    let mut buckets: Vec<(f64, f64)> = Vec::new();
    let mut record = csv::StringRecord::new();
    let mut previous_total = 0.0;
    loop {
        match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(line_err(e.position().map_or(0, |p| p.line()), format!("malformed CSV: {e}"))),
        }
        let line = record.position().map_or(0, |p| p.line());
        let cell = |i: usize| record.get(i).unwrap_or("");
        let b = match cell(bound) {
            "+Inf" | "Inf" | "inf" | "+inf" | "Infinity" => f64::INFINITY,
            text => {
                text.parse::<f64>().map_err(|_| line_err(line, format!("bucket bound `{text}` is not a number")))?
                    * unit
            }
        };
        let c: f64 =
            cell(count).parse().map_err(|_| line_err(line, format!("count `{}` is not a number", cell(count))))?;
        if !c.is_finite() || c < 0.0 || b.is_nan() || b < 0.0 {
            return Err(line_err(line, "bounds and counts must be numbers ≥ 0".into()));
        }
        // Counts are summed and divided: past 2^53 they are no longer whole, and their sum can
        // overflow to infinity (once a panic). A bound is a latency in whole nanoseconds.
        if c > COUNT_MAX || (previous_total + if cumulative { 0.0 } else { c }) > COUNT_MAX {
            return Err(line_err(
                line,
                format!("count `{}` takes the histogram past {COUNT_MAX:e} observations, more than it can count exactly; scale the counts down (only their proportions matter)", cell(count)),
            ));
        }
        if b.is_finite() && b > MAX_BOUND_NS {
            return Err(line_err(
                line,
                format!("bucket bound `{}` is beyond {MAX_BOUND_NS:e} ns (a latency of centuries); check the unit (unit = \"s\", \"ms\", \"us\" or \"ns\")", cell(bound)),
            ));
        }
        if buckets.last().is_some_and(|&(prev, _)| b <= prev) {
            // HdrHistogram repeats a value on its percentile rows: merge them.
            if cumulative && buckets.last().is_some_and(|&(prev, _)| b == prev) {
                let last = buckets.last_mut().expect("checked");
                last.1 += c - previous_total;
                previous_total = c;
                continue;
            }
            return Err(line_err(line, "bucket bounds must increase from row to row; sort the rows by bound".into()));
        }
        let in_bucket = if cumulative {
            if c < previous_total {
                return Err(line_err(line, format!("cumulative count {c} is below the previous row's {previous_total}; set cumulative = false if counts are per bucket")));
            }
            c - previous_total
        } else {
            c
        };
        previous_total = if cumulative { c } else { previous_total + c };
        buckets.push((b, in_bucket));
    }
    let total: f64 = buckets.iter().map(|b| b.1).sum();
    if total <= 0.0 {
        return Err(Invalid::at(at, format!("{file}: the histogram has no observations")));
    }
    let mut knots = vec![(0.0, min)];
    let mut seen = 0.0;
    let mut lower = min;
    for &(upper, c) in &buckets {
        if upper.is_infinite() {
            if c > 0.0 {
                import::warn(format!(
                    "{file}: {:.3}% of observations are above the last finite bucket bound ({} ms); their values follow an exponential tail fitted to the last buckets",
                    100.0 * c / total,
                    lower / 1e6
                ));
            }
            break;
        }
        if c > 0.0 {
            if upper < min {
                return Err(Invalid::at(
                    &at.replace(".file", ".min"),
                    format!("is above the bucket bound {} ms that has observations", upper / 1e6),
                ));
            }
            // An empty bucket below leaves a gap with no mass: start this bucket at its lower bound.
            if lower > knots[knots.len() - 1].1 {
                knots.push((seen / total, lower));
            }
            seen += c;
            knots.push(((seen / total).min(1.0), upper));
        }
        lower = upper.max(min);
    }
    if knots.len() < 2 {
        return Err(Invalid::at(
            at,
            format!("{file}: every observation is in the +Inf bucket; no latency can be read"),
        ));
    }
    Ok(knots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_and_hdrhistogram_exports_give_the_same_quantiles() {
        let dir = tempfile::tempdir().expect("tempdir");
        let prom = dir.path().join("p.csv");
        std::fs::write(&prom, "le,count\n0.01,0\n0.02,50\n0.05,90\n0.1,99\n+Inf,100\n").expect("write");
        let hdr = dir.path().join("h.csv");
        std::fs::write(
            &hdr,
            "\"Value\",\"Percentile\",\"TotalCount\",\"1/(1-Percentile)\"\n10.000,0.0,0,1.00\n20.000,0.5,50,2.00\n50.000,0.9,90,10.00\n100.000,0.99,99,100.00\n100.000,1.0,100,Infinity\n",
        )
        .expect("write");
        let mut d: RawDist = toml::from_str("dist = \"empirical\"").expect("raw");
        d.file = Some(prom.display().to_string());
        let Dist::Empirical(p) = dist(&d, "x").expect("prometheus") else { panic!() };
        d.file = Some(hdr.display().to_string());
        d.unit = Some("ms".into());
        let Dist::Empirical(h) = dist(&d, "x").expect("hdr") else { panic!() };
        // Median: the 50th observation is the top of the (10, 20] ms bucket.
        assert!((p.quantile(0.5) - 20e6).abs() < 1.0 && (p.quantile(0.25) - 15e6).abs() < 1.0);
        assert!((p.quantile(0.7) - 35e6).abs() < 1.0);
        // Hdr's last row adds one observation at 100 ms; Prometheus's +Inf is extrapolated.
        assert!((h.quantile(0.7) - 35e6).abs() < 1.0 && h.quantile(0.999) <= 100e6);
        assert!(p.quantile(0.999) > 100e6);
        // The same table as HdrHistogram's text output (.hgrm).
        let hgrm = dir.path().join("h.hgrm");
        std::fs::write(
            &hgrm,
            "       Value     Percentile TotalCount 1/(1-Percentile)\n\n      10.000 0.000000000000          0           1.00\n      20.000 0.500000000000         50           2.00\n      50.000 0.900000000000         90          10.00\n     100.000 0.990000000000         99         100.00\n     100.000 1.000000000000        100\n#[Mean    =       30.000, StdDeviation   =       20.000]\n#[Max     =      100.000, Total count    =          100]\n",
        )
        .expect("write");
        d.file = Some(hgrm.display().to_string());
        let Dist::Empirical(g) = dist(&d, "x").expect("hgrm") else { panic!() };
        assert_eq!(g.quantile(0.7), h.quantile(0.7));
        let bad = dir.path().join("b.csv");
        std::fs::write(&bad, "le,count\n0.1,5\n0.2,3\n").expect("write");
        d.file = Some(bad.display().to_string());
        d.unit = None;
        let e = dist(&d, "hop.api.service.file").unwrap_err();
        assert!(e.message.contains("line 3") && e.message.contains("below the previous"), "{}", e.message);
    }
}
