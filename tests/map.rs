//! `retrystorm map` end to end on the bundled metastability map: the files, estimates that hold
//! together, a cell re-run from its recorded settings, shards merged into the whole map (also
//! across thread counts), and bad input refused with exit code 2.

mod common;

use common::{retrystorm, workdir};
use retrystorm::metrics::metastable::Judged;
use retrystorm::model::sim;
use retrystorm::runner::map::{cut_at_judgement, BoundaryStatus, MapFile};
use retrystorm::scenario::{parse_assignment, Scenario};
use std::path::{Path, PathBuf};

fn scenario_path() -> String {
    format!("{}/scenarios/metastability-map.toml", env!("CARGO_MANIFEST_DIR"))
}

/// A small map of the bundled scenario (4 × 3 points, at most 6 replications per cell).
fn small_map(dir: &Path, out: &str, extra: &[&str]) -> std::process::Output {
    let path = scenario_path();
    let mut args = vec!["map", path.as_str(), "--points", "4,3", "--replications", "6", "--bisect", "2", "--quiet"];
    args.extend_from_slice(&["--out", out]);
    args.extend_from_slice(extra);
    retrystorm(dir, &args)
}

fn read_map(dir: &Path) -> MapFile {
    serde_json::from_str(&std::fs::read_to_string(dir.join("map.json")).expect("map.json")).expect("a map file")
}

