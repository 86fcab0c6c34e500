//! The cache hop (`kind = "cache"`), checked against independent computations from the
//! same key draws (the cache stream's documented positions), and Stability Sim's two cache
//! examples (`scenarios/stability-cache-stampede.toml`, `scenarios/stability-cache-flush.toml`).

mod common;
use common::*;
use retrystorm::engine::{stream, StreamKind, NS_PER_MS, NS_PER_S};
use retrystorm::metrics::RunRecord;
use retrystorm::model::sim;
use retrystorm::runner::run_study;
use retrystorm::scenario::{parse_assignment, Scenario};
use std::collections::{HashSet, VecDeque};

fn inline(text: &str, sets: &[&str]) -> Scenario {
    let sets: Vec<_> = sets.iter().map(|s| parse_assignment(s).expect("valid --set")).collect();
    Scenario::from_source("inline", text, &sets).unwrap_or_else(|e| panic!("{e}"))
}

/// The uniform the cache hop `hop` draws for request `id` (its key at word 4·id, its TTL jitter
/// at 4·id + 2), read here independently of the simulator's code.
fn cache_uniform(seed: u64, rep: u64, hop: u32, id: u64, ttl: bool) -> f64 {
    use rand::RngExt;
    let mut rng = stream(seed, rep, StreamKind::Cache, hop);
    rng.set_word_pos(u128::from(id) * 4 + if ttl { 2 } else { 0 });
    rng.random::<f64>()
}

fn uniform_key(seed: u64, rep: u64, id: u64, keys: u32) -> u32 {
    ((cache_uniform(seed, rep, 0, id, false) * f64::from(keys)) as u32).min(keys - 1)
}

/// Clients → cache (hop 0) → db. `ARRIVAL` and `CACHE` are replaced; the database answers at once
/// unless a test sets its service time, so a fill lands before the next request.
const BASE: &str = r#"
name = "cache-test"
seed = 7
horizon = "HORIZON"
bucket = "1s"

[[tenant]]
name = "app"
clients = CLIENTS
arrival = ARRIVAL
policy = "client"

[policy.client]
jitter = "none"
max_attempts = 1

[[hop]]
name = "cache"
kind = "cache"
cache = CACHE
downstream_policy = "client"

[[hop]]
name = "db"
workers = 1000
service = { dist = "constant", mean = "0s" }
"#;

fn scenario(horizon: &str, clients: u32, arrival: &str, cache: &str, extra: &str, sets: &[&str]) -> Scenario {
    let text = BASE
        .replace("HORIZON", horizon)
        .replace("CLIENTS", &clients.to_string())
        .replace("ARRIVAL", arrival)
        .replace("CACHE", cache);
    inline(&(text + extra), sets)
}

fn run(s: &Scenario, rep: u64) -> RunRecord {
    sim::run(&s.base, s.seed, rep)
}

/// A closed loop of one client sending request k at k × `think` (every hop answers in 0 time).
fn closed(think: &str) -> String {
    format!("{{ kind = \"closed\", start = \"0s\", spread = \"0s\", think = \"{think}\" }}")
}

#[test]
fn with_room_for_every_key_and_no_ttl_misses_are_the_distinct_keys_seen() {
    // K = 100 uniform keys, capacity ≥ K, no TTL, Poisson arrivals: each key misses once, on its
    // first request. The count must equal the distinct keys of the same draws, computed here, and
    // sit within the coupon-collector spread: E = K(1 − (1 − 1/K)^N), Var = K(K−1)(1−2/K)^N +
    // K(1−1/K)^N − K²(1−1/K)^(2N); 5 sd bounds the mean of 10 runs' counts.
    let s =
        scenario("20s", 100, "{ kind = \"poisson\", rate_per_s = 10.0 }", "{ keys = 100, capacity = 200 }", "", &[]);
    let (k, mut total, mut runs) = (100.0f64, 0.0, 0.0);
    let mut expected_total = 0.0;
    let mut var_total = 0.0;
    for rep in 0..10 {
        let r = run(&s, rep);
        let c = &r.hops[0];
        let n = r.tenants[0].requests;
        let distinct: HashSet<u32> = (0..n).map(|id| uniform_key(s.seed, rep, id, 100)).collect();
        assert_eq!(c.cache_misses, distinct.len() as u64, "replication {rep}");
        assert_eq!(c.cache_hits + c.cache_misses, n, "replication {rep}");
        assert_eq!(r.hops[1].attempts, c.cache_misses, "replication {rep}: one backend call per miss");
        let nf = n as f64;
        let q = (1.0 - 1.0 / k).powf(nf);
        expected_total += k * (1.0 - q);
        var_total += k * (k - 1.0) * (1.0 - 2.0 / k).powf(nf) + k * q - k * k * q * q;
        total += c.cache_misses as f64;
        runs += 1.0;
    }
    let (mean, expected, sd) = (total / runs, expected_total / runs, var_total.sqrt() / runs);
    assert!((mean - expected).abs() < 5.0 * sd, "misses {mean} vs coupon collector {expected} ± {sd}");
}

