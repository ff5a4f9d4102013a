"""IPPO and MAPPO learn multi-agent MuJoCo's cheapest task, Reacher 2x1: each preset's mean episode return
passes -12 (the untrained start scores about -62; seed 0 reaches about -9). Slow: about 75 s per
baseline on 2 CPU cores."""

from __future__ import annotations

import pytest
from preset_training import tail_mean, train_preset

from jaxmarl_suite.baselines import ippo, mappo

pytest.importorskip("mujoco.mjx", reason="the mujoco extra (mujoco, mujoco-mjx) is not installed")
pytest.importorskip("gymnasium_robotics", reason="gymnasium-robotics is not installed")

THRESHOLD = -12.0
"""Mean episode return (the shared reward: minus the fingertip's distance to the target and the control
cost, summed over 50 steps) over the last 10% of updates."""


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", [ippo, mappo], ids=["ippo", "mappo"])
def test_preset_learns_reacher(algorithm) -> None:
    name = algorithm.__name__.rsplit(".", 1)[-1]
    returns = train_preset(algorithm, f"{name}_MaMuJoCo_Reacher_2x1")["return_mean"]
    assert returns[0] < -30.0, returns[:5]  # the start is far from the threshold
    assert tail_mean(returns) >= THRESHOLD, (tail_mean(returns), returns[::10])
