"""Tables: the Arrow C stream (pyarrow, polars), pandas and polars frames, and `.timeseries`
against the CLI's timeseries.csv."""

import csv
import math

import pytest
import retrystorm

from conftest import SCENARIOS

OUTAGE = SCENARIOS / "outage-herd.toml"
SETS = {"tenant.main.clients": 300}


@pytest.fixture(scope="module")
def result():
    return retrystorm.compare(OUTAGE, jitter=["none", "full"], replications=2, seed=1, set=SETS)


def test_summary_has_the_documented_columns(result):
    assert result.summary.column_names == ["variant", "scope", "metric", "mean", "ci_low", "ci_high", "unit"]
    scopes = set(result.summary.to_pydict()["scope"])
    assert {"system", "hop:api", "tenant:main"} <= scopes


def test_arrow_stream_reads_in_pyarrow_with_the_same_values(result):
    pa = pytest.importorskip("pyarrow")
    for table in (result.summary, result.timeseries):
        t = pa.table(table)
        assert t.column_names == table.column_names
        assert t.num_rows == len(table) > 0
        assert t.to_pydict() == table.to_pydict()
    types = pa.table(result.summary).schema
    assert types.field("mean").type == pa.float64() and types.field("variant").type == pa.string()
    assert pa.table(result.timeseries).schema.field("replication").type == pa.int64()


def test_arrow_stream_can_be_read_twice_and_released_unread(result):
    pa = pytest.importorskip("pyarrow")
    capsule = result.summary.__arrow_c_stream__()
    del capsule  # released with the capsule, not leaked or freed twice
    a = pa.RecordBatchReader.from_stream(result.summary).read_all()
    b = pa.RecordBatchReader.from_stream(result.summary).read_all()
    assert a.equals(b)


def test_polars_reads_the_stream_and_to_polars(result):
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame(result.summary)
    assert frame.columns == result.summary.column_names
    assert frame.height == len(result.summary)
    assert frame.equals(result.summary.to_polars())


def test_to_pandas(result):
    pd = pytest.importorskip("pandas")
    frame = result.summary.to_pandas()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == result.summary.column_names
    system = frame[(frame.scope == "system") & (frame.metric == "attempts")]
    assert set(system.variant) == {"none", "full"}


def test_a_missing_library_is_named(result, monkeypatch):
    import builtins

    real = builtins.__import__

    def refuse(name, *args, **kwargs):
        if name in ("pandas", "polars"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refuse)
    with pytest.raises(ImportError, match="pip install pandas"):
        result.summary.to_pandas()
    with pytest.raises(ImportError, match="pip install polars"):
        result.summary.to_polars()


def test_timeseries_is_timeseries_csv_in_long_form(cli):
    _, out = cli("compare", OUTAGE, "--jitter", "none,full", "--replications", "2", "--seed", "1",
                 "--set", "tenant.main.clients=300")
    result = retrystorm.compare(OUTAGE, jitter=["none", "full"], replications=2, seed=1, set=SETS)
    d = result.timeseries.to_pydict()
    assert result.timeseries.column_names == ["variant", "replication", "t_s", "scope", "metric", "value"]
    got = {(v, s, m, t): x for v, s, m, t, x in zip(d["variant"], d["scope"], d["metric"], d["t_s"], d["value"])}
    assert all(r is None for r in d["replication"])
    with open(out / "timeseries.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    fixed = {"variant", "scope", "name", "t_s"}
    want = {}
    for row in rows:
        for metric, text in row.items():
            if metric not in fixed:
                key = (row["variant"], f"{row['scope']}:{row['name']}", metric, float(row["t_s"]))
                want[key] = float(text)
    assert len(got) == len(want) > 1000
    close_t = {(k[0], k[1], k[2], round(k[3], 9)): v for k, v in got.items()}
    want_t = {(k[0], k[1], k[2], round(k[3], 9)): v for k, v in want.items()}
    assert close_t.keys() == want_t.keys()
    assert all(close_t[k] == want_t[k] or (math.isnan(close_t[k]) and math.isnan(want_t[k])) for k in want_t)
