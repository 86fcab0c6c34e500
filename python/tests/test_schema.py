"""The scenario format's JSON Schema (docs/scenario.schema.json) against an independent validator,
Python's jsonschema (draft 7): every scenario the parser accepts validates (the bundled ones, the
combined ones, what `retrystorm init` writes), and the cases of tests/schema_cases.json hold: the
listed bad-input files are refused, and the Duration pattern accepts exactly the strings the
parser reads (the Rust side, tests/schema.rs, holds the parser to the same file)."""

import json
import os
import subprocess
import tomllib
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "scenario.schema.json").read_text(encoding="utf-8"))
CASES = json.loads((ROOT / "tests" / "schema_cases.json").read_text(encoding="utf-8"))
BINARY = Path(os.environ.get("RETRYSTORM_BIN", ROOT / "target" / "release" / "retrystorm"))


def validator():
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    return jsonschema.Draft7Validator(SCHEMA)


def complaints(path):
    """The schema's complaints about a TOML file, one per line (empty: valid)."""
    with open(path, "rb") as f:
        instance = tomllib.load(f)
    errors = validator().iter_errors(instance)
    return "".join(f"  at {list(e.absolute_path)}: {e.message[:300]}\n" for e in errors)


def accepted_scenarios():
    files = sorted((ROOT / "scenarios").glob("*.toml")) + sorted((ROOT / "tests" / "combined").glob("*.toml"))
    assert len(files) > 40, files
    return files


@pytest.mark.parametrize("path", accepted_scenarios(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_scenario_the_parser_accepts_validates(path):
    # The Rust tests (determinism, tests/combined) load each of these; the schema must not refuse
    # a key, type or name the parser reads.
    why = complaints(path)
    assert not why, f"the schema refuses {path}, which the parser accepts:\n{why}"


INIT_RUNS = [
    ["--rate", "800", "--capacity", "1000", "--outage", "20s", "--hops", "api,db"],
    ["--clients", "5000", "--preset", "aws-standard"],
    ["--from", str(ROOT / "scenarios/data/tuesday-rps.csv"), "--from", str(ROOT / "scenarios/data/checkout-latency.csv")],
]


@pytest.mark.skipif(not BINARY.exists(), reason=f"{BINARY} not built (cargo build --release)")
@pytest.mark.parametrize("args", INIT_RUNS, ids=["numbers", "preset", "from-data"])
def test_what_init_writes_validates(tmp_path, args):
    out = tmp_path / "init.toml"
    done = subprocess.run([str(BINARY), "init", str(out), *args], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    why = complaints(out)
    assert not why, f"init {args} wrote a file the schema refuses:\n{why}"


def test_the_listed_bad_scenarios_are_refused():
    names = CASES["refused"]
    assert len(names) >= 50
    accepted = [n for n in names if not complaints(ROOT / "tests" / "bad_scenarios" / f"{n}.toml")]
    assert not accepted, f"the schema accepts these bad scenarios: {accepted}"


def test_the_duration_pattern_accepts_what_the_parser_reads():
    duration = {"$ref": "#/definitions/Duration", "definitions": SCHEMA["definitions"]}
    check = jsonschema.Draft7Validator(duration)
    disagree = [
        f"{text!r}: parser {parses}, schema {check.is_valid(text)}"
        for text, parses in CASES["durations"].items()
        if check.is_valid(text) != parses
    ]
    assert not disagree, disagree
    # The check can fail: a schema that accepted any string would disagree.
    assert any(not parses for parses in CASES["durations"].values())
