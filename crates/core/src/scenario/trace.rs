//! `arrival = { kind = "trace", file = "…" }`: reads a CSV of request timestamps or of
//! per-interval counts/rates into [`TraceData`], streaming (one record buffer, reused: a
//! 10-million-line trace is never held as text, only as 8 bytes per request or 16 per interval).
//!
//! Parsed traces are cached per (file, size, modification time, reading options), so the base
//! scenario, its variants and `compare`'s jitter variants share one copy.

use super::checks::{finite_at_least, V};
use super::error::Invalid;
use super::import;
use super::input_file::{Bounded, Limit};
use super::raw::RawArrival;
use crate::engine::{Nanos, NS_PER_S};
use crate::model::trace::{TraceArrival, TraceData};
use crate::model::Arrival;
use std::sync::{Arc, Mutex};

/// A trace's `format` as written; the names listed in messages come from this type, in this
/// order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum TraceFormat {
    /// One request per row, at its timestamp.
    Timestamps,
    /// A count or rate per interval.
    Counts,
}

/// Header names read as the time column.
const TIME_NAMES: [&str; 7] = ["timestamp", "time", "ts", "t", "start_time", "@timestamp", "date"];
/// Header names read as a per-interval value, with what they count.
const VALUE_NAMES: [(&str, &str); 10] = [
    ("count", "interval"),
    ("requests", "interval"),
    ("value", "second"),
    ("rate", "second"),
    ("rps", "second"),
    ("qps", "second"),
    ("per_second", "second"),
    ("rpm", "minute"),
    ("per_minute", "minute"),
    ("requests_per_minute", "minute"),
];
/// Seconds since 1970 at or above this (2001-09-09) make a number an absolute time.
const EPOCH_MIN_S: f64 = 1e9;

/// Validates a trace arrival and reads (or reuses) its file.
pub fn arrival(a: &RawArrival, at: &str) -> V<Arrival> {
    let field = |f: &str| format!("{at}.{f}");
    let file = a.file.as_deref().ok_or_else(|| {
        Invalid::at(at, "kind `trace` needs file, e.g. file = \"data/requests.csv\" (a CSV with a header row)")
    })?;
    let scale = |v: Option<f64>, f: &str| -> V<f64> {
        let x = finite_at_least(v.unwrap_or(1.0), 0.0, &field(f), "it must be a finite number > 0")?;
        if x == 0.0 {
            return Err(Invalid::at(&field(f), "is 0; use a positive factor (1 replays the trace as recorded)"));
        }
        Ok(x)
    };
    let time_scale = scale(a.time_scale, "time_scale")?;
    let volume_scale = scale(a.volume_scale, "volume_scale")?;
    let data = load(a, file, &field("file"))?;
    Ok(Arrival::Trace(TraceArrival {
        file: file.to_string(),
        data,
        time_scale,
        volume_scale,
        looped: a.looped.unwrap_or(false),
    }))
}

type CacheKey = (std::path::PathBuf, u64, Option<std::time::SystemTime>, String);

static CACHE: Mutex<Vec<(CacheKey, Arc<TraceData>)>> = Mutex::new(Vec::new());

fn load(a: &RawArrival, file: &str, at: &str) -> V<Arc<TraceData>> {
    // Traces are streamed (their memory is the parsed requests'), so no size limit.
    let handle = import::open(file, at, Limit { bytes: u64::MAX, holder: "a trace" })?;
    let path = import::resolve(file);
    let meta = std::fs::metadata(&path).ok();
    let options =
        format!("{:?}|{:?}|{:?}|{:?}|{:?}|{:?}", a.format, a.column, a.time_column, a.unit, a.interval, a.per);
    let key: CacheKey = (
        std::fs::canonicalize(&path).unwrap_or(path),
        meta.as_ref().map_or(0, |m| m.len()),
        meta.and_then(|m| m.modified().ok()),
        options,
    );
    let cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, data)) = cache.iter().find(|(k, _)| *k == key) {
        return Ok(Arc::clone(data));
    }
    drop(cache);
    let data = Arc::new(read(a, file, handle, at)?);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() >= 16 {
        cache.remove(0);
    }
    cache.push((key, Arc::clone(&data)));
    Ok(data)
}

