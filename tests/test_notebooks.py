"""Every notebook under notebooks/ executes top to bottom on CPU."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
SLOW_NOTEBOOKS = {"sweep_and_report", "zoo"}
"""Executed only under ``-m slow``: ``sweep_and_report`` is a minute of training on 2 cores, and its sweep and
report are covered by ``tests/training/test_sweep.py`` and ``tests/evaluation/test_report.py`` in the
default suite; ``zoo``'s loading, scoring and rendering are ``tests/test_zoo.py``'s and
``tests/render/``'s."""


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, "notebooks/ should hold at least one notebook"


RUNS_MORE_THAN_IT_COMPILES = {"quickstart"}
"""Notebooks whose kernel compiles as a user's does (XLA's defaults, not the suite's fast-compile flags,
tests/conftest.py): the quickstart trains 4 runs for 1e5 env steps, which ran 29.8 s under the suite's
flags and 24.6 s under XLA's defaults (2026-11-30, 2-core AMD EPYC)."""


@pytest.mark.parametrize("path", [
    pytest.param(p, id=p.stem, marks=[pytest.mark.slow] if p.stem in SLOW_NOTEBOOKS else [])
    for p in NOTEBOOKS
])
def test_notebook_executes(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if path.stem in RUNS_MORE_THAN_IT_COMPILES:  # the kernel inherits this process's environment
        from conftest import FAST_COMPILE_FLAGS

        kept = [flag for flag in os.environ.get("XLA_FLAGS", "").split()
                if f"{flag.split('=')[0]}={FAST_COMPILE_FLAGS.get(flag.split('=')[0])}" != flag]
        monkeypatch.setenv("XLA_FLAGS", " ".join(kept))
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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_first_code_cell_installs_from_the_source_set_and_only_where_the_suite_is_missing(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The install cell, run without a kernel and with pip replaced by a recorder: nothing is installed."""
    notebook = nbformat.read(path, as_version=4)
    cell = next(c for c in notebook.cells if c.cell_type == "code").source
    assert re.search(r"^JAXMARL_SUITE_SOURCE = ", cell, re.M)
    commands: list[tuple[list[str], dict]] = []
    monkeypatch.setattr(subprocess, "run", lambda command, **kwargs: commands.append((command, kwargs)))

    exec(cell, {})  # the suite is importable here: nothing to install
    assert commands == []

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "jaxmarl_suite" else find_spec(name, *args))
    with pytest.raises(ValueError, match="set JAXMARL_SUITE_SOURCE"):
        exec(cell, {})  # the placeholder is not a source to install from
    assert commands == []

    checkout = "/home/me/jaxmarl_suite"
    exec(re.sub(r"^JAXMARL_SUITE_SOURCE = .*$", f"JAXMARL_SUITE_SOURCE = {checkout!r}", cell, flags=re.M), {})
    assert commands == [([sys.executable, "-m", "pip", "install", "--quiet", checkout], {"check": True})]
