"""Reference scores per env, to put tasks on one scale: 0 = a uniformly random policy, 1 = a strong policy.

The numbers live in ``reference_scores.yaml`` beside this module (shipped with the package). Both are mean
per-agent episode returns, the definition of training's ``return_mean``:

- ``random``: what a policy that picks uniformly among the legal actions scores, measured by
  ``scripts/reference_scores.py`` with ``measure_random_score`` (each of many parallel envs plays one
  episode with the env's default arguments), with its standard error and episode count;
- ``strong``: a documented strong score and where it comes from (``strong_source``), or null where there
  is none. Competitive envs (simple_tag, simple_adversary, ...) have none: their per-agent mean adds up
  teams that play against each other, so no single return means "strong".

``report`` normalises a task's scores to ``(score - random) / (strong - random)`` when the task has both.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

REFERENCE_FILE = Path(__file__).with_name("reference_scores.yaml")
"""The package's reference scores (written by ``scripts/reference_scores.py``)."""

_KEYS = ("random", "random_sem", "random_episodes", "strong", "strong_source")


@dataclass(frozen=True)
class ReferenceScore:
    """The reference scores of one env (with its default constructor arguments)."""

    env_id: str
    random: float
    """Mean per-agent episode return of a uniformly random legal policy."""
    random_sem: float
    """Standard error of ``random`` (sample standard deviation over episodes / sqrt(episodes))."""
    random_episodes: int
    """Episodes behind ``random``."""
    strong: float | None
    """A documented strong mean per-agent return, or None."""
    strong_source: str | None
    """Where ``strong`` comes from."""

    @property
    def range(self) -> tuple[float, float] | None:
        """``(random, strong)``, the returns that normalise to 0 and 1; None without a strong score."""
        return None if self.strong is None else (self.random, self.strong)


def _number(path: Path, env_id: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{path}: {env_id}.{key} must be a finite number, got {value!r}")
    return float(value)


def load_reference_scores(path: Path = REFERENCE_FILE) -> dict[str, ReferenceScore]:
    """Read and check a reference-score file: ``{env_id: {random, random_sem, random_episodes, strong,
    strong_source}}``, with ``strong`` above ``random`` where it is given."""
    path = Path(path)
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of env ids to reference scores")
    out = {}
    for env_id, entry in data.items():
        if not isinstance(entry, dict) or set(entry) != set(_KEYS):
            raise ValueError(f"{path}: {env_id} must hold exactly {list(_KEYS)}, got {entry!r}")
        episodes = entry["random_episodes"]
        if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
            raise ValueError(f"{path}: {env_id}.random_episodes must be a positive integer, got {episodes!r}")
        random = _number(path, env_id, "random", entry["random"])
        sem = _number(path, env_id, "random_sem", entry["random_sem"])
        strong, source = entry["strong"], entry["strong_source"]
        if strong is not None:
            strong = _number(path, env_id, "strong", strong)
            if strong <= random:
                raise ValueError(f"{path}: {env_id}.strong ({strong}) must be above random ({random})")
            if not isinstance(source, str) or not source.strip():
                raise ValueError(f"{path}: {env_id}.strong_source must say where strong comes from")
        elif source is not None:
            raise ValueError(f"{path}: {env_id} has a strong_source but no strong score")
        out[str(env_id)] = ReferenceScore(str(env_id), random, sem, episodes, strong, source)
    return out


@functools.cache
def reference_scores() -> Mapping[str, ReferenceScore]:
    """The package's reference scores (``REFERENCE_FILE``), read once."""
    return load_reference_scores(REFERENCE_FILE)


def reference_for(env_id: str) -> ReferenceScore | None:
    """The reference scores of ``env_id`` or of the env it is an alias of; None when it has none."""
    from jaxmarl_suite.core.registry import env_spec

    scores = reference_scores()
    if env_id in scores:
        return scores[env_id]
    try:
        canonical = env_spec(env_id).env_id
    except ValueError:
        return None
    return scores.get(canonical)


def measure_random_score(
    env_id: str, num_episodes: int = 2048, seed: int = 0, env_kwargs: Mapping[str, Any] | None = None
) -> np.ndarray:
    """Mean per-agent returns of ``num_episodes`` episodes of a uniformly random legal policy: as many envs
    in parallel, each playing its first episode, in the env stack training uses."""
    import jax

    from jaxmarl_suite.evaluation.policy import first_episodes
    from jaxmarl_suite.training.kit.envs import make_training_env

    if num_episodes < 1:
        raise ValueError(f"num_episodes: must be >= 1, got {num_episodes}")
    env = make_training_env(env_id, num_episodes, dict(env_kwargs or {}), "group")

    def act(carry: Any, timestep: Any, starts: Any, key: Any) -> tuple[Any, Any]:
        return carry, env.sample_actions(key, timestep.action_mask)

    returns, _ = first_episodes(env, act, (), num_episodes, jax.random.PRNGKey(seed))
    return returns
