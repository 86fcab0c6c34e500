"""Writes jitter.ipynb from the cells below (kept as code so that a diff of the notebook is a
diff of this file): run it after editing them, with nbformat installed."""

import nbformat
from pathlib import Path

CELLS = [
    ("markdown", """# Jitter strategies after an outage

The bundled `outage-herd` scenario (smaller here: 2,000 clients, 5 replications): every client's
first request fails while the API is down, and each jitter strategy decides when the retries
land. `retrystorm.compare` runs all strategies on the same random numbers."""),
    ("code", """import retrystorm
from pathlib import Path

scenario = Path("..") / "scenarios" / "outage-herd.toml"
results = retrystorm.compare(
    scenario,
    jitter=["none", "exponential", "full", "decorrelated"],
    replications=5,
    seed=1,
    set={"tenant.main.clients": 2000},
    progress=True,
)
print(results.verdict["answer"])"""),
    ("markdown", "The summary: one row per variant, scope and metric, with its 95% interval."),
    ("code", """summary = results.summary.to_pandas()
peak = summary[(summary.scope == "hop:api") & (summary.metric == "peak_after_over_capacity")]
peak[["variant", "mean", "ci_low", "ci_high"]]"""),
    ("markdown", "Attempts per second at the API over time, one line per strategy, from `.timeseries`."),
    ("code", """import matplotlib.pyplot as plt

series = results.timeseries.to_pandas()
api = series[(series.scope == "hop:api") & (series.metric == "attempts")]
bucket_s = results.summary_json["bucket_s"]
fig, ax = plt.subplots(figsize=(8, 4))
for variant, rows in api.groupby("variant", sort=False):
    ax.plot(rows.t_s, rows.value / bucket_s, label=variant)
ax.set_xlabel("time (s)")
ax.set_ylabel("attempts/s at api")
ax.set_yscale("log")
ax.legend()
plt.show()"""),
    ("code", """assert len(ax.lines) == 4, "one line per strategy"
results"""),
]


def main():
    nb = nbformat.v4.new_notebook()
    for kind, text in CELLS:
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        nb.cells.append(make(text))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, Path(__file__).with_name("jitter.ipynb"))


if __name__ == "__main__":
    main()
