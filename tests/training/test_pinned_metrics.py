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
SHORT = {"num_envs": 4, "num_steps": 16, "total_timesteps": 320}
# The pinned runs took their env's preset; its values are written out here so that retuning a preset
# does not move this test.
CASES = [
    ("ippo", {"env_id": "MPE_simple_spread_v3", "hidden_sizes": [64, 64], "activation": "tanh"},
     {"lr": [2.5e-4]}, "ippo.csv"),
    ("mappo", {"env_id": "MPE_simple_spread_v3", "hidden_sizes": [64, 64], "activation": "tanh"},
     {"lr": [2e-3]}, "mappo.csv"),
    ("mappo", {"env_id": "SMAX_3m", "hidden_sizes": [128, 128], "activation": "relu", "team_returns": True},
     {"lr": [1e-3], "ent_coef": [0.02]}, "mappo_smax.csv"),
]


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return [{k: v for k, v in row.items() if k != "wall_s"} for row in csv.DictReader(handle)]


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="pinned on CPU")
@pytest.mark.parametrize(("algorithm", "config", "hparams", "pinned"), CASES)
def test_same_seed_same_metrics_as_before_the_refactor(algorithm: str, config: dict, hparams: dict,
                                                       pinned: str, tmp_path: Path) -> None:
    module = baseline_module(algorithm)
    experiment = build_experiment(
        algorithm, module.Config, module.HParams, config={**config, **SHORT}, hparams=hparams, seeds=2,
        run_dir=tmp_path / "run", progress=False, default_preset=False)
    run_experiment(module, experiment)
    expected = read_rows(PINNED / pinned)
    got = read_rows(tmp_path / "run" / "metrics.csv")
    assert len(got) == len(expected) == 10  # 5 updates x 2 seeds
    for row, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert have == want, f"row {row}: first differing column " + next(
            f"{k}: pinned {want[k]}, now {have.get(k)}" for k in want if have.get(k) != want[k])


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="pinned on CPU")
def test_the_comparison_catches_a_changed_run(tmp_path: Path) -> None:
    """Negative control: another seed gives other rows, so a changed computation cannot pass unseen."""
    algorithm, config, hparams, pinned = CASES[0]
    module = baseline_module(algorithm)
    experiment = build_experiment(
        algorithm, module.Config, module.HParams, config={**config, **SHORT}, hparams=hparams, seeds=2,
        seed=1, run_dir=tmp_path / "run", progress=False, default_preset=False)
    run_experiment(module, experiment)
    assert read_rows(tmp_path / "run" / "metrics.csv") != read_rows(PINNED / pinned)
