//! The memory estimate counts a run's cache stores and replica states: a huge cache
//! is refused up front with the estimate, the part that dominates and the fix, exit code 2 and
//! nothing written — like other runaway scenarios (the parts' arithmetic: `runner::memory`).

mod common;
use common::{listing, retrystorm, workdir};

/// A cache of `keys` keys holding up to `capacity` entries in front of a database.
fn cached(keys: u32, capacity: u32) -> String {
    include_str!("fixtures/cache-sized.toml")
        .replace("KEYS", &keys.to_string())
        .replace("CAPACITY", &capacity.to_string())
}

#[test]
fn a_huge_cache_is_refused_up_front() {
    let tmp = workdir();
    let dir = tmp.path();
    std::fs::write(dir.join("big.toml"), cached(10_000_000, 10_000_000)).expect("written");
    let before = listing(dir);
    let args = ["run", "big.toml", "--quiet", "--out", "out", "--threads", "2", "--max-memory", "512MiB"];
    let output = retrystorm(dir, &args);
    let text = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(text.starts_with("error: this run would need about "), "{text}");
    assert!(text.contains("cache stores and replica states, 2 run(s) at a time"), "{text}");
    assert!(text.contains("fewer cache.keys or a smaller cache.capacity"), "{text}");
    assert!(text.contains("more than the limit of 512.0 MiB"), "{text}");
    assert_eq!(listing(dir), before, "nothing written");
    // The same cache with fewer keys runs.
    std::fs::write(dir.join("small.toml"), cached(1_000, 100)).expect("written");
    let output = retrystorm(dir, &["run", "small.toml", "--quiet", "--out", "out", "--max-memory", "512MiB"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
}
