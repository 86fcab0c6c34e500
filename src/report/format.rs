//! Number and duration formatting shared by the charts, the HTML report, the reading and the
//! terminal tables, and the one way CSV files are put together in memory.

/// A CSV file's bytes, written by `write` into memory.
pub fn csv_bytes(write: impl FnOnce(&mut csv::Writer<Vec<u8>>) -> csv::Result<()>) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    write(&mut w).expect("writing CSV to memory cannot fail");
    w.into_inner().expect("flushing to memory cannot fail")
}

/// `1 replication`, `10 replications`: a count with its noun, singular for one.
pub fn count_of(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Nanoseconds as seconds written exactly, without float noise: `0.6`, `12`, `0.000000001`
/// (the `t_s` column of the CSVs, computed from the bucket index in whole nanoseconds).
pub fn exact_secs(ns: u64) -> String {
    let (whole, frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if frac == 0 {
        return whole.to_string();
    }
    let digits = format!("{frac:09}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

pub use crate::engine::text::{fmt_num, fmt_tick};
pub use crate::engine::time::fmt_secs;

/// A value with its unit, as labels show it.
pub fn fmt_value(x: f64, suffix: &str) -> String {
    if suffix == " s" {
        fmt_secs(x)
    } else {
        format!("{}{suffix}", fmt_num(x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular() {
        assert_eq!(count_of(1, "replication"), "1 replication");
        assert_eq!(count_of(10, "replication"), "10 replications");
        assert_eq!(count_of(0, "run"), "0 runs");
    }

    #[test]
    fn exact_secs_have_no_float_noise() {
        assert_eq!(exact_secs(600_000_000), "0.6");
        assert_eq!(exact_secs(6 * 100_000_000), "0.6");
        assert_eq!(exact_secs(12_000_000_000), "12");
        assert_eq!(exact_secs(0), "0");
        assert_eq!(exact_secs(1), "0.000000001");
        assert_eq!(exact_secs(1_250_000_000), "1.25");
        // The float way writes 0.6000000000000001 here.
        assert_eq!((6.0 * 0.1f64).to_string(), "0.6000000000000001");
    }
}