/// A plainly written LRU over a vector (oldest first), fed with the same key sequence.
fn reference_lru_hits(keys: impl Iterator<Item = u32>, capacity: usize) -> u64 {
    let mut order: VecDeque<u32> = VecDeque::new();
    let mut hits = 0;
    for key in keys {
        if let Some(p) = order.iter().position(|&k| k == key) {
            hits += 1;
            order.remove(p);
        } else if order.len() == capacity {
            order.pop_front();
        }
        order.push_back(key);
    }
    hits
}

#[test]
fn zipf_hits_under_lru_equal_an_independent_lru_over_the_same_keys() {
    // 1,000 Zipf(0.9) keys, LRU of 100, fills at once: every request's hit or miss is determined
    // by the key sequence alone, so the hits must equal a separately written LRU's on the keys
    // drawn here by inverting the Zipf CDF. Che's approximation lands near the same ratio.
    let (keys, capacity, s_exp) = (1000u32, 100usize, 0.9f64);
    let cache = format!("{{ keys = {keys}, capacity = {capacity}, key_distribution = {{ zipf = {s_exp} }} }}");
    let s = scenario("30s", 100, "{ kind = \"poisson\", rate_per_s = 200.0 }", &cache, "", &[]);
    let weights: Vec<f64> = (1..=keys).map(|k| f64::from(k).powf(-s_exp)).collect();
    let total: f64 = weights.iter().sum();
    let mut cdf = Vec::new();
    let mut acc = 0.0;
    for w in &weights {
        acc += w / total;
        cdf.push(acc);
    }
    let zipf_key = |u: f64| cdf.iter().position(|&c| u < c).unwrap_or(keys as usize - 1) as u32;
    for rep in 0..3 {
        let r = run(&s, rep);
        let n = r.tenants[0].requests;
        let hits = reference_lru_hits((0..n).map(|id| zipf_key(cache_uniform(s.seed, rep, 0, id, false))), capacity);
        assert_eq!(r.hops[0].cache_hits, hits, "replication {rep}");
    }
    // Che: the characteristic time T solves Σ (1 − e^(−p_k T)) = C; hit ratio Σ p_k (1 − e^(−p_k T)).
    let p: Vec<f64> = weights.iter().map(|w| w / total).collect();
    let filled = |t: f64| p.iter().map(|pk| 1.0 - (-pk * t).exp()).sum::<f64>();
    let (mut lo, mut hi) = (0.0, 1e9);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if filled(mid) < capacity as f64 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let che: f64 = p.iter().map(|pk| pk * (1.0 - (-pk * lo).exp())).sum();
    let study = run_study(&s, &s.run_variants(), &Default::default());
    let ratio = hop_metric(&study.variants[0], "cache", "cache_hit_ratio").mean.expect("a ratio");
    // Che is an approximation (typically within a percentage point for Zipf under LRU) and the
    // simulated ratio includes the cold start (about C misses out of ~6,000 requests).
    eprintln!("Zipf(0.9) over 1,000 keys, LRU 100: simulated hit ratio {ratio:.4}, Che {che:.4}");
    assert!((ratio - che).abs() < 0.03, "hit ratio {ratio} vs Che {che}");
}

