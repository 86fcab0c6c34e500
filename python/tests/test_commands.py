"""sweep, plan and map from Python: the same files as the command line with the same flags,
their CSV as a table, bad flags as ValueError with the CLI's message."""

import csv
import json
import subprocess

import pytest
import retrystorm

from conftest import SCENARIOS

OUTAGE = SCENARIOS / "outage-herd.toml"


def same_files(a, b, names):
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def csv_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_sweep_writes_the_clis_sweep(tmp_path, cli_binary):
    flags = ["--vary", "tenant.main.clients=200,400", "--jitter", "none,full", "--replications", "2"]
    cli_out = tmp_path / "cli"
    subprocess.run([str(cli_binary), "sweep", str(OUTAGE), "--quiet", "--out", str(cli_out), *flags], check=True)
    result = retrystorm.sweep(OUTAGE, vary={"tenant.main.clients": [200, 400]}, jitter=["none", "full"],
                              replications=2, out=tmp_path / "py")
    assert result.directory == str(tmp_path / "py")
    same_files(tmp_path / "py", cli_out, ["sweep.csv", "sweep.json"])
    rows = csv_rows(cli_out / "sweep.csv")
    table = result.table.to_pydict()
    assert len(result.table) == len(rows) > 0 and list(table) == list(rows[0])
    for name in table:
        texts = [r[name] for r in rows]
        as_numbers = [float(t) if t else None for t in texts] if any(isinstance(v, float) for v in table[name]) else texts
        assert table[name] == as_numbers, name
    assert result.data["sweep"]["scenario"] == "outage-herd"


def test_plan_finds_what_the_cli_finds(tmp_path, cli_binary):
    args = ["--vary", "hop.api.workers=1..32", "--require", "peak_after_over_capacity <= 1",
            "--replications", "2", "--set", "tenant.main.clients=1000", "--jitter", "full"]
    cli_out = tmp_path / "cli"
    subprocess.run([str(cli_binary), "plan", str(OUTAGE), "--quiet", "--out", str(cli_out), *args], check=True)
    result = retrystorm.plan(OUTAGE, vary={"hop.api.workers": (1, 32)}, require="peak_after_over_capacity <= 1",
                             replications=2, set={"tenant.main.clients": 1000}, jitter=["full"], out=tmp_path / "py")
    same_files(tmp_path / "py", cli_out, ["plan.csv", "plan.json"])
    assert len(result.table) == len(csv_rows(cli_out / "plan.csv")) > 0
    assert result.data == json.loads((cli_out / "plan.json").read_text())


def test_map_runs_a_small_map(tmp_path, cli_binary):
    args = ["--points", "3,2", "--replications", "2", "--bisect", "1"]
    cli_out = tmp_path / "cli"
    scenario = SCENARIOS / "metastability-map.toml"
    subprocess.run([str(cli_binary), "map", str(scenario), "--quiet", "--out", str(cli_out), *args], check=True)
    result = retrystorm.map(scenario, points="3,2", replications=2, bisect=1, out=tmp_path / "py")
    same_files(tmp_path / "py", cli_out, ["map.csv", "map.json"])
    assert len(result.table) == len(csv_rows(cli_out / "map.csv")) > 0


def test_bad_flags_are_value_errors_with_the_clis_message(tmp_path):
    with pytest.raises(ValueError, match="write the lower value first"):
        retrystorm.map(SCENARIOS / "metastability-map.toml", x="tenant.clients.arrival.rate_per_s=60.0..10.0",
                       out=tmp_path / "m")
    with pytest.raises(ValueError, match="vary= takes one parameter"):
        retrystorm.plan(OUTAGE, vary={"a": (1, 2), "b": (1, 2)})
    assert not (tmp_path / "m").exists()


def test_a_sweep_defaults_to_a_temporary_directory():
    result = retrystorm.sweep(OUTAGE, vary=["tenant.main.clients=100"], jitter="none", replications=2)
    assert "retrystorm-sweep-" in str(result.directory)
    assert len(result.table) > 0
