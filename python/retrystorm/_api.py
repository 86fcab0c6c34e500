"""The commands as functions: keyword arguments → the command line's flags → ``_native``.

Nothing here decides a default: every flag left as None is left out, and the command line's
own code (``retrystorm::cli::study_job``) applies its default, as for a flag not typed.
"""

import json
import math
import os
import sys
from collections.abc import Mapping

from . import _native
from ._results import Results


def _scenario(scenario):
    """(path, text, name) of a scenario given as a path, TOML text or a dict."""
    if isinstance(scenario, os.PathLike):
        return os.fspath(scenario), None, None
    if isinstance(scenario, Mapping):
        return None, _native.toml_of_json(json.dumps(scenario)), "<dict>"
    if isinstance(scenario, str):
        # TOML text has a `key = value` line; a path has neither `=` nor a newline.
        if "\n" in scenario or "=" in scenario:
            return None, scenario, "<string>"
        return scenario, None, None
    raise TypeError(
        f"scenario must be a path (str or os.PathLike), TOML text or a dict, not {type(scenario).__name__}"
    )


def _toml_text(value, where):
    """A value as the text after `=` in `--set PATH=VALUE`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_inline(v, where) for v in value) + "]"
    if isinstance(value, Mapping):
        return _inline(value, where)
    raise ValueError(f"{where}: {value!r} is a {type(value).__name__}; give a str, int, float, bool, list or dict")


def _inline(value, where):
    """A value inside a TOML array or inline table (strings quoted)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        items = ", ".join(f"{json.dumps(str(k))} = {_inline(v, where)}" for k, v in value.items())
        return "{ " + items + " }"
    return _toml_text(value, where)


def _assignments(set):
    if set is None:
        return []
    if not isinstance(set, Mapping):
        raise ValueError(
            'set= takes a dict of --set paths to values, e.g. set={"hop.api.workers": 8, "horizon": "2000s"}'
        )
    out = []
    for path, value in set.items():
        if not isinstance(path, str):
            raise ValueError(f"set=: the key {path!r} is not a str; keys are --set paths like 'hop.api.workers'")
        out.append(f"{path}={_toml_text(value, f'set[{path!r}]')}")
    return out


def _integer(name, value):
    """An integer flag as text for the command line's own parser (None stays None)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name}={value!r}: give a whole number")
    return str(value)


def _memory(value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"max_memory={value!r}: give bytes as an int or a size like '8GiB'")
    return str(value)


def _progress(progress):
    """The callback of `progress=`: True prints a line updated in place (a notebook shows it)."""
    if progress is None or progress is False:
        return None
    if callable(progress):
        return progress
    if progress is True:
        def show(done, total):
            end = "\n" if total and done >= total else ""
            sys.stdout.write(f"\rretrystorm: {done}/{total} runs{end}")
            sys.stdout.flush()
        return show
    raise ValueError("progress= takes True, False or a function of (done, total)")


def _command(name, scenario_label, assignments, flags):
    """The equivalent command line, recorded in summary.json's provenance."""
    argv = ["retrystorm", name, scenario_label]
    for a in assignments:
        argv += ["--set", a]
    for flag, value in flags:
        if value is not None:
            argv += [flag, value]
    return argv


def _study(name, scenario, jitter, replications, seed, threads, set, baseline, max_memory, progress):
    path, text, text_name = _scenario(scenario)
    assignments = _assignments(set)
    if jitter is not None:
        if isinstance(jitter, str):
            jitter = [j for j in jitter.split(",")]
        jitter = [str(j) for j in jitter]
    seed_t, reps_t, threads_t = _integer("seed", seed), _integer("replications", replications), _integer("threads", threads)
    memory_t = _memory(max_memory)
    flags = [("--seed", seed_t), ("--replications", reps_t)]
    if jitter:
        flags.append(("--jitter", ",".join(jitter)))
    if baseline is not None:
        flags.append(("--baseline", str(baseline)))
    command = _command(name, path if path is not None else text_name, assignments, flags)
    if name == "compare" and jitter is None:
        jitter = []
    native = _native.study(
        path,
        text,
        text_name or "",
        assignments,
        seed_t,
        reps_t,
        threads_t,
        memory_t,
        jitter,
        None if baseline is None else str(baseline),
        command,
        _progress(progress),
    )
    return Results(native)


def run(scenario, replications=None, seed=None, threads=None, set=None, *, max_memory=None, progress=False):
    """``retrystorm run``: the scenario's variants (or the scenario itself as ``baseline``).

    ``scenario`` is a path, TOML text or a dict; ``set`` a dict of ``--set`` paths to values;
    the other arguments are the command's flags (None: the command's default). Returns
    :class:`Results`. Bad input raises :class:`ScenarioError` (the scenario) or ``ValueError``
    (an argument); a run over ``max_memory`` raises ``MemoryError``; Ctrl-C stops the run.
    """
    return _study("run", scenario, None, replications, seed, threads, set, None, max_memory, progress)


def compare(
    scenario,
    jitter=None,
    replications=None,
    seed=None,
    threads=None,
    set=None,
    *,
    baseline=None,
    max_memory=None,
    progress=False,
):
    """``retrystorm compare``: variants on common random numbers — the scenario's own, or one per
    jitter strategy of ``jitter`` (a list, or a comma-separated str; default: the scenario's
    variants, else ``DEFAULT_JITTERS``). ``baseline`` names the variant the others are compared
    with. Otherwise as :func:`run`."""
    return _study("compare", scenario, jitter, replications, seed, threads, set, baseline, max_memory, progress)


def load(out_dir):
    """The results in ``out_dir``, a directory written by ``retrystorm run`` or ``compare``."""
    return Results(_native.load(os.fspath(out_dir)), directory=os.fspath(out_dir))