#[test]
fn entries_expire_after_their_ttl_and_jitter_spreads_it() {
    // One key, requests every 100 ms, TTL 1 s: misses at 0, 1, 2, … s (a lookup at exactly the
    // expiry misses), 10 of the 100 requests in 10 s.
    let s = scenario("10s", 1, &closed("100ms"), "{ keys = 1, ttl = \"1s\" }", "", &[]);
    let r = run(&s, 0);
    assert_eq!((r.tenants[0].requests, r.hops[0].cache_misses), (100, 10));
    // TTL × U(0.7, 1.3): replay the expiry times from the jitter draws of the filling requests.
    let s = scenario("30s", 1, &closed("100ms"), "{ keys = 1, ttl = \"1s\", ttl_jitter = 0.3 }", "", &[]);
    for rep in 0..3 {
        let r = run(&s, rep);
        let (mut misses, mut expires) = (0u64, 0u64);
        for id in 0..r.tenants[0].requests {
            let t = id * 100 * NS_PER_MS;
            if t >= expires {
                misses += 1;
                let u = cache_uniform(s.seed, rep, 0, id, true);
                expires = t + (NS_PER_S as f64 * (0.7 + 0.6 * u)).round() as u64;
            }
        }
        assert_eq!(r.hops[0].cache_misses, misses, "replication {rep}");
    }
}

#[test]
fn coalescing_turns_a_stampede_into_one_backend_call() {
    // 500 clients ask for the same key at t = 0; the database takes 100 ms. Without coalescing
    // every one of them is a miss sent to the database; with it, one call and 499 waits.
    let herd = "{ kind = \"herd\", start = \"0s\", spread = \"0s\" }";
    let slow_db = ["hop.db.service.mean=100ms"];
    let s = scenario("5s", 500, herd, "{ keys = 1 }", "", &slow_db);
    let r = run(&s, 0);
    assert_eq!((r.hops[0].cache_misses, r.hops[1].attempts, r.hops[0].cache_coalesced), (500, 500, 0));
    let s = scenario("5s", 500, herd, "{ keys = 1, coalesce = true }", "", &slow_db);
    let r = run(&s, 0);
    assert_eq!((r.hops[0].cache_misses, r.hops[1].attempts, r.hops[0].cache_coalesced), (1, 1, 499));
    assert_eq!(r.tenants[0].succeeded, 500, "every waiter gets the fill's success");
    // A failed fill fails its waiters too (as Go's singleflight shares the error).
    // The outage answers at once, so the db gets a 1 ms network delay: the failure then reaches the
    // cache after all 500 lookups of t = 0 (same-instant work is fused into the event that caused
    // it, so with no delay the first miss would fail before the second client arrives).
    let down = "\n[[fault]]\nhop = \"db\"\nkind = \"outage\"\nfrom = \"0s\"\nto = \"1s\"\n";
    let net = ["hop.db.service.mean=100ms", "hop.db.network={ dist = \"constant\", mean = \"1ms\" }"];
    let s = scenario("5s", 500, herd, "{ keys = 1, coalesce = true }", down, &net);
    let r = run(&s, 0);
    assert_eq!((r.hops[1].attempts, r.tenants[0].succeeded, r.tenants[0].dlq), (1, 0, 500));
}

#[test]
fn a_cache_flush_empties_the_store_and_drops_fills_while_it_lasts() {
    // 20 keys, requests every 10 ms for 10 s (ids 0…999 at id × 10 ms), no TTL. A flush over
    // [4 s, 5 s): misses = distinct keys before 4 s + every request in [4 s, 5 s) (nothing is
    // stored then) + distinct keys from 5 s on.
    let flush = "\n[[fault]]\nhop = \"cache\"\nkind = \"cache_flush\"\nfrom = \"4s\"\nto = \"5s\"\n";
    let s = scenario("10s", 1, &closed("10ms"), "{ keys = 20 }", flush, &[]);
    for rep in 0..3 {
        let r = run(&s, rep);
        assert_eq!(r.tenants[0].requests, 1000);
        let key = |id: u64| uniform_key(s.seed, rep, id, 20);
        let before: HashSet<u32> = (0..400).map(key).collect();
        let after: HashSet<u32> = (500..1000).map(key).collect();
        let want = before.len() as u64 + 100 + after.len() as u64;
        assert_eq!(r.hops[0].cache_misses, want, "replication {rep}");
    }
}

