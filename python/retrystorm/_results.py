"""Results of a run: tables, the verdict, the CLI's files, and a notebook view."""

import html
import json
import os
import tempfile

from ._table import Table


class Results:
    """What ``run``, ``compare`` or ``load`` returns.

    ``summary``: one row per variant × scope × metric (variant, scope, metric, mean, ci_low,
    ci_high, unit), the numbers of summary.json. ``timeseries``: long form (variant, replication,
    t_s, scope, metric, value), the mean over the replications (replication is null) as in
    timeseries.csv. ``verdict``: summary.json's verdict as a dict. ``write(out_dir)`` writes the
    files the command line writes.
    """

    def __init__(self, native, directory=None):
        self._native = native
        self._dir = directory
        self._summary = None
        self._timeseries = None

    @property
    def summary(self):
        if self._summary is None:
            self._summary = Table(self._native.summary)
        return self._summary

    @property
    def timeseries(self):
        if self._timeseries is None:
            self._timeseries = Table(self._native.timeseries)
        return self._timeseries

    @property
    def verdict(self):
        return json.loads(self._native.verdict_json())

    @property
    def summary_json(self):
        """summary.json as a dict."""
        return json.loads(self._native.summary_json())

    @property
    def directory(self):
        """The directory the results were loaded from or last written to (None before)."""
        return self._dir

    def write(self, out_dir, force=False):
        """Writes the files ``retrystorm run``/``compare`` writes into ``out_dir`` (refused, as
        the command line refuses it, when the directory holds files retrystorm did not write,
        unless ``force``); returns the paths written."""
        written = self._native.write(os.fspath(out_dir), force)
        self._dir = os.fspath(out_dir)
        return [str(p) for p in written]

    def _chart_svg(self):
        """The report's key chart (all variants' load, else the load chart), as SVG text."""
        directory = self._dir
        if directory is None and self._native.live:
            directory = tempfile.mkdtemp(prefix="retrystorm-")
            self.write(directory)
            directory = self._dir
        for stem in ("load_compare", "load"):
            path = os.path.join(directory, f"{stem}.svg")
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as f:
                    return f.read()
        return None

    def _repr_html_(self):
        v = self.verdict or {}
        answer = html.escape(v.get("answer") or "")
        rows = "".join(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>".format(
                r.get("rank"),
                html.escape(str(r.get("variant"))),
                {True: "yes", False: "no", None: ""}.get(r.get("meets_all"), ""),
                html.escape(r.get("trade_off") or r.get("behind_on") or ""),
            )
            for r in v.get("ranking", [])
        )
        table = (
            "<table><tr><th>rank</th><th>variant</th><th>meets all</th><th>note</th></tr>"
            f"{rows}</table>"
        )
        svg = self._chart_svg() or ""
        return f"<div><p><b>Verdict:</b> {answer}</p>{table}<div>{svg}</div></div>"

    def __repr__(self):
        v = self.verdict or {}
        return f"<retrystorm.Results: {v.get('answer', '')}>"
