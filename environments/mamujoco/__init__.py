"""Multi-agent MuJoCo on MJX: Gymnasium-Robotics' ``mamujoco_v1`` tasks (see README.md).

Importing this package needs nothing beyond the suite; building an env needs the ``mujoco`` extra.
"""

from __future__ import annotations

import importlib.util

from .mamujoco import SCENARIOS, MaMuJoCo, MaMuJoCoParams, MaMuJoCoState

MUJOCO_VERSION = "3.17.0"
"""The ``mujoco`` and ``mujoco-mjx`` version the extra pins (MuJoCo 4 splits its package)."""
EXTRA_HINT = "pip install 'jaxmarl-suite[mujoco]'"


def require_mujoco() -> None:
    """Raise a one-line ImportError naming the extra unless MuJoCo, MJX and Gymnasium-Robotics import."""
    missing = [
        name
        for name in ("mujoco", "mujoco.mjx", "gymnasium_robotics")
        if importlib.util.find_spec(name.split(".")[0]) is None
        or (name == "mujoco.mjx" and importlib.util.find_spec("mujoco.mjx") is None)
    ]
    if missing:
        raise ImportError(
            f"MaMuJoCo envs need {', '.join(missing)}, which this install lacks: {EXTRA_HINT} "
            f"(mujoco and mujoco-mjx {MUJOCO_VERSION}, gymnasium-robotics 1.4.2)"
        )


__all__ = ["EXTRA_HINT", "MUJOCO_VERSION", "SCENARIOS", "MaMuJoCo", "MaMuJoCoParams", "MaMuJoCoState", "require_mujoco"]
