"""Shared fixtures: the repository, the CLI binary (built by `cargo test --release`), a runner."""

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"


def _target_dir():
    return Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))


@pytest.fixture(scope="session")
def cli_binary():
    """target/release/retrystorm, built if missing (the CLI the package must agree with)."""
    binary = _target_dir() / "release" / "retrystorm"
    if not binary.exists():
        subprocess.run(["cargo", "build", "--release", "--bin", "retrystorm"], cwd=REPO, check=True)
    return binary


@pytest.fixture
def cli(cli_binary, tmp_path):
    """cli(command, scenario, *flags) → the summary.json (dict) and directory of a CLI run."""

    def run(command, scenario, *flags, out=None):
        out = out or tmp_path / f"cli-{command}"
        subprocess.run(
            [str(cli_binary), command, str(scenario), "--quiet", "--out", str(out), *flags],
            cwd=REPO,
            check=True,
        )
        return json.loads((out / "summary.json").read_text()), out

    return run
