//! How long the bundled metastability map takes: `retrystorm map scenarios/metastability-map.toml`
//! as written (20 × 20 cells, at most 20 replications per cell, three variants, four bisection
//! steps per row), timed end to end through the command line's own entry point, output into a
//! temporary directory. The goal (issue: "fast enough to explore") is at most 2 minutes on the
//! project's 2-core machine.
//!
//! ```text
//! cargo bench --bench map               # one map, its wall and process CPU seconds
//! cargo bench --bench map -- 3          # three maps, one after another
//! ```
//! Not a criterion benchmark: one map lasts about a minute, and criterion's least sample (10
//! runs, after a warm-up) would take a quarter of an hour. Each map is timed once; say the
//! machine's load beside the figure (`uptime`), since wall time counts waiting for a core.

use std::time::Instant;

/// CPU seconds the process has used (user + system), from /proc/self/stat.
fn process_cpu_s() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = text.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let (user, system): (f64, f64) = (fields.get(11)?.parse().ok()?, fields.get(12)?.parse().ok()?);
    Some((user + system) / 100.0)
}

fn main() {
    let runs: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(1);
    let scenario = format!("{}/scenarios/metastability-map.toml", env!("CARGO_MANIFEST_DIR"));
    for run in 1..=runs {
        let out = tempfile::tempdir().expect("temp dir");
        let args = ["retrystorm", "map", scenario.as_str(), "--quiet", "--out"];
        let args = args.iter().map(|a| a.into()).chain([out.path().join("map").into_os_string()]);
        let (cpu0, started) = (process_cpu_s(), Instant::now());
        retrystorm::cli::main_with_args(args).expect("the bundled map runs");
        let wall = started.elapsed().as_secs_f64();
        let cpu = process_cpu_s().zip(cpu0).map_or("n/a".to_string(), |(b, a)| format!("{:.1} s", b - a));
        let map: retrystorm::runner::map::MapFile =
            serde_json::from_str(&std::fs::read_to_string(out.path().join("map/map.json")).expect("map.json"))
                .expect("a map");
        let runs_done: u32 =
            map.rows.iter().flat_map(|r| &r.variants).flat_map(|v| v.cells.iter().map(|c| c.estimate.runs)).sum();
        let probes: usize = map.rows.iter().flat_map(|r| &r.variants).map(|v| v.boundary.probes.len()).sum();
        println!(
            "map {run}/{runs}: metastability-map 20 × 20 × {} variants: {wall:.1} s wall, {cpu} CPU; {runs_done} cell runs, {probes} bisection probes",
            map.variants.len()
        );
    }
}
