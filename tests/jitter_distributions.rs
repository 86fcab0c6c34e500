//! Each jitter strategy's delays against the formula of docs/MODEL.md: Kolmogorov–Smirnov tests
//! against statrs CDFs, decorrelated jitter through its recurrence, exact values where the
//! strategy is deterministic.
//!
//! Significance α = 0.001 per test with n = 20,000 draws from fixed seeds: a correct sampler
//! passes with probability 99.9% for a random seed, and deterministically for these seeds; a
//! sampler off by 2% in its range is rejected (critical D ≈ 0.0138).

mod common;
use common::{ks_critical, ks_statistic};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use retrystorm::engine::{stream, stream_key, KeyedDraws, StreamKind, NS_PER_MS, NS_PER_S};
use retrystorm::model::policy::{decorrelated_v2_step, JitterState};
use retrystorm::model::{Jitter, RetryPolicy};
use statrs::distribution::{ChiSquared, ContinuousCDF, Uniform};

const N: usize = 20_000;
const ALPHA: f64 = 0.001;

fn policy(jitter: Jitter) -> RetryPolicy {
    RetryPolicy {
        name: "test".into(),
        jitter,
        base: 100 * NS_PER_MS,
        multiplier: 2.0,
        cap: 10 * NS_PER_S,
        attempts_max: 20,
        deadline: None,
        attempt_timeout: None,
        deadline_mode: retrystorm::model::DeadlineMode::PerCall,
        retry_after: retrystorm::model::RetryAfterMode::Ignore,
        throttle_base: None,
        budget: None,
        breaker: None,
        preset: None,
        retry_on: retrystorm::model::RetryOn::ALL,
        hedge: None,
        cancel_on_timeout: false,
        requeue: false,
        late_reply: retrystorm::model::LateReply::Ignore,
    }
}

fn rng(index: u32) -> ChaCha8Rng {
    stream(2024, 0, StreamKind::Aux, index)
}

/// `N` independent draws of the delay before retry `k` (fresh per-request state each time).
fn draws(p: &RetryPolicy, k: u32, index: u32) -> Vec<f64> {
    let mut r = rng(index);
    (0..N)
        .map(|_| {
            let mut state = JitterState::default();
            p.delay_before_retry(k, &mut state, &mut r) as f64
        })
        .collect()
}

fn assert_uniform(samples: &mut [f64], lo: f64, hi: f64, what: &str) {
    let u = Uniform::new(lo, hi).expect("lo < hi");
    let d = ks_statistic(samples, |x| u.cdf(x));
    let crit = ks_critical(samples.len(), ALPHA);
    assert!(d < crit, "{what}: KS D = {d:.5} ≥ critical {crit:.5} for U({lo}, {hi})");
}

#[test]
fn full_jitter_is_uniform_on_zero_to_exp() {
    for k in [1, 3, 8] {
        let p = policy(Jitter::Full);
        let e = p.exp_delay(k) as f64;
        assert_uniform(&mut draws(&p, k, k), 0.0, e, &format!("full, retry {k}"));
    }
}

#[test]
fn equal_jitter_is_uniform_on_half_to_exp() {
    for k in [1, 4, 9] {
        let p = policy(Jitter::Equal);
        let e = p.exp_delay(k) as f64;
        assert_uniform(&mut draws(&p, k, 10 + k), e / 2.0, e, &format!("equal, retry {k}"));
    }
}

#[test]
fn proportional_jitter_is_uniform_around_exp() {
    for ratio in [0.2, 0.5] {
        let p = policy(Jitter::Proportional { ratio });
        let e = p.exp_delay(3) as f64;
        assert_uniform(&mut draws(&p, 3, 20), e * (1.0 - ratio), e * (1.0 + ratio), &format!("proportional {ratio}"));
    }
}

#[test]
fn exponential_none_and_schedule_are_exact() {
    let mut r = rng(30);
    let mut s = JitterState::default();
    let p = policy(Jitter::Exponential);
    let got: Vec<u64> = (1..=10).map(|k| p.delay_before_retry(k, &mut s, &mut r) / NS_PER_MS).collect();
    assert_eq!(got, [100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000, 10_000]);
    let p = policy(Jitter::None);
    assert!((1..=10).all(|k| p.delay_before_retry(k, &mut s, &mut r) == 0));
    let svix = [0, 5, 300, 1800, 7200, 18_000, 36_000, 36_000].map(|s| s * NS_PER_S);
    let p = policy(Jitter::Schedule { delays: svix.to_vec() });
    let got: Vec<u64> = (1..=8).map(|k| p.delay_before_retry(k, &mut s, &mut r)).collect();
    assert_eq!(got, svix);
}

