//! Determinism contract: same scenario + seed ⇒ byte-identical summary.json and timeseries.csv,
//! across repeated runs and thread counts, for every bundled scenario — and golden outputs: those
//! files' digests are recorded in `tests/golden/digests.txt`, so a change that moves any bundled
//! scenario's numbers fails here until it is re-blessed on purpose (`RETRYSTORM_BLESS=1 cargo test
//! --release --test determinism`) and said in CHANGELOG.md.

mod common;

use std::path::Path;
use std::process::Command;

/// Replications per golden run: small, so the whole set runs in seconds.
const REPLICATIONS: &str = "3";
/// The files whose bytes are the scenario's answer (perf.json holds wall times and is excluded).
const GOLDEN_FILES: [&str; 3] = ["summary.json", "timeseries.csv", "summary.csv"];

/// Runs `scenario` from the crate's directory by its relative path: `summary.json` records the
/// command line (provenance), so an absolute path would tie the digests to one checkout.
fn run(scenario: &Path, out: &Path, threads: u32) {
    let relative = scenario.strip_prefix(env!("CARGO_MANIFEST_DIR")).expect("a bundled scenario");
    let status = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", relative.to_str().expect("utf-8 path"), "--quiet", "--replications", REPLICATIONS])
        .args(["--threads", &threads.to_string(), "--out", out.to_str().expect("utf-8 path")])
        .status()
        .expect("binary runs");
    assert!(status.success(), "{} failed", scenario.display());
}

/// FNV-1a, 64 bits: a stable digest that needs no dependency (collisions are not a concern for
/// spotting an unintended change).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

fn golden_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/digests.txt")
}

/// `scenario file digest` lines, sorted as the scenarios are.
fn digest_lines(outs: &[(String, std::path::PathBuf)]) -> String {
    let mut text = String::from(
        "# Golden digests (FNV-1a 64) of every bundled scenario's outputs at --replications 3, seed as written.\n\
         # Re-bless deliberately: RETRYSTORM_BLESS=1 cargo test --release --test determinism, and say why in CHANGELOG.md.\n",
    );
    for (stem, dir) in outs {
        for file in GOLDEN_FILES {
            let bytes = std::fs::read(dir.join(file)).expect("written");
            text.push_str(&format!("{stem} {file} {:016x}\n", fnv1a(&bytes)));
        }
    }
    text
}

#[test]
fn bundled_scenarios_are_byte_identical_across_runs_and_threads_and_match_their_golden_digests() {
    let scenarios = common::bundled_scenarios();
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut firsts = Vec::new();
    for scenario in &scenarios {
        let stem = scenario.file_stem().unwrap().to_string_lossy().into_owned();
        let outs: Vec<_> = [(1, "a"), (2, "b"), (2, "c")]
            .iter()
            .map(|(threads, tag)| {
                let out = tmp.path().join(format!("{stem}-{tag}"));
                run(scenario, &out, *threads);
                out
            })
            .collect();
        for file in GOLDEN_FILES {
            let first = std::fs::read(outs[0].join(file)).expect("written");
            for other in &outs[1..] {
                let bytes = std::fs::read(other.join(file)).expect("written");
                assert!(first == bytes, "{file} of {} differs between runs/thread counts", scenario.display());
            }
        }
        firsts.push((stem, outs[0].clone()));
    }
    let actual = digest_lines(&firsts);
    if std::env::var_os("RETRYSTORM_BLESS").is_some() {
        std::fs::create_dir_all(golden_path().parent().unwrap()).expect("tests/golden");
        std::fs::write(golden_path(), &actual).expect("write digests");
        return;
    }
    let expected =
        std::fs::read_to_string(golden_path()).expect("tests/golden/digests.txt exists (bless to create it)");
    let changed: Vec<String> = actual
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| !expected.lines().any(|e| e == *l))
        .map(|l| {
            let mut parts = l.split(' ');
            format!("{} {}", parts.next().unwrap_or(""), parts.next().unwrap_or(""))
        })
        .collect();
    let gone: Vec<&str> =
        expected.lines().filter(|l| !l.starts_with('#')).filter(|e| !actual.lines().any(|a| a == *e)).collect();
    assert!(
        changed.is_empty() && gone.is_empty(),
        "golden outputs changed without a bless: {changed:?} (recorded lines not produced: {gone:?}); \
         if the change is deliberate, run RETRYSTORM_BLESS=1 cargo test --release --test determinism and \
         say why in CHANGELOG.md"
    );
}
