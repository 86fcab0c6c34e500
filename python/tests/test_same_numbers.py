"""Same numbers: every mean and interval of `.summary` is summary.json's, bit for bit, and the
verdict is summary.json's verdict (the CLI run with the same flags)."""

import math

import pytest
import retrystorm

from conftest import SCENARIOS

# Bundled scenarios, shrunk with the same --set for both sides.
CASES = [
    ("outage-herd", {"tenant.main.clients": 1000}, 3, 7, ["none", "full", "decorrelated"]),
    ("noisy-neighbor", {"horizon": "30s"}, 3, 11, None),
    ("overload-shedding", {"tenant.clients.clients": 2000, "horizon": "30s"}, 2, 5, None),
]


def rows_of(summary):
    """(variant, scope, metric) → (mean, ci_low, ci_high) from summary.json."""
    out = {}
    for v in summary["variants"]:
        scopes = [("system", v["metrics"])]
        scopes += [(f"hop:{h['name']}", h["metrics"]) for h in v["hops"]]
        scopes += [(f"tenant:{t['name']}", t["metrics"]) for t in v["tenants"]]
        scopes += [(f"replica:{r['name']}", r["metrics"]) for r in v.get("replicas", [])]
        for scope, metrics in scopes:
            for metric, stat in metrics.items():
                ci = stat["ci95"] or [None, None]
                out[(v["name"], scope, metric)] = (stat["mean"], ci[0], ci[1])
    return out


def rows_of_table(table):
    d = table.to_pydict()
    keys = zip(d["variant"], d["scope"], d["metric"])
    values = zip(d["mean"], d["ci_low"], d["ci_high"])
    return dict(zip(keys, values))


def same_bits(a, b):
    if a is None or b is None:
        return a is None and b is None
    return math.copysign(1.0, a) == math.copysign(1.0, b) and (a == b or (math.isnan(a) and math.isnan(b)))


def set_flags(sets):
    flags = []
    for path, value in sets.items():
        flags += ["--set", f"{path}={value}"]
    return flags


@pytest.mark.parametrize("name,sets,replications,seed,jitter", CASES, ids=[c[0] for c in CASES])
def test_compare_summary_equals_the_clis_bit_for_bit(cli, name, sets, replications, seed, jitter):
    scenario = SCENARIOS / f"{name}.toml"
    flags = set_flags(sets) + ["--replications", str(replications), "--seed", str(seed)]
    if jitter:
        flags += ["--jitter", ",".join(jitter)]
    expected, _ = cli("compare", scenario, *flags)
    result = retrystorm.compare(str(scenario), jitter=jitter, replications=replications, seed=seed, set=sets)
    got = rows_of_table(result.summary)
    want = rows_of(expected)
    assert len(result.summary) == len(want), "one row per variant × scope × metric"
    assert got.keys() == want.keys()
    differ = [(k, got[k], want[k]) for k in want if not all(map(same_bits, got[k], want[k]))]
    assert not differ, differ[:5]
    assert result.verdict == expected["verdict"]
    # Enough to be a real test: intervals present, several variants.
    assert sum(1 for v in want.values() if v[1] is not None) > 100
    assert len({k[0] for k in want}) >= 2


def test_run_of_a_scenario_without_variants_is_the_baseline(cli):
    scenario = SCENARIOS / "outage-herd.toml"
    sets = {"tenant.main.clients": 500}
    expected, _ = cli("run", scenario, *set_flags(sets), "--replications", "2")
    result = retrystorm.run(scenario, replications=2, set=sets)
    assert {k[0] for k in rows_of_table(result.summary)} == {"baseline"}
    assert rows_of_table(result.summary) == rows_of(expected)


def test_a_scenario_given_as_text_or_dict_runs_as_the_file_does():
    tomllib = pytest.importorskip("tomllib")
    path = SCENARIOS / "mm1.toml"
    text = path.read_text()
    from_file = retrystorm.run(path, replications=2, seed=3)
    from_text = retrystorm.run(text, replications=2, seed=3)
    from_dict = retrystorm.run(tomllib.loads(text), replications=2, seed=3)
    want = rows_of_table(from_file.summary)
    assert rows_of_table(from_text.summary) == want
    assert rows_of_table(from_dict.summary) == want


def test_units_follow_the_metric_catalogue():
    result = retrystorm.run(SCENARIOS / "mm1.toml", replications=2)
    d = result.summary.to_pydict()
    unit = dict(zip(d["metric"], d["unit"]))
    assert unit["success_ratio"] == "share"
    assert unit["attempts"] == "count"
    assert unit["latency_s_p99"] == "s"
