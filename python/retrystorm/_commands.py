"""``sweep``, ``plan`` and ``map``: keyword arguments → the command line, run in this process.

Each keyword is the command's flag of the same name (``x_spacing`` → ``--x-spacing``); a
keyword left as None leaves the flag out, so the command line's own default applies. The files
go to ``out`` (default: a new temporary directory, not the command's output/NAME/…).
"""

import json
import os
import tempfile
from collections.abc import Mapping

from . import _native
from ._api import _assignments, _integer, _memory, _progress, _scenario
from ._table import Table


class CommandResults:
    """The directory a command wrote: ``table`` (its CSV: sweep.csv, plan.csv or map.csv),
    ``data`` (its JSON as a dict), ``directory``."""

    def __init__(self, command, directory):
        self.command = command
        self.directory = directory
        self._table = None

    @property
    def table(self):
        if self._table is None:
            self._table = Table(_native.csv_table(os.path.join(self.directory, f"{self.command}.csv")))
        return self._table

    @property
    def data(self):
        with open(os.path.join(self.directory, f"{self.command}.json"), encoding="utf-8") as f:
            return json.load(f)

    def _repr_html_(self):
        names = sorted(n for n in os.listdir(self.directory) if n.endswith(".svg"))
        svg = ""
        if names:
            with open(os.path.join(self.directory, names[0]), encoding="utf-8") as f:
                svg = f.read()
        return f"<div><p>retrystorm {self.command}: {len(self.table)} rows in {self.directory}</p>{svg}</div>"

    def __repr__(self):
        return f"<retrystorm.CommandResults {self.command}: {self.directory}>"


def _scenario_path(scenario):
    """A path for the command line: a scenario given as text or a dict is written to a temporary
    file (relative data paths in it are then read from that file's folder)."""
    path, text, _ = _scenario(scenario)
    if path is not None:
        return path
    handle, path = tempfile.mkstemp(prefix="retrystorm-", suffix=".toml")
    with os.fdopen(handle, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def _flag_value(name, value):
    if isinstance(value, bool):
        raise ValueError(f"{name}={value!r}: give a value, not a bool")
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _run(command, scenario, *, repeated=(), values=(), switches=(), common):
    (replications, seed, threads, set, max_memory, out, force, progress) = common
    argv = ["retrystorm", command, _scenario_path(scenario), "--quiet"]
    for a in _assignments(set):
        argv += ["--set", a]
    for flag, value in (("seed", _integer("seed", seed)), ("replications", _integer("replications", replications)),
                        ("threads", _integer("threads", threads)), ("max-memory", _memory(max_memory))):
        if value is not None:
            argv += [f"--{flag}", value]
    for name, items in repeated:
        for item in items:
            argv += [f"--{name}", item]
    for name, value in values:
        if value is not None:
            argv += [f"--{name.replace('_', '-')}", _flag_value(name, value)]
    for name, on in switches:
        if on:
            argv.append(f"--{name}")
    out = os.fspath(out) if out is not None else tempfile.mkdtemp(prefix=f"retrystorm-{command}-")
    argv += ["--out", out]
    if force:
        argv.append("--force")
    _native.command(argv, _progress(progress))
    return CommandResults(command, out)


def _ranges(name, value):
    """`vary=` as a list of `PATH=…` texts: a str, a list of them, or a dict of paths to values
    (a list of values for sweep; a (low, high) pair for plan and map)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        out = []
        for path, v in value.items():
            if isinstance(v, (list, tuple)) and name == "sweep":
                out.append(f"{path}={','.join(str(x) for x in v)}")
            elif isinstance(v, (list, tuple)) and len(v) == 2:
                out.append(f"{path}={v[0]}..{v[1]}")
            else:
                out.append(f"{path}={v}")
        return out
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    raise ValueError(f"{name}: give 'PATH=…' text, a list of them, or a dict of paths to values")


def sweep(scenario, vary, jitter=None, replications=None, seed=None, threads=None, set=None, *,
          baseline=None, shard=None, out=None, force=False, max_memory=None, progress=False):
    """``retrystorm sweep``: ``vary`` is ``{"tenant.main.clients": [1000, 10000]}`` (or
    ``["tenant.main.clients=1000,10000"]``); returns :class:`CommandResults` (sweep.csv as
    ``.table``)."""
    return _run("sweep", scenario, repeated=[("vary", _ranges("sweep", vary))],
                values=[("jitter", jitter), ("baseline", baseline), ("shard", shard)],
                common=(replications, seed, threads, set, max_memory, out, force, progress))


def plan(scenario, vary, find=None, resolution=None, require=None, jitter=None, across=None, across_step=None,
         replications=None, seed=None, threads=None, set=None, *, shard=None, out=None, force=False,
         max_memory=None, progress=False):
    """``retrystorm plan``: ``vary`` is ``"hop.api.workers=1..64"`` or ``{"hop.api.workers": (1, 64)}``;
    ``require`` a list of requirements; returns :class:`CommandResults` (plan.csv, plan.json)."""
    varied = _ranges("plan", vary)
    if len(varied) != 1:
        raise ValueError("plan: vary= takes one parameter, e.g. 'hop.api.workers=1..64'")
    crossed = _ranges("plan", across)
    if len(crossed) > 1:
        raise ValueError("plan: across= takes one parameter")
    if isinstance(require, str):
        require = [require]
    return _run("plan", scenario, repeated=[("require", list(require or []))],
                values=[("vary", varied[0]), ("find", find), ("resolution", resolution), ("jitter", jitter),
                        ("across", crossed[0] if crossed else None), ("across_step", across_step), ("shard", shard)],
                common=(replications, seed, threads, set, max_memory, out, force, progress))


def map(scenario, x=None, y=None, points=None, x_spacing=None, y_spacing=None, hold=None, window=None,
        goodput_share=None, bisect=None, full=False, leave=False, jitter=None, replications=None, seed=None,
        threads=None, set=None, *, shard=None, out=None, force=False, max_memory=None, progress=False):
    """``retrystorm map``: ``x``/``y`` are ``"PATH=LO..HI"`` or ``{"PATH": (lo, hi)}`` (default: the
    scenario's [map]); returns :class:`CommandResults` (map.csv, map.json)."""
    def axis(name, value):
        r = _ranges(name, value)
        if len(r) > 1:
            raise ValueError(f"map: {name}= takes one parameter")
        return r[0] if r else None

    return _run("map", scenario,
                values=[("x", axis("x", x)), ("y", axis("y", y)), ("points", points), ("x_spacing", x_spacing),
                        ("y_spacing", y_spacing), ("hold", hold), ("window", window),
                        ("goodput_share", goodput_share), ("bisect", bisect), ("jitter", jitter), ("shard", shard)],
                switches=[("full", full), ("leave", leave)],
                common=(replications, seed, threads, set, max_memory, out, force, progress))
