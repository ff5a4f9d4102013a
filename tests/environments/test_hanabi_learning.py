"""IPPO learns 2-player Hanabi: the ``ippo_Hanabi`` preset's mean score passes 5 within its 2e7 env steps
(a random legal policy scores about 0: it loses its three lives first). Slow: about 14 minutes on 2 CPU
cores."""

from __future__ import annotations

import numpy as np
import pytest
from preset_training import tail_mean, train_preset

from jaxmarl_suite.baselines import ippo

THRESHOLD = 5.0
"""Mean final score (every player's episode return is the game's score) over the last 10% of updates."""


@pytest.mark.slow
def test_ippo_preset_learns_two_player_hanabi() -> None:
    returns = train_preset(ippo, "ippo_Hanabi")["return_mean"]
    assert tail_mean(returns) >= THRESHOLD, (tail_mean(returns), returns[::50])
    assert np.nanmean(returns[:5]) < 3.0  # learned here: the first updates score far less
