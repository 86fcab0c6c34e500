//! Properties over random valid scenarios (proptest, bounded sizes): nothing panics, requests
//! are conserved, the same seed gives the same summary.json bytes. Time monotonicity and
//! conservation are also asserted inside the engine, so a violation fails these tests as a panic.
//!
//! Also the stable-Rust stand-in for the `cargo fuzz` target (`fuzz/src/lib.rs`, included below):
//! mutated scenario files through the same function. `RETRYSTORM_FUZZ_CASES=N` sets its budget.

#[path = "../fuzz/src/lib.rs"]
mod fuzz_harness;

use proptest::prelude::*;
use proptest::sample::select;
use retrystorm::metrics::catalogue::Metric;
use retrystorm::report::summary::Summary;
use retrystorm::runner::{run_study, RunOptions, StatRow, Study};
use retrystorm::scenario::Scenario;

/// A duration in milliseconds as a scenario string.
fn ms(v: u64) -> String {
    format!("\"{v}ms\"")
}

/// A service or network time distribution (all parameters within a few milliseconds).
fn dist() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..5).prop_map(|m| format!("{{ dist = \"constant\", mean = {} }}", ms(m))),
        (1u64..5).prop_map(|m| format!("{{ dist = \"exponential\", mean = {} }}", ms(m))),
        (1u64..5, 0u64..3).prop_map(|(m, s)| format!("{{ dist = \"lognormal\", mean = {}, sd = {} }}", ms(m), ms(s))),
        (0u64..5, 0u64..3).prop_map(|(m, s)| format!("{{ dist = \"normal_abs\", mean = {}, sd = {} }}", ms(m), ms(s))),
        (0u64..3, 0u64..2).prop_map(|(b, p)| format!(
            "{{ dist = \"load\", base = {}, per_inflight = {} }}",
            ms(b),
            ms(p)
        )),
    ]
}

/// An arrival pattern whose total work stays small over a horizon of a few seconds.
fn arrival() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..500, 0u64..1500, 1u32..3).prop_map(|(start, spread, n)| format!(
            "{{ kind = \"herd\", start = {}, spread = {}, requests_per_client = {n} }}",
            ms(start),
            ms(spread)
        )),
        (1u32..300).prop_map(|rate| format!("{{ kind = \"poisson\", rate_per_s = {rate}.0 }}")),
        (0u64..300, 0u64..1000, 50u64..800).prop_map(|(start, spread, think)| format!(
            "{{ kind = \"closed\", start = {}, spread = {}, think = {} }}",
            ms(start),
            ms(spread),
            ms(think)
        )),
        // Rates of 0 are allowed in a profile: nothing arrives during that step.
        (0u32..100, 1u64..3000, 0u32..100).prop_map(|(r0, at, r1)| format!(
            "{{ kind = \"profile\", steps = [{{ from = \"0s\", rate_per_s = {r0}.0 }}, {{ from = {}, rate_per_s = {r1}.0 }}] }}",
            ms(at)
        )),
    ]
}

const BUDGETS: [&str; 6] = ["aws_quota", "grpc_throttle", "finagle", "ratio", "adaptive_throttle", "token_bucket"];
const SCOPES: [&str; 3] = ["client", "tenant", "global"];
const PRESETS: [&str; 4] = ["aws-standard", "grpc", "envoy", "polly-v8"];