#[test]
fn a_small_map_writes_its_files_and_its_estimates_hold_together() {
    let tmp = workdir();
    let out = small_map(tmp.path(), "m", &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dir = tmp.path().join("m");
    for file in ["map.json", "map.csv", "map.svg", "map.png", "boundaries.svg", "boundaries.png", "report.html"] {
        assert!(dir.join(file).is_file(), "{file} written");
    }
    let map = read_map(&dir);
    assert_eq!((map.x.points, map.y.points, map.rows.len()), (4, 3, 3));
    assert_eq!(map.variants, ["no-backoff", "backoff-jitter", "retry-budget"]);
    let mut judged_cells = 0;
    for row in &map.rows {
        for v in &row.variants {
            assert_eq!(v.cells.len(), 4);
            for c in &v.cells {
                let e = &c.estimate;
                assert_eq!(e.judged + e.not_observable, e.runs, "{c:?}");
                assert!(e.metastable <= e.judged && e.runs <= 6, "{c:?}");
                if let (Some(p), Some([lo, hi])) = (e.p, e.p_ci95) {
                    judged_cells += 1;
                    assert!((0.0..=1.0).contains(&lo) && lo <= p && p <= hi && hi <= 1.0, "{c:?}");
                    assert_eq!(p, f64::from(e.metastable) / f64::from(e.judged));
                }
                // Each cell names both settings as `run --set` takes them.
                assert!(c.settings[0].starts_with("tenant.clients.arrival.rate_per_s = "), "{:?}", c.settings);
                assert!(c.settings[1].starts_with("fault.0.to = "), "{:?}", c.settings);
            }
            if let (BoundaryStatus::Found, Some(x), Some([lo, hi])) =
                (v.boundary.status, v.boundary.x, v.boundary.interval)
            {
                assert!(map.x.lo <= lo && lo <= x && x <= hi && hi <= map.x.hi, "{:?}", v.boundary);
            }
        }
    }
    assert_eq!(judged_cells, 36, "every cell of this scenario is observable (the hold ends before the horizon)");
    // The physics at the corners: a 1 s slowdown at 10/s never tips; 40 s of it at 60/s always
    // does, whatever the policy (60/s holds 150 requests, 2.5 s each: 2× slower is past the timeout).
    let corner = |row: usize, cell: usize| map.rows[row].variants.iter().map(move |v| v.cells[cell].estimate.p);
    assert!(corner(0, 0).all(|p| p == Some(0.0)));
    assert!(corner(2, 3).all(|p| p == Some(1.0)));
    // The y axis is the slowdown's end; the map reads it as the slowdown's length (it starts at
    // 20 s), the x axis as written.
    let reading = map.y.reading.as_ref().expect("fault.0.to is read as a length");
    assert_eq!(reading.offset, 20.0);
    assert_eq!(map.y.describe(), "length of the slow fault (fault.0.to − 20s)");
    assert_eq!(map.y.show(21.0), map.y.show(map.y.lo));
    assert!(map.x.reading.is_none());
    let report = std::fs::read_to_string(dir.join("report.html")).expect("report");
    let svg = std::fs::read_to_string(dir.join("map.svg")).expect("map.svg");
    assert!(report.contains("length of the slow fault") && svg.contains("length of the slow fault"));
    // Ticks in lengths (1 s to 40 s): 10 s, 20 s…, not the ends 30 s…60 s.
    assert!(svg.contains(">\n10 s\n<") && !svg.contains(">\n60 s\n<"), "{svg:.3000}");
}

#[test]
fn a_cell_re_runs_from_its_recorded_settings() {
    let tmp = workdir();
    let out = small_map(tmp.path(), "m", &["--full"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let map = read_map(&tmp.path().join("m"));
    // A cell that is neither all stable nor all stuck if there is one, else any.
    let (row, v, cell) = map
        .rows
        .iter()
        .flat_map(|r| r.variants.iter().enumerate().flat_map(move |(v, vr)| vr.cells.iter().map(move |c| (r, v, c))))
        .max_by_key(|(_, _, c)| c.estimate.metastable.min(c.estimate.judged - c.estimate.metastable))
        .expect("cells");
    let sets: Vec<_> =
        cell.settings.iter().map(|s| parse_assignment(&s.replace(" = ", "=")).expect("a --set assignment")).collect();
    let scenario = Scenario::load(&scenario_path(), &sets).expect("the cell loads");
    let variant = &scenario.variants[v];
    assert_eq!(variant.name, row.variants[v].variant);
    let judge = map.definition.judge();
    let spec = cut_at_judgement(&variant.spec, &judge, false).expect("observable");
    let stuck = (0..6)
        .filter(|&r| judge.judge(&sim::run(&spec, scenario.seed, r), &spec.run_shape()) == Judged::Metastable)
        .count();
    assert_eq!(stuck as u32, cell.estimate.metastable, "{:?}", cell.settings);
    assert_eq!(cell.estimate.runs, 6);
}

#[test]
fn leave_measures_how_long_stuck_runs_take_to_leave_their_storm() {
    let tmp = workdir();
    let out = small_map(tmp.path(), "m", &["--leave"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let map = read_map(&tmp.path().join("m"));
    assert!(map.definition.leave);
    let horizon_after_trigger = |y: f64| 200.0 - y;
    let mut stuck = 0;
    for row in &map.rows {
        for v in &row.variants {
            for c in &v.cells {
                let e = &c.estimate;
                let left = e.left.expect("counted with --leave");
                assert!(left <= e.metastable, "{c:?}");
                // The distribution: one time per metastable run, null where still stuck.
                assert_eq!(e.leave_s.len() as u32, e.metastable, "{c:?}");
                assert_eq!(e.leave_s.iter().flatten().count() as u32, left, "{c:?}");
                stuck += e.metastable;
                match e.leave_median_s {
                    // A median exists only when more than half left, and lies after the judging
                    // instant and before the horizon.
                    Some(m) => assert!(
                        2 * left > e.metastable && m > map.definition.hold_s && m <= horizon_after_trigger(row.y),
                        "{c:?}"
                    ),
                    None => assert!(2 * left <= e.metastable, "{c:?}"),
                }
            }
        }
    }
    assert!(stuck > 0, "the map has metastable runs to follow");
}

#[test]
fn shards_merge_into_the_whole_map_whatever_the_threads() {
    let tmp = workdir();
    let whole = small_map(tmp.path(), "whole", &["--threads", "1"]);
    assert!(whole.status.success(), "{}", String::from_utf8_lossy(&whole.stderr));
    let shards: Vec<PathBuf> = (1..=2)
        .map(|k| {
            let dir = format!("shard-{k}");
            let shard = format!("{k}/2");
            let out = small_map(tmp.path(), &dir, &["--shard", &shard, "--threads", "2"]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            assert!(!tmp.path().join(&dir).join("report.html").exists(), "a shard draws no charts");
            tmp.path().join(dir)
        })
        .collect();
    let merged = tmp.path().join("merged");
    let args: Vec<&str> = ["merge"]
        .into_iter()
        .chain(shards.iter().map(|p| p.to_str().expect("utf-8")))
        .chain(["--out", merged.to_str().expect("utf-8")])
        .collect();
    let out = retrystorm(tmp.path(), &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for file in ["map.json", "map.csv"] {
        let a = std::fs::read(tmp.path().join("whole").join(file)).expect("whole");
        let b = std::fs::read(merged.join(file)).expect("merged");
        assert!(a == b, "{file}: the merged map differs from the whole map");
    }
    assert!(merged.join("report.html").is_file() && merged.join("map.png").is_file());
    // One shard alone is refused, naming the missing row.
    let alone = retrystorm(tmp.path(), &["merge", shards[0].to_str().expect("utf-8"), "--out", "x"]);
    assert_eq!(alone.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&alone.stderr).contains("missing: run its shard"));
}

#[test]
fn bad_map_input_is_named_with_its_fix() {
    let tmp = workdir();
    let path = scenario_path();
    let cases: [(&[&str], &str); 6] = [
        (&["map", "good.toml"], "map needs an x axis"),
        (&["map", &path, "--x", "tenant.clients.arrival.rate_per_s=60.0..10.0"], "write the lower value first"),
        (&["map", &path, "--x-spacing", "log", "--x", "tenant.clients.arrival.rate_per_s=0.0..10.0"], "LO above 0"),
        (&["map", &path, "--window", "2m"], "at most the hold"),
        (&["map", &path, "--goodput-share", "1.5"], "--goodput-share 1.5"),
        (&["map", &path, "--points", "1"], "give 2 to 200 points"),
    ];
    for (args, expected) in cases {
        let out = retrystorm(tmp.path(), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    }
    // A hold past the horizon: nothing can be judged, and the warning says why (exit 0).
    let out = retrystorm(tmp.path(), &["map", &path, "--points", "2", "--hold", "190s", "--quiet", "--out", "late"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no run could be judged") && stderr.contains("shorten --hold"), "{stderr}");
    // A path that is not in the scenario: named by the scenario's own message, nothing written.
    let out = retrystorm(tmp.path(), &["map", &path, "--y", "hop.nope.workers=1..4", "--points", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!tmp.path().join("output").exists(), "nothing written for bad input");
}

/// Round four: `merge` checks what it joins. Each shard below is a real shard with one thing
/// changed the way an edit, a damaged file or a shard of another model would change it; each is
/// refused with exit code 2 and one line naming the shard's file and the field.
#[test]
fn a_map_merge_checks_what_it_joins() {
    let tmp = workdir();
    let dir = tmp.path();
    for k in 1..=2 {
        let out = small_map(dir, &format!("s{k}"), &["--shard", &format!("{k}/2")]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // Shard 2 of another model: the same name and seed, a 3× slower server.
    let other = small_map(dir, "slow", &["--shard", "2/2", "--set", "hop.server.service.base=3s"]);
    assert!(other.status.success(), "{}", String::from_utf8_lossy(&other.stderr));
    let read = |d: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(d).join("map.json")).expect("map.json")).expect("JSON")
    };
    let cell = |m: &mut serde_json::Value| -> serde_json::Value { m["rows"][0]["variants"][0]["cells"][1].clone() };
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "p",
            Box::new(|m| m["rows"][0]["variants"][0]["cells"][1]["p"] = 1.5.into()),
            "cell x_index 1: p 1.5 is not metastable/judged",
        ),
        (
            "metastable",
            Box::new(move |m| {
                let mut c = cell(m);
                c["metastable"] = (c["judged"].as_u64().expect("judged") + 1).into();
                m["rows"][0]["variants"][0]["cells"][1] = c;
            }),
            "is more than judged",
        ),
        (
            "extra row",
            Box::new(|m| {
                let mut row = m["rows"][0].clone();
                row["y_index"] = 99.into();
                m["rows"].as_array_mut().expect("rows").push(row);
            }),
            "row y_index 99: beyond the y axis's 3 points",
        ),
        ("points", Box::new(|m| m["y"]["points"] = 0.into()), "axis y: points 0: map runs 2 to 200 points per axis"),
        ("shard", Box::new(|m| m["shard"] = "5/2".into()), "shard \"5/2\": --shard `5/2`"),
        ("version", Box::new(|m| m["version"] = 99.into()), "version 99: this retrystorm reads map files of version 1"),
    ];
    let refused = |a: &str, b: &str, says: &str| {
        let out = retrystorm(dir, &["merge", a, b, "--out", "merged"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{a} {b}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{a} {b}: expected `{says}` in: {stderr}");
        assert!(!dir.join("merged").exists(), "a refused merge wrote files");
    };
    refused("s1", "slow", "slow/map.json`: model fnv1a64:");
    for (name, edit, says) in &cases {
        let target = format!("edit-{}", name.replace(' ', "-"));
        std::fs::create_dir_all(dir.join(&target)).expect("mkdir");
        let mut m = read("s1");
        edit(&mut m);
        std::fs::write(dir.join(&target).join("map.json"), m.to_string()).expect("write");
        refused(&target, "s2", &format!("{target}/map.json`: "));
        refused(&target, "s2", says);
    }
    // A row moved from shard 1's file into shard 2's: shard 2 now holds a row of shard 1.
    let (mut one, mut two) = (read("s1"), read("s2"));
    let row = one["rows"].as_array_mut().expect("rows").remove(0);
    two["rows"].as_array_mut().expect("rows").insert(0, row);
    for (d, m) in [("moved-1", &one), ("moved-2", &two)] {
        std::fs::create_dir_all(dir.join(d)).expect("mkdir");
        std::fs::write(dir.join(d).join("map.json"), m.to_string()).expect("write");
    }
    refused("moved-1", "moved-2", "moved-2/map.json`: row y_index 0: not a row of shard 2/2");
    // A log x axis would be possible (LO above 0) but moves every cell off the axis's values.
    std::fs::create_dir_all(dir.join("log")).expect("mkdir");
    let mut m = read("s1");
    m["x"]["spacing"] = "log".into();
    std::fs::write(dir.join("log/map.json"), m.to_string()).expect("write");
    refused("log", "s2", "is not the axis's value there");
    // The real shards still merge.
    let ok = retrystorm(dir, &["merge", "s1", "s2", "--out", "merged"]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
}
