"""`.write(out_dir)` writes the CLI's files; `load(out_dir)` reads a CLI directory back."""

import json

import pytest
import retrystorm

from conftest import SCENARIOS

OUTAGE = SCENARIOS / "outage-herd.toml"
SETS = {"tenant.main.clients": 300}
FLAGS = ["--jitter", "none,full", "--replications", "2", "--seed", "4", "--set", "tenant.main.clients=300"]


def compared():
    return retrystorm.compare(OUTAGE, jitter=["none", "full"], replications=2, seed=4, set=SETS)


def without_provenance(summary):
    summary = dict(summary)
    summary.pop("provenance")
    return summary


def test_write_writes_the_files_the_cli_writes(cli, tmp_path):
    expected, cli_dir = cli("compare", OUTAGE, *FLAGS)
    result = compared()
    out = tmp_path / "py"
    written = result.write(out)
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(p.name for p in cli_dir.iterdir())
    assert sorted(p.rsplit("/", 1)[-1] for p in written) == sorted(n for n in names if n != "manifest.json")
    ours = json.loads((out / "summary.json").read_text())
    assert without_provenance(ours) == without_provenance(expected)
    # The provenance records the equivalent command line.
    assert ours["provenance"]["command"][:2] == ["retrystorm", "compare"]
    assert ours["provenance"]["overrides"] == ["tenant.main.clients=300"]
    for name in ("timeseries.csv", "summary.csv", "delays.csv", "latency.csv"):
        assert (out / name).read_bytes() == (cli_dir / name).read_bytes(), name


def test_write_refuses_a_directory_of_other_files(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="--force"):
        compared().write(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_load_reads_the_clis_directory_as_the_run_gave_it(cli):
    _, cli_dir = cli("compare", OUTAGE, *FLAGS)
    loaded = retrystorm.load(cli_dir)
    live = compared()
    assert loaded.summary.to_pydict() == live.summary.to_pydict()
    assert loaded.timeseries.to_pydict() == live.timeseries.to_pydict()
    assert loaded.verdict == live.verdict
    with pytest.raises(ValueError, match="already written"):
        loaded.write(cli_dir)


def test_load_of_a_directory_without_a_run_says_so(tmp_path):
    with pytest.raises(ValueError, match="summary.json"):
        retrystorm.load(tmp_path)


def test_notebook_view_shows_the_verdict_and_a_chart(tmp_path):
    result = compared()
    page = result._repr_html_()
    assert result.verdict["answer"] and result.verdict["answer"].split()[0] in page
    assert "<svg" in page
