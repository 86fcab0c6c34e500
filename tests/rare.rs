//! Multilevel splitting (`runner/rare.rs`) checked three ways: against plain replication where
//! both are feasible, against the exact solution of a small continuous-time Markov chain that
//! the test solves itself, and monotone in load.
//!
//! The model: Poisson arrivals at λ, each message crossing an exponential network leg of mean d
//! each way, one worker with exponential service of rate μ and a waiting room of K, and an
//! `error_rate` fault answering 503 at arrival with probability q for the whole run; a failed
//! attempt's reply crosses the network back and its client retries at once (no backoff, up to
//! 10,000 attempts), so a retry reaches the server after two exponential legs. The event: the
//! server holds L requests (queued or in service) before T.

use retrystorm::model::sim::split::ProgressFn;
use retrystorm::runner::rare::{estimate, plain, RareSpec};
use retrystorm::scenario::Scenario;

const T_S: f64 = 20.0;
const MU: f64 = 10.0;
const D: f64 = 0.1;
const Q: f64 = 0.3;
const K: u32 = 40;

fn scenario(lambda: f64) -> Scenario {
    let text = format!(
        r#"
name = "rare-ctmc"
seed = 11
horizon = "{T_S}s"
bucket = "1s"
replications = 1

[[tenant]]
name = "t"
clients = 1
arrival = {{ kind = "poisson", rate_per_s = {lambda:?} }}
policy = "p"

[policy.p]
jitter = "none"
base = "0s"
max_attempts = 10000

[[hop]]
name = "s"
workers = 1
queue_limit = {K}
service = {{ dist = "exponential", mean = "{}ms" }}
network = {{ dist = "exponential", mean = "{}ms" }}

[[fault]]
hop = "s"
kind = "error_rate"
p = {Q}
from = "0s"
to = "{T_S}s"
"#,
        1000.0 / MU,
        1000.0 * D
    );
    Scenario::from_source("rare-ctmc.toml", &text, &[]).expect("a valid scenario")
}

/// P(the server holds `target` before T) in the chain with states (a: attempts on their way to
/// the server, b: failure replies on their way back, n: at the server), solved by
/// uniformization: the transient distribution at T with n = target absorbing. `a` and `b` are
/// truncated where their probability is negligible (mean λd and less; ≤ 24 each).
fn ctmc(lambda: f64, target: u32) -> f64 {
    const A: usize = 24;
    let states = (A + 1) * (A + 1) * (target as usize + 1);
    let idx = |a: usize, b: usize, n: usize| (a * (A + 1) + b) * (target as usize + 1) + n;
    // Transitions as (from, to, rate).
    let mut moves: Vec<(usize, usize, f64)> = Vec::new();
    let mut out = vec![0.0; states];
    for a in 0..=A {
        for b in 0..=A {
            for n in 0..target as usize {
                let from = idx(a, b, n);
                let mut add = |to: usize, rate: f64| {
                    moves.push((from, to, rate));
                    out[from] += rate;
                };
                if a < A {
                    add(idx(a + 1, b, n), lambda);
                }
                if a > 0 {
                    let arrive = a as f64 / D;
                    // At the server: a 503 with probability q (or a full room), else admitted.
                    let b2 = (b + 1).min(A);
                    if n < K as usize + 1 {
                        add(idx(a - 1, b, n + 1), arrive * (1.0 - Q));
                        add(idx(a - 1, b2, n), arrive * Q);
                    } else {
                        add(idx(a - 1, b2, n), arrive);
                    }
                }
                if b > 0 && a < A {
                    add(idx(a + 1, b - 1, n), b as f64 / D);
                }
                if n > 0 {
                    add(idx(a, b, n - 1), MU);
                }
            }
        }
    }
    let rate = out.iter().cloned().fold(0.0, f64::max) * 1.02;
    let mut p = vec![0.0; states];
    p[idx(0, 0, 0)] = 1.0;
    // Σ_k Poisson(k; ΛT) · p P^k, with P = I + Q/Λ.
    let lt = rate * T_S;
    let steps = (lt + 12.0 * lt.sqrt() + 50.0) as usize;
    let mut weight = (-lt).exp();
    let mut log_weight = -lt;
    let mut result = vec![0.0; states];
    for k in 0..=steps {
        if k > 0 {
            let mut next = vec![0.0; states];
            for (i, &x) in p.iter().enumerate() {
                next[i] += x * (1.0 - out[i] / rate);
            }
            for &(from, to, r) in &moves {
                next[to] += p[from] * r / rate;
            }
            p = next;
            log_weight += lt.ln() - (k as f64).ln();
            weight = log_weight.exp();
        }
        for (r, &x) in result.iter_mut().zip(&p) {
            *r += weight * x;
        }
    }
    (0..=A).flat_map(|a| (0..=A).map(move |b| (a, b))).map(|(a, b)| result[idx(a, b, target as usize)]).sum()
}

