//! Charts and the HTML report: every bundled scenario writes every chart as a well-formed SVG
//! and a valid PNG naming its variants; `plot` reproduces a run's charts byte for byte; the
//! report's plain-language reading agrees with the numbers in `summary.json`.

mod common;
use common::bundled_scenarios;
use retrystorm::metrics::stats::Stat;
use retrystorm::report::format::fmt_num;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn retrystorm(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_retrystorm")).args(args).output().expect("binary runs")
}

/// Runs `compare` into `out` with few replications (charts, not statistics, are under test).
fn compare(scenario: &Path, out: &Path, replications: u32) {
    let reps = replications.to_string();
    let output = retrystorm(&[
        "compare",
        scenario.to_str().unwrap(),
        "--replications",
        &reps,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}: {}", scenario.display(), String::from_utf8_lossy(&output.stderr));
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("readable")).expect("valid JSON")
}

/// The chart stems a run must have, derived from its data files (not from the chart code).
fn expected_charts(dir: &Path) -> Vec<&'static str> {
    let setup = json(&dir.join("scenario.json"));
    let first = &setup["variants"][0];
    let mut stems = vec!["load", "load_compare", "goodput_backlog", "metrics", "latency_cdf"];
    let delays = std::fs::read_to_string(dir.join("delays.csv")).expect("delays.csv");
    if delays.lines().count() > 1 {
        stems.extend(["retry_delays", "retry_delays_by_retry"]);
    }
    if first["tenants"].as_array().expect("tenants").len() > 1 {
        stems.extend(["tenant_load", "tenant_metrics"]);
    }
    if first["hops"].as_array().expect("hops").len() > 1 {
        stems.push("hop_metrics");
    }
    if dir.join("replicas.csv").is_file() {
        stems.push("replicas");
    }
    if workers_change(dir) {
        stems.push("capacity");
    }
    if first["hops"].as_array().expect("hops").iter().any(|h| h.get("cache").is_some()) {
        stems.push("cache");
    }
    // The admission-limit chart, when some hop row of timeseries.csv has a limit.
    let series = std::fs::read_to_string(dir.join("timeseries.csv")).expect("timeseries.csv");
    let mut lines = series.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let col = header.iter().position(|c| *c == "admission_limit").expect("an admission_limit column");
    if lines.any(|l| l.split(',').nth(col).is_some_and(|x| x.parse::<f64>().is_ok_and(|v| v > 0.0))) {
        stems.push("admission_limit");
    }
    // The budget chart: a tenant row of timeseries.csv with budget tokens or denials.
    let header: Vec<&str> = series.lines().next().expect("header").split(',').collect();
    let col = |name: &str| header.iter().position(|c| *c == name).expect("budget column");
    let (tokens, denied) = (col("budget_tokens"), col("budget_denied"));
    let budgeted = series.lines().skip(1).map(|l| l.split(',').collect::<Vec<_>>()).any(|r| {
        r[1] == "tenant" && (r[tokens].parse::<f64>().unwrap() != 0.0 || r[denied].parse::<f64>().unwrap() != 0.0)
    });
    if budgeted {
        stems.push("budget");
    }
    stems
}

/// Whether some hop's `workers` column of timeseries.csv takes more than one value (autoscaling).
fn workers_change(dir: &Path) -> bool {
    let text = std::fs::read_to_string(dir.join("timeseries.csv")).expect("timeseries.csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let col = header.iter().position(|c| *c == "workers").expect("a workers column");
    let mut seen: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> = Default::default();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        if f[1] == "hop" {
            seen.entry(f[2].to_string()).or_default().insert(f[col].to_string());
        }
    }
    seen.values().any(|values| values.len() > 1)
}