/// A retry policy named `name`: every jitter strategy, with and without timeouts, deadlines,
/// budgets and breakers, or a preset.
fn policy(name: String) -> impl Strategy<Value = String> {
    let jitter = select(vec![
        "none",
        "exponential",
        "full",
        "equal",
        "decorrelated",
        "decorrelated_v2",
        "decorrelated_finagle",
        "proportional",
        "schedule",
    ]);
    let budget = proptest::option::of((select(BUDGETS.to_vec()), select(SCOPES.to_vec())));
    let breaker = proptest::option::of(select(SCOPES.to_vec()));
    let preset = proptest::option::weighted(0.2, select(PRESETS.to_vec()));
    (jitter, 1u64..200, 1u32..40, 0u64..5000, 1i64..8, any::<bool>(), proptest::option::of(20u64..3000))
        .prop_flat_map(move |(jitter, base, mult_tenths, extra_cap, attempts, honor, timeout)| {
            let name = name.clone();
            let extras = (budget.clone(), breaker.clone(), preset.clone());
            (proptest::option::of(100u64..5000), extras).prop_map(move |(deadline, (budget, breaker, preset))| {
                if let Some(preset) = preset {
                    return format!("[policy.{name}]\npreset = \"{preset}\"\nmax_attempts = {attempts}\n");
                }
                let mut text = format!(
                    "[policy.{name}]\njitter = \"{jitter}\"\nbase = {}\nmultiplier = {}\ncap = {}\nmax_attempts = {attempts}\nhonor_retry_after = {honor}\n",
                    ms(base),
                    1.0 + f64::from(mult_tenths) / 10.0,
                    ms(base + extra_cap)
                );
                if jitter == "proportional" {
                    text += "ratio = 0.5\n";
                }
                if jitter == "schedule" {
                    text += &format!("schedule = [\"0s\", {}, {}]\n", ms(base), ms(base * 3));
                }
                if let Some(t) = timeout {
                    text += &format!("attempt_timeout = {}\n", ms(t));
                }
                if let Some(d) = deadline {
                    text += &format!("deadline = {}\n", ms(d));
                }
                if let Some((kind, scope)) = budget {
                    text += &format!("budget = {{ kind = \"{kind}\", scope = \"{scope}\" }}\n");
                }
                if let Some(scope) = breaker {
                    text += &format!("breaker = {{ scope = \"{scope}\", window = \"1s\", min_calls = 5 }}\n");
                }
                text
            })
        })
}

/// A hop named `name`; `downstream` names the policy it calls the next hop with.
fn hop(name: String, downstream: Option<String>) -> impl Strategy<Value = String> {
    (1i64..6, proptest::option::of(0i64..40), dist(), proptest::option::of(dist()), proptest::option::of(1u64..4000))
        .prop_map(move |(workers, queue_limit, service, network, ttl)| {
            let mut text = format!("[[hop]]\nname = \"{name}\"\nworkers = {workers}\nservice = {service}\n");
            if workers % 2 == 0 {
                text += "scheduling = \"fair\"\n";
            }
            if let Some(q) = queue_limit {
                text += &format!("queue_limit = {q}\n");
            }
            if let Some(n) = network {
                text += &format!("network = {n}\n");
            }
            if let Some(p) = &downstream {
                text += &format!("downstream_policy = \"{p}\"\n");
            }
            if let Some(t) = ttl {
                text += &format!("idempotency = {{ ttl = {} }}\n", ms(t));
            }
            text
        })
}

/// Fault `i` of a run of `horizon_ms`: each fault stays inside its own third of the horizon, so
/// windows never overlap.
fn fault(i: usize, hops: usize, horizon_ms: u64) -> impl Strategy<Value = String> {
    let slot = horizon_ms / 3;
    let kinds = prop_oneof![
        Just("kind = \"outage\"".to_string()),
        Just("kind = \"hang\"".to_string()),
        (1u64..500).prop_map(|r| format!("kind = \"throttle\"\nretry_after = {}", ms(r))),
        (0u32..=100).prop_map(|p| format!("kind = \"error_rate\"\np = {}", f64::from(p) / 100.0)),
        (1u32..50).prop_map(|f| format!("kind = \"slow\"\nfactor = {f}.0")),
        (0i64..3).prop_map(|w| format!("kind = \"capacity\"\nworkers = {w}")),
    ];
    (0..hops, kinds, 0..slot / 2, 1..slot / 2).prop_map(move |(h, kind, offset, length)| {
        let from = slot * i as u64 + offset;
        format!("[[fault]]\nhop = \"h{h}\"\n{kind}\nfrom = {}\nto = {}\n", ms(from), ms(from + length))
    })
}

/// A whole valid scenario: 1–2 tenants of < 100 clients, 1–3 hops, 0–3 faults, 1–2 s horizon.
fn scenario() -> impl Strategy<Value = String> {
    (1usize..3, 1usize..4, 1usize..3, 0usize..4, 1000u64..2000).prop_flat_map(
        |(policies, hops, tenants, faults, horizon_ms)| {
            let policy_texts: Vec<_> = (0..policies).map(|p| policy(format!("p{p}"))).collect();
            let hop_texts: Vec<_> = (0..hops)
                .map(|h| hop(format!("h{h}"), (h + 1 < hops).then(|| format!("p{}", h % policies))))
                .collect();
            let tenant_texts: Vec<_> = (0..tenants)
                .map(|t| {
                    (1i64..100, arrival(), 0..policies, 0u32..20, 0u32..20).prop_map(move |(c, a, p, inv, poi)| {
                        format!(
                            "[[tenant]]\nname = \"t{t}\"\nclients = {c}\narrival = {a}\npolicy = \"p{p}\"\ninvalid_fraction = {}\npoison_fraction = {}\n",
                            f64::from(inv) / 100.0,
                            f64::from(poi) / 100.0
                        )
                    })
                })
                .collect();
            let fault_texts: Vec<_> = (0..faults.min(3)).map(|i| fault(i, hops, horizon_ms)).collect();
            (policy_texts, hop_texts, tenant_texts, fault_texts, 0u64..1 << 40, 1u32..3).prop_map(
                move |(p, h, t, f, seed, reps)| {
                    let head = format!(
                        "name = \"prop\"\nseed = {seed}\nhorizon = {}\nbucket = \"50ms\"\nreplications = {reps}\nmax_events = 200000\n",
                        ms(horizon_ms)
                    );
                    [vec![head], t, p, h, f].concat().join("\n")
                },
            )
        },
    )
}

