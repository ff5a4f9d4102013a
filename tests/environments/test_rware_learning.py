"""IPPO learns the Multi-Robot Warehouse: the ``ippo_rware-tiny-2ag-v2`` preset, cut to 3e6 env steps, makes
deliveries. A random policy's per-robot return is about 0.02 (the stored reference score: a delivery a robot
in some fifty episodes); a robot must find a requested shelf, carry it to a goal and put it back under a
shelf's row to get a second. Slow: several minutes on 2 CPU cores."""

from __future__ import annotations

import numpy as np
import pytest
from preset_training import tail_mean, train_preset

from jaxmarl_suite.baselines import ippo

THRESHOLD = 1.0
"""Mean per-robot return (deliveries per robot per 500-step episode) over the last 10% of updates."""


@pytest.mark.slow
def test_ippo_preset_delivers_shelves() -> None:
    returns = train_preset(ippo, "ippo_rware-tiny-2ag-v2", {"total_timesteps": 3_000_000})["return_mean"]
    assert tail_mean(returns) >= THRESHOLD, (tail_mean(returns), returns[::25])
    assert np.nanmean(returns[:50]) < 0.2  # learned here: the first episodes deliver almost nothing
