//! Hostile input: every malformed scenario or argument is refused with exit code 2 and exactly one
//! line naming the file, position, field, bad value and what is allowed; nothing is written.
//!
//! The corpus is `tests/bad_scenarios/*.toml`: one mistake per file, its exact message on the
//! file's `# expect:` line. `RETRYSTORM_BLESS=1` rewrites those lines with what the binary prints
//! (for a deliberate wording change; review the diff).

mod common;

use common::{listing, retrystorm, workdir, GOOD};
use std::path::{Path, PathBuf};
use std::process::Output;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/bad_scenarios");
const EXPECT: &str = "# expect: ";
const MISTAKE: &str = "# Mistake: ";

struct Case {
    file: String,
    mistake: String,
    expect: String,
}

fn corpus() -> Vec<Case> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(CORPUS)
        .expect("tests/bad_scenarios")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).expect("corpus files are UTF-8");
            let line = |prefix: &str| {
                let found = text.lines().find_map(|l| l.strip_prefix(prefix));
                found.unwrap_or_else(|| panic!("{}: no `{prefix}` line", path.display())).to_string()
            };
            let file = path.file_name().expect("file name").to_string_lossy().into_owned();
            Case { file, mistake: line(MISTAKE), expect: line(EXPECT) }
        })
        .collect()
}

/// Rewrites the `# expect:` line of `file` (RETRYSTORM_BLESS=1 only).
fn bless(file: &str, actual: &str) {
    let path = Path::new(CORPUS).join(file);
    let text = std::fs::read_to_string(&path).expect("readable");
    let rewritten: Vec<String> =
        text.lines().map(|l| if l.starts_with(EXPECT) { format!("{EXPECT}{actual}") } else { l.to_string() }).collect();
    std::fs::write(&path, rewritten.join("\n") + "\n").expect("writable");
}

