//! What a reader sees in the charts of the two scenarios that stress them most — outage-herd
//! (a 100k spike next to a 10× wall) and overload-shedding (16 variants with long names): no text
//! outside the canvas, no two text labels overlapping, every colour used for data at least 3:1
//! against white, and a strategy drawn in the same colour by `compare` and by `plan`.
//!
//! Text extents are estimated from the SVG's font size and the characters, with per-character
//! advance widths at or above DejaVu Sans's (the font the charts are drawn with on CI), so the
//! estimate errs on the wide side; boxes must overlap by more than a pixel to count, so that
//! labels that merely touch in the estimate do not fail the test.

use std::path::Path;
use std::process::Command;

fn retrystorm(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_retrystorm")).args(args).output().expect("binary runs")
}

fn run(args: &[&str]) {
    let output = retrystorm(args);
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

/// An attribute's value in one tag.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    let end = tag[at..].find('"')?;
    Some(&tag[at..at + end])
}

fn num(tag: &str, name: &str) -> f64 {
    attr(tag, name).and_then(|v| v.parse().ok()).unwrap_or(0.0)
}

/// Advance width of a character in em: at or above DejaVu Sans's for the characters charts use.
fn char_em(c: char) -> f64 {
    match c {
        'i' | 'j' | 'l' | '|' | '!' | '.' | ',' | ':' | ';' | '\'' | ' ' => 0.33,
        'f' | 't' | 'r' | 'I' | '(' | ')' | '[' | ']' | '-' | '/' => 0.42,
        '0'..='9' => 0.64,
        'm' | 'w' | 'M' | 'W' | '—' | '%' | '@' => 1.0,
        'A'..='Z' => 0.78,
        'a'..='z' => 0.64,
        _ => 0.86,
    }
}

/// One `<text>` element: its text and estimated box `[x0, y0, x1, y1]` on the canvas.
#[derive(Debug)]
struct Label {
    text: String,
    rect: [f64; 4],
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&")
}

/// Every non-blank `<text>` of an SVG written by plotters, with its estimated extent.
fn labels(svg: &str) -> Vec<Label> {
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find("<text ") {
        let tag_end = start + rest[start..].find('>').expect("tag closes");
        let tag = &rest[start..tag_end];
        let close = tag_end + rest[tag_end..].find("</text>").expect("text closes");
        let text = unescape(rest[tag_end + 1..close].trim());
        rest = &rest[close..];
        if text.trim().is_empty() {
            continue;
        }
        let size = num(tag, "font-size");
        let (x, y) = (num(tag, "x"), num(tag, "y"));
        let width: f64 = text.chars().map(char_em).sum::<f64>() * size;
        // The baseline from the anchor's vertical placement; glyphs reach 0.78 em above it and
        // 0.24 em below.
        let baseline = match attr(tag, "dy") {
            Some("0.76em") => y + 0.76 * size,
            Some("0.5ex") => y + 0.25 * size,
            Some("-0.5ex") => y - 0.25 * size,
            None => y,
            Some(other) => panic!("unexpected dy {other}"),
        };
        let (x0, x1) = match attr(tag, "text-anchor") {
            Some("middle") => (x - width / 2.0, x + width / 2.0),
            Some("end") => (x - width, x),
            _ => (x, x + width),
        };
        let (y0, y1) = (baseline - 0.78 * size, baseline + 0.24 * size);
        let rect = match attr(tag, "transform") {
            None => [x0, y0, x1, y1],
            // rotate(270, x, y): the text runs upwards from its anchor; local offsets
            // (dx, dy) land at (x + dy, y − dx).
            Some(t) if t.starts_with("rotate(270") => [x + (y0 - y), y - (x1 - x), x + (y1 - y), y - (x0 - x)],
            Some(t) => panic!("unexpected transform {t}"),
        };
        out.push(Label { text, rect });
    }
    out
}

fn canvas(svg: &str) -> (f64, f64) {
    let tag = &svg[svg.find("<svg ").expect("an svg root")..];
    (num(tag, "width"), num(tag, "height"))
}

/// How far two boxes overlap in each direction (negative: apart).
fn overlap(a: &[f64; 4], b: &[f64; 4]) -> (f64, f64) {
    (a[2].min(b[2]) - a[0].max(b[0]), a[3].min(b[3]) - a[1].max(b[1]))
}

