"""The data that flows through every environment: ``TimeStep`` and the ``EnvParams`` base."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
from flax import struct

Array = jax.Array
GroupDict = dict[str, Array]


class TimeStep(NamedTuple):
    """What an env returns from ``reset`` and ``step``; every field but ``info`` maps group -> array.

    Shapes are per group, ``[n_in_group, ...]`` for one env and ``[B, n_in_group, ...]`` for a batch:

    - ``obs``: ``[n, *obs_shape]`` float32.
    - ``reward``: ``[n]`` float32, the reward for the transition that produced this step (0 at reset).
    - ``terminated``: ``[n]`` bool, the agent's episode ended inside the game (win, loss, death).
    - ``truncated``: ``[n]`` bool, the episode was cut by the time limit; bootstrap from the final obs.
    - ``action_mask``: ``[n, num_actions]`` bool for groups with ``Discrete`` actions (True = legal);
      groups with other action spaces have no entry.
    - ``info``: a flat ``dict[str, Any]`` of arrays (wrappers add ``final_obs``, episode statistics, ...).
    """

    obs: GroupDict
    reward: GroupDict
    terminated: GroupDict
    truncated: GroupDict
    action_mask: GroupDict
    info: dict[str, Any]


@struct.dataclass
class EnvParams:
    """Traceable environment parameters. Subclass with ``@struct.dataclass`` and give every field a default.

    Anything that changes an array shape belongs on the env object instead; everything here may be
    vmapped over (domain randomisation) or traced.
    """

    max_steps: int = 25
    """Episode length: the step at which every agent is truncated."""
