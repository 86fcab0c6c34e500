//! Command-line behaviour: exit codes and messages of `run` and `validate`.

use std::process::Command;

fn retrystorm(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_retrystorm")).args(args).output().expect("binary runs")
}

#[test]
fn a_wrong_field_is_refused_with_exit_code_2_naming_it() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let path = tmp.path().join("typo.toml");
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/outage-herd.toml"))
        .expect("bundled")
        .replace("max_attempts = 10", "max_attempt = 10");
    std::fs::write(&path, text).expect("write");
    let out = tmp.path().join("out");
    let output = retrystorm(&["run", path.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown field `max_attempt`"), "{stderr}");
    assert!(stderr.contains("did you mean `max_attempts`?"), "{stderr}");
    assert!(stderr.contains("typo.toml:"), "{stderr}");
    assert!(!out.exists(), "nothing may be written for a bad scenario");
}

#[test]
fn a_bad_value_names_field_value_and_fix() {
    let output = retrystorm(&[
        "validate",
        concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/outage-herd.toml"),
        "--set",
        "policy.client.multiplier=0.5",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("`policy.client.multiplier`: is 0.5; it must be a finite number ≥ 1"), "{stderr}");
}

#[test]
fn validate_accepts_every_bundled_scenario() {
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios")).expect("dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "toml") {
            let output = retrystorm(&["validate", path.to_str().unwrap()]);
            assert!(output.status.success(), "{}: {}", path.display(), String::from_utf8_lossy(&output.stderr));
        }
    }
}

