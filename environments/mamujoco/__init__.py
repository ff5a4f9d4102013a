"""Multi-agent MuJoCo on MJX or MuJoCo's C engine: Gymnasium-Robotics' ``mamujoco_v1`` tasks (see README.md).

Importing this package needs nothing beyond the suite; building an env needs the ``mujoco`` extra.
"""

from __future__ import annotations

from .mamujoco import SCENARIOS, MaMuJoCo, MaMuJoCoParams, MaMuJoCoState
from .robots import EXTRA_HINT, MUJOCO_VERSION, require_mujoco

__all__ = [
    "EXTRA_HINT",
    "MUJOCO_VERSION",
    "SCENARIOS",
    "MaMuJoCo",
    "MaMuJoCoParams",
    "MaMuJoCoState",
    "require_mujoco",
]
