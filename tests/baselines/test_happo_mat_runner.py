"""HAPPO and MAT through the runner, as a user runs them: a 2-point grid x 2 seeds in one compiled program,
checkpoints, a resume from an interrupted copy that ends bit for bit where the uninterrupted run ends, and
``jaxmarl-suite report`` on the run folder. Tiny nets on MPE simple_spread; about 15 s per baseline."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxmarl_suite.cli import main as cli_main
from jaxmarl_suite.training.runner.config import baseline_module, parse_experiment
from jaxmarl_suite.training.runner.experiment import run_experiment

SIZES = {"happo": ["--hidden-sizes", "[16]"], "mat": ["--embed-dim", "8", "--hidden-sizes", "[8]"]}


# MAT's round trip is slow (about 20 s of the default suite's budget); HAPPO's takes the same path through
# the runner by default.
@pytest.mark.parametrize("name", ["happo", pytest.param("mat", marks=pytest.mark.slow)])
def test_grid_resume_and_report(name: str, tmp_path: Path) -> None:
    module = baseline_module(name)
    args = ["--env", "MPE_simple_spread_v3", "--num-envs", "4", "--num-steps", "8", "--update-epochs", "1",
            "--num-minibatches", "2", "--total-timesteps", "128", "--checkpoint-every", "2", "--seeds", "2",
            "--lr", "0.001", "0.0003", *SIZES[name], "--wandb", "disabled", "--no-progress", "--no-gif"]
    full = run_experiment(module, parse_experiment(name, module.Config, module.HParams,
                                                   [*args, "--run-dir", str(tmp_path / "full")]))
    with (tmp_path / "full" / "metrics.csv").open() as handle:
        logged = list(csv.DictReader(handle))
    # every update of every grid point x seed is logged, and the two learning rates train apart
    assert {(r["grid_index"], r["seed"]) for r in logged} == {(g, s) for g in "01" for s in "01"}
    assert max(int(r["update"]) for r in logged) == 4
    losses = {g: [r["total_loss"] for r in logged if r["grid_index"] == g and r["seed"] == "0"] for g in "01"}
    assert losses["0"][-1] != losses["1"][-1]

    copy = tmp_path / "copy"  # as if the process died after checkpoint 2
    shutil.copytree(tmp_path / "full", copy)
    shutil.rmtree(copy / "checkpoints" / "4")
    (copy / "summary.json").unlink()
    with (copy / "metrics.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(logged[0]))
        writer.writeheader()
        writer.writerows(r for r in logged if int(r["update"]) <= 2)
    resumed = run_experiment(module, parse_experiment(
        name, module.Config, module.HParams, ["--resume", str(copy), "--wandb", "disabled", "--no-progress"]))
    # the resumed invocation trained updates 3 and 4 only, from checkpoint 2
    assert all(np.asarray(v).shape[0] == 2 for v in resumed.metrics.values())
    for a, b in zip(jax.tree.leaves(full.state), jax.tree.leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with (copy / "metrics.csv").open() as handle:  # updates 3 and 4 appended once, with the same metrics
        relogged = list(csv.DictReader(handle))
    assert [{k: v for k, v in r.items() if k != "wall_s"} for r in relogged] == [
        {k: v for k, v in r.items() if k != "wall_s"} for r in logged]

    out = tmp_path / "report"
    assert cli_main(["report", str(tmp_path / "full"), "--out", str(out), "--reps", "50"]) == 0
    # the report's final-return table has this algorithm's row on this env
    rows = [line for line in (out / "report.md").read_text().splitlines()
            if line.startswith("| MPE_simple_spread_v3 | ") and name in line]
    assert rows, (out / "report.md").read_text()
