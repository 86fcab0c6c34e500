//! The bundled scenarios of the client side: `stability-goodput-collapse.toml` (Stability
//! Sim's example 8) and `hedging.toml`, asserting what each claims. Intervals are 99% Student-t
//! over independent replications; "disjoint" means one interval lies wholly beyond the other.

mod common;
use common::*;
use retrystorm::runner::{VariantResult, SERIES_COLUMNS};

fn variant<'a>(study: &'a retrystorm::runner::Study, name: &str) -> &'a VariantResult {
    study.variants.iter().find(|v| v.name == name).unwrap_or_else(|| panic!("no variant {name}"))
}

fn ci(stat: &retrystorm::metrics::stats::Stat) -> (f64, f64) {
    t_interval(&values(stat), 0.99)
}

/// Mean over the buckets starting in [from, to) s of a hop series column.
fn window_mean(v: &VariantResult, column: &str, from: f64, to: f64, bucket_s: f64) -> f64 {
    let c = SERIES_COLUMNS.iter().position(|n| *n == column).expect("a series column");
    let rows = &v.hop_series[0].rows;
    let picked: Vec<f64> =
        (0..rows.len()).filter(|&i| (from..to).contains(&(i as f64 * bucket_s))).map(|i| rows[i][c]).collect();
    picked.iter().sum::<f64>() / picked.len() as f64
}

#[test]
fn goodput_collapse_as_published_serves_at_full_speed_with_no_goodput_and_each_fix_restores_it() {
    // Stability Sim: after the 3× latency phase (8–16 s) the server completes ~100/s but every
    // item waited past the 1 s timeout ("high throughput, zero goodput") for ~45 s. Between 16 s
    // and 40 s the as-published server must run at ≥ 90% of its 100/s capacity with goodput
    // under 2% of it; deadline drop, adaptive LIFO, CoDel and cancellation must each bring
    // goodput in that window above 75% of the 90/s offered, and their run-wide goodput ratio's
    // interval must lie above the as-published one.
    let study = study("stability-goodput-collapse", &[]);
    let collapsed = variant(&study, "as-published");
    let throughput = window_mean(collapsed, "throughput_per_s", 16.0, 40.0, 1.0);
    let goodput = window_mean(collapsed, "timely_goodput_per_s", 16.0, 40.0, 1.0);
    assert!(throughput > 90.0, "as-published throughput {throughput}/s in 16–40 s");
    assert!(goodput < 0.02 * throughput, "as-published goodput {goodput}/s in 16–40 s");
    let (_, collapsed_hi) = ci(hop_metric(collapsed, "server", "goodput_ratio"));
    for fix in ["deadline-drop", "lifo", "codel", "cancellation"] {
        let v = variant(&study, fix);
        let goodput = window_mean(v, "timely_goodput_per_s", 16.0, 40.0, 1.0);
        assert!(goodput > 0.75 * 90.0, "{fix}: goodput {goodput}/s in 16–40 s");
        let (lo, _) = ci(hop_metric(v, "server", "goodput_ratio"));
        assert!(lo > collapsed_hi, "{fix}: goodput ratio from {lo} vs as-published up to {collapsed_hi}");
    }
    // Cancellation wastes only the part of each service cut short, and serves nothing stale.
    let cancel = variant(&study, "cancellation");
    assert!(values(hop_metric(cancel, "server", "goodput_ratio")).iter().all(|&r| r == 1.0));
    assert_eq!(values(metric(cancel, "wasted_timed_out_s")).iter().sum::<f64>(), 0.0);
}

#[test]
fn hedging_after_p95_cuts_the_tail_at_low_load_and_only_uncapped_hedging_tips_the_storm() {
    // "The Tail at Scale": a hedge deferred to the p95 cuts the far tail for ~5% more requests.
    // At ρ = 0.1 on Exp(10 ms): the p99.9 with hedging lies wholly below the p99.9 without, the
    // extra load (hedges per first attempt) is between 2% and the 10% cap. Under load with a
    // 1.8× slowdown (ρ = 0.9 for 3 s): no hedging and the 5%-capped hedge recover in every
    // replication; the uncapped hedge after 10 ms never does.
    let study = study("hedging", &["replications=10"]);
    let (plain, hedged) = (variant(&study, "low-no-hedge"), variant(&study, "low-hedge-p95"));
    let (_, hedged_hi) = ci(metric(hedged, "latency_s_p999"));
    let (plain_lo, _) = ci(metric(plain, "latency_s_p999"));
    assert!(hedged_hi < plain_lo, "p99.9 up to {hedged_hi} with hedging vs from {plain_lo} without");
    let share: Vec<f64> = values(metric(hedged, "hedges"))
        .iter()
        .zip(values(hop_metric(hedged, "server", "first_attempts")))
        .map(|(h, f)| h / f)
        .collect();
    let (lo, hi) = t_interval(&share, 0.99);
    assert!(lo > 0.02 && hi < 0.1, "extra load [{lo}, {hi}]");
    for (name, metastable) in [("storm-no-hedge", 0.0), ("storm-hedge-p95", 0.0), ("storm-hedge-10ms", 1.0)] {
        let runs = values(metric(variant(&study, name), "metastable"));
        assert!(runs.iter().all(|&m| m == metastable), "{name}: metastable {runs:?}");
    }
}
