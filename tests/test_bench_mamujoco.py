"""scripts/bench_mamujoco.py runs end to end at tiny sizes and prints its table with positive rates."""

from __future__ import annotations

import re

import pytest
from script_modules import load_script

pytest.importorskip("mujoco.mjx", reason="the mujoco extra (mujoco, mujoco-mjx) is not installed")
pytest.importorskip("gymnasium_robotics", reason="gymnasium-robotics is not installed")


@pytest.mark.slow  # 34 s on 2 cores (MJX compiles); the script's GPU section reuses its rollout
def test_quick_run_prints_ours_the_reference_and_the_ratio() -> None:
    bench = load_script("bench_mamujoco")
    text = bench.main(["--quick", "--tasks", "Reacher_2x1"])
    header = next(line for line in text.splitlines() if line.startswith("| task"))
    assert "ours B=4" in header and "mamujoco_v1 (1 env)" in header and "ratio at B=4" in header
    rows = [line for line in text.splitlines() if line.startswith("| Reacher_2x1")]
    assert len(rows) == 2, rows  # one per physics backend
    for row, physics in zip(rows, ("mjx", "c"), strict=True):
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[1] == physics, cells
        rates = [float(cells[i].replace(",", "")) for i in (3, 4)]
        assert all(rate > 0 for rate in rates) and re.fullmatch(r"[\d.]+x", cells[5]), cells
        assert cells[6] in ("met", "short") and "machine:" in text


@pytest.mark.slow
def test_the_gpu_reports_mamujoco_section_runs_when_named(tmp_path) -> None:
    bench_gpu = load_script("bench_gpu")
    out = tmp_path / "report.md"
    assert bench_gpu.main(["--quick", "--sections", "mamujoco", "--out", str(out)]) == 0
    report = out.read_text()
    assert "## Multi-agent MuJoCo (MJX)" in report and "| Ant_4x2 |" in report
    assert "## Env throughput" not in report  # only the named section ran
