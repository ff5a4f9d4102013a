"""Learning on SMAX against the heuristic enemy (slow): MAPPO with SMAX's world state for the critic.

Each test trains from scratch (win rate 0 at the start) and asserts the win rate, averaged over the last
10% of updates, passes a bar the preset has reached (docs/benchmarks.md has the curves). These bars are
below the issue's targets (0.9 on 3m, 0.5 on 2s3z; JaxMARL's recurrent IPPO/MAPPO near 1 on 3m after
1e7 steps), which the feed-forward presets have not reached yet: see the issue notes.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxmarl_suite.baselines import mappo
from jaxmarl_suite.training.config import build, load_preset


def train_preset(preset: str, total_timesteps: int | None = None) -> dict[str, np.ndarray]:
    """Train the preset (one seed) and return its per-update metrics."""
    data = load_preset(preset)
    values = dict(data["config"])
    if total_timesteps is not None:
        values["total_timesteps"] = total_timesteps
    config = build(mappo.Config, values)
    hparams = build(mappo.HParams, data["hparams"])
    out = jax.jit(mappo.make_train(config))(jax.random.PRNGKey(0), hparams)
    return {k: np.asarray(v) for k, v in out.metrics.items()}


def tail_mean(values: np.ndarray) -> float:
    """Mean over the last 10% of updates (NaN where no episode finished is ignored)."""
    return float(np.nanmean(values[-max(1, len(values) // 10) :]))


@pytest.mark.slow
def test_mappo_wins_3m() -> None:
    # 1e7 env steps, about 10 minutes on 2 CPU cores; measured 0.77 through the CLI (docs/benchmarks.md).
    wins = train_preset("mappo_SMAX_3m")["win_rate"]
    assert tail_mean(wins[:10]) < 0.4 and tail_mean(wins) >= 0.6, wins[::10]


@pytest.mark.slow
def test_mappo_learns_to_fight_on_2s3z() -> None:
    # 4e6 env steps. The win rate is still near 0 there (0.05 at 2.4M steps), so this asserts the return
    # instead: from about 3 of 20 in the first updates to at least 9 (measured 10.9 at 2.4M steps).
    metrics = train_preset("mappo_SMAX_2s3z", total_timesteps=4_000_000)
    returns = metrics["return_mean"]
    assert returns[:5].mean() < 5.0 and tail_mean(returns) >= 9.0, returns[::10]
