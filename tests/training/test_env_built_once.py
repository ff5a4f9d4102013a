"""The env is built once per run and handed to the trainer: ``train`` (with its plot and GIF) builds the
training env once, and the GIF one more env of one episode without resets. That a sweep builds each
block's env once is checked on the sweep tests' run (``tests/training/test_sweep.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jaxmarl_suite.baselines import ippo
from jaxmarl_suite.pipeline import train
from jaxmarl_suite.training.runner.config import build_experiment

TINY = {"num_envs": 4, "num_steps": 16, "num_minibatches": 2, "update_epochs": 1, "hidden_sizes": [16],
        "total_timesteps": 64}


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """Every ``ippo.make_env`` call as ``(num_envs, auto_reset)``."""
    calls: list[tuple[int, bool]] = []
    original = ippo.make_env

    def counting(config: Any, num_envs: int | None = None, auto_reset: bool = True) -> Any:
        calls.append((config.num_envs if num_envs is None else num_envs, auto_reset))
        return original(config, num_envs, auto_reset)

    monkeypatch.setattr(ippo, "make_env", counting)
    return calls


def test_a_run_builds_its_env_once(builds: list[tuple[int, bool]], tmp_path: Path) -> None:
    experiment = build_experiment("ippo", ippo.Config, ippo.HParams, config=TINY, run_dir=tmp_path / "run",
                                  progress=False)
    train(ippo, experiment)
    assert builds == [(4, True), (1, False)]  # training, then the GIF's single episode
    assert (tmp_path / "run" / "policy.gif").is_file()