#[test]
fn a_mistyped_flag_or_subcommand_gets_a_did_you_mean() {
    for (args, says) in
        [(vec!["compre", "x"], "'compare'"), (vec!["run", "scenarios/mm1.toml", "--sed", "3"], "'--seed'")]
    {
        let o = retrystorm(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("similar") && err.contains(says), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
}

/// The main job's stdout (the README's first command, `compare` on outage-herd) and
/// the 16-variant overload-shedding table fit a laptop's 100-column terminal — the table's
/// variant columns continue in blocks, prose lines wrap — and `--wide` leaves them whole.
#[test]
fn stdout_fits_100_columns_and_wide_allows_more() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = env!("CARGO_MANIFEST_DIR");
    let widest = |args: &[&str]| -> (usize, String) {
        let output = retrystorm(args);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let text = String::from_utf8(output.stdout).expect("UTF-8");
        (text.lines().map(|l| l.chars().count()).max().unwrap_or(0), text)
    };
    let herd = format!("{root}/scenarios/outage-herd.toml");
    let out = tmp.path().join("herd");
    let (_, text) = widest(&["compare", &herd, "--replications", "2", "--out", out.to_str().unwrap()]);
    // Every line fits but a `retrystorm plan …` command to copy, which stays whole.
    let commands = |t: &str| t.lines().filter(|l| l.trim_start().starts_with("retrystorm plan ")).count();
    let width = text.lines().filter(|l| !l.trim_start().starts_with("retrystorm ")).map(|l| l.chars().count()).max();
    assert!(width.unwrap_or(0) <= 100, "a line of {width:?} columns:\n{text}");
    assert!(text.contains("decorrelated") && text.contains("Verdict"), "{text}");
    assert_eq!(commands(&text), 1, "the plan command on a line of its own:\n{text}");
    let (wide, _) =
        widest(&["compare", &herd, "--replications", "2", "--wide", "--out", out.to_str().unwrap(), "--force"]);
    assert!(wide > 100, "--wide leaves long lines whole: {wide} columns");
    let shedding = format!("{root}/scenarios/overload-shedding.toml");
    let out = tmp.path().join("shedding");
    let (_, text) = widest(&["run", &shedding, "--replications", "2", "--out", out.to_str().unwrap()]);
    let width = text.lines().filter(|l| !l.trim_start().starts_with("retrystorm ")).map(|l| l.chars().count()).max();
    assert!(width.unwrap_or(0) <= 100, "a line of {width:?} columns:\n{text}");
    // 16 variants: the ranking first, one row per variant in the verdict's order, then one block
    // of what differs with the baseline (fifo) and the verdict's leaders side by side.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let ranking: Vec<&str> =
        summary["verdict"]["ranking"].as_array().unwrap().iter().map(|r| r["variant"].as_str().unwrap()).collect();
    assert_eq!(ranking.len(), 16);
    let lines: Vec<&str> = text.lines().collect();
    let at = |prefix: &str| lines.iter().position(|l| l.starts_with(prefix));
    let differs = at("What differs").expect("a table of what differs");
    let rows: Vec<usize> = ranking
        .iter()
        .map(|name| {
            lines
                .iter()
                .position(|l| l.split_whitespace().nth(1) == Some(name) && l.trim_start().starts_with(char::is_numeric))
                .unwrap_or_else(|| panic!("{name} has a ranking row:\n{text}"))
        })
        .collect();
    assert!(
        rows.windows(2).all(|w| w[0] < w[1]) && rows[15] < differs,
        "ranking rows in order, before the table:\n{text}"
    );
    let blocks: Vec<&&str> = lines.iter().filter(|l| l.starts_with("  * succeeded ↑")).collect();
    assert_eq!(blocks.len(), 1, "one block of leaders:\n{text}");
    let header = lines[lines.iter().position(|l| l.starts_with("  * succeeded ↑")).unwrap() - 1];
    let shown: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(shown[0], "fifo", "the baseline first: {header}");
    assert_eq!(shown[1..], ranking[..shown.len() - 1], "then the leaders in the verdict's order: {header}");
    assert!(shown.len() >= 2, "the leader beside the baseline: {header}");
    // The baseline named by --baseline leads the table, whatever its place among the variants.
    let based = tmp.path().join("based");
    let (_, based) =
        widest(&["compare", &herd, "--replications", "2", "--baseline", "full", "--out", based.to_str().unwrap()]);
    let lines: Vec<&str> = based.lines().collect();
    let header = lines[lines.iter().position(|l| l.starts_with("  * succeeded ↑")).expect("a table") - 1];
    assert_eq!(header.split_whitespace().next(), Some("full"), "{header}");
    let (_, wide) =
        widest(&["run", &shedding, "--replications", "2", "--wide", "--out", out.to_str().unwrap(), "--force"]);
    assert!(wide.lines().filter(|l| l.starts_with("  * system · succeeded ↑")).count() > 1, "--wide: every column");
}

/// `init --from` a config with several entries names the flag to give (`--select`),
/// not a line of the file it would have written, and writes nothing.
#[test]
fn init_from_a_config_with_several_entries_asks_for_the_select_flag() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = tmp.path().join("prod.toml");
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/data/grpc-service-config.json");
    let output = retrystorm(&["init", file.to_str().unwrap(), "--from", config]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: init: --from ") && stderr.contains("grpc-service-config.json: "), "{stderr}");
    assert!(stderr.contains("choose one with --select service/method (shop.Checkout/PlaceOrder, "), "{stderr}");
    assert!(!stderr.contains("prod.toml") && !stderr.contains("select = "), "{stderr}");
    assert!(!file.exists(), "nothing written");
    // With the flag, it writes the scenario.
    let output =
        retrystorm(&["init", file.to_str().unwrap(), "--from", config, "--select", "shop.Checkout/PlaceOrder"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(file.exists());
}

/// Bad flag values — a negative number after a flag (which clap would read as a flag of its
/// own), a value `init` cannot turn into a valid scenario, a percentage on a metric that is not
/// a share — each get one line naming the flag, the value and the fix, exit code 2, and
/// nothing written.
#[test]
fn bad_flag_values_name_the_flag_the_value_and_the_fix() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = tmp.path().join("x.toml");
    let file = file.to_str().unwrap();
    let herd = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/outage-herd.toml");
    let aws_repeated = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/bad_scenarios/data/aws-repeated-key");
    let cases: &[(&[&str], &[&str])] = &[
        (&["plan", herd, "--vary", "hop.api.workers=1..4", "--resolution", "-1"], &["--resolution", "-1", "above 0"]),
        (&["init", file, "--outage", "-5s"], &["--outage", "-5s", "negative"]),
        (&["init", file, "--outage", "0s"], &["--outage 0s", "above 0", "--outage 20s"]),
        (&["init", file, "--outage", "100000h"], &["--outage 100000h", "at most --outage 24h"]),
        (&["init", file, "--clients", "-3"], &["'-3' for '--clients'", "is negative", "Closed-loop clients"]),
        (&["init", file, "--rate", "abc"], &["'abc' for '--rate'", "requests per second"]),
        (&["init", file, "--rate", "-5"], &["--rate -5", "positive number"]),
        (&["init", file, "--rate", "1e308"], &["--rate 1e308", "workers", "at most"]),
        (&["init", file, "--capacity", "1e300"], &["--capacity 1e300", "workers", "at most"]),
        (&["init", file, "--select", "shop.Checkout"], &["--select shop.Checkout", "no --from", "leave out --select"]),
        (
            &["init", file, "--preset", "aws"],
            &["init: --preset aws: unknown preset `aws`", "did you mean `aws-standard`?"],
        ),
        (
            &["init", file, "--rate", "10", "--from", aws_repeated, "--select", "orders"],
            &["--from ", "aws-repeated-key: [orders] max_attempts (line 4): given twice", "keep one"],
        ),
        (
            &["run", herd, "--replications", "-2"],
            &["'-2' for '--replications <REPLICATIONS>'", "is negative; give a whole number"],
        ),
        (
            &["budget", "--window", "72h", "--hops", "-1"],
            &["'-1' for '--hops'", "is negative", "chain of this many hops"],
        ),
        (
            &["plan", herd, "--vary", "hop.api.workers=1..4", "--require", "latency_s_p99 <= 50%"],
            &["latency_s_p99", "50%", "not a share", "seconds"],
        ),
    ];
    for (args, needles) in cases {
        let output = retrystorm(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: one line: {stderr}");
        assert!(!stderr.contains("unexpected argument") && !stderr.contains("panicked"), "{args:?}: {stderr}");
        for needle in *needles {
            assert!(stderr.contains(needle), "{args:?}: `{needle}` missing from: {stderr}");
        }
        assert!(!std::path::Path::new(file).exists(), "{args:?}: init wrote {file}");
    }
}

/// `sweep`'s table fits 100 columns: the metric columns continue in a second block that repeats
/// the cell, its parameters and the variant, and the heading wraps; `--wide` keeps one block.
/// The sweep is the README's bundled one (outage-herd over its clients), at two small sizes.
#[test]
fn sweep_stdout_fits_100_columns() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let herd = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/outage-herd.toml");
    let sweep = |extra: &[&str], out: &str| -> String {
        let out = tmp.path().join(out);
        let mut args = vec![
            "sweep",
            herd,
            "--vary",
            "tenant.main.clients=100,1000",
            "--replications",
            "2",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let output = retrystorm(&args);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).expect("UTF-8")
    };
    let widest = |t: &str| t.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let text = sweep(&[], "narrow");
    assert!(widest(&text) <= 100, "a line of {} columns:\n{text}", widest(&text));
    // Every variant row of both cells appears once per block, and every metric heading once.
    let rows = |t: &str, variant: &str| t.lines().filter(|l| l.contains(variant)).count();
    let blocks = text.matches("cell  clients").count();
    assert!(blocks >= 2, "the columns continue in blocks:\n{text}");
    assert_eq!(rows(&text, "decorrelated"), 2 * blocks, "{text}");
    for heading in ["success", "after/cap", "dlq", "trigger peak/cap", "attempts", "Δattempts"] {
        assert!(text.contains(heading), "`{heading}` missing:\n{text}");
    }
    let wide = sweep(&["--wide"], "wide");
    assert_eq!(wide.matches("cell  clients").count(), 1, "--wide keeps one block:\n{wide}");
    assert!(widest(&wide) > 100, "--wide leaves the rows whole");
}

/// A queue full from the start (200/s of capacity, 300/s offered, a 50-deep queue refusing the
/// rest, no retries): before the outage the hop is already collapsed, so returning to that state
/// is no recovery. The same scenario with the capacity above the load recovers.
const FULL_FROM_THE_START: &str = r#"name = "full"
seed = 1
horizon = "30s"
bucket = "100ms"
replications = 3

[[tenant]]
name = "c"
clients = 100
arrival = { kind = "poisson", rate_per_s = 300.0 }
policy = "p"

[policy.p]
jitter = "full"
max_attempts = 1

[[hop]]
name = "api"
workers = 2
queue_limit = 50
service = { dist = "constant", mean = "10ms" }

[[fault]]
hop = "api"
kind = "outage"
from = "10s"
to = "12s"
"#;

#[test]
fn a_run_overloaded_before_its_trigger_is_never_recovered() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = |workers: &str| {
        let file = tmp.path().join(format!("w{workers}.toml"));
        std::fs::write(&file, FULL_FROM_THE_START.replace("workers = 2", &format!("workers = {workers}"))).unwrap();
        let out = tmp.path().join(format!("out{workers}"));
        let o = retrystorm(&["run", file.to_str().unwrap(), "--quiet", "--out", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = std::fs::read_to_string(out.join("summary.json")).expect("summary");
        serde_json::from_str::<serde_json::Value>(&text).expect("json")
    };
    let full = run("2");
    let m = &full["variants"][0]["metrics"];
    assert_eq!(m["recovered"]["mean"], 0.0, "{}", m["recovered"]);
    assert_eq!(m["recovery_unobservable"]["mean"], 1.0, "{}", m["recovery_unobservable"]);
    assert_eq!(m["recovery_time_s"]["values"], serde_json::json!([null, null, null]));
    let warnings = full["warnings"].as_array().expect("warnings");
    let said: Vec<&serde_json::Value> =
        warnings.iter().filter(|w| w.as_str().unwrap().contains("already overloaded before the trigger")).collect();
    assert_eq!(said.len(), 1, "one warning for the variant: {warnings:?}");
    assert!(said[0].as_str().unwrap().contains("in 3 of 3 runs"), "{said:?}");
    // Capacity above the load: the same outage is recovered from, and nothing is said.
    let healthy = run("6");
    let m = &healthy["variants"][0]["metrics"];
    assert_eq!(m["recovered"]["mean"], 1.0, "{}", m["recovered"]);
    assert!(!healthy["warnings"].to_string().contains("already overloaded"), "{}", healthy["warnings"]);
}

#[test]
fn a_recovery_hold_shorter_than_the_attempt_timeout_is_warned_of_with_the_fix() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = tmp.path().join("hold.toml");
    let text = FULL_FROM_THE_START.replace("max_attempts = 1", "max_attempts = 3\nattempt_timeout = \"8s\"");
    std::fs::write(&file, &text).unwrap();
    let o = retrystorm(&["validate", file.to_str().unwrap()]);
    assert!(o.status.success(), "a warning, not an error: {}", String::from_utf8_lossy(&o.stderr));
    let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(
        all.contains("recovery_hold = \"5s\" is shorter than policy `p`'s attempt_timeout of 8s")
            && all.contains("set recovery_hold = \"8s\" or longer"),
        "{all}"
    );
    // A hold as long as the timeout is not warned of.
    std::fs::write(&file, text.replace("replications = 3", "replications = 3\nrecovery_hold = \"8s\"")).unwrap();
    let o = retrystorm(&["validate", file.to_str().unwrap()]);
    let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success() && !all.contains("recovery_hold"), "{all}");
}

/// Rule: a scenario `init` writes for open-loop clients at one hop takes the plain served path
/// and records there what the general loop records; with `--outage` it has a fault and runs the
/// general loop. (The plain path is an optimisation only: `crates/core/src/model/sim/plain.rs`.)
#[test]
fn an_init_scenario_takes_the_plain_path_and_records_what_the_general_loop_records() {
    use retrystorm::model::sim::{run, run_general, takes_plain_path};
    use retrystorm::scenario::Scenario;
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |name: &str, extra: &[&str]| {
        let path = dir.path().join(name).to_str().expect("utf-8").to_string();
        let args = ["retrystorm", "init", path.as_str(), "--rate", "300"].into_iter().chain(extra.iter().copied());
        retrystorm::cli::main_with_args(args.map(std::ffi::OsString::from)).expect("init writes the scenario");
        Scenario::load(&path, &[]).unwrap_or_else(|e| panic!("{e}"))
    };
    let plain = write("plain.toml", &[]);
    let mut spec = plain.base.clone();
    spec.horizon = spec.horizon.min(20_000_000_000);
    assert!(takes_plain_path(&spec), "init's open-loop scenario fits the plain path");
    for replication in 0..3 {
        let on_plain = format!("{:?}", run(&spec, plain.seed, replication));
        let on_general = format!("{:?}", run_general(&spec, plain.seed, replication));
        assert_eq!(on_plain, on_general, "init's scenario, replication {replication} (seed {})", plain.seed);
    }
    let outage = write("outage.toml", &["--outage", "10s"]);
    assert!(!takes_plain_path(&outage.base), "a scenario with a fault runs the general loop");
}
