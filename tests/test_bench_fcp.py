"""scripts/bench_fcp.py builds a real population, times IPPO and FCP (both partner assignments) at a tiny
size and prints its table. Under ``slow``: it compiles four programs (about 36 s on 2 cores), and FCP's
partner assignments themselves are tested in the default suite (tests/baselines/test_fcp.py)."""

from __future__ import annotations

import re

import pytest
from script_modules import load_script


@pytest.mark.slow  # about 36 s on 2 cores: four programs compiled (the population, IPPO, FCP twice)
def test_prints_one_row_per_batch_with_the_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_script("bench_fcp")
    flags = ["--env", "MatrixGame", "--num-envs", "4", "--num-steps", "8", "--population-seeds", "1",
             "--updates", "1", "--repeats", "1", "--min-repeat-s", "0"]
    assert bench.main(flags) == 0
    printed = capsys.readouterr().out
    assert "FCP against 3 members" in printed
    assert "| FCP balanced env steps/s | FCP balanced time per update / IPPO's | FCP per_env env" in printed
    rows = re.findall(r"^\| (\d+) \| ([\d,]+) \| ([\d,]+) \| ([\d.]+) \| ([\d,]+) \| ([\d.]+) \|$",
                      printed, re.MULTILINE)
    assert [int(r[0]) for r in rows] == [4]
    for _, ippo_rate, *fcp_cells in rows:
        ippo_steps = float(ippo_rate.replace(",", ""))
        assert ippo_steps > 0
        for fcp_rate, ratio in zip(fcp_cells[::2], fcp_cells[1::2], strict=True):
            fcp_steps = float(fcp_rate.replace(",", ""))
            assert fcp_steps > 0
            assert float(ratio) == pytest.approx(ippo_steps / fcp_steps, rel=0.02)