#[test]
fn the_hit_ratio_series_follows_the_flush() {
    // The timeseries column: ≈1 once warm, 0 in the bucket of a long flush, recovering after.
    let flush = "\n[[fault]]\nhop = \"cache\"\nkind = \"cache_flush\"\nfrom = \"4s\"\nto = \"5s\"\n";
    let s = scenario("10s", 1, &closed("10ms"), "{ keys = 5 }", flush, &[]);
    let study = run_study(&s, &s.run_variants(), &Default::default());
    let series = &study.variants[0].hop_series[0];
    let col = retrystorm::runner::SERIES_COLUMNS.iter().position(|c| *c == "cache_hit_ratio").expect("column");
    let at = |t: usize| series.rows[t][col];
    assert!(at(2) > 0.95 && at(3) > 0.95 && at(7) > 0.95, "{} {} {}", at(2), at(3), at(7));
    assert_eq!(at(4), 0.0, "nothing is stored while the flush lasts");
}

#[test]
fn a_request_keeps_its_key_across_variants_and_retries() {
    // Common random numbers: the key is read at the request id's position, so a variant that
    // changes the retry policy (or the hop's timeout) sees the same keys: with coalescing off and
    // fills at once, misses are the same in both.
    let s =
        scenario("20s", 100, "{ kind = \"poisson\", rate_per_s = 50.0 }", "{ keys = 300, capacity = 100 }", "", &[]);
    let a = run(&s, 0);
    let s2 = scenario(
        "20s",
        100,
        "{ kind = \"poisson\", rate_per_s = 50.0 }",
        "{ keys = 300, capacity = 100 }",
        "",
        &["policy.client.max_attempts=3", "policy.client.jitter=full"],
    );
    let b = run(&s2, 0);
    assert_eq!((a.hops[0].cache_hits, a.hops[0].cache_misses), (b.hops[0].cache_hits, b.hops[0].cache_misses));
}

/// Per-replication sums over buckets `from..to` of `f` applied to each bucket.
fn sum_over<B>(series: &[B], from: usize, to: usize, f: impl Fn(&B) -> u32) -> f64 {
    series[from..to].iter().map(|b| f64::from(f(b))).sum()
}

/// Attempts inside hop `hop` at the end of bucket `b` (entered minus left since the start).
fn backlog_at(r: &RunRecord, hop: usize, b: usize) -> f64 {
    sum_over(&r.hop_series[hop], 0, b + 1, |x| x.entered) - sum_over(&r.hop_series[hop], 0, b + 1, |x| x.left)
}

