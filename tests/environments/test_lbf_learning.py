"""IPPO learns Level-Based Foraging: the ``ippo_Foraging-8x8-2p-2f-coop-v3`` preset clears the field.

With normalized rewards a cleared field pays 1 to the team, so the per-agent mean return is at most 0.5 with
two players; a random policy almost never loads a level-coop food together (it needs both players beside
it, loading on the same step). Slow: about two minutes on 2 CPU cores.
"""

from __future__ import annotations

import numpy as np
import pytest
from preset_training import tail_mean, train_preset

from jaxmarl_suite.baselines import ippo

THRESHOLD = 0.45
"""Mean per-agent return over the last 10% of updates: 90% of the food eaten, on average."""


@pytest.mark.slow
def test_ippo_preset_clears_the_field() -> None:
    metrics = train_preset(ippo, "ippo_Foraging-8x8-2p-2f-coop-v3")
    returns = metrics["return_mean"]
    assert tail_mean(returns) >= THRESHOLD, (tail_mean(returns), returns[::20])
    assert np.nanmean(returns[:5]) < 0.1  # learned here: the first updates eat almost nothing
    # and it learns to be quick about it: far fewer than the 50 steps of an episode that times out
    assert tail_mean(metrics["episode_length"]) < 25