/// The layout failures of one SVG: text outside the canvas, text over text.
fn layout_failures(name: &str, svg: &str) -> Vec<String> {
    let (w, h) = canvas(svg);
    let labels = labels(svg);
    let mut failures = Vec::new();
    for l in &labels {
        let [x0, y0, x1, y1] = l.rect;
        if x0 < -1.0 || y0 < -1.0 || x1 > w + 1.0 || y1 > h + 1.0 {
            failures.push(format!("{name}: `{}` at {:?} leaves the {w}×{h} canvas", l.text, l.rect.map(|v| v.round())));
        }
    }
    for (i, a) in labels.iter().enumerate() {
        for b in &labels[i + 1..] {
            let (dx, dy) = overlap(&a.rect, &b.rect);
            if dx > 1.0 && dy > 1.0 {
                failures.push(format!("{name}: `{}` overlaps `{}` ({dx:.0}×{dy:.0} px)", a.text, b.text));
            }
        }
    }
    failures
}

/// WCAG 2 contrast ratio of an sRGB colour against white.
fn contrast_on_white(rgb: [u8; 3]) -> f64 {
    let lin = |v: u8| {
        let s = f64::from(v) / 255.0;
        if s <= 0.04045 {
            s / 12.92
        } else {
            ((s + 0.055) / 1.055).powf(2.4)
        }
    };
    let l = 0.2126 * lin(rgb[0]) + 0.7152 * lin(rgb[1]) + 0.0722 * lin(rgb[2]);
    1.05 / (l + 0.05)
}

fn hex(s: &str) -> Option<[u8; 3]> {
    let s = s.strip_prefix('#')?;
    if s.len() != 6 {
        return None;
    }
    let p = |i: usize| u8::from_str_radix(&s[i..i + 2], 16).ok();
    Some([p(0)?, p(2)?, p(4)?])
}

/// Every colour an SVG strokes or fills with at an opacity of 0.5 or more (tints, grid lines and
/// shaded windows are lighter on purpose), as seen on white: opacity blended in.
fn solid_colours(svg: &str) -> Vec<[u8; 3]> {
    let mut out = Vec::new();
    for tag in svg.split('<').skip(1) {
        let opacity = attr(tag, "opacity").and_then(|o| o.parse::<f64>().ok()).unwrap_or(1.0);
        if opacity < 0.5 || tag.starts_with("svg") {
            continue;
        }
        for key in ["stroke", "fill"] {
            if let Some(c) = attr(tag, key).and_then(hex) {
                let seen = c.map(|v| (f64::from(v) * opacity + 255.0 * (1.0 - opacity)).round() as u8);
                if seen != [255, 255, 255] && !out.contains(&seen) {
                    out.push(seen);
                }
            }
        }
    }
    out
}

/// `name → colour` of the report's swatches.
fn swatches(html: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for part in html.split("<span class=\"swatch\" style=\"background:").skip(1) {
        let colour = part[..7].to_string();
        let after = &part[part.find("</span>").expect("swatch closes") + 7..];
        let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_').collect();
        out.push((name, colour));
    }
    out
}

/// The narrow drawings inlined in a report.
fn narrow_svgs(html: &str) -> Vec<String> {
    html.split("<div class=\"narrow\">")
        .skip(1)
        .map(|rest| rest[..rest.find("</svg>").expect("svg end") + 6].to_string())
        .collect()
}

