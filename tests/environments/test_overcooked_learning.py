"""IPPO learns to cook: the cramped_room preset's mean sparse episode return passes 150 (seven or eight
soups served in 400 steps; a random policy scores about 1). Slow: about 5 minutes on 2 CPU cores."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxmarl_suite.baselines import ippo
from jaxmarl_suite.training.kit import make_train
from jaxmarl_suite.training.runner.config import build, load_preset

THRESHOLD = 150.0
"""Mean per-agent sparse episode return (both agents get the team's 20 per soup) over the last 10% of
updates that finished episodes."""


@pytest.mark.slow
def test_ippo_preset_learns_cramped_room() -> None:
    preset = load_preset("ippo_Overcooked_cramped_room")
    config = build(ippo.Config, preset["config"])
    hparams = build(ippo.HParams, preset["hparams"])
    output = jax.jit(make_train(ippo, config))(jax.random.PRNGKey(0), hparams)
    returns = np.asarray(output.metrics["return_mean"])
    finished = returns[np.isfinite(returns)]
    late = finished[-max(1, len(finished) // 10):]
    assert late.mean() >= THRESHOLD, (late.mean(), finished[::20])
