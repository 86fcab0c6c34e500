"""The extension, built alone (maturin builds -p retrystorm-python), resolves every crate it
shares with `cargo test` with the same features, so it reuses cargo test's release artifacts
instead of building retrystorm a second time (crates/python/Cargo.toml says how)."""

import shutil
import subprocess

import pytest

from conftest import REPO


def features(*args):
    """(crate, version) → its features, over the packages cargo tree resolves for `args`."""
    text = subprocess.run(
        ["cargo", "tree", "--offline", "-e", "features", "--prefix", "none", "-f", "{p} {f}", *args],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2 or not parts[1].startswith("v"):
            continue
        feats = parts[2] if len(parts) > 2 and not parts[2].startswith("(") else ""
        out.setdefault((parts[0], parts[1]), set()).add(feats)
    return out


@pytest.mark.skipif(shutil.which("cargo") is None, reason="needs cargo")
def test_the_extension_shares_cargo_tests_features():
    tests = features("-e", "normal,build,dev", "-p", "retrystorm", "-p", "retrystorm-engine")
    extension = features("-e", "normal,build", "-p", "retrystorm-python")
    shared = set(tests) & set(extension)
    assert ("retrystorm", "v0.1.0") in shared and ("syn", next(v for n, v in shared if n == "syn")) in shared
    differ = {k: (tests[k], extension[k]) for k in shared if tests[k] != extension[k]}
    assert not differ, f"features differ (cargo test, extension): {differ}"
