//! The verdict: ties under practical thresholds, the Pareto front and its trade-offs,
//! one line that answers first (with the `plan` command when nothing meets the requirements),
//! variants that compare conditions rather than policies.

mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Output};

/// Runs the binary; `run`, `compare` and `sweep` with `--wide`, so the verdict's lines are read
/// whole (tests/cli.rs checks the 100-column default).
fn retrystorm(args: &[&str]) -> Output {
    let wide = matches!(args.first(), Some(&("run" | "compare" | "sweep")));
    Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .args(wide.then_some("--wide"))
        .output()
        .expect("runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The verdict section of stdout: from its answer line to the end.
fn verdict_section(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| l.starts_with("Verdict: ranked by")).expect("a verdict") - 1;
    lines[start..].iter().map(|l| l.to_string()).collect()
}

/// outage-herd's five strategies with 5,000 clients, 3 replications, into `out`: a run where no
/// variant meets every requirement.
fn herd_5000(out: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "compare",
        "scenarios/outage-herd.toml",
        "--replications",
        "3",
        "--threads",
        "2",
        "--set",
        "tenant.main.clients=5000",
    ];
    args.extend_from_slice(extra);
    args.extend(["--out", out]);
    retrystorm(&args)
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).expect("summary.json")).expect("valid JSON")
}

/// Variant names in the order of `summary.json`'s verdict.
fn order(s: &serde_json::Value) -> Vec<String> {
    s["verdict"]["ranking"].as_array().unwrap().iter().map(|r| r["variant"].as_str().unwrap().to_string()).collect()
}

fn entry<'a>(s: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    s["verdict"]["ranking"].as_array().unwrap().iter().find(|r| r["variant"] == name).expect("ranked")
}

#[test]
fn overload_shedding_ranks_codel_above_adaptive_lifo_jitter() {
    // 0.4 pp more success (2.9% against 3.3% failed: 1.14×) is a tie under the default 25% of
    // the failures; the post-recovery peak (1.09× against 1.91×) decides. Strictly lexicographic ranking put adaptive-lifo-jitter first, codel sixth.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let o = retrystorm(&[
        "run",
        "scenarios/overload-shedding.toml",
        "--replications",
        "8",
        "--threads",
        "2",
        "--quiet",
        "--out",
        out,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(dir.path());
    let names = order(&s);
    let at = |n: &str| names.iter().position(|x| x == n).unwrap();
    assert!(at("codel") < at("adaptive-lifo-jitter"), "{names:?}");
    assert_ne!(names[0], "adaptive-lifo-jitter", "{names:?}");
    // The defaults are in summary.json's objective.
    assert_eq!(s["objective"]["tie"]["success_ratio"], "25%");
    assert_eq!(s["objective"]["tie"]["peak_after_over_capacity"], "0.1");
    assert_eq!(s["objective"]["tie"]["latency_s_p99"], "10%");
    // adaptive-lifo-jitter has the highest success: on the front, with what it trades.
    let alj = entry(&s, "adaptive-lifo-jitter");
    assert_eq!(alj["pareto_front"], true, "{alj}");
    let trade = alj["trade_off"].as_str().expect("a trade-off in words");
    assert!(trade.contains("pp succeeded (0.") && trade.contains("× the failures) for"), "{trade}");
    assert!(trade.contains("the peak after recovery"), "{trade}");
    // fifo is worse than fifo-jitter on the peak and equal elsewhere: dominated.
    assert_eq!(entry(&s, "fifo")["pareto_front"], false);
}

#[test]
fn from_production_ranks_grpc_above_resilience4j_and_says_what_resilience4j_trades() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let o = retrystorm(&["run", "scenarios/from-production.toml", "--threads", "2", "--out", out]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(dir.path());
    let names = order(&s);
    assert_eq!(names[0], "grpc", "{names:?}");
    let answer = s["verdict"]["answer"].as_str().unwrap();
    assert!(answer.starts_with("Recommended: grpc"), "{answer}");
    let r4j = entry(&s, "resilience4j");
    assert_eq!(r4j["pareto_front"], true);
    let trade = r4j["trade_off"].as_str().unwrap();
    assert!(trade.starts_with("+1.2 pp succeeded (0.8"), "{trade}");
    assert!(trade.contains("× the failures) for 3.3× the peak after recovery ÷ capacity"), "{trade}");
    // stdout's verdict opens with the same answer, then says how it ranks.
    let v = verdict_section(&stdout(&o));
    assert_eq!(v[0], answer);
    assert!(v[1].contains("max success_ratio (tie within 25% of the failures)"), "{}", v[1]);
    assert!(v.iter().any(|l| l.contains("resilience4j against grpc: +1.2 pp succeeded")), "{v:#?}");
    // report.html opens its verdict with the answer.
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("<p class=\"answer\"><strong>Recommended: grpc"), "no answer in report.html");
}

