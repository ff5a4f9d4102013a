"""Training a baseline preset in the slow learning tests: one seed, one compiled program, per-update
metrics."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import jax
import numpy as np

from jaxmarl_suite.training.kit import make_train
from jaxmarl_suite.training.runner.config import build, load_preset


def train_preset(algorithm: ModuleType, preset: str,
                 config_overrides: dict[str, Any] | None = None) -> dict[str, np.ndarray]:
    """Train ``preset`` (with ``config_overrides`` on its config, e.g. a shorter run) with the baseline module
    ``algorithm`` (seed ``PRNGKey(0)``); return its per-update metrics."""
    data = load_preset(preset)
    config = build(algorithm.Config, {**data["config"], **(config_overrides or {})})
    hparams = build(algorithm.HParams, data["hparams"])
    out = jax.jit(make_train(algorithm, config))(jax.random.PRNGKey(0), hparams)
    return {k: np.asarray(v) for k, v in out.metrics.items()}


def tail_mean(values: np.ndarray) -> float:
    """Mean over the last 10% of updates (NaN where no episode finished is ignored)."""
    return float(np.nanmean(values[-max(1, len(values) // 10) :]))
