"""scripts/bench_gpu.py, the one-call GPU measurement, runs end to end at smoke-test sizes on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest
from script_modules import load_script


def _load():
    return load_script("bench_gpu")


def test_quick_reset_section_writes_both_modes(tmp_path: Path) -> None:
    bench_gpu = _load()
    out = tmp_path / "gpu.md"
    # One env: the section's code is the same for every env, and SMAX's reset modes are compared step for
    # step in tests/wrappers/test_wrappers.py.
    assert bench_gpu.main(["--quick", "--sections", "resets", "--envs", "MPE_simple_spread_v3",
                           "--out", str(out)]) == 0
    report = out.read_text()
    rows = [line for line in report.splitlines() if line.startswith("| MPE")]
    assert len(rows) == 1
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        cond, select = (float(cells[i].replace(",", "")) for i in (1, 2))
        assert cond > 0 and select > 0 and int(cells[4]) > 0 and int(cells[5]) > 0
    assert "backend" in report and "--quick" in report


def test_the_full_run_covers_the_issue_table() -> None:
    bench_gpu = _load()
    assert set(bench_gpu.ENVS) >= {"MPE_simple_spread_v3", "MPE_simple_tag_v3", "MPE_simple_world_comm_v3",
                                   "SMAX_3m", "SMAX_2s3z"}
    assert bench_gpu.FULL["batches"][0] == 4096 and bench_gpu.FULL["batches"][-1] == 1_048_576
    assert set(bench_gpu.FULL["train_envs"]) == {1024, 4096} and 256 in bench_gpu.FULL["seeds"]
    assert "race" in bench_gpu.SECTIONS and bench_gpu.FULL["race"] is None  # each side's own 1e7 steps


def test_missing_jaxmarl_script_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench_gpu = _load()
    assert bench_gpu.main(["--quick", "--sections", "train", "--jaxmarl-ippo", str(tmp_path / "no.py")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_a_race_of_only_jaxmarl_without_its_script_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """``--race-sides jaxmarl`` alone, without ``--jaxmarl-mappo``, would run no side and print an empty
    table; it fails before anything runs instead."""
    bench_gpu = _load()
    with pytest.raises(SystemExit) as exit_info:
        bench_gpu.main(["--quick", "--sections", "race", "--race-sides", "jaxmarl"])
    assert exit_info.value.code == 2
    assert "--jaxmarl-mappo" in capsys.readouterr().err


@pytest.mark.slow  # 78 s on 2 cores: it compiles six programs twice each
def test_quick_accelerated_section_times_every_variant_both_ways(tmp_path: Path) -> None:
    """The accelerated section at smoke sizes on the CPU: every row has a positive time on each branch."""
    bench_gpu = _load()
    out = tmp_path / "accelerated.md"
    assert bench_gpu.main(["--quick", "--sections", "accelerated", "--out", str(out)]) == 0
    rows = [line for line in out.read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| program")]
    assert len(rows) == 6
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert float(cells[1]) > 0 and float(cells[2]) > 0 and cells[3].endswith("x")