/// `outage-herd.toml` with `line` added under its `[objective]`, written into `dir`.
fn outage_herd_with(dir: &Path, line: &str) -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/outage-herd.toml"))
        .unwrap()
        .replace("[objective]\n", &format!("[objective]\n{line}\n"));
    let path = dir.join("herd.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn tie_thresholds_are_refused_with_the_field_the_value_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("tie = { success_ratio = \"half\" }", ["objective.tie.success_ratio", "`half`", "\"0.5pp\""]),
        ("tie = { success_ratio = -1 }", ["objective.tie.success_ratio", "`-1`", "\"10%\""]),
        (
            "tie = { peak_after_over_capacity = \"1pp\" }",
            ["objective.tie.peak_after_over_capacity", "`1pp`", "not one"],
        ),
        ("tie = { latency_s_p50 = \"10%\" }", ["objective.tie.latency_s_p50", "not ranked", "success_ratio"]),
        ("tie = { sucess_ratio = \"1pp\" }", ["objective.tie.sucess_ratio", "did you mean `success_ratio`", ""]),
    ];
    for (line, wants) in cases {
        let file = outage_herd_with(dir.path(), line);
        let o = retrystorm(&["validate", &file]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{line}: {err}");
        for w in wants {
            assert!(err.contains(w), "{line}: `{w}` missing from {err}");
        }
    }
    let file = outage_herd_with(dir.path(), "tie = { success_ratio = \"0.5pp\", peak_after_over_capacity = 0.2 }");
    let o = retrystorm(&["validate", &file]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_tie_threshold_of_zero_restores_the_strict_order() {
    // overload-shedding with success ties at 0 pp: any significant success gain wins again.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/overload-shedding.toml"))
        .unwrap()
        + "\n[objective]\ntie = { success_ratio = \"0pp\" }\n";
    let file = dir.path().join("shed.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.path().join("out");
    let o = retrystorm(&[
        "run",
        file.to_str().unwrap(),
        "--replications",
        "8",
        "--threads",
        "2",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(&out);
    let names = order(&s);
    let at = |n: &str| names.iter().position(|x| x == n).unwrap();
    assert!(at("adaptive-lifo-jitter") < at("codel"), "{names:?}");
    assert_eq!(s["objective"]["tie"]["success_ratio"], "0pp");
}

#[test]
fn no_variant_meeting_the_requirements_answers_with_the_closest_and_the_plan_command() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let o = herd_5000(out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = verdict_section(&stdout(&o));
    assert!(v[0].starts_with("No variant meets every requirement; closest: "), "{}", v[0]);
    assert!(
        v[0].ends_with(
            "retrystorm plan scenarios/outage-herd.toml --vary hop.api.workers=1..32 \
             --set tenant.main.clients=5000 --jitter none,exponential,full,equal,decorrelated --replications 3"
        ),
        "{}",
        v[0]
    );
    // The table's in-outage peak is labelled as such; the post-recovery peak is the verdict's.
    assert!(stdout(&o).contains("system · peak during the trigger ÷ capacity ↓"), "{}", stdout(&o));
    // `none` is the immediate-retry strategy, and "no variant" is said in words.
    let text = v.join("\n");
    assert!(text.contains("none — immediate retry"), "{text}");
    assert!(!text.contains("met by none;") && !text.contains("met by none\n"), "{text}");
    let s = summary(dir.path());
    assert_eq!(s["verdict"]["answer"].as_str().unwrap(), v[0]);
}

#[test]
fn call_graph_compares_conditions_and_ranks_none_above_another() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let o = retrystorm(&["run", "scenarios/call-graph.toml", "--replications", "3", "--threads", "2", "--out", out]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(dir.path());
    assert_eq!(s["verdict"]["compares_conditions"], true);
    let answer = s["verdict"]["answer"].as_str().unwrap();
    assert!(answer.starts_with("These variants compare conditions, not policies: they differ in faults"), "{answer}");
    assert!(!answer.contains("Recommended"), "{answer}");
    for r in s["verdict"]["ranking"].as_array().unwrap() {
        assert_eq!(r["rank"], 1, "{r}");
        assert!(r["condition"].as_str().unwrap().starts_with("faults: "), "{r}");
    }
    // A faulty system is never placed above the healthy one.
    assert_eq!(order(&s)[0], "healthy");
    let v = verdict_section(&stdout(&o));
    assert!(v.iter().any(|l| l == "  under faults: outage (503) at recs 10 s–20 s:"), "{v:#?}");
}

#[test]
fn variants_that_share_their_conditions_are_ranked_as_before() {
    // Policies only (outage-herd's jitter strategies): one condition, a recommendation or none.
    let study = study("chain-amplification", &["replications=2"]);
    let (v, lines) = retrystorm::report::verdict_text::for_study(&study);
    assert!(!v.compares_conditions);
    assert!(v.ranking.iter().all(|r| r.condition.is_none()));
    assert_eq!(lines[0], v.answer);
}

#[test]
fn an_init_scenario_ties_strategies_a_hundredth_of_a_point_apart_and_a_lone_variant_is_not_recommended() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("checkout.toml");
    let f = file.to_str().unwrap();
    let o = retrystorm(&["init", f, "--rate", "800", "--capacity", "1000", "--outage", "20s", "--hops", "api,db"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = dir.path().join("compare");
    let o = retrystorm(&["compare", f, "--replications", "5", "--threads", "2", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let answer = summary(&out)["verdict"]["answer"].as_str().unwrap().to_string();
    // decorrelated and exponential differ by hundredths of a point of success: a tie, not a win.
    assert!(answer.starts_with("Recommended: any of "), "{answer}");
    assert!(answer.contains("decorrelated") && answer.contains("exponential — no jitter"), "{answer}");
    let out = dir.path().join("run");
    let o = retrystorm(&["run", f, "--replications", "2", "--threads", "2", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let answer = summary(&out)["verdict"]["answer"].as_str().unwrap().to_string();
    assert!(answer.starts_with("One variant (baseline), so nothing is ranked"), "{answer}");
    // A lone variant's key results lead with success and the load after recovery too.
    let f = findings(&std::fs::read_to_string(out.join("report.html")).unwrap());
    assert!(f[0].contains("of requests succeeded"), "{f:#?}");
    assert!(f[1].starts_with("Peak load after recovery at the first hop"), "{f:#?}");
    assert!(f[2].starts_with("Peak during the trigger at the first hop"), "{f:#?}");
}

/// The `<li>` texts of report.html's first findings list.
fn findings(html: &str) -> Vec<String> {
    let start = html.find("<ul class=\"findings\">").expect("key results");
    let end = start + html[start..].find("</ul>").unwrap();
    html[start..end].split("<li>").skip(1).map(|l| l.trim_end().trim_end_matches("</li>").to_string()).collect()
}

#[test]
fn the_report_leads_with_success_and_the_load_after_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let o = herd_5000(out, &["--quiet"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    let table = &html[html.find("<h2 id=\"summary\">").unwrap()..];
    let headings: Vec<&str> = table.split("<th>").skip(1).take(4).map(|h| h.split("</th>").next().unwrap()).collect();
    assert_eq!(headings, ["variant", "succeeded", "peak after recovery ÷ capacity", "time over capacity after"]);
    assert!(table.contains("<th>peak during the trigger ÷ capacity</th>"), "the in-outage peak stays, labelled");
    let f = findings(&html);
    assert!(f[0].starts_with("Success: "), "{f:#?}");
    assert!(f[1].starts_with("What hit the first hop after the trigger ended"), "{f:#?}");
    // decorrelated has the lowest post-recovery peak and dead-letters more: said in the same line.
    let praise =
        f.iter().find(|l| l.starts_with("decorrelated cut the post-recovery peak")).unwrap_or_else(|| panic!("{f:#?}"));
    assert!(praise.contains("but it dead-lettered"), "{praise}");
}

#[test]
fn the_sweep_reads_the_post_recovery_peak_and_says_who_dead_letters_more() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let o = retrystorm(&[
        "sweep",
        "scenarios/outage-herd.toml",
        "--vary",
        "tenant.main.clients=2000,5000",
        "--replications",
        "2",
        "--threads",
        "2",
        "--out",
        out,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    let header = text.lines().find(|l| l.starts_with("cell")).expect("a table");
    let after = header.find("after/cap").expect("post-recovery column");
    assert!(after < header.find("trigger peak/cap").expect("trigger peak column"), "{header}");
    assert!(text.contains("Δ: paired vs none — immediate retry"), "{text}");
    assert!(text.lines().any(|l| l.contains(" none — immediate retry ") && l.contains("baseline")), "{text}");
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    let f = findings(&html);
    assert!(f[0].starts_with("Peak load after the trigger ÷ capacity"), "{f:#?}");
    // `none` has the lowest post-recovery load by dead-lettering everything: said so.
    assert!(f[0].contains("none in 2, dead-lettering more than another variant in each"), "{}", f[0]);
    let svg = std::fs::read_to_string(dir.path().join("sweep_metrics.svg")).unwrap();
    assert!(svg.contains("Peak load after recovery ÷ capacity"), "the chart's first panel");
    assert!(html.contains("<th>peak during the trigger ÷ capacity</th>"));
}
