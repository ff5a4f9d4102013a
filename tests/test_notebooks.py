"""Every notebook under notebooks/ executes top to bottom on CPU."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
SLOW_NOTEBOOKS = {"sweep_and_report"}
"""Executed only under ``-m slow``: a minute of training on 2 cores, and its sweep and report are covered by
``tests/training/test_sweep.py`` and ``tests/evaluation/test_report.py`` in the default suite."""


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, "notebooks/ should hold at least one notebook"


@pytest.mark.parametrize("path", [
    pytest.param(p, id=p.stem, marks=[pytest.mark.slow] if p.stem in SLOW_NOTEBOOKS else [])
    for p in NOTEBOOKS
])
def test_notebook_executes(path: Path, tmp_path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any(o.get("output_type") == "execute_result" and "image/png" in o.get("data", {}) for o in outputs)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    """Outputs stay out of the repository: they are large, machine-specific and go stale."""
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert not [cell for cell in code if cell.get("outputs") or cell.get("execution_count") is not None]