/// Where a problem is: "FILE line N: …" at the scenario field.
fn at_line(at: &str, file: &str, line: u64, message: String) -> Invalid {
    Invalid::at(at, format!("{file} line {line}: {message}"))
}

fn read(a: &RawArrival, file: &str, handle: Bounded, at: &str) -> V<TraceData> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(std::io::BufReader::with_capacity(1 << 16, handle));
    let headers: Vec<String> = reader
        .headers()
        .map_err(|e| at_line(at, file, 1, format!("cannot read the header row: {e}")))?
        .iter()
        .map(str::to_string)
        .collect();
    let find = |name: &str| headers.iter().position(|h| h.eq_ignore_ascii_case(name));
    let named = |f: &str, name: &Option<String>| -> V<Option<usize>> {
        match name {
            None => Ok(None),
            Some(n) => find(n).map(Some).ok_or_else(|| {
                Invalid::at(
                    &at.replace(".file", &format!(".{f}")),
                    format!("`{n}` is not a column of {file} (columns: {})", headers.join(", ")),
                )
            }),
        }
    };
    let time_col = named("time_column", &a.time_column)?.or_else(|| TIME_NAMES.iter().find_map(|n| find(n)));
    let value_named = named("column", &a.column)?;
    let value_auto = VALUE_NAMES.iter().find_map(|(n, per)| find(n).map(|i| (i, *per)));
    let format = match a.format.as_deref() {
        Some(f) => super::tagged::read_name::<TraceFormat>(f)
            .map_err(|names| super::checks::unknown(&at.replace(".file", ".format"), "trace format", f, names))?,
        None if value_auto.is_some() && value_named.is_none_or(|c| Some(c) != time_col) => TraceFormat::Counts,
        None => TraceFormat::Timestamps,
    };
    let unit = unit_ns(a.unit.as_deref(), &at.replace(".file", ".unit"))?;
    if format == TraceFormat::Timestamps {
        let col = value_named.or(time_col).or((headers.len() == 1).then_some(0)).ok_or_else(|| {
            at_line(
                at,
                file,
                1,
                format!(
                    "no timestamp column: name one `timestamp` or `time`, or set column = \"…\" (columns: {})",
                    headers.join(", ")
                ),
            )
        })?;
        return read_times(&mut reader, col, unit, file, at);
    }
    let (col, default_per) = match value_named {
        Some(c) => {
            (c, VALUE_NAMES.iter().find(|(n, _)| headers[c].eq_ignore_ascii_case(n)).map_or("interval", |v| v.1))
        }
        None => value_auto.ok_or_else(|| {
            at_line(
                at,
                file,
                1,
                format!(
                    "no count column: name one `count` or `rps`, or set column = \"…\" (columns: {})",
                    headers.join(", ")
                ),
            )
        })?,
    };
    let per = a.per.as_deref().unwrap_or(default_per);
    let per_factor = match per {
        "second" => 1.0,
        "minute" => 1.0 / 60.0,
        "interval" => f64::NAN, // divided by the interval width below
        other => {
            return Err(super::checks::unknown(
                &at.replace(".file", ".per"),
                "per",
                other,
                &["second", "minute", "interval"],
            ))
        }
    };
    read_counts(&mut reader, col, time_col, unit, a.interval.map(|d| d.0), per_factor, file, at)
}

fn unit_ns(unit: Option<&str>, at: &str) -> V<f64> {
    Ok(match unit.unwrap_or("s") {
        "s" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "ns" => 1.0,
        other => return Err(super::checks::unknown(at, "time unit", other, &["s", "ms", "us", "ns"])),
    })
}

/// A time cell in nanoseconds: a number in `unit`, or an RFC 3339 date (absolute).
fn parse_time(cell: &str, unit: f64) -> Result<(f64, bool), String> {
    if let Ok(v) = cell.parse::<f64>() {
        if !v.is_finite() || v < 0.0 {
            return Err(format!("`{cell}` is not a time ≥ 0"));
        }
        let absolute = v * unit / 1e9 >= EPOCH_MIN_S;
        return Ok((v * unit, absolute));
    }
    // A fixed offset ("+02:00") does not change differences between rows: drop it.
    let bytes = cell.as_bytes();
    let trimmed = if cell.len() > 6 && matches!(bytes[cell.len() - 6], b'+' | b'-') && bytes[cell.len() - 3] == b':' {
        &cell[..cell.len() - 6]
    } else {
        cell
    };
    let t = humantime::parse_rfc3339_weak(trimmed)
        .map_err(|_| format!("`{cell}` is neither a number nor an RFC 3339 time (2024-05-07T10:00:00Z)"))?;
    let since = t.duration_since(std::time::UNIX_EPOCH).map_err(|_| format!("`{cell}` is before 1970"))?;
    Ok((since.as_nanos() as f64, true))
}

