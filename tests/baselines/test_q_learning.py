"""The value-based baselines learn (slow): each preset, one seed, scored on its greedy episodes (played on a
second set of envs alongside training) over the last 10% of updates.

- SMAX, against the heuristic enemy: QMIX and PQN reach a greedy win rate of 0.9 on 3m and 0.8 on 2s3z
  within their presets' env steps (the issue's targets; the budgets are in each preset).
- MPE simple_spread: IQL, VDN, QMIX and PQN beat a per-agent greedy return that a random policy is far
  from (about -31 per agent: the first greedy episodes of an untrained net score -28 to -33).

Budgets and times on 2 CPU cores are in each case's comment.
"""

from __future__ import annotations

import numpy as np
import pytest
from preset_training import tail_mean, train_preset

from jaxmarl_suite.training.runner.config import baseline_module

SMAX_CASES = [
    # (algorithm, preset, greedy win rate to reach)
    ("pqn", "pqn_SMAX_3m", 0.9),  # 3e6 steps, about 2 minutes; measured 0.96
    ("pqn", "pqn_SMAX_2s3z", 0.8),
    ("qmix", "qmix_SMAX_3m", 0.9),
    ("qmix", "qmix_SMAX_2s3z", 0.8),
]
SPREAD_CASES = [
    # (algorithm, preset, per-agent greedy return to beat)
    ("iql", "iql_MPE_simple_spread_v3", -20.0),
    ("vdn", "vdn_MPE_simple_spread_v3", -20.0),
    ("qmix", "qmix_MPE_simple_spread_v3", -20.0),
    ("pqn", "pqn_MPE_simple_spread_v3", -13.0),
]


@pytest.mark.slow
@pytest.mark.parametrize(("algorithm", "preset", "target"), SMAX_CASES)
def test_greedy_win_rate_on_smax(algorithm: str, preset: str, target: float) -> None:
    metrics = train_preset(baseline_module(algorithm), preset)
    wins = metrics["greedy_win_rate"]
    assert tail_mean(wins) >= target, (tail_mean(wins), wins[:: max(1, len(wins) // 20)])
    assert np.nanmean(wins[:3]) < 0.5  # learned here: the untrained net mostly loses


@pytest.mark.slow
@pytest.mark.parametrize(("algorithm", "preset", "target"), SPREAD_CASES)
def test_greedy_return_on_simple_spread(algorithm: str, preset: str, target: float) -> None:
    metrics = train_preset(baseline_module(algorithm), preset)
    returns = metrics["greedy_return_mean"]
    assert tail_mean(returns) >= target, (tail_mean(returns), returns[:: max(1, len(returns) // 20)])
    assert np.nanmean(returns[: max(3, len(returns) // 100)]) < target - 5.0  # learned here