#[test]
fn stampede_example_as_published_does_not_stampede_and_at_x50_coalescing_removes_it() {
    // Stability Sim's example 4 with its queue (the cache's pool: 20 calls in flight, 60 waiting,
    // the rest refused) and its database (pool 20, × (1 + 3u²), × 20 from 10 s to 15 s). Slowed
    // ×20 the database at full pool use still serves 20 ÷ (5 ms × 20 × 4) = 50/s, more than the
    // misses (≈ 42/s), so the published run does not stampede: nothing is refused, every request
    // succeeds, the hit ratio stays at the LRU's ≈ 80 of 100 keys. At ×50 (20/s at full pool use)
    // misses are refused during the window, requests are lost, and coalescing removes the loss.
    let study = study("stability-cache-stampede", &["replications=10"]);
    let v = |name: &str| study.variants.iter().find(|v| v.name == name).expect(name);
    let published = v("as-published");
    assert_eq!(metric(published, "success_ratio").mean, Some(1.0));
    assert!(values(hop_metric(published, "cache", "pool_queue_full")).iter().all(|&x| x == 0.0), "nothing is shed");
    let ratio = hop_metric(published, "cache", "cache_hit_ratio");
    let [lo, hi] = ratio.ci95.expect("an interval");
    assert!(lo > 0.75 && hi < 0.83, "hit ratio [{lo}, {hi}]");
    // Why: the misses per second (the database's attempts over the 60 s) stay below the 50/s the
    // slowed database serves even at full pool use (upper 99% bound over the replications).
    let misses_per_s: Vec<f64> = values(hop_metric(published, "db", "attempts")).iter().map(|a| a / 60.0).collect();
    let (_, hi) = t_interval(&misses_per_s, 0.99);
    assert!(hi < 50.0, "misses reach the slowed database's full-pool capacity: up to {hi}/s");
    // ×50: requests are lost, misses are refused by the full queue, and only during the window.
    let stressed = v("slow-x50");
    let coalesced = v("slow-x50-coalesce");
    let (_, hi) = t_interval(&values(metric(stressed, "success_ratio")), 0.99);
    assert!(hi < 1.0, "the stampede loses requests");
    let (lo, _) = t_interval(&values(hop_metric(stressed, "cache", "pool_queue_full")), 0.99);
    assert!(lo > 0.0, "the queue sheds: from {lo}");
    // The hit ratio over the slow window [10 s, 15 s) against the 5 s before it, per replication:
    // as published it does not fall by even 3 points (99% upper bound); at ×50 it falls.
    let s = common::scenario("stability-cache-stampede", &[]);
    let window_drop = |r: &RunRecord| {
        let cache = &r.hop_series[0];
        let hits =
            |from, to| sum_over(cache, from, to, |b| b.cache_hits) / sum_over(cache, from, to, |b| b.cache_lookups);
        hits(5, 10) - hits(10, 15)
    };
    let (mut drop_published, mut drop_stressed) = (vec![], vec![]);
    for rep in 0..10 {
        drop_published.push(window_drop(&sim::run(&published.spec, s.seed, rep)));
        let r = sim::run(&stressed.spec, s.seed, rep);
        drop_stressed.push(window_drop(&r));
        let late = sum_over(&r.tenant_series[0], 17, 60, |b| b.failures);
        assert_eq!(late, 0.0, "replication {rep}: a request failed after the window (+2 s of timeouts)");
    }
    let (_, hi) = t_interval(&drop_published, 0.99);
    assert!(hi < 0.03, "as published the hit ratio falls in the slow window: {drop_published:?}");
    let (lo, _) = t_interval(&drop_stressed, 0.99);
    assert!(lo > 0.0, "at ×50 the hit ratio does not fall in the window: {drop_stressed:?}");
    let diffs: Vec<f64> =
        values(metric(stressed, "dlq")).iter().zip(values(metric(coalesced, "dlq"))).map(|(a, b)| a - b).collect();
    let (lo, _) = t_interval(&diffs, 0.99);
    assert!(lo > 0.0, "coalescing does not save requests: {diffs:?}");
    let db = values(hop_metric(stressed, "db", "attempts"));
    let db_c = values(hop_metric(coalesced, "db", "attempts"));
    assert!(db.iter().zip(&db_c).all(|(a, b)| b < a), "coalescing forwards fewer misses in every run");
}

