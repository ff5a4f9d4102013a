"""scripts/bench_happo_mat.py runs end to end at tiny sizes and prints MAPPO, HAPPO and MAT with positive
rates and each one's time per update over MAPPO's (slow: it compiles three training programs)."""

from __future__ import annotations

import re

import pytest
from script_modules import load_script


@pytest.mark.slow
def test_quick_run_prints_the_three_baselines_and_the_ratios(capsys: pytest.CaptureFixture[str]) -> None:
    assert load_script("bench_happo_mat").main(["--quick"]) == 0
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip().strip("|").split("|")]
            for line in capsys.readouterr().out.splitlines() if re.match(r"\| (mappo|happo|mat) \|", line)}
    assert set(rows) == {"mappo", "happo", "mat"}
    for cells in rows.values():
        assert float(cells[1]) >= 0 and float(cells[2].replace(",", "")) > 0, cells
        assert re.fullmatch(r"[\d.]+x( \((met|missed): <= [\d.]+x\))?", cells[3]), cells
    assert rows["mappo"][3] == "1.00x" and rows["mappo"][4] == "1.00x"
    # MAT's transformer does more arithmetic per step than MAPPO's two MLPs (XLA's flop count).
    assert float(rows["mat"][4].rstrip("x")) > 1.0