/// Checks the SVG is well formed (balanced tags under one `<svg>` root) and returns its size
/// and the text of its `<text>` elements.
fn parse_svg(svg: &str) -> ((u32, u32), Vec<String>) {
    let mut stack: Vec<String> = Vec::new();
    let mut texts = Vec::new();
    let mut rest = svg.trim();
    assert!(rest.starts_with("<svg "), "an SVG starts with its root element");
    let mut size = (0, 0);
    while let Some(open) = rest.find('<') {
        let content = rest[..open].trim();
        if stack.last().is_some_and(|t| t == "text") && !content.is_empty() {
            texts.push(content.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"));
        }
        let close = rest[open..].find('>').expect("every tag closes") + open;
        let tag = &rest[open + 1..close];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name.trim()), "mismatched closing tag");
        } else if !tag.ends_with('/') {
            let name = tag.split_whitespace().next().expect("tag name").to_string();
            if name == "svg" && stack.is_empty() {
                let attr = |key: &str| -> u32 {
                    let start = tag.find(&format!("{key}=\"")).expect("size attribute") + key.len() + 2;
                    tag[start..].split('"').next().unwrap().parse().expect("integer size")
                };
                size = (attr("width"), attr("height"));
            }
            stack.push(name);
        }
        rest = &rest[close + 1..];
        if stack.is_empty() {
            assert!(rest.trim().is_empty(), "nothing after the root element");
        }
    }
    assert!(stack.is_empty(), "unclosed tags: {stack:?}");
    (size, texts)
}

/// CRC-32 (IEEE), as PNG chunks use.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// Checks the PNG's signature, chunk structure and checksums; returns (width, height, bytes of
/// image data).
fn parse_png(png: &[u8]) -> (u32, u32, usize) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let mut at = 8;
    let (mut size, mut idat, mut chunks) = ((0, 0), 0, Vec::new());
    while at < png.len() {
        let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
        let kind = &png[at + 4..at + 8];
        let data = &png[at + 8..at + 8 + len];
        let crc = u32::from_be_bytes(png[at + 8 + len..at + 12 + len].try_into().unwrap());
        assert_eq!(crc, crc32(&png[at + 4..at + 8 + len]), "CRC of chunk {}", String::from_utf8_lossy(kind));
        match kind {
            b"IHDR" => {
                size = (
                    u32::from_be_bytes(data[0..4].try_into().unwrap()),
                    u32::from_be_bytes(data[4..8].try_into().unwrap()),
                )
            }
            b"IDAT" => idat += len,
            _ => {}
        }
        chunks.push(kind.to_vec());
        at += 12 + len;
    }
    assert_eq!(chunks.first().map(Vec::as_slice), Some(&b"IHDR"[..]), "IHDR comes first");
    assert_eq!(chunks.last().map(Vec::as_slice), Some(&b"IEND"[..]), "IEND comes last");
    (size.0, size.1, idat)
}