#[test]
fn flush_example_as_published_is_metastable_and_coalescing_recovers() {
    // Stability Sim's example 5 with its database (pool 30, × (1 + 5u³)): at full pool use it
    // serves 30 ÷ (0.5 s × 6) = 10/s. The flush sends every request to it; its backlog reaches
    // thousands and still grows at the horizon, keys refill slowly, the refilled entries expire
    // together a TTL later into the same backlog (how much of that second wave falls before the
    // 60 s horizon varies from run to run: the refills are spread over ≈ 25 s), and in the last
    // 10 s the hit ratio is below its pre-flush level and requests fail: the metastable failure
    // the example claims. Bounds: 99% Student-t intervals over 10 replications.
    let s = common::scenario("stability-cache-flush", &[]);
    let (mut growth, mut backlog, mut hit_drop, mut late_failed) = (vec![], vec![], vec![], vec![]);
    for rep in 0..10 {
        let r = sim::run(&s.base, s.seed, rep);
        let cache = &r.hop_series[0];
        let hits =
            |from, to| sum_over(cache, from, to, |b| b.cache_hits) / sum_over(cache, from, to, |b| b.cache_lookups);
        hit_drop.push(hits(5, 10) - hits(50, 60));
        backlog.push(backlog_at(&r, 1, 59));
        growth.push(backlog_at(&r, 1, 59) - backlog_at(&r, 1, 49));
        let tenant = &r.tenant_series[0];
        let failed = sum_over(tenant, 50, 60, |b| b.failures);
        late_failed.push(failed / (failed + sum_over(tenant, 50, 60, |b| b.successes)));
    }
    let lower = |xs: &[f64]| t_interval(xs, 0.99).0;
    assert!(lower(&backlog) > 1000.0, "the database's backlog at 60 s: {backlog:?}");
    assert!(lower(&growth) > 0.0, "the backlog still grows over the last 10 s: {growth:?}");
    assert!(lower(&hit_drop) > 0.0, "hit ratio, pre-flush minus last 10 s: {hit_drop:?}");
    assert!(lower(&late_failed) > 0.0, "share of requests failing in the last 10 s: {late_failed:?}");
    let study = study("stability-cache-flush", &["replications=10"]);
    let v = |name: &str| study.variants.iter().find(|v| v.name == name).expect(name);
    let published = v("as-published");
    assert!(
        hop_metric(published, "db", "backlog_cleared_s").values.iter().all(Option::is_none),
        "the database's backlog never clears"
    );
    let col = retrystorm::runner::SERIES_COLUMNS.iter().position(|c| *c == "cache_hit_ratio").expect("column");
    let cache_series = &published.hop_series[0];
    assert!(cache_series.rows[9][col] > 0.9 && cache_series.rows[10][col] < 0.8, "the flush at 10 s empties the cache");
    // Coalescing: one miss per key (50 at the start, 50 after the flush, 50 at the TTL), the
    // backlog clears in every run, never metastable.
    let coalesce = v("coalesce");
    assert_eq!(hop_metric(coalesce, "db", "attempts").mean, Some(150.0), "3 fills per key: start, flush, TTL");
    assert_eq!(metric(coalesce, "metastable").mean, Some(0.0));
    assert!(hop_metric(coalesce, "db", "backlog_cleared_s").values.iter().all(Option::is_some));
    // What if the cache gave up on its call after 2 s: fills behind the backlog never land.
    let timed_out = v("fill-timeout");
    assert!(hop_metric(timed_out, "cache", "cache_hit_ratio").ci95.expect("an interval")[1] < 0.5);
}

#[test]
fn in_a_call_graph_a_cache_forwards_its_misses_through_its_calls_edge() {
    // cache → api → db as a graph: every miss (and nothing else) reaches the api, then the db.
    let text = r#"
name = "cache-graph"
seed = 7
horizon = "10s"
bucket = "1s"

[[tenant]]
name = "app"
clients = 200
arrival = { kind = "herd", start = "0s", spread = "5s" }
policy = "client"

[policy.client]
jitter = "none"
max_attempts = 1

[[hop]]
name = "cache"
kind = "cache"
cache = { keys = 20 }
calls = [{ hop = "api", policy = "client" }]

[[hop]]
name = "api"
service = { dist = "constant", mean = "1ms" }
calls = [{ hop = "db", policy = "client" }]

[[hop]]
name = "db"
service = { dist = "constant", mean = "1ms" }
"#;
    let s = inline(text, &[]);
    let r = run(&s, 0);
    let c = &r.hops[0];
    assert_eq!(c.cache_hits + c.cache_misses + c.cache_coalesced, 200, "every request is one lookup");
    assert!(c.cache_misses >= 1 && c.cache_hits >= 1, "20 keys for 200 requests: both hits and misses");
    assert_eq!(r.hops[1].attempts, c.cache_misses, "each miss is one call to the backend");
    assert_eq!(r.hops[2].attempts, c.cache_misses);
    assert_eq!(r.tenants[0].succeeded, 200);
}
