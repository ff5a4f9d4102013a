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


def final_win_rate(preset: str, total_timesteps: int | None = None) -> tuple[float, np.ndarray]:
    """Train the preset (one seed) and return the mean win rate over the last 10% of updates."""
    data = load_preset(preset)
    values = dict(data["config"])
    if total_timesteps is not None:
        values["total_timesteps"] = total_timesteps
    config = build(mappo.Config, values)
    hparams = build(mappo.HParams, data["hparams"])
    out = jax.jit(mappo.make_train(config))(jax.random.PRNGKey(0), hparams)
    wins = np.asarray(out.metrics["win_rate"])
    tail = wins[-max(1, len(wins) // 10) :]
    return float(np.nanmean(tail)), wins


@pytest.mark.slow
def test_mappo_wins_3m() -> None:
    # 1e7 env steps, about 10 minutes on 2 CPU cores; measured 0.74 (docs/benchmarks.md).
    rate, wins = final_win_rate("mappo_SMAX_3m")
    assert rate >= 0.6, wins[::10]


@pytest.mark.slow
def test_mappo_wins_2s3z_half_the_time() -> None:
    rate, wins = final_win_rate("mappo_SMAX_2s3z")
    assert rate >= 0.5, wins[::10]
