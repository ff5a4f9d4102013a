"""Learning on SMAX against the heuristic enemy (slow): MAPPO with SMAX's world state for the critic and
team returns, the presets `mappo_SMAX_3m` and `mappo_SMAX_2s3z`.

Each test trains from scratch (win rate 0 at the start) and asserts the issue's bar on the win rate of
the stochastic training policy, averaged over the last 10% of updates: at least 0.95 on 3m after 1.5e7
env steps (issue 18 asks for JaxMARL's 0.96; issue 6 asked for 0.9) and at least 0.5 on 2s3z after 3e6
(docs/benchmarks.md has the curves).
"""

from __future__ import annotations

import pytest
from preset_training import tail_mean, train_preset

from jaxmarl_suite.baselines import mappo


@pytest.mark.slow
def test_mappo_wins_3m() -> None:
    # 1.5e7 env steps, about 6 minutes on 2 CPU cores. Measured: 0.959 over the last 10% of updates, and
    # a 5-update mean of 0.9 first at 2.6M steps.
    wins = train_preset(mappo, "mappo_SMAX_3m")["win_rate"]
    assert tail_mean(wins[:10]) < 0.4 and tail_mean(wins) >= 0.95, wins[::10]


@pytest.mark.slow
def test_mappo_wins_2s3z() -> None:
    # 3e6 env steps, about 6 minutes on 2 CPU cores. Measured through the CLI (1e7-step schedule): a win
    # rate of 0.94 at 0.7M steps and 1.0 from 1.3M.
    wins = train_preset(mappo, "mappo_SMAX_2s3z")["win_rate"]
    assert tail_mean(wins[:10]) < 0.4 and tail_mean(wins) >= 0.5, wins[::10]
