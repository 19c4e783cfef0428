"""The design-study notebooks run top to bottom without errors and write their plots."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
# the plots each study saves (names from its savefig calls)
EXPECTED = {
    "01_systolic_array_size": ["latency_utilization.png", "report.html", "pareto.csv"],
    "02_lut_vs_mac_llama_decode": ["lut_vs_mac.png"],
    "03_npu_pim_batch": ["batch_scaling.png"],
    "buffer_capacity_study": ["capacity_study.png", "points.csv"],
    "04_gpu_baseline_study": ["gpu_baseline.png", "designs.csv"],
}
TIMEOUT_S = 120  # per cell; each notebook takes a few seconds on 2 cores


@pytest.mark.parametrize("study", sorted(EXPECTED))
def test_notebook_executes_and_writes_its_plots(study: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Execute the notebook in a fresh kernel (nbclient); no cell errors; the plots exist and are non-empty, and
    the notebook shows a plot inline (an image/png display output, as Jupyter renders it)."""
    nbformat = pytest.importorskip("nbformat", reason="notebook tests need the [test] extra (nbformat)")
    nbclient = pytest.importorskip("nbclient", reason="notebook tests need the [test] extra (nbclient)")
    pytest.importorskip("ipykernel", reason="notebook tests need the [test] extra (ipykernel)")
    monkeypatch.setenv("ACCEL_SIM_NOTEBOOK_OUT", str(tmp_path))
    notebook = nbformat.read(NOTEBOOKS / f"{study}.ipynb", as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute(env={k: v for k, v in os.environ.items() if k != "MPLBACKEND"})  # Jupyter's inline backend
    for name in EXPECTED[study]:
        written = tmp_path / study / name
        assert written.exists() and written.stat().st_size > 0, f"{written} was not written"
    shown = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])
             if "image/png" in o.get("data", {})]
    assert shown, f"{study} shows no plot inline"