fn spec_of(lambda: f64) -> (retrystorm::model::SimSpec, u64) {
    let s = scenario(lambda);
    (s.base.clone(), s.seed)
}

fn rare(levels: Vec<u64>, effort: u32, repeats: u32) -> RareSpec {
    RareSpec { progress: ProgressFn::Backlog, levels, effort, within_ns: (T_S * 1e9) as u64, repeats }
}

#[test]
fn splitting_agrees_with_the_exact_markov_chain() {
    let lambda = 4.0;
    let target = 16;
    let exact = ctmc(lambda, target);
    assert!(exact > 1e-6 && exact < 1e-4, "a rare event: {exact}");
    let (spec, seed) = spec_of(lambda);
    let e = estimate(&spec, seed, &rare(vec![4, 7, 10, 13, 16], 2000, 8));
    let se = e.p * e.relative_error.expect("repeats give an error");
    println!("splitting {} ± {se} ({} events), chain {exact}", e.p, e.events);
    // 3.5 standard errors of the mean of 8 repeats: Student's t with 7 degrees of freedom at
    // 0.995 is 3.50, a two-sided 1% false alarm.
    assert!((e.p - exact).abs() <= 3.5 * se, "splitting {} ± {se} against the chain's {exact}", e.p);
}

#[test]
fn splitting_agrees_with_plain_replication_near_one_percent() {
    let lambda = 5.0;
    let target = 12;
    let (spec, seed) = spec_of(lambda);
    let runs = 20_000;
    let hits = plain(&spec, seed, ProgressFn::Backlog, target, (T_S * 1e9) as u64, runs);
    let p_plain = hits as f64 / runs as f64;
    assert!((0.002..0.05).contains(&p_plain), "near 1e-2: {p_plain}");
    let se_plain = (p_plain * (1.0 - p_plain) / runs as f64).sqrt();
    let e = estimate(&spec, seed, &rare(vec![6, 9, 12], 300, 8));
    let se_split = e.p * e.relative_error.expect("an error");
    let z = (e.p - p_plain) / (se_plain * se_plain + se_split * se_split).sqrt();
    println!("splitting {} ± {se_split}, plain {p_plain} ± {se_plain}, z = {z}", e.p);
    assert!(z.abs() <= 3.5, "splitting {} ± {se_split}, plain {p_plain} ± {se_plain}: z = {z}", e.p);
    // Both against the chain as well: the scenario is the chain.
    let exact = ctmc(lambda, target as u32);
    assert!((p_plain - exact).abs() <= 3.5 * se_plain, "plain {p_plain} ± {se_plain} against {exact}");
}

#[test]
fn the_estimate_grows_with_the_load() {
    let levels = vec![4, 8, 12];
    let estimates: Vec<f64> = [3.0, 4.0, 5.0]
        .iter()
        .map(|&lambda| {
            let (spec, seed) = spec_of(lambda);
            estimate(&spec, seed, &rare(levels.clone(), 200, 4)).p
        })
        .collect();
    assert!(estimates.windows(2).all(|w| w[0] < w[1]), "{estimates:?}");
    // And the chain agrees on the direction.
    let exact: Vec<f64> = [3.0, 4.0, 5.0].iter().map(|&l| ctmc(l, 12)).collect();
    assert!(exact.windows(2).all(|w| w[0] < w[1]), "{exact:?}");
}