#[test]
fn decorrelated_follows_its_recurrence() {
    // s_k = min(cap, U(base, 3·s_{k−1})), s_0 = base. Given s_{k−1}, an uncapped draw has CDF
    // (x − base)/(3·s_{k−1} − base): the probability-integral transform of every step whose
    // upper end is below the cap must be U(0, 1). Steps that can reach the cap land on it with
    // probability (upper − cap)/(upper − base); the count at the cap is checked against that
    // binomial mean within 4 standard deviations.
    let p = policy(Jitter::Decorrelated);
    let (base, cap) = (p.base as f64, p.cap as f64);
    let mut r = rng(40);
    let mut pit = Vec::new();
    let (mut at_cap, mut expected_at_cap, mut var_at_cap) = (0.0, 0.0, 0.0);
    while pit.len() < N {
        let mut state = JitterState::default();
        let mut prev = base;
        for k in 1..=12 {
            let s = p.delay_before_retry(k, &mut state, &mut r) as f64;
            let upper = 3.0 * prev;
            assert!(s >= base && s <= cap.min(upper), "retry {k}: {s} outside [{base}, min(cap, {upper})]");
            if upper <= cap {
                pit.push((s - base) / (upper - base));
            } else {
                let q = (upper - cap) / (upper - base);
                expected_at_cap += q;
                var_at_cap += q * (1.0 - q);
                at_cap += f64::from(u8::from(s == cap));
            }
            prev = s;
        }
    }
    assert_uniform(&mut pit, 0.0, 1.0, "decorrelated PIT");
    let sd = var_at_cap.sqrt();
    assert!((at_cap - expected_at_cap).abs() < 4.0 * sd, "at cap {at_cap} vs expected {expected_at_cap} ± {sd}");
}

#[test]
fn decorrelated_finagle_follows_finagles_decorrelated_jittered() {
    // finagle-core `Backoff.scala`, `Backoff.decorrelatedJittered(start, maximum)`, transcribed:
    // the first backoff is `start`; `next` of a backoff `d` is `d + rng.nextLong(upper − d)` with
    // `upper = if (d >= maximum / 3) maximum else d * 3` (and `d` itself when the range is 0),
    // so each is uniform on [d, upper). Here start = base = 100 ms, maximum = cap = 10 s. Given
    // the previous backoff, the probability-integral transform of every draw must be U(0, 1),
    // and a backoff at the cap stays there.
    let p = policy(Jitter::DecorrelatedFinagle);
    let (base, cap) = (p.base, p.cap);
    let mut r = rng(41);
    let mut pit = Vec::new();
    while pit.len() < N {
        let mut state = JitterState::default();
        let mut prev = p.delay_before_retry(1, &mut state, &mut r);
        assert_eq!(prev, base, "the first backoff is `start` itself, undrawn");
        for k in 2..=12 {
            let s = p.delay_before_retry(k, &mut state, &mut r);
            let upper = if prev >= cap / 3 { cap } else { prev * 3 };
            if upper == prev {
                assert_eq!(s, cap, "retry {k}: at the cap it stays");
                continue;
            }
            assert!(s >= prev && s < upper, "retry {k}: {s} outside [{prev}, {upper})");
            assert!(s <= p.delay_upper_bound(k), "retry {k}: {s} above the strategy's bound");
            pit.push((s - prev) as f64 / (upper - prev) as f64);
            prev = s;
        }
    }
    assert_uniform(&mut pit, 0.0, 1.0, "decorrelated_finagle PIT");
}