fn read_times<R: std::io::Read>(
    reader: &mut csv::Reader<R>,
    col: usize,
    unit: f64,
    file: &str,
    at: &str,
) -> V<TraceData> {
    let mut record = csv::StringRecord::new();
    let mut times: Vec<Nanos> = Vec::new();
    let mut absolute = None;
    let mut unsorted = false;
    while read_record(reader, &mut record, file, at)? {
        let line = record.position().map_or(0, |p| p.line());
        let cell = record.get(col).ok_or_else(|| at_line(at, file, line, format!("has no column {}", col + 1)))?;
        let (ns, abs) = parse_time(cell, unit).map_err(|e| at_line(at, file, line, e))?;
        if *absolute.get_or_insert(abs) != abs {
            return Err(at_line(at, file, line, format!("`{cell}` mixes absolute and relative times; use one kind")));
        }
        let ns = ns.min(u64::MAX as f64) as Nanos;
        unsorted |= times.last().is_some_and(|&last| ns < last);
        times.push(ns);
    }
    if times.is_empty() {
        return Err(Invalid::at(at, format!("{file} has a header but no rows; a trace needs at least one request")));
    }
    if unsorted {
        times.sort_unstable();
        import::warn(format!("{file}: timestamps are not in order; they were sorted"));
    }
    let first = if absolute == Some(true) { times[0] } else { 0 };
    for t in &mut times {
        *t -= first;
    }
    let span = times[times.len() - 1] - times[0];
    let gap = if times.len() > 1 { span / (times.len() as u64 - 1) } else { NS_PER_S };
    Ok(TraceData::Times { period: (times[times.len() - 1] + gap.max(1)).max(1), times })
}

#[allow(clippy::too_many_arguments)]
fn read_counts<R: std::io::Read>(
    reader: &mut csv::Reader<R>,
    col: usize,
    time_col: Option<usize>,
    unit: f64,
    interval: Option<Nanos>,
    per_factor: f64,
    file: &str,
    at: &str,
) -> V<TraceData> {
    let mut record = csv::StringRecord::new();
    let mut values: Vec<f64> = Vec::new();
    let mut starts: Vec<f64> = Vec::new();
    let mut width = interval.map(|i| i as f64);
    while read_record(reader, &mut record, file, at)? {
        let line = record.position().map_or(0, |p| p.line());
        let cell = record.get(col).ok_or_else(|| at_line(at, file, line, format!("has no column {}", col + 1)))?;
        let v: f64 = cell.parse().map_err(|_| at_line(at, file, line, format!("`{cell}` is not a number")))?;
        if !v.is_finite() || v < 0.0 {
            return Err(at_line(at, file, line, format!("`{cell}`: a count or rate must be a finite number ≥ 0")));
        }
        if let Some(tc) = time_col {
            let cell = record.get(tc).ok_or_else(|| at_line(at, file, line, format!("has no column {}", tc + 1)))?;
            let (t, _) = parse_time(cell, unit).map_err(|e| at_line(at, file, line, e))?;
            if let Some(&prev) = starts.last() {
                let step = t - prev;
                let expected = *width.get_or_insert(step);
                if step <= 0.0 || (step - expected).abs() > expected * 1e-6 + 1.0 {
                    return Err(at_line(at, file, line, format!(
                        "starts {:.3} s after the previous row, but rows are {:.3} s apart; add the missing rows (count 0) so rows are evenly spaced",
                        step / 1e9, expected / 1e9
                    )));
                }
            }
            starts.push(t);
        }
        values.push(v);
    }
    let width = width.filter(|w| *w > 0.0).ok_or_else(|| {
        Invalid::at(
            &at.replace(".file", ".interval"),
            format!("{file}: the width of a row is unknown; set interval = \"1s\" (or \"1m\") or add a time column"),
        )
    })?;
    if values.is_empty() {
        return Err(Invalid::at(at, format!("{file} has a header but no rows")));
    }
    let secs = width / NS_PER_S as f64;
    let rate = |v: f64| if per_factor.is_nan() { v / secs } else { v * per_factor };
    let steps: Vec<(Nanos, f64)> =
        values.iter().enumerate().map(|(i, &v)| ((i as f64 * width) as Nanos, rate(v))).collect();
    if steps.iter().all(|s| s.1 == 0.0) {
        return Err(Invalid::at(at, format!("{file}: every count is 0; the trace sends no request")));
    }
    Ok(TraceData::Rates { period: (values.len() as f64 * width) as Nanos, steps })
}

