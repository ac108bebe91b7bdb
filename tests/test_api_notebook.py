"""docs/api.ipynb runs from top to bottom, in this venv's Python, on the shared real data.

The kernel is named by a kernelspec written here (argv = this interpreter), so a `python3`
kernelspec elsewhere on the machine can never run the notebook with another Python.
"""

from __future__ import annotations

import json
import sys

import pytest

from tests.api_compare import ROOT
from tests.conftest import SHARED_DATA, shared_path

NOTEBOOK = ROOT / "docs" / "api.ipynb"
KERNEL = "perfsuite-test-venv"

pytestmark = [pytest.mark.shared, pytest.mark.slow]


def test_notebook_is_stored_without_outputs():
    """The repository keeps the notebook clean; its outputs come from running it."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(not c["outputs"] and c["execution_count"] is None for c in code)


def test_notebook_runs_in_this_venv(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    shared_path("gpu", "h100-cifar10-run.tar.gz")
    shared_path("traces", "trace_filter__sampled_rank-0.json.gz")
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "perfsuite test venv", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("PERFSUITE_SHARED_DATA", str(SHARED_DATA))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import sys\nprint(sys.executable)"))
    client = nbclient.NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=600,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute()  # raises CellExecutionError naming the cell on any error
    assert nb.cells[-1].outputs[0]["text"].strip() == sys.executable
    # the figures came out as plotly figures, the tables as tables
    kinds = {k for c in nb.cells if c.cell_type == "code" for o in c.outputs
             for k in o.get("data", {})}  # fmt: skip
    assert {"application/vnd.plotly.v1+json", "text/html"} <= kinds
