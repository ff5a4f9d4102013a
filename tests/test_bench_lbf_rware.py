"""scripts/bench_lbf_rware.py runs end to end at tiny sizes and prints its table with positive rates and
ratios for Level-Based Foraging (and the warehouse, once ours imports)."""

from __future__ import annotations

import re

import pytest
from script_modules import load_script

pytest.importorskip("jumanji", reason="jumanji is not installed (the dev or bench extra)")
pytest.importorskip("lbforaging.foraging", reason="lbforaging is not installed (the dev or bench extra)")


def _rows(text: str, task: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith(f"| {task} |")]


def _check_row(cells: list[str], with_jumanji: bool, with_reference: bool) -> None:
    assert cells[1] == "8", cells  # --quick's batch
    rates = [2] + ([3] if with_jumanji else []) + ([5] if with_reference else [])
    assert all(float(cells[i].replace(",", "")) > 0 for i in rates), cells
    for index, present in ((4, with_jumanji), (6, with_reference)):
        ratio = re.fullmatch(r"[\d,.]+x \((met|short)\)", cells[index])
        assert ratio if present else cells[index] == "—", cells


def test_quick_lbf_prints_ours_jumanji_the_original_and_the_ratios() -> None:
    bench = load_script("bench_lbf_rware")
    text = bench.main(["--quick", "--tasks", "Foraging-8x8-2p-2f-coop-v3"])
    header = next(line for line in text.splitlines() if line.startswith("| task"))
    assert "Jumanji vmap" in header and "original, 1 env" in header and "target >= 3x" in header
    assert "command: `python scripts/bench_lbf_rware.py --quick" in text and "- jumanji: " in text
    rows = _rows(text, "Foraging-8x8-2p-2f-coop-v3")
    assert len(rows) == 1, text
    _check_row(rows[0], with_jumanji=True, with_reference=True)


def test_quick_rware_rows() -> None:
    bench = load_script("bench_lbf_rware")
    pytest.importorskip("rware.warehouse", reason="rware is not installed (the dev or bench extra)")
    # ours and the original only: Jumanji's warehouse compiles for 10 s, and its rollout is the LBF one's
    text = bench.main(["--quick", "--no-jumanji", "--tasks", "rware-tiny-4ag-v2"])
    # our RWARE ships with the suite: a failed import is a failure, not a skipped row
    assert bench.rware_import_error() is None, text
    rows = _rows(text, "rware-tiny-4ag-v2")
    assert len(rows) == 1, text
    _check_row(rows[0], with_jumanji=False, with_reference=True)