#[test]
fn an_event_no_trial_saw_is_bounded_not_given_a_zero_interval() {
    // The chain's server holds at most K + 1 = 41 requests: its first level, 50, is never
    // reached, so no trial of either repeat hits. The estimate is 0, with no interval (0–0 would
    // claim certainty), and an upper bound for the 2 × 20 trials made: 1 − 0.05^(1/40).
    let tmp = tempfile::tempdir().expect("temp dir");
    let text = std::fs::read_to_string(format!("{}/tests/fixtures/rare-ctmc.toml", env!("CARGO_MANIFEST_DIR")))
        .expect("fixture");
    std::fs::write(tmp.path().join("chain.toml"), text).expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .current_dir(tmp.path())
        .args(["rare", "chain.toml", "--target", "100", "--levels", "2", "--effort", "20", "--repeats", "2"])
        .args(["--plain", "30", "--out", "r"])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("r/rare.json")).expect("rare.json"))
            .expect("JSON");
    let v = &json["variants"][0];
    assert_eq!(v["p"], 0.0);
    assert_eq!(v["p_ci95"], serde_json::Value::Null, "{v}");
    let bound = v["p_upper95"].as_f64().expect("an upper bound");
    let exact = 1.0 - 0.05f64.powf(1.0 / 40.0);
    assert!((bound - exact).abs() < 1e-12 && (0.07..0.075).contains(&bound), "{bound} against {exact}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("p < 7.2e-2 at 95%") && stdout.contains("effort was too small"), "{stdout}");
    // The level that made no progress is named, with its place and trials (lines wrap at 100
    // columns: compared with the words rejoined).
    let flat = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(
            "level 1 of 2 (50) was not progressing: none of its 40 trials reached it, so no later level was tried"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("0 of 30 runs (p < 9.5e-2 at 95%"), "plain replication bounded too: {stdout}");
    // A stage that saw nothing after stages that saw some: their pooled shares scale its bound.
    use retrystorm::runner::rare::{zero_hit_bound, Stage};
    let stages = [Stage { level: 5, trials: 100, hits: 10 }, Stage { level: 10, trials: 100, hits: 0 }];
    assert!((zero_hit_bound(&stages) - 0.1 * (1.0 - 0.05f64.powf(0.01))).abs() < 1e-15);
}

