"""Reading a run folder: the one reader of everything that comes after a run (plots, reports, ``eval``,
``render``).

A run folder holds ``config.yaml`` (what was run), ``metrics.csv`` (one row per logged update, seed and
grid point), ``summary.json`` (each run's final score, ``final_score``) and ``checkpoints/<update>/``.
This module is the top of the runner layer: evaluation imports it, and nothing in the runner does.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

from jaxmarl_suite.training.runner.config import Experiment, read_run_config
from jaxmarl_suite.training.runner.experiment import load_run, select_run
from jaxmarl_suite.training.runner.logger import (
    FINAL_FRACTION,
    final_score,
    headline_metrics,
    read_metrics,
)

__all__ = ["FINAL_FRACTION", "LoadedPolicy", "final_score", "headline_metrics", "load_policies",
           "load_policy", "read_metrics", "read_run_config", "read_summary"]


def read_summary(run_dir: Path) -> dict[str, Any] | None:
    """``summary.json`` of a finished run, or None while the run has not finished."""
    path = Path(run_dir) / "summary.json"
    return json.loads(path.read_text()) if path.is_file() else None


class LoadedPolicy(NamedTuple):
    """One run's trained policy, loaded from a checkpoint."""

    module: ModuleType
    """The baseline module (``make_env``, ``make_policy``)."""
    experiment: Experiment
    params: Any
    """What ``module.make_policy(...).act`` takes."""
    meta: dict[str, Any]
    """The checkpoint's ``meta.json`` (``update``, ``wall_s``, ...)."""


def load_policy(run_or_checkpoint: Path, grid_index: int = 0, seed_index: int = 0) -> LoadedPolicy:
    """The policy of one grid point and seed of a run folder (its newest checkpoint) or a checkpoint
    folder; a checkpoint that does not match the folder's config raises ``CheckpointError``."""
    module, experiment, state, meta = load_run(Path(run_or_checkpoint))
    params = module.policy_params(select_run(state, experiment.num_seeds, grid_index, seed_index))
    return LoadedPolicy(module, experiment, params, meta)


def load_policies(run_or_checkpoint: Path) -> LoadedPolicy:
    """Every run's policy of a run folder (its newest checkpoint) or a checkpoint folder: ``params`` with a
    leading ``[grid * seeds]`` axis, grid point ``g``, seed ``s`` at ``g * num_seeds + s``."""
    module, experiment, state, meta = load_run(Path(run_or_checkpoint))
    return LoadedPolicy(module, experiment, module.policy_params(state), meta)