/// Checks one refused command: exit code 2, nothing on stdout, exactly `expect` on stderr.
fn check_refusal(output: &Output, expect: &str) -> Result<(), String> {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut problems = Vec::new();
    if output.status.code() != Some(2) {
        problems.push(format!("exit code {:?}, expected 2", output.status.code()));
    }
    if !output.stdout.is_empty() {
        problems.push(format!("stdout not empty: {}", String::from_utf8_lossy(&output.stdout)));
    }
    if stderr.trim_end_matches('\n') != expect || stderr.lines().count() != 1 {
        problems.push(format!("stderr:\n  got:      {}\n  expected: {expect}", stderr.trim_end()));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

#[test]
fn the_corpus_has_at_least_40_different_mistakes() {
    let cases = corpus();
    assert!(cases.len() >= 40, "only {} bad scenarios", cases.len());
    let mut mistakes: Vec<&str> = cases.iter().map(|c| c.mistake.as_str()).collect();
    let mut messages: Vec<String> = cases.iter().map(|c| c.expect.replace(&c.file, "FILE")).collect();
    mistakes.sort_unstable();
    mistakes.dedup();
    messages.sort_unstable();
    messages.dedup();
    assert_eq!(mistakes.len(), cases.len(), "two corpus files describe the same mistake");
    assert_eq!(messages.len(), cases.len(), "two corpus files expect the same message");
    for c in &cases {
        let position = format!("error: {}:", c.file);
        let placed = c.expect.starts_with(&position) || c.expect.starts_with(&format!("error: {} ", c.file));
        assert!(placed, "{}: the message must start with the file name: {}", c.file, c.expect);
    }
}

#[test]
fn every_bad_scenario_is_refused_with_exit_code_2_its_exact_message_and_no_output() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let blessing = std::env::var_os("RETRYSTORM_BLESS").is_some();
    let mut failures = Vec::new();
    for case in corpus() {
        let validated = retrystorm(Path::new(CORPUS), &["validate", &case.file]);
        if blessing {
            bless(&case.file, String::from_utf8_lossy(&validated.stderr).trim_end());
            continue;
        }
        if let Err(e) = check_refusal(&validated, &case.expect) {
            failures.push(format!("validate {}: {e}", case.file));
        }
        // `run` must refuse the same way before it creates its output directory.
        let out = tmp.path().join(case.file.trim_end_matches(".toml"));
        let ran = retrystorm(Path::new(CORPUS), &["run", &case.file, "--quiet", "--out", out.to_str().expect("utf-8")]);
        if let Err(e) = check_refusal(&ran, &case.expect) {
            failures.push(format!("run {}: {e}", case.file));
        }
        if out.exists() {
            failures.push(format!("run {}: created {}", case.file, out.display()));
        }
    }
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}

/// A temporary directory holding `good.toml`.
/// Runs `args` in `dir` and checks the refusal and that `dir` gained no file.
fn refused(dir: &Path, args: &[&str], expect: &str) {
    let before = listing(dir);
    let output = retrystorm(dir, args);
    if let Err(e) = check_refusal(&output, expect) {
        panic!("retrystorm {}: {e}", args.join(" "));
    }
    assert_eq!(listing(dir), before, "retrystorm {} wrote files", args.join(" "));
}

#[test]
fn bad_overrides_name_the_set_field_value_and_fix() {
    let tmp = workdir();
    let dir = tmp.path();
    let cases: [(&[&str], &str); 9] = [
        (&["--set", "foo"], "error: `foo` is not PATH=VALUE; write e.g. --set policy.client.jitter=full"),
        (&["--set", "hop..workers=2"], "error: `hop..workers=2`: the path `hop..workers` has an empty segment; write e.g. hop.api.workers=4"),
        (&["--set", "hop.apx.workers=2"], "error: good.toml (--set hop.apx.workers): `hop.apx.workers`: no hop named `apx` (there are: api); did you mean `api`?"),
        (&["--set", "hop.api.workers=two"], "error: good.toml (--set hop.api.workers): `hop.api.workers`: invalid type: string \"two\", expected an integer"),
        (&["--set", "hop.api.workers=0"], "error: good.toml (--set hop.api.workers): `hop.api.workers`: is 0; it must be between 1 and 10000000"),
        (
            &["--set", "tenant.main.arrival.spred=1s"],
            "error: good.toml (--set tenant.main.arrival.spred): `tenant.main.arrival.spred`: unknown field `spred`; did you mean `spread`? Expected one of `kind`, `start`, `spread`, `requests_per_client`, `rate_per_s`, `think`, `steps`, `file`, `format`, `column`, `time_column`, `unit`, `interval`, `per`, `time_scale`, `volume_scale`, `loop`, `from_rate_per_s`, `over`",
        ),
        (&["--set", "horizon.unit=s"], "error: good.toml (--set horizon.unit): `horizon.unit`: `horizon` is a value, not a table; set a field beside it"),
        (&["--set", "fault.0.p=0.5"], "error: good.toml (--set fault.0.p): `fault.0.p`: the scenario has no `fault` entries to change; add one to the file first"),
        (&["--replications", "0"], "error: good.toml (--set replications): `replications`: is 0; it must be between 1 and 10000"),
    ];
    for (extra, expect) in cases {
        let mut args = vec!["run", "good.toml", "--quiet", "--out", "out"];
        args.extend_from_slice(extra);
        refused(dir, &args, expect);
    }
    // A value meant as an array that TOML refuses is reported by its reason first, quoted cut
    // short, never turned into a 1,200-character string and echoed back whole.
    let deep = format!("tenant.main.clients={}1{}", "[".repeat(600), "]".repeat(600));
    let expect = format!("error: `tenant.main.clients`: cannot recurse further; max recursion depth met, in the value `{}…`; write a TOML array or inline table, e.g. [1, 2] or {{ a = 1 }}", "[".repeat(40));
    refused(dir, &["run", "good.toml", "--quiet", "--out", "out", "--set", &deep], &expect);
    refused(
        dir,
        &["run", "good.toml", "--quiet", "--out", "out", "--set", "fault=[{hop=\"api\""],
        "error: `fault`: unclosed inline table, expected `}`, in the value `[{hop=\"api\"`; write a TOML array or inline table, e.g. [1, 2] or { a = 1 }",
    );
}

#[test]
fn bad_arguments_are_refused_with_exit_code_2() {
    let tmp = workdir();
    let dir = tmp.path();
    refused(
        dir,
        &["run", "good.toml", "--threads", "0", "--out", "out"],
        "error: --threads 0: give at least 1 thread, or leave it out for one per core",
    );
    refused(
        dir,
        &["compare", "good.toml", "--jitter", "full,fool", "--out", "out"],
        "error: good.toml: `policy.client.jitter`: unknown jitter `fool`; allowed: none, exponential, full, equal, decorrelated, decorrelated_v2, decorrelated_finagle, proportional, schedule (did you mean `full`?) (in variant `fool`)",
    );
    // Flags clap refuses: exit code 2, the offending argument named on the first line.
    for (args, named) in [
        (&["run", "good.toml", "--bogus"][..], "'--bogus'"),
        (&["run", "good.toml", "--seed", "abc"][..], "'abc'"),
        (&["run", "good.toml", "--replications", "-3"][..], "'-3'"),
        (&["frobnicate", "good.toml"][..], "'frobnicate'"),
    ] {
        let before = listing(dir);
        let output = retrystorm(dir, args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        let first = stderr.lines().next().unwrap_or_default();
        assert!(first.starts_with("error: ") && first.contains(named), "{args:?}: {stderr}");
        assert_eq!(listing(dir), before, "{args:?} wrote files");
    }
}

#[test]
fn unreadable_scenario_files_are_refused_naming_the_file() {
    let tmp = workdir();
    let dir = tmp.path();
    refused(
        dir,
        &["run", "missing.toml", "--out", "out"],
        "error: missing.toml: cannot read the scenario file: No such file or directory (os error 2)",
    );
    std::fs::create_dir(dir.join("folder.toml")).expect("mkdir");
    refused(
        dir,
        &["validate", "folder.toml"],
        "error: folder.toml: cannot read the scenario file: it is a directory; give a .toml file",
    );
    std::fs::write(dir.join("latin1.toml"), b"name = \"caf\xe9\"\n").expect("write");
    refused(
        dir,
        &["validate", "latin1.toml"],
        "error: latin1.toml: cannot read the scenario file: stream did not contain valid UTF-8",
    );
    std::fs::write(dir.join("empty.toml"), b"").expect("write");
    refused(dir, &["validate", "empty.toml"], "error: empty.toml:1:1: missing field `name`");
    let locked = dir.join("locked.toml");
    std::fs::write(&locked, GOOD).expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).expect("chmod");
    // Root reads any file; the refusal can only be observed as an ordinary user.
    if std::fs::read(&locked).is_err() {
        refused(
            dir,
            &["validate", "locked.toml"],
            "error: locked.toml: cannot read the scenario file: Permission denied (os error 13)",
        );
    }
}

#[test]
fn an_output_directory_that_cannot_be_created_is_refused_before_simulating() {
    let tmp = workdir();
    let dir = tmp.path();
    std::fs::write(dir.join("plain-file"), b"not a directory").expect("write");
    refused(
        dir,
        &["run", "good.toml", "--quiet", "--out", "plain-file/results"],
        "error: cannot write `plain-file/results`: Not a directory (os error 20); choose another --out",
    );
    refused(
        dir,
        &["run", "good.toml", "--quiet", "--out", "plain-file"],
        "error: --out `plain-file` is a file, not a directory; give a directory path",
    );
    assert_eq!(std::fs::read(dir.join("plain-file")).expect("still there"), b"not a directory");
}
