"""retrystorm from Python: simulate retry storms and compare retry policies.

The functions mirror the command line: ``run``, ``compare`` take the commands' flags as keyword
arguments with the same defaults (the command line's own code decides them), and ``load`` reads
a directory the command line wrote::

    import retrystorm
    r = retrystorm.compare("scenarios/outage-herd.toml", jitter=["none", "full"],
                           set={"tenant.main.clients": 1000}, replications=3)
    print(r.verdict["recommended"])
    df = r.summary.to_pandas()
"""

from ._native import DEFAULT_JITTERS, ScenarioError
from ._api import compare, load, run
from ._commands import CommandResults, map, plan, sweep
from ._results import Results
from ._table import Table

__all__ = [
    "run", "compare", "sweep", "plan", "map", "load",
    "Results", "CommandResults", "Table", "ScenarioError", "DEFAULT_JITTERS",
]