fn variant_names(dir: &Path) -> Vec<String> {
    let summary = json(&dir.join("summary.json"));
    summary["variants"].as_array().expect("variants").iter().map(|v| v["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn every_bundled_scenario_writes_every_chart_as_valid_svg_and_png_naming_its_variants() {
    let tmp = tempfile::tempdir().expect("temp dir");
    for scenario in bundled_scenarios() {
        let name = scenario.file_stem().unwrap().to_string_lossy().into_owned();
        let dir = tmp.path().join(&name);
        compare(&scenario, &dir, 2);
        let variants = variant_names(&dir);
        let stems = expected_charts(&dir);
        for stem in &stems {
            let svg = std::fs::read_to_string(dir.join(format!("{stem}.svg"))).expect("SVG written");
            let (size, texts) = parse_svg(&svg);
            // A chart with nothing to plot is its title and one line saying why (no axes).
            if texts.len() == 2 && texts[1].contains(" to draw") {
                continue;
            }
            for v in &variants {
                assert!(texts.iter().any(|t| t.contains(v.as_str())), "{name}/{stem}.svg never names variant `{v}`");
            }
            let png = std::fs::read(dir.join(format!("{stem}.png"))).expect("PNG written");
            let (width, height, idat) = parse_png(&png);
            assert_eq!((width, height), size, "{name}/{stem}: PNG and SVG have the same size");
            // A blank canvas of this size deflates to a few kilobytes; a drawn chart does not.
            assert!(idat > 20_000, "{name}/{stem}.png looks blank ({idat} bytes of image data)");
        }
        let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
        // Each chart inline twice: its wide drawing and its narrow one (shown below 1,000 px).
        let narrow = html.matches("<div class=\"narrow\"><svg ").count();
        assert_eq!(narrow, stems.len(), "{name}: every chart has a narrow drawing");
        assert_eq!(html.matches("<svg ").count(), 2 * stems.len(), "{name}: the report inlines every chart");
        for forbidden in ["<script", "<link", "src=\"http", "href=\"http", "url(http", "@import"] {
            assert!(!html.contains(forbidden), "{name}: report.html must not load `{forbidden}`");
        }
        for v in &variants {
            // A variant named after a misleading strategy name carries its meaning (`none — immediate retry`).
            let listed = html.contains(&format!("</span>{v}</td>")) || html.contains(&format!("</span>{v} — "));
            assert!(listed, "{name}: summary table lacks variant `{v}`");
        }
        assert!(
            html.contains("<h2 id=\"key\">Key results</h2>")
                && html.contains("<h2>Warnings</h2>")
                && html.contains("<h2 id=\"verdict\">Verdict</h2>"),
            "{name}: sections"
        );
    }
}

#[test]
fn plot_reproduces_a_finished_runs_charts_and_report_byte_for_byte() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/outage-herd.toml");
    let original = tmp.path().join("original");
    compare(&scenario, &original, 3);
    let copy = tmp.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    let mut rendered = Vec::new();
    for entry in std::fs::read_dir(&original).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        // Keep the data files only: the charts and the report must come back from them.
        if file.ends_with(".svg") || file.ends_with(".png") || file.ends_with(".html") {
            rendered.push(file);
        } else {
            std::fs::copy(&path, copy.join(&file)).unwrap();
        }
    }
    assert!(rendered.len() >= 13, "charts and report were written: {rendered:?}");
    let output = retrystorm(&["plot", copy.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    for file in &rendered {
        let (a, b) = (std::fs::read(original.join(file)).unwrap(), std::fs::read(copy.join(file)));
        assert!(b.as_ref().is_ok_and(|b| *b == a), "plot did not reproduce {file}");
    }
}

#[test]
fn plot_refuses_what_is_not_a_run_with_exit_code_2() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let missing = tmp.path().join("nowhere");
    let output = retrystorm(&["plot", missing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("is not a directory"));

    let output = retrystorm(&["plot", tmp.path().to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("summary.json") && stderr.contains("run"), "{stderr}");

    let run = tmp.path().join("run");
    compare(&Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/outage-herd.toml"), &run, 2);
    let series = run.join("timeseries.csv");
    let text = std::fs::read_to_string(&series).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let mut fields: Vec<&str> = lines[1].split(',').collect();
    fields[4] = "zero"; // the first data row's `attempts`
    lines[1] = fields.join(",");
    std::fs::write(&series, lines.join("\n")).unwrap();
    let output = retrystorm(&["plot", run.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("timeseries.csv") && stderr.contains("line 2") && stderr.contains("`zero`"), "{stderr}");
}

fn stat_of(variant: &Value, metric: &str) -> Stat {
    let values = variant["metrics"][metric]["values"].as_array().expect("values").iter().map(Value::as_f64).collect();
    Stat::from_values(values)
}

#[test]
fn the_reading_of_the_peak_matches_the_paired_ratio_in_summary_json() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("herd");
    compare(&Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/outage-herd.toml"), &dir, 4);
    let summary = json(&dir.join("summary.json"));
    let variants = summary["variants"].as_array().unwrap();
    let peak = |v: &Value| stat_of(v, "peak_attempts_per_s").mean.unwrap();
    let best = variants.iter().min_by(|a, b| peak(a).total_cmp(&peak(b))).unwrap();
    let worst = variants.iter().max_by(|a, b| peak(a).total_cmp(&peak(b))).unwrap();
    // Same seeds per replication across variants: the ratio is taken replication by replication.
    let (b, w) = (stat_of(best, "peak_attempts_per_s"), stat_of(worst, "peak_attempts_per_s"));
    let ratios: Vec<Option<f64>> = b.values.iter().zip(&w.values).map(|(b, w)| Some(w.unwrap() / b.unwrap())).collect();
    let ratio = Stat::from_values(ratios);
    let [lo, hi] = ratio.ci95.unwrap();
    let expected = format!(
        "{} cut the peak during the trigger by {}× vs {} [95% CI {}–{}×, paired over 4 replications].",
        best["name"].as_str().unwrap(),
        fmt_num(ratio.mean.unwrap()),
        worst["name"].as_str().unwrap(),
        fmt_num(lo),
        fmt_num(hi)
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains(&expected), "report lacks `{expected}`");
    assert!(ratio.mean.unwrap() > 1.5, "the herd's worst strategy peaks far above its best");
}

/// Checks `stem` in `dir` is a valid SVG + PNG pair whose text names every one of `names`.
fn check_chart(dir: &Path, stem: &str, names: &[&str]) {
    let svg = std::fs::read_to_string(dir.join(format!("{stem}.svg"))).expect("SVG written");
    let (size, texts) = parse_svg(&svg);
    for name in names {
        assert!(texts.iter().any(|t| t.contains(name)), "{stem}.svg never names `{name}`");
    }
    let (width, height, idat) = parse_png(&std::fs::read(dir.join(format!("{stem}.png"))).expect("PNG written"));
    assert_eq!((width, height), size, "{stem}: PNG and SVG have the same size");
    assert!(idat > 20_000, "{stem}.png looks blank");
}

#[test]
fn plot_draws_a_sweep_as_lines_for_one_parameter_and_heatmaps_for_two() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/outage-herd.toml");
    let sweep = |out: &Path, vary: &[&str]| {
        let mut args = vec!["sweep", scenario, "--jitter", "exponential,full", "--replications", "2", "--quiet"];
        for v in vary {
            args.extend(["--vary", v]);
        }
        args.extend(["--out", out.to_str().unwrap()]);
        let output = retrystorm(&args);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let output = retrystorm(&["plot", out.to_str().unwrap()]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    };
    let one = tmp.path().join("one");
    sweep(&one, &["tenant.main.clients=500,1000,2000"]);
    // Tick labels carry thousands separators (the log axis of clients: 500, 1,000, 2,000).
    check_chart(&one, "sweep_metrics", &["exponential", "full", "tenant.main.clients", "2,000"]);
    let first = std::fs::read(one.join("sweep_metrics.svg")).unwrap();
    let html = std::fs::read_to_string(one.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg ").count(), 2, "the sweep report inlines its chart, wide and narrow");
    assert!(html.contains("clients=2000"), "the summary table names the cells");
    // Re-plotting from the same sweep.json gives the same bytes.
    let output = retrystorm(&["plot", one.to_str().unwrap()]);
    assert!(output.status.success());
    assert_eq!(std::fs::read(one.join("sweep_metrics.svg")).unwrap(), first);

    let two = tmp.path().join("two");
    sweep(&two, &["tenant.main.clients=500,1000", "policy.client.base=50ms,100ms,200ms"]);
    for stem in ["sweep_heatmap_peak_after_over_capacity", "sweep_heatmap_success_ratio"] {
        check_chart(&two, stem, &["exponential", "full", "policy.client.base", "200ms"]);
    }
}

#[test]
fn the_load_comparison_zooms_on_the_time_after_the_trigger_and_records_load_spikes() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // outage-herd: the outage (0 s to 10 s) is the trigger; the zoom starts where it ends.
    let herd = tmp.path().join("herd");
    compare(&root.join("scenarios/outage-herd.toml"), &herd, 2);
    let setup = json(&herd.join("scenario.json"));
    let fault_end = setup["variants"][0]["faults"][0]["to_s"].as_f64().expect("fault end");
    assert_eq!(setup["variants"][0]["trigger_end_s"].as_f64(), Some(fault_end));
    let zoom = format!("after the trigger ends ({fault_end} s)");
    check_chart(&herd, "load_compare", &[&zoom, "peak after ÷ capacity"]);
    // metastable-collapse: a profile step above the first rate is a load spike, named in the key.
    let meta = tmp.path().join("meta");
    compare(&root.join("scenarios/metastable-collapse.toml"), &meta, 2);
    let setup = json(&meta.join("scenario.json"));
    let spikes = setup["variants"][0]["spikes"].as_array().expect("spikes listed");
    assert_eq!(spikes.len(), 1, "one spike: {spikes:?}");
    let (from, to) = (spikes[0]["from_s"].as_f64().unwrap(), spikes[0]["to_s"].as_f64().unwrap());
    assert!(from < to && spikes[0]["rate_per_s"].as_f64().unwrap() > 0.0, "{spikes:?}");
    assert_eq!(setup["variants"][0]["trigger_end_s"].as_f64(), Some(to), "the spike's end is the trigger's");
    check_chart(&meta, "load", &["load spike"]);
    check_chart(&meta, "load_compare", &["load spike", "after the trigger ends"]);
}

#[test]
fn strategies_whose_names_mislead_say_what_they_mean_in_legends_and_the_report() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("herd");
    compare(&Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/outage-herd.toml"), &dir, 2);
    check_chart(&dir, "load_compare", &["none — immediate retry", "exponential — no jitter"]);
    check_chart(&dir, "latency_cdf", &["exponential — no jitter"]);
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    for label in ["</span>none — immediate retry</td>", "</span>exponential — no jitter</td>", "</span>full</td>"] {
        assert!(html.contains(label), "report.html summary table lacks `{label}`");
    }
}

#[test]
fn the_report_table_counts_each_recovery_outcome_as_summary_json_does() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("meta");
    compare(&Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/metastable-collapse.toml"), &dir, 8);
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    let summary = json(&dir.join("summary.json"));
    let mut seen_metastable = false;
    for v in summary["variants"].as_array().expect("variants") {
        let ones = |metric: &str| {
            let values = v["metrics"][metric]["values"].as_array().expect("values");
            values.iter().filter(|x| x.as_f64() == Some(1.0)).count()
        };
        let (recovered, metastable, hidden) = (ones("recovered"), ones("metastable"), ones("recovery_unobservable"));
        assert_eq!(recovered + metastable + hidden, 8, "{}: every run has exactly one outcome", v["name"]);
        seen_metastable |= metastable > 0;
        // The row's last cell, under "runs of 8: recovered · metastable · not observable".
        let row_start = html.find(&format!("</span>{}</td>", v["name"].as_str().unwrap())).expect("the variant's row");
        let row = &html[row_start..row_start + html[row_start..].find("</tr>").expect("row ends")];
        let cell = format!("<td class=\"outcomes\">{recovered} · {metastable} · {hidden}</td>");
        assert!(row.ends_with(&cell), "report.html's row for {} lacks `{cell}`: {row}", v["name"]);
    }
    assert!(html.contains("<th>runs of 8: recovered · metastable · not observable</th>"));
    assert!(seen_metastable, "metastable-collapse's no-backoff gets stuck in most runs");
}

#[test]
fn a_variant_hidden_under_an_identical_one_is_named_so_in_the_legend() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("idem");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/idempotency-in-flight.toml");
    compare(&scenario, &dir, 2);
    // Independent check that the series really are identical: timeseries.csv, variant column aside.
    let csv = std::fs::read_to_string(dir.join("timeseries.csv")).expect("timeseries.csv");
    let rows = |variant: &str| -> Vec<String> {
        let prefix = format!("{variant},hop,");
        csv.lines().filter(|l| l.starts_with(&prefix)).map(|l| l[variant.len()..].to_string()).collect()
    };
    assert!(!rows("conflict").is_empty() && rows("conflict") == rows("wait"), "conflict and wait load the same");
    check_chart(&dir, "load_compare", &["conflict — identical to wait, hidden under it"]);
    check_chart(&dir, "goodput_backlog", &["conflict — identical to wait, hidden under it"]);
    // Different series are not called identical.
    let herd = tmp.path().join("herd");
    compare(&Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/outage-herd.toml"), &herd, 2);
    let svg = std::fs::read_to_string(herd.join("load_compare.svg")).expect("svg");
    assert!(!svg.contains("identical to"), "outage-herd's strategies differ");
}

/// Past 24 variants a chart draws the baseline and the 23 best ranked, and says so on the chart
/// and in the report; its height no longer grows with the variant count.
#[test]
fn charts_of_many_variants_are_capped_and_say_what_they_left_out() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut text = String::from(
        "name = \"many\"\nseed = 1\nhorizon = \"2s\"\nbucket = \"1s\"\nreplications = 2\n\n[policy.p]\njitter = \"full\"\nbase = \"10ms\"\ncap = \"1s\"\nmax_attempts = 3\n\n[[hop]]\nname = \"api\"\nworkers = 4\nservice = { dist = \"constant\", mean = \"2ms\" }\n\n[[tenant]]\nname = \"only\"\nclients = 2\narrival = { kind = \"poisson\", rate_per_s = 20 }\npolicy = \"p\"\n",
    );
    for i in 0..30 {
        text.push_str(&format!("\n[[variant]]\nname = \"v{i}\"\nset = {{ \"policy.p.base\" = \"{}ms\" }}\n", 10 + i));
    }
    let scenario = tmp.path().join("many.toml");
    std::fs::write(&scenario, text).expect("write");
    let out = tmp.path().join("out");
    compare(&scenario, &out, 2);
    let svg = std::fs::read_to_string(out.join("load.svg")).expect("load.svg");
    let note = "Capped: 24 of 30 variants drawn (the baseline and the best ranked by the verdict); the other 6 are in summary.json and timeseries.csv";
    let (_, texts) = parse_svg(&svg);
    // The note wraps to the chart's width: its lines, read in order, say it.
    assert!(texts.join(" ").contains(note), "the chart states the cap");
    assert!(texts.iter().any(|t| t.starts_with("v0")), "the baseline is always drawn");
    let drawn = (0..30).filter(|i| texts.iter().any(|t| t.starts_with(&format!("v{i} ")))).count();
    assert_eq!(drawn, 24, "24 variants drawn");
    let (_, height, _) = parse_png(&std::fs::read(out.join("load.png")).expect("png"));
    // The note takes at most two lines (10 px + 18 px each).
    assert!(height <= 70 + 240 * 24 + 46, "height {height} follows the capped count");
    let html = std::fs::read_to_string(out.join("report.html")).expect("report");
    assert!(html.contains("Capped: 24 of 30 variants drawn"), "the report says so too");
}

#[test]
fn tenant_load_with_24_tenants_draws_the_busiest_four_and_sums_the_rest() {
    // noisy-neighbor plus 22 shops whose rates rise with their number: the busiest four are
    // `noisy` (200/s) and shop-21, shop-20, shop-19 (33.5, 32, 30.5/s); the other 20 are summed.
    let dir = tempfile::tempdir().unwrap();
    let mut text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/noisy-neighbor.toml")).unwrap();
    for i in 0..22 {
        let rate = 2.0 + 1.5 * i as f64;
        text.push_str(&format!(
            "\n[[tenant]]\nname = \"shop-{i:02}\"\nclients = 1\narrival = {{ kind = \"poisson\", rate_per_s = {rate:.1} }}\npolicy = \"shared\"\n"
        ));
    }
    let scenario = dir.path().join("many.toml");
    std::fs::write(&scenario, text).unwrap();
    let out = dir.path().join("out");
    let o = retrystorm(&[
        "run",
        scenario.to_str().unwrap(),
        "--replications",
        "2",
        "--set",
        "horizon=20s",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(out.join("tenant_load.svg")).unwrap();
    for name in ["tenant noisy", "tenant shop-19", "tenant shop-20", "tenant shop-21", "others (20 tenants summed)"] {
        assert!(svg.contains(name), "{name} is drawn");
    }
    for name in ["tenant quiet", "tenant shop-00", "tenant shop-18"] {
        assert!(!svg.contains(name), "{name} has no panel of its own");
    }
    assert!(svg.contains("others = 20 tenants with less load, summed (quiet, shop-00"), "named in the legend");
}
