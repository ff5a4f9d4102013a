"""The reference packages' id schemes, parsed into constructor arguments (``register_id_scheme``).

Pure Python: the registry imports this module when an id first matches, and it must not import JAX or a
family.
"""

from __future__ import annotations

import re
from typing import Any

LBFORAGING_ID = (r"(?:lbforaging:)?Foraging(?P<grid>-grid)?(?:-(?P<sight>\d+)s)?-(?P<rows>\d+)x(?P<cols>\d+)"
                 r"-(?P<players>\d+)p-(?P<foods>\d+)f(?P<coop>-coop)?-v3")
"""``Foraging{-2s}-{s}x{s}-{p}p-{f}f{-coop}-v3`` as lbforaging 2.0.0 registers 1,920 of them (sizes 5-19,
2-9 players, 1-4 foods), any size and count accepted; ``Foraging-grid{-Ks}-...`` for its grid observation
(lbforaging defines those ids but does not register them); EPyMARL's ``lbforaging:`` prefix."""

RWARE_ID = (r"(?:rware:)?rware-(?P<size>tiny|small|medium|large)-(?P<agents>\d+)ag"
            r"(?P<difficulty>-easy|-hard)?-v2")
"""``rware-{size}-{N}ag{-easy|-hard}-v2`` as rware 2.0.0 registers them (228 ids: 1-19 agents)."""

RWARE_SIZES = {"tiny": (1, 3), "small": (2, 3), "medium": (2, 5), "large": (3, 5)}
"""``(shelf_rows, shelf_columns)`` of each named warehouse."""
RWARE_DIFFICULTY = {"-easy": 2.0, "": 1.0, "-hard": 0.5}
"""Request-queue length per agent of each difficulty (the queue holds ``int(agents * factor)`` shelves)."""


def lbforaging_kwargs(match: re.Match[str]) -> dict[str, Any]:
    """Our ``LevelBasedForaging`` arguments for a matched lbforaging id: levels 1-2, the food level set at
    each reset, 50 steps, sight 2 with ``-2s`` (``K`` with ``-Ks``) else the whole field."""
    rows, cols = int(match["rows"]), int(match["cols"])
    return {"num_agents": int(match["players"]), "field_size": (rows, cols),
            "max_num_food": int(match["foods"]),
            "sight": int(match["sight"]) if match["sight"] else max(rows, cols),
            "force_coop": match["coop"] is not None, "max_steps": 50, "min_player_level": 1,
            "max_player_level": 2, "min_food_level": 1, "max_food_level": None, "penalty": 0.0,
            "observation_type": "grid" if match["grid"] else "vector"}


def rware_kwargs(match: re.Match[str]) -> dict[str, Any]:
    """Our ``RobotWarehouse`` arguments for a matched rware id: columns of 8 shelves, sensor range 1, no
    messages, individual rewards, 500 steps."""
    shelf_rows, shelf_columns = RWARE_SIZES[match["size"]]
    agents = int(match["agents"])
    return {"shelf_rows": shelf_rows, "shelf_columns": shelf_columns, "column_height": 8,
            "num_agents": agents,
            "msg_bits": 0, "sensor_range": 1,
            "request_queue_size": int(agents * RWARE_DIFFICULTY[match["difficulty"] or ""]),
            "max_inactivity_steps": None, "max_steps": 500, "reward_type": "individual"}
