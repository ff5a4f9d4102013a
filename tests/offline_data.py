"""Synthetic offline datasets for tests: a vault of made-up steps in OG-MARL's layout, written with
``jaxmarl_suite.evaluation.datasets.write_vault`` (no policy, no rollout)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import jaxmarl_suite
from jaxmarl_suite.core.spaces import Discrete
from jaxmarl_suite.evaluation.datasets import write_vault


def synthetic_vault(out: Path, env_id: str = "MPE_simple_spread_v3", steps: int = 64, seed: int = 0,
                    metadata: dict[str, Any] | None = None, actions_from_obs: bool = False) -> Path:
    """A vault of ``steps`` random steps on ``env_id``'s spaces (every agent's observation drawn uniformly
    in [-1, 1], actions uniform over a discrete space). With ``actions_from_obs`` each agent's action is
    the argmax of its observation's first ``num_actions`` entries, a rule a cloned policy can learn."""
    env = jaxmarl_suite.make(env_id)
    rng = np.random.default_rng(seed)
    groups = list(env.groups)
    obs = np.concatenate([rng.uniform(-1, 1, (steps, env.group_size(g), *env.observation_space(g).shape))
                          for g in groups], axis=1).astype(np.float32)
    space = env.action_space(groups[0])
    assert isinstance(space, Discrete), "synthetic vaults are discrete"
    n = obs.shape[1]
    actions = (obs[..., :space.n].argmax(-1) if actions_from_obs
               else rng.integers(0, space.n, (steps, n))).astype(np.int32)
    ends = np.zeros((steps, n), np.float32)
    ends[24::25] = 1.0
    experience = {"observations": obs, "actions": actions,
                  "rewards": rng.normal(size=(steps, n)).astype(np.float32),
                  "terminals": np.zeros((steps, n), np.float32), "truncations": ends,
                  "infos": {"legals": np.ones((steps, n, space.n), np.float32)}}
    experience = {k: ({kk: vv[None] for kk, vv in v.items()} if isinstance(v, dict) else v[None])
                  for k, v in experience.items()}
    meta = {"env_id": env_id, "env_kwargs": {}, "quality": "Synthetic", **(metadata or {})}
    return write_vault(experience, out, f"tests/{env_id}.vlt", "Synthetic", meta)
