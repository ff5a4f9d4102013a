"""The same seed gives the same ``metrics.csv``: short runs pinned to the rows the code wrote before the
baseline-kit refactor (issue 17, commit 1964ab1, jax 0.10.2 on CPU).

The pinned files were written by ``jaxmarl-suite train ALGO --env ENV --num-envs 4 --num-steps 16
--total-timesteps 320 --seeds 2`` at that commit; a change that alters what a seed computes (an op order,
a key split, a loss term) fails here. CSV values are printed to 6 significant digits, so the comparison
is of those strings, exactly. On another backend or jax version the floats may differ in the last digit:
regenerate the files there with the command above on purpose, never to make a failure go away.
"""

from __future__ import annotations

import csv
from pathlib import Path

import jax
import pytest

from jaxmarl_suite.training.runner.config import baseline_module, build_experiment
from jaxmarl_suite.training.runner.experiment import run_experiment

PINNED = Path(__file__).parent / "pinned"
CASES = [("ippo", "MPE_simple_spread_v3", "ippo.csv"), ("mappo", "MPE_simple_spread_v3", "mappo.csv"),
         ("mappo", "SMAX_3m", "mappo_smax.csv")]


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return [{k: v for k, v in row.items() if k != "wall_s"} for row in csv.DictReader(handle)]


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="pinned on CPU")
@pytest.mark.parametrize(("algorithm", "env_id", "pinned"), CASES)
def test_same_seed_same_metrics_as_before_the_refactor(algorithm: str, env_id: str, pinned: str,
                                                       tmp_path: Path) -> None:
    module = baseline_module(algorithm)
    experiment = build_experiment(
        algorithm, module.Config, module.HParams, seeds=2, run_dir=tmp_path / "run", progress=False,
        config={"env_id": env_id, "num_envs": 4, "num_steps": 16, "total_timesteps": 320})
    run_experiment(module, experiment)
    expected = read_rows(PINNED / pinned)
    got = read_rows(tmp_path / "run" / "metrics.csv")
    assert len(got) == len(expected) == 10  # 5 updates x 2 seeds
    for row, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert have == want, f"row {row}: first differing column " + next(
            f"{k}: pinned {want[k]}, now {have.get(k)}" for k in want if have.get(k) != want[k])