fn svgs(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("output dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).expect("svg")))
        .collect();
    out.sort();
    out
}

#[test]
fn the_estimator_sees_overlaps_and_edges() {
    let svg = r##"<svg width="200" height="100" viewBox="0 0 200 100">
<text x="10" y="10" dy="0.76em" text-anchor="start" font-family="sans-serif" font-size="12" opacity="1" fill="#000000">
hello world
</text>
<text x="60" y="14" dy="0.76em" text-anchor="start" font-family="sans-serif" font-size="12" opacity="1" fill="#000000">
overlapping
</text>
<text x="10" y="40" dy="0.76em" text-anchor="start" font-family="sans-serif" font-size="12" opacity="1" fill="#000000">
apart
</text>
<text x="195" y="70" dy="0.5ex" text-anchor="start" font-family="sans-serif" font-size="12" opacity="1" fill="#000000">
off the edge
</text>
<text x="150" y="60" dy="0.76em" text-anchor="middle" font-family="sans-serif" font-size="12" opacity="1" fill="#000000" transform="rotate(270, 150, 60)">
rotated
</text>
</svg>"##;
    let f = layout_failures("t", svg);
    assert!(f.iter().any(|m| m.contains("`hello world` overlaps `overlapping`")), "{f:?}");
    assert!(f.iter().any(|m| m.contains("`off the edge`") && m.contains("leaves")), "{f:?}");
    assert!(!f.iter().any(|m| m.contains("apart")), "{f:?}");
    // The rotated label runs vertically: "rotated" is 3.82 em = 45.8 px tall, centred on y = 60, and
    // one line (1.02 em) wide right of x = 150 (its top edge, 0.24 em over the anchor, on the left).
    let l = labels(svg);
    let r = l.iter().find(|l| l.text == "rotated").expect("rotated").rect;
    assert!((r[3] - r[1] - 45.84).abs() < 0.01 && (r[1] + r[3] - 120.0).abs() < 0.01, "{r:?}");
    assert!((r[0] - 149.76).abs() < 0.01 && (r[2] - 162.0).abs() < 0.01, "{r:?}");
    assert_eq!(f.len(), 2, "{f:?}");
    // DejaVu Sans's advance of "capacity 1,000/s" at 13 px is about 105 px; the estimate is wider.
    let est: f64 = "capacity 1,000/s".chars().map(char_em).sum::<f64>() * 13.0;
    assert!((105.0..125.0).contains(&est), "{est}");
    // WCAG: black on white 21:1, #777777 4.48:1.
    assert!((contrast_on_white([0, 0, 0]) - 21.0).abs() < 1e-9);
    assert!((contrast_on_white([0x77, 0x77, 0x77]) - 4.48).abs() < 0.01);
}

#[test]
fn charts_of_many_variants_and_wide_ranges_are_legible_and_keep_colours() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let herd = tmp.path().join("herd");
    let shed = tmp.path().join("shed");
    let plan = tmp.path().join("plan");
    let chain = tmp.path().join("chain");
    let tenants = tmp.path().join("tenants");
    let root = env!("CARGO_MANIFEST_DIR");
    let scenario = |name: &str| format!("{root}/scenarios/{name}.toml");
    let out = |p: &Path| p.to_str().unwrap().to_string();
    run(&["compare", &scenario("outage-herd"), "--replications", "2", "--quiet", "--out", &out(&herd)]);
    run(&["run", &scenario("overload-shedding"), "--replications", "2", "--quiet", "--out", &out(&shed)]);
    run(&["compare", &scenario("chain-amplification"), "--replications", "2", "--quiet", "--out", &out(&chain)]);
    run(&["run", &scenario("noisy-neighbor"), "--replications", "2", "--quiet", "--out", &out(&tenants)]);
    run(&[
        "plan",
        &scenario("outage-herd"),
        "--vary",
        "hop.api.workers=1..64",
        "--jitter",
        "exponential,equal",
        "--replications",
        "2",
        "--quiet",
        "--out",
        &out(&plan),
    ]);
    let mut failures = Vec::new();
    for dir in [&herd, &shed, &plan, &chain, &tenants] {
        for (name, svg) in svgs(dir) {
            let name = format!("{}/{name}", dir.file_name().unwrap().to_string_lossy());
            failures.extend(layout_failures(&name, &svg));
            for c in solid_colours(&svg) {
                let r = contrast_on_white(c);
                if r < 3.0 {
                    failures
                        .push(format!("{name}: colour #{:02x}{:02x}{:02x} has contrast {r:.2} < 3", c[0], c[1], c[2]));
                }
            }
        }
    }
    // The narrow drawings report.html shows below 1,000 px: 760 px wide, the same checks, and
    // one for every chart of the run.
    for dir in [&herd, &shed, &chain, &tenants] {
        let html = std::fs::read_to_string(dir.join("report.html")).expect("report");
        let narrow = narrow_svgs(&html);
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let charts = svgs(dir).len();
        assert_eq!(narrow.len(), charts, "{name}: {} narrow drawings for {charts} charts", narrow.len());
        for (k, svg) in narrow.iter().enumerate() {
            let name = format!("{name}/report.html narrow chart {}", k + 1);
            assert_eq!(canvas(svg).0, 760.0, "{name}");
            failures.extend(layout_failures(&name, svg));
        }
    }
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
    // A strategy keeps its colour: the same swatch in compare's and plan's reports, and drawn
    // in that colour in both commands' charts.
    let compared = swatches(&std::fs::read_to_string(herd.join("report.html")).expect("report"));
    let planned = swatches(&std::fs::read_to_string(plan.join("report.html")).expect("plan report"));
    let plan_svg = std::fs::read_to_string(plan.join("plan.svg")).expect("plan.svg");
    let load_svg = std::fs::read_to_string(herd.join("load_compare.svg")).expect("load_compare.svg");
    for strategy in ["exponential", "equal"] {
        let a = compared.iter().find(|s| s.0 == strategy).map(|s| s.1.clone()).expect("in compare");
        let b = planned.iter().find(|s| s.0 == strategy).map(|s| s.1.clone()).expect("in plan");
        assert_eq!(a.to_lowercase(), b.to_lowercase(), "{strategy}: compare and plan colours differ");
        let stroke = format!("stroke=\"{}\"", a.to_uppercase());
        assert!(plan_svg.contains(&stroke), "plan.svg never strokes {strategy}'s {a}");
        assert!(load_svg.contains(&stroke), "load_compare.svg never strokes {strategy}'s {a}");
    }
    // The colours differ between strategies.
    let mut seen: Vec<&String> = compared.iter().map(|s| &s.1).collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 5, "{compared:?}");
}