fn read_record<R: std::io::Read>(
    reader: &mut csv::Reader<R>,
    record: &mut csv::StringRecord,
    file: &str,
    at: &str,
) -> V<bool> {
    reader.read_record(record).map_err(|e| {
        let line = e.position().map_or(0, |p| p.line());
        at_line(at, file, line, format!("malformed CSV: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(file: &str) -> RawArrival {
        let text = format!("kind = \"trace\"\nfile = \"{file}\"");
        toml::from_str(&text).expect("valid arrival")
    }

    fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("written");
        path.display().to_string()
    }

    #[test]
    fn reads_timestamps_counts_and_names_the_bad_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let abs = write(
            dir.path(),
            "abs.csv",
            "timestamp,path\n2024-05-07T10:00:01Z,/a\n2024-05-07T10:00:00.5Z,/b\n2024-05-07T10:00:03Z,/c\n",
        );
        match &*load(&raw(&abs), &abs, "f").expect("reads") {
            TraceData::Times { times, .. } => assert_eq!(times, &[0, 500_000_000, 2_500_000_000]),
            other => panic!("{other:?}"),
        }
        let rel = write(dir.path(), "rel.csv", "t\n0.0\n0.25\n1\n");
        match &*load(&raw(&rel), &rel, "f").expect("reads") {
            TraceData::Times { times, period } => {
                assert_eq!(times, &[0, 250_000_000, 1_000_000_000]);
                assert_eq!(*period, 1_500_000_000);
            }
            other => panic!("{other:?}"),
        }
        let per_minute = write(dir.path(), "rpm.csv", "time,rpm\n1715076000,600\n1715076060,1200\n");
        match &*load(&raw(&per_minute), &per_minute, "f").expect("reads") {
            TraceData::Rates { steps, period } => {
                assert_eq!(steps, &[(0, 10.0), (60 * NS_PER_S, 20.0)]);
                assert_eq!(*period, 120 * NS_PER_S);
            }
            other => panic!("{other:?}"),
        }
        let bad = write(dir.path(), "bad.csv", "time,count\n0,5\n1,x\n");
        let e = load(&raw(&bad), &bad, "tenant.a.arrival.file").unwrap_err();
        assert!(e.message.contains("line 3") && e.message.contains("`x`"), "{}", e.message);
        let gap = write(dir.path(), "gap.csv", "time,count\n0,5\n1,5\n3,5\n");
        let e = load(&raw(&gap), &gap, "f").unwrap_err();
        assert!(e.message.contains("line 4") && e.message.contains("missing rows"), "{}", e.message);
    }

    #[test]
    fn a_million_line_trace_streams_into_eight_bytes_a_request() {
        // Read through one reused record: the text is never held; the result is 8 bytes a line.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("big.csv");
        {
            use std::io::Write;
            let mut w = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
            writeln!(w, "timestamp_ms").expect("write");
            for i in 0..1_000_000u64 {
                writeln!(w, "{}", i * 3).expect("write");
            }
        }
        let file = path.display().to_string();
        let mut a = raw(&file);
        a.column = Some("timestamp_ms".into());
        a.unit = Some("ms".into());
        let data = load(&a, &file, "f").expect("reads");
        match &*data {
            TraceData::Times { times, .. } => {
                assert_eq!(times.len(), 1_000_000);
                assert_eq!(times[999_999], 2_999_997 * 1_000_000);
                assert!(times.capacity() * 8 < std::fs::metadata(&path).expect("meta").len() as usize * 2);
            }
            other => panic!("{other:?}"),
        }
        // The second read of the same file is the cached copy.
        assert!(Arc::ptr_eq(&data, &load(&a, &file, "f").expect("cached")));
    }
}