fn study(scenario: &Scenario, threads: usize) -> Study {
    run_study(scenario, &scenario.run_variants(), &RunOptions { threads: Some(threads), progress: false })
}

/// Per-replication values of `metric` in `row`.
fn values(row: &StatRow, metric: &str) -> Vec<f64> {
    let stat = row.get(Metric::from_name(metric).expect("catalogued")).unwrap_or_else(|| panic!("no {metric}"));
    stat.values.iter().map(|v| v.unwrap_or_else(|| panic!("{metric} missing in a replication"))).collect()
}

/// requests = succeeded + rejected + dlq + in_flight in every replication of `row`.
fn conserved(row: &StatRow) -> Result<(), String> {
    let [req, ok, rej, dlq, live] = ["requests", "succeeded", "rejected", "dlq", "in_flight"].map(|m| values(row, m));
    for r in 0..req.len() {
        let total = ok[r] + rej[r] + dlq[r] + live[r];
        if req[r] != total {
            return Err(format!("replication {r}: {} requests but {total} terminal or in flight", req[r]));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_valid_scenarios_run_conserve_requests_and_are_deterministic(text in scenario()) {
        let scenario = Scenario::from_source("prop.toml", &text, &[])
            .unwrap_or_else(|e| panic!("generated scenario refused: {e}\n{text}"));
        let first = study(&scenario, 1);
        for v in &first.variants {
            conserved(&v.metrics).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            for (name, row) in &v.tenants {
                conserved(row).map_err(|e| TestCaseError::fail(format!("tenant {name}: {e}\n{text}")))?;
            }
        }
        let again = study(&scenario, 2);
        let bytes = |s: &Study| Summary::of(s).to_bytes();
        prop_assert!(bytes(&first) == bytes(&again), "same seed, different summary.json:\n{}", text);
    }
}

/// One edit of a scenario file, for the stable fuzz stand-in.
#[derive(Clone, Debug)]
enum Edit {
    /// Replace the byte at (position mod length).
    Byte(usize, u8),
    /// Delete up to 8 bytes.
    Delete(usize, usize),
    /// Replace a line's value (after `=`) with an edge value.
    Value(usize, &'static str),
    /// Duplicate a line.
    DuplicateLine(usize),
}

const EDGE_VALUES: [&str; 16] = [
    "0",
    "-1",
    "nan",
    "inf",
    "1e308",
    "\"0s\"",
    "\"1ns\"",
    "\"500years\"",
    "\"-1s\"",
    "4294967295",
    "9223372036854775807",
    "\"\"",
    "[]",
    "{}",
    "true",
    "\"window+1h\"",
];

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Edit::Byte(p, b)),
        (any::<usize>(), 1usize..8).prop_map(|(p, n)| Edit::Delete(p, n)),
        (any::<usize>(), select(EDGE_VALUES.to_vec())).prop_map(|(l, v)| Edit::Value(l, v)),
        any::<usize>().prop_map(Edit::DuplicateLine),
    ]
}

fn apply(text: &[u8], edit: &Edit) -> Vec<u8> {
    let mut bytes = text.to_vec();
    let lines = || String::from_utf8_lossy(text).lines().map(str::to_string).collect::<Vec<_>>();
    match *edit {
        Edit::Byte(p, b) if !bytes.is_empty() => {
            let at = p % bytes.len();
            bytes[at] = b;
        }
        Edit::Delete(p, n) if !bytes.is_empty() => {
            let at = p % bytes.len();
            bytes.drain(at..(at + n).min(bytes.len()));
        }
        Edit::Value(l, v) => {
            let mut lines = lines();
            let candidates: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].contains(" = ")).collect();
            if !candidates.is_empty() {
                let i = candidates[l % candidates.len()];
                let key = lines[i].split(" = ").next().unwrap_or_default().to_string();
                lines[i] = format!("{key} = {v}");
            }
            bytes = (lines.join("\n") + "\n").into_bytes();
        }
        Edit::DuplicateLine(l) => {
            let mut lines = lines();
            if !lines.is_empty() {
                let i = l % lines.len();
                lines.insert(i, lines[i].clone());
            }
            bytes = (lines.join("\n") + "\n").into_bytes();
        }
        // Nothing to edit in an empty file.
        Edit::Byte(..) | Edit::Delete(..) => {}
    }
    bytes
}

