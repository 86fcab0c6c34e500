"""Executes a notebook headless (nbclient) in its own folder, failing on any cell's error; the
executed copy is written to target/ (the notebook in the repository stays without outputs)."""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def main(path):
    path = Path(path).resolve()
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    out = Path(__file__).resolve().parents[1] / "target" / f"{path.stem}.executed.ipynb"
    nbformat.write(nb, out)
    html = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if "text/html" in o.get("data", {})]
    if not html or "<svg" not in html[-1]["data"]["text/html"]:
        sys.exit(f"{path.name}: the last cell did not display the results with their chart")
    pngs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    if not pngs:
        sys.exit(f"{path.name}: no matplotlib chart was drawn")
    print(f"{path.name}: {len(nb.cells)} cells executed; output in {out}")


if __name__ == "__main__":
    main(sys.argv[1])
