//! Connection pools with cancellation and hedging: a cancelled pooled call gives its
//! connection back or leaves the wait queue, a hedge rides on its attempt's connection, and the
//! pool's books balance. (Before pools learned cancellation and hedging, a pool with a cancelling or hedging policy
//! was refused; a client cancelling through a pooled hop leaked every connection.)

mod common;
use retrystorm::model::sim::run;
use retrystorm::scenario::Scenario;

/// client → api (pool of 8 connections to db) → db (8 workers, Exp(10 ms)): the client gives up
/// after 30 ms, api after 40 ms; `client` and `inner` are extra policy lines (cancellation, hedging).
fn scenario(client: &str, inner: &str) -> Scenario {
    let toml = format!(
        r#"
name = "pool-cancel"
seed = 3
horizon = "10s"
replications = 4
[[tenant]]
name = "main"
clients = 2000
arrival = {{ kind = "poisson", rate_per_s = 100.0 }}
policy = "client"
[policy.client]
jitter = "full"
max_attempts = 3
attempt_timeout = "30ms"
{client}
[policy.inner]
jitter = "full"
max_attempts = 2
attempt_timeout = "40ms"
{inner}
[[hop]]
name = "api"
workers = 50
service = {{ dist = "constant", mean = "1ms" }}
network = {{ dist = "constant", mean = "1ms" }}
downstream_policy = "inner"
pool = {{ size = 8, queue_limit = 100, acquire_timeout = "50ms" }}
[[hop]]
name = "db"
workers = 8
service = {{ dist = "exponential", mean = "10ms" }}
network = {{ dist = "constant", mean = "1ms" }}
"#
    );
    Scenario::from_source("pool-cancel.toml", &toml, &[]).unwrap_or_else(|e| panic!("{e}"))
}

/// Per replication: (success ratio, pool acquires, db attempts that are not hedges, hedges).
/// Every run ends with every call finished, so the simulation's own end-of-run check (every
/// connection back, nobody waiting; it panics with the seed otherwise) has run too.
fn books(s: &Scenario) -> Vec<(f64, u64, u64, u64)> {
    (0..u64::from(s.replications))
        .map(|rep| {
            let r = run(&s.base, s.seed, rep);
            assert!(r.truncated.is_none(), "replication {rep} drained");
            let t = &r.tenants[0];
            let success = t.succeeded as f64 / t.requests as f64;
            let pool = r.hops[0].pool.as_deref().expect("api has a pool");
            let db = &r.hops[1];
            (success, pool.acquired, db.attempts - db.hedges, db.hedges)
        })
        .collect()
}

#[test]
fn a_pool_with_cancelling_and_hedging_policies_runs_and_its_books_balance() {
    let plain = books(&scenario("", ""));
    let cases = [
        ("client cancels through the pool", "cancel_on_timeout = true", ""),
        ("the pooled calls cancel on their own timeout", "", "cancel_on_timeout = true"),
        ("the pooled calls hedge", "", "hedge = { after = \"15ms\", max_share = 0.2 }"),
        (
            "cancel and hedge everywhere",
            "cancel_on_timeout = true",
            "cancel_on_timeout = true\nhedge = { after = \"15ms\", max_share = 0.2 }",
        ),
    ];
    for (what, client, inner) in cases {
        let s = scenario(client, inner);
        for (rep, (success, acquired, pooled_attempts, hedges)) in books(&s).into_iter().enumerate() {
            // Every non-hedge attempt to db took exactly one connection; a hedge took none.
            assert_eq!(acquired, pooled_attempts, "{what}, replication {rep}: acquires vs attempts sent");
            if inner.contains("hedge") {
                assert!(hedges > 0, "{what}, replication {rep}: no hedge was sent");
            }
            // No leak: a leaked connection is never given back, so after eight the pool is shut
            // and nearly every request fails (0.8% succeeded before the fix when the client
            // cancelled). Cancelling frees db for live work, so success is at least the plain
            // pool's less a margin of 10 points for the noise of one replication.
            assert!(
                success > plain[rep].0 - 0.10,
                "{what}, replication {rep}: success {success:.3} vs {:.3} without cancellation or hedging (seed {})",
                plain[rep].0,
                s.seed
            );
        }
    }
}