/// The seed inputs: the bundled scenarios and the bad-scenario corpus.
fn seeds() -> &'static [Vec<u8>] {
    static SEEDS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(read_seeds)
}

fn read_seeds() -> Vec<Vec<u8>> {
    let mut files = Vec::new();
    for dir in ["scenarios", "tests/bad_scenarios"] {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        for entry in std::fs::read_dir(&dir).expect("seed dir") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "toml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files.iter().map(|p| std::fs::read(p).expect("readable")).collect()
}

fn fuzz_cases() -> u32 {
    std::env::var("RETRYSTORM_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: fuzz_cases(), failure_persistence: None, ..ProptestConfig::default() })]

    /// The stable stand-in for `cargo fuzz run scenario`: same target, mutated seed files.
    #[test]
    fn the_fuzz_target_survives_mutated_scenarios(seed in any::<usize>(), edits in proptest::collection::vec(edit(), 0..5)) {
        let seeds = seeds();
        let mut input = seeds[seed % seeds.len()].clone();
        for e in &edits {
            input = apply(&input, e);
        }
        fuzz_harness::check_scenario_bytes(&input);
    }
}

proptest! {
    // Each case renders every chart: a few dozen keep the suite fast; the fuzz targets `plot`
    // and `merge` run the same bodies for as long as one likes.
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    /// The stable stand-in for `cargo fuzz run plot` and `cargo fuzz run merge`: one file of a
    /// finished run or shard, mutated, then `plot` or `merge`; nothing panics or hangs.
    #[test]
    fn the_plot_and_merge_targets_survive_mutated_run_files(which in 0u8..7, edits in proptest::collection::vec(edit(), 1..5)) {
        let (dir, file) = match which {
            5 => ("s1", "sweep.json"),
            6 => ("s1", "sweep.csv"),
            w => ("run", fuzz_harness::RUN_FILES[usize::from(w)]),
        };
        let mut input = fuzz_harness::base_file(dir, file);
        for e in &edits {
            input = apply(&input, e);
        }
        let data: Vec<u8> = std::iter::once(if file == "sweep.csv" { 1 } else if dir == "s1" { 0 } else { which }).chain(input).collect();
        if dir == "run" {
            fuzz_harness::check_plot_bytes(&data);
        } else {
            fuzz_harness::check_merge_bytes(&data);
        }
    }
}

#[test]
fn fuzz_regressions_stay_fixed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut inputs: Vec<_> =
        std::fs::read_dir(&dir).expect("fuzz/regressions").map(|e| e.expect("entry").path()).collect();
    inputs.retain(|p| p.extension().is_some_and(|e| e == "toml"));
    inputs.sort();
    for path in &inputs {
        fuzz_harness::check_scenario_bytes(&std::fs::read(path).expect("readable"));
    }
}

/// Runs `text` through the library: the study of its `run` variants on one thread.
fn run_text(text: &str) -> Study {
    let scenario = Scenario::from_source("limits.toml", text, &[]).unwrap_or_else(|e| panic!("{e}"));
    study(&scenario, 1)
}

/// The single value of system metric `metric` in a one-replication study.
fn metric(study: &Study, name: &str) -> f64 {
    values(&study.variants[0].metrics, name)[0]
}

/// A closed loop with no think time and a 1 ns service: millions of events per simulated second
/// over a 10 s horizon. Only `max_events` can end it early. (With a 0 s service time never
/// advances at all; that scenario is refused by validation: `closed_loop_zero_time.toml`.)
const RUNAWAY: &str = r#"name = "runaway"
horizon = "10s"
max_events = 50000

[[tenant]]
name = "main"
clients = 5
arrival = { kind = "closed", think = "0s" }
policy = "once"

[policy.once]
jitter = "none"
max_attempts = 1

[[hop]]
name = "api"
service = { dist = "constant", mean = "1ns" }
"#;

#[test]
fn a_runaway_scenario_stops_at_max_events_with_partial_results_marked() {
    let tmp = tempfile::tempdir().expect("temp dir");
    std::fs::write(tmp.path().join("runaway.toml"), RUNAWAY).expect("write");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .current_dir(tmp.path())
        .args(["run", "runaway.toml", "--quiet", "--out", "out"])
        .output()
        .expect("binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("max_events = 50000 reached") && stderr.contains("partial"), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("out/summary.json")).expect("written")).expect("JSON");
    let variant = &summary["variants"][0];
    assert_eq!(variant["truncated"], serde_json::json!(["replication 0: max_events = 50000 reached"]));
    let mean = |m: &str| variant["metrics"][m]["mean"].as_f64().unwrap_or_else(|| panic!("{m}"));
    assert!(mean("in_flight") >= 1.0, "a truncated closed loop leaves requests in flight");
    let terminal = mean("succeeded") + mean("rejected") + mean("dlq") + mean("in_flight");
    assert_eq!(mean("requests"), terminal);
}

#[test]
fn the_drain_limit_ends_a_run_that_retries_forever() {
    // A hang for an hour, 1 s attempt timeouts and 10 000 attempts: only the drain limit stops it.
    let text = RUNAWAY
        .replace("max_events = 50000", "drain_limit = \"15s\"")
        .replace("arrival = { kind = \"closed\", think = \"0s\" }", "arrival = { kind = \"herd\" }")
        .replace("max_attempts = 1", "max_attempts = 10000\nattempt_timeout = \"1s\"")
        + "\n[[fault]]\nhop = \"api\"\nkind = \"hang\"\nfrom = \"0s\"\nto = \"1h\"\n";
    let study = run_text(&text.replace("clients = 5", "clients = 7"));
    assert_eq!(
        study.variants[0].truncated,
        ["replication 0: drain limit reached at 15.000 s with requests still in flight"]
    );
    assert_eq!((metric(&study, "requests"), metric(&study, "in_flight")), (7.0, 7.0));
}

#[test]
fn backoff_beyond_attempt_64_saturates_at_the_cap() {
    // base 1 ns doubling: 2^63 ns would overflow u64 at retry 64; every later delay must be the cap.
    let text = RUNAWAY
        .replace("max_events = 50000", "")
        .replace("arrival = { kind = \"closed\", think = \"0s\" }", "arrival = { kind = \"herd\" }")
        .replace(
            "jitter = \"none\"\nmax_attempts = 1",
            "jitter = \"exponential\"\nbase = \"1ns\"\ncap = \"1ms\"\nmultiplier = 2.0\nmax_attempts = 100",
        )
        + "\n[[fault]]\nhop = \"api\"\nkind = \"outage\"\nfrom = \"0s\"\nto = \"10s\"\n";
    let study = run_text(&text);
    assert!(study.variants[0].truncated.is_empty(), "{:?}", study.variants[0].truncated);
    assert_eq!((metric(&study, "attempts"), metric(&study, "dlq")), (500.0, 5.0));
    // Retries 21..99 wait the 1 ms cap (2^20 ns > 1 ms), so the last request ends after ≥ 79 ms.
    let done = metric(&study, "completion_time_s");
    assert!((0.079..0.1).contains(&done), "completion {done} s");
}

#[test]
fn durations_of_centuries_and_rates_of_zero_run_without_overflow() {
    let text = r#"name = "extremes"
horizon = "500years"
replications = 2

[[tenant]]
name = "herd"
clients = 5
arrival = { kind = "herd", spread = "400years" }
policy = "huge"

[[tenant]]
name = "silent"
clients = 3
arrival = { kind = "profile", steps = [{ from = "0s", rate_per_s = 0.0 }, { from = "1years", rate_per_s = 0.0 }] }
policy = "huge"

[policy.huge]
jitter = "exponential"
base = "1ns"
multiplier = 1e300
cap = "100years"
max_attempts = 10000
deadline = "550years"
attempt_timeout = "200years"

[[hop]]
name = "api"
service = { dist = "load", base = "1years", per_inflight = "100years" }
network = { dist = "normal_abs", mean = "100years", sd = "100years" }
idempotency = { ttl = "window+500years" }

[[fault]]
hop = "api"
kind = "slow"
factor = 1e6
from = "0s"
to = "580years"
"#;
    let study = run_text(text);
    let tenants = &study.variants[0].tenants;
    conserved(&study.variants[0].metrics).expect("conservation");
    assert_eq!(values(&tenants[0].1, "requests"), [5.0, 5.0]);
    assert_eq!(values(&tenants[1].1, "requests"), [0.0, 0.0], "a rate of 0 sends nothing");
}