/// The reports of sweep (one and two settings), plan (one and two settings) and map: every
/// chart has a narrow drawing for an 800 px window, neither drawing has text off its canvas or
/// overlapping, and the answer and the charts come before the folded tables of probes and rows.
#[test]
fn the_newer_reports_fit_a_laptop_and_answer_before_detail() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = env!("CARGO_MANIFEST_DIR");
    let scenario = |name: &str| format!("{root}/scenarios/{name}.toml");
    let dir = |name: &str| tmp.path().join(name).to_str().unwrap().to_string();
    let quick = ["--replications", "2", "--quiet"];
    let runs: [(&str, Vec<String>); 5] = [
        (
            "sweep",
            vec!["sweep".into(), scenario("outage-herd"), "--vary".into(), "tenant.main.clients=500,1000".into()],
        ),
        (
            "sweep2",
            vec![
                "sweep".into(),
                scenario("outage-herd"),
                "--vary".into(),
                "tenant.main.clients=500,1000".into(),
                "--vary".into(),
                "hop.api.workers=8,16".into(),
            ],
        ),
        (
            "plan",
            vec![
                "plan".into(),
                scenario("outage-herd"),
                "--vary".into(),
                "hop.api.workers=1..64".into(),
                "--jitter".into(),
                "exponential,equal,full".into(),
            ],
        ),
        (
            "plan2",
            vec![
                "plan".into(),
                scenario("outage-herd"),
                "--vary".into(),
                "hop.api.workers=1..32".into(),
                "--across".into(),
                "policy.client.max_attempts=4..6".into(),
                "--jitter".into(),
                "exponential,equal".into(),
            ],
        ),
        ("map", vec!["map".into(), scenario("metastability-map"), "--points".into(), "4".into()]),
    ];
    let mut failures = Vec::new();
    for (name, args) in &runs {
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        args.extend(quick);
        let out = dir(name);
        args.extend(["--out", &out]);
        run(&args);
        let path = tmp.path().join(name);
        let charts = svgs(&path);
        assert!(!charts.is_empty(), "{name}: no chart");
        for (file, svg) in &charts {
            failures.extend(layout_failures(&format!("{name}/{file}"), svg));
        }
        let html = std::fs::read_to_string(path.join("report.html")).expect("report");
        let narrow = narrow_svgs(&html);
        assert_eq!(narrow.len(), charts.len(), "{name}: {} narrow drawings for {} charts", narrow.len(), charts.len());
        for (k, svg) in narrow.iter().enumerate() {
            let label = format!("{name}/report.html narrow chart {}", k + 1);
            assert_eq!(canvas(svg).0, 760.0, "{label}");
            failures.extend(layout_failures(&label, svg));
        }
        // The answer and the first chart before any folded table.
        let figure = html.find("<figure").expect("a chart in the report");
        if let Some(details) = html.find("<details") {
            assert!(figure < details, "{name}: a folded table comes before the first chart");
        }
    }
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}