#[test]
fn the_rare_command_writes_its_estimate_and_refuses_herds() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // The same chain as a file (λ = 5/s), run through the command line.
    let text = std::fs::read_to_string(format!("{}/tests/fixtures/rare-ctmc.toml", env!("CARGO_MANIFEST_DIR")))
        .expect("fixture");
    std::fs::write(tmp.path().join("chain.toml"), text).expect("write");
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_retrystorm"))
            .current_dir(tmp.path())
            .args(args)
            .output()
            .expect("runs")
    };
    let out = run(&[
        "rare",
        "chain.toml",
        "--target",
        "12",
        "--levels",
        "3",
        "--effort",
        "200",
        "--repeats",
        "4",
        "--plain",
        "2000",
        "--out",
        "r",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("r/rare.json")).expect("rare.json"))
            .expect("JSON");
    let v = &json["variants"][0];
    let p = v["p"].as_f64().expect("p");
    let exact = ctmc(5.0, 12);
    let se = p * v["relative_error"].as_f64().expect("relative error");
    // 4 repeats: Student's t with 3 degrees of freedom at 0.99 is 4.54 (a two-sided 2% alarm).
    assert!((p - exact).abs() <= 4.5 * se, "{p} ± {se} against {exact}");
    assert_eq!(json["spec"]["levels"], serde_json::json!([4, 8, 12]));
    assert!(String::from_utf8_lossy(&out.stdout).contains("plain replication"));
    // A herd cannot be split: named, exit 2, nothing written.
    let herd = format!("{}/scenarios/outage-herd.toml", env!("CARGO_MANIFEST_DIR"));
    let out = run(&["rare", &herd, "--target", "100", "--out", "h"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("herd or closed-loop"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!tmp.path().join("h").exists());
}

/// `retrystorm rare` in a fresh directory holding the chain's fixture as `chain.toml`.
fn rare_command(tmp: &std::path::Path, args: &[&str]) -> std::process::Output {
    let text = std::fs::read_to_string(format!("{}/tests/fixtures/rare-ctmc.toml", env!("CARGO_MANIFEST_DIR")))
        .expect("fixture");
    std::fs::write(tmp.join("chain.toml"), text).expect("write");
    std::process::Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .current_dir(tmp)
        .arg("rare")
        .args(args)
        .output()
        .expect("runs")
}

#[test]
fn a_budget_not_reached_changes_no_byte() {
    // The same seed with no budget, the default one and an ample one: the same rare.json and
    // stdout, with no `stopped` (the budget is wall time; unspent, it is not recorded).
    let tmp = tempfile::tempdir().expect("temp dir");
    let common =
        ["chain.toml", "--target", "12", "--levels", "3", "--effort", "100", "--repeats", "3", "--plain", "50"];
    let mut outputs = Vec::new();
    for (dir, budget) in
        [("none", &["--time-budget", "none"][..]), ("default", &[][..]), ("ample", &["--time-budget", "100h"][..])]
    {
        let out = rare_command(tmp.path(), &[&common[..], budget, &["--out", dir]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let json = std::fs::read_to_string(tmp.path().join(dir).join("rare.json")).expect("rare.json");
        let stdout = String::from_utf8_lossy(&out.stdout).replace(dir, "DIR");
        outputs.push((json, stdout));
    }
    assert!(!outputs[0].0.contains("stopped") && outputs[0].0.contains("\"p\":"), "{}", outputs[0].0);
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[0], outputs[2]);
}

#[test]
fn a_spent_budget_stops_the_docs_example_with_a_bound() {
    // docs/MODEL.md's example with a 1 ms budget: a trial that started runs to its end, none
    // starts after the budget. Exit 0 with a warning; no `p` (a truncated estimate is not the
    // answer), and `stopped` names the level and repeat it stopped at and the bound left.
    let tmp = tempfile::tempdir().expect("temp dir");
    let map = format!("{}/scenarios/metastability-map.toml", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .current_dir(tmp.path())
        .args(["rare", &map, "--set", "fault=[]", "--set", "tenant.clients.arrival.rate_per_s=50.0"])
        .args(["--set", "horizon=1h", "--target", "250", "--effort", "200", "--repeats", "4"])
        .args(["--time-budget", "1ms", "--out", "r"])
        .output()
        .expect("runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let flat = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(stderr.contains("warning: the time budget of 0.001 s was spent"), "{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("r/rare.json")).expect("rare.json"))
            .expect("JSON");
    let variants = json["variants"].as_array().expect("variants");
    assert!(!variants.is_empty());
    for v in variants {
        assert!(v.get("p").is_none() && v.get("p_ci95").is_none(), "no estimate: {v}");
        let s = &v["stopped"];
        let index = s["level_index"].as_u64().expect("a level index");
        let level = s["level"].as_u64().expect("a level");
        assert_eq!(s["levels"], 5);
        assert_eq!(json["spec"]["levels"][index as usize - 1], level, "{s}");
        let upper = s["p_upper95"].as_f64().expect("a bound");
        assert!(upper > 0.0 && upper <= 1.0, "{s}");
        assert!(s["reason"].as_str().expect("a reason").contains("not reproducible"), "{s}");
        let line = format!(
            "{}: NOT ESTIMATED: stopped after 0.001 s (--time-budget) at level {index} of 5 ({level})",
            v["variant"].as_str().expect("a name")
        );
        assert!(flat.contains(&line), "{line} in {stdout}");
    }
    assert!(flat.contains("raise --time-budget or lower --effort"), "{stdout}");
}

#[test]
fn a_bad_time_budget_is_refused() {
    let tmp = tempfile::tempdir().expect("temp dir");
    for (budget, words) in
        [("0s", "--time-budget 0: give a positive wall time"), ("soon", "--time-budget soon: invalid duration")]
    {
        let out = rare_command(tmp.path(), &["chain.toml", "--target", "12", "--time-budget", budget, "--out", "r"]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(words), "{stderr}");
        assert!(!tmp.path().join("r").exists());
    }
}