#[test]
fn decorrelated_v2_cumulative_delay_matches_its_formula() {
    // With prev starting at 0 the delays telescope: the sum of the delays through retry k is
    // g(t)·base/1.4 with g(t) = 2^t·tanh(√(4t)) and t = (k − 1) + U, so (before the cap)
    // P(sum ≤ x) = g⁻¹(1.4·x/base) − (k − 1). g is increasing, so g⁻¹ is found by bisection.
    let mut p = policy(Jitter::DecorrelatedV2);
    p.cap = u64::MAX;
    let base = p.base as f64;
    let g = |t: f64| t.exp2() * (4.0 * t).sqrt().tanh();
    let g_inv = |y: f64| {
        let (mut lo, mut hi) = (0.0, 64.0);
        for _ in 0..200 {
            let mid = (lo + hi) / 2.0;
            if g(mid) < y {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    };
    for k in [1u32, 3, 6] {
        let mut r = rng(50 + k);
        let mut sums: Vec<f64> = (0..N)
            .map(|_| {
                let mut state = JitterState::default();
                (1..=k).map(|j| p.delay_before_retry(j, &mut state, &mut r) as f64).sum()
            })
            .collect();
        let cdf = |x: f64| (g_inv(1.4 * x / base) - f64::from(k - 1)).clamp(0.0, 1.0);
        let d = ks_statistic(&mut sums, cdf);
        assert!(d < ks_critical(N, ALPHA), "decorrelated_v2 retry {k}: KS D = {d}");
    }
    // And the step function itself: u = 0 at retry 1 gives g(0) = 0, no delay.
    let mut prev = 0.0;
    assert_eq!(decorrelated_v2_step(1, 0.0, &mut prev, 1_000), 0.0);
}

/// The simulator's jitter draws: retry `k` of the call keyed `key` (a request id) reads
/// `KeyedDraws::new(stream key of the hop, key, k)`. Keys are consecutive request ids, the worst
/// case for a weak hash.
fn keyed_first(stream: u64, key: u64, k: u32) -> f64 {
    KeyedDraws::new(stream, key, k).random::<f64>()
}

#[test]
fn keyed_draws_are_uniform_over_consecutive_request_ids() {
    let stream = stream_key(2024, 0, StreamKind::Jitter, 0);
    for k in [1, 2, 9] {
        let mut u: Vec<f64> = (0..N as u64).map(|id| keyed_first(stream, id, k)).collect();
        assert_uniform(&mut u, 0.0, 1.0, &format!("keyed draws, retry {k}"));
    }
    // Through the policy, as the simulator draws them: full jitter before retry 3.
    let p = policy(Jitter::Full);
    let e = p.exp_delay(3) as f64;
    let mut delays: Vec<f64> = (0..N as u64)
        .map(|id| {
            let mut d = KeyedDraws::new(stream, id, 3);
            p.delay_before_retry(3, &mut JitterState::default(), &mut d) as f64
        })
        .collect();
    assert_uniform(&mut delays, 0.0, e, "full jitter from keyed draws, retry 3");
}

/// Pairs that common random numbers must keep independent: a request's retry k and k + 1,
/// neighbouring request ids at the same retry, and the same (id, retry) in two replications'
/// streams. Each pair is tested on a 10 × 10 grid by Pearson's χ² (99 degrees of freedom, α =
/// 0.001 per pair: critical 148.2) and by its sample correlation (|r| < 3.29/√N at α = 0.001).
#[test]
fn keyed_draws_are_independent_across_retries_ids_and_replications() {
    let (s0, s1) = (stream_key(2024, 0, StreamKind::Jitter, 0), stream_key(2024, 1, StreamKind::Jitter, 0));
    type Pair = Box<dyn Fn(u64) -> (f64, f64)>;
    let pairs: [(&str, Pair); 3] = [
        ("retry k, k + 1", Box::new(move |id| (keyed_first(s0, id, 4), keyed_first(s0, id, 5)))),
        ("id, id + 1", Box::new(move |id| (keyed_first(s0, 2 * id, 4), keyed_first(s0, 2 * id + 1, 4)))),
        ("replication 0, 1", Box::new(move |id| (keyed_first(s0, id, 4), keyed_first(s1, id, 4)))),
    ];
    let critical = ChiSquared::new(99.0).expect("df > 0").inverse_cdf(1.0 - ALPHA);
    for (what, pair) in pairs {
        let mut cells = [0u32; 100];
        let (mut sx, mut sy, mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for id in 0..N as u64 {
            let (x, y) = pair(id);
            cells[(x * 10.0) as usize * 10 + (y * 10.0) as usize] += 1;
            (sx, sy, sxy, sxx, syy) = (sx + x, sy + y, sxy + x * y, sxx + x * x, syy + y * y);
        }
        let expected = N as f64 / 100.0;
        let chi2: f64 = cells.iter().map(|&c| (f64::from(c) - expected).powi(2) / expected).sum();
        assert!(chi2 < critical, "{what}: χ² = {chi2:.1} ≥ {critical:.1}");
        let n = N as f64;
        let r = (sxy - sx * sy / n) / ((sxx - sx * sx / n) * (syy - sy * sy / n)).sqrt();
        assert!(r.abs() < 3.29 / n.sqrt(), "{what}: correlation {r:.5}");
    }
}
