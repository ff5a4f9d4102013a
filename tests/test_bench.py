"""The benchmark harness runs end to end on a tiny configuration and reports what it measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from jaxmarl_suite.bench import format_table, run_benchmark, write_markdown
from jaxmarl_suite.cli import main


def test_run_benchmark_reports_positive_rates_and_a_table(tmp_path: Path) -> None:
    rows = run_benchmark(
        ["simple_spread"], [4], steps=4, repeats=1, compare_jaxmarl=False, min_repeat_s=0.0, progress=None
    )
    assert len(rows) == 1
    row = rows[0]
    assert row["env"] == "MPE_simple_spread_v3" and row["batch"] == 4
    assert row["ours_sps"] > 0 and row["vmap_sps"] > 0 and row["ours_compile_s"] > 0
    assert row["jaxmarl_sps"] is None and row["ratio_vs_jaxmarl"] is None
    table = format_table(rows)
    assert "MPE_simple_spread_v3" in table
    path = tmp_path / "bench.md"
    write_markdown(path, rows, command="test")
    assert "MPE_simple_spread_v3" in path.read_text()


def test_jaxmarl_comparison_runs_in_the_same_process() -> None:
    pytest.importorskip("jaxmarl")
    rows = run_benchmark(
        ["MPE_simple_spread_v3"],
        [8],
        steps=4,
        repeats=1,
        compare_jaxmarl=True,
        include_vmap=False,
        min_repeat_s=0.0,
        progress=None,
    )
    row = rows[0]
    assert row["jaxmarl_id"] == "MPE_simple_spread_v3" and row["jaxmarl_sps"] > 0
    assert row["ratio_vs_jaxmarl"] == pytest.approx(row["ours_sps"] / row["jaxmarl_sps"])


def test_reference_single_env_rate_is_measured() -> None:
    pytest.importorskip("mpe2")
    from jaxmarl_suite.bench import bench_reference

    assert bench_reference("simple_spread", steps=50) > 0
    assert bench_reference("MPE_simple_spread_v3", steps=10) is not None


def test_cli_bench_rejects_unknown_env(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "MPE_simple_sprea_v3", "--batches", "2", "--steps", "2", "--no-jaxmarl"]) == 2
    assert "MPE_simple_spread_v3" in capsys.readouterr().err


def test_smax_counterparts_and_a_same_run_comparison() -> None:
    pytest.importorskip("jaxmarl")
    from jaxmarl_suite.bench import jaxmarl_id, jaxmarl_kwargs

    assert jaxmarl_id("SMAX_3m") == "HeuristicEnemySMAX"
    assert jaxmarl_id("SMAX_2s3z", {"enemy": "agents"}) == "SMAX"
    assert jaxmarl_id("SMAX_MMM") is None  # JaxMARL has no MMM map
    assert jaxmarl_kwargs("SMAX", {"scenario": "2s3z"})["scenario"].num_allies == 5
    rows = run_benchmark(
        ["SMAX_3m"],
        batches=[4],
        steps=2,
        repeats=1,
        include_vmap=False,
        min_repeat_s=0.0,
        progress=None,
        env_kwargs={"enemy": "agents"},
    )
    assert rows[0]["jaxmarl_id"] == "SMAX" and rows[0]["ratio_vs_jaxmarl"] > 0
