"""IPPO learns to cook: the cramped_room preset's mean sparse episode return passes 150 (seven or eight
soups served in 400 steps; a random policy scores about 1). Slow: about 5 minutes on 2 CPU cores."""

from __future__ import annotations

import pytest
from preset_training import tail_mean, train_preset

from jaxmarl_suite.baselines import ippo

THRESHOLD = 150.0
"""Mean per-agent sparse episode return (both agents get the team's 20 per soup) over the last 10% of
updates (those that finished episodes)."""


@pytest.mark.slow
def test_ippo_preset_learns_cramped_room() -> None:
    returns = train_preset(ippo, "ippo_Overcooked_cramped_room")["return_mean"]
    assert tail_mean(returns) >= THRESHOLD, (tail_mean(returns), returns[::20])
