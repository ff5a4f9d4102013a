"""Unit types: the SMAC-like statistics every SMAX rule reads.

Values follow JaxMARL's SMAX (tuned for SMAX's half-second agent steps), with one change that SMAC users
expect: Protoss units have shields. A stalker's 160 and a zealot's 150 total hit points are split into
health and shields as in StarCraft II (80 + 80 and 100 + 50). Shields take damage first and regenerate
after a delay without damage (``SMAXParams.shield_regen_*``). The medivac (SMAC's MMM maps) heals
instead of attacking. Distances are in map units (a SMAC map cell); times in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np


@dataclass(frozen=True)
class UnitType:
    """Static statistics of one unit type."""

    name: str
    shorthand: str
    """One letter, as in SMAC map names (``3s5z``: 3 stalkers, 5 zealots; ``g`` is a zergling)."""
    health: float
    shield: float
    damage: float
    """Damage per shot (0 for healers)."""
    attack_range: float
    """A shot (or heal) needs the centres closer than this."""
    sight_range: float
    speed: float
    """Map units per second."""
    cooldown: float
    """Seconds between shots."""
    radius: float
    heal_rate: float = 0.0
    """Health restored per second to the targeted ally (medivac); 0 for attackers."""


UNIT_TYPES: tuple[UnitType, ...] = (
    UnitType("marine", "m", 45.0, 0.0, 9.0, 5.0, 9.0, 3.15, 0.61, 0.375),
    UnitType("marauder", "M", 125.0, 0.0, 10.0, 6.0, 10.0, 2.25, 1.07, 0.5625),
    UnitType("stalker", "s", 80.0, 80.0, 13.0, 6.0, 10.0, 4.13, 1.87, 0.625),
    UnitType("zealot", "z", 100.0, 50.0, 8.0, 2.0, 9.0, 3.15, 0.86, 0.5),
    UnitType("zergling", "g", 35.0, 0.0, 5.0, 2.0, 8.0, 4.13, 0.5, 0.375),
    UnitType("hydralisk", "h", 80.0, 0.0, 12.0, 5.0, 9.0, 3.15, 0.59, 0.625),
    UnitType("medivac", "V", 150.0, 0.0, 0.0, 4.0, 11.0, 3.5, 0.0, 0.75, heal_rate=12.6),
)
"""Every unit type, in the order of the unit-type one-hot in observations and world states."""

UNIT_INDEX: dict[str, int] = {unit.name: i for i, unit in enumerate(UNIT_TYPES)}
NUM_UNIT_TYPES = len(UNIT_TYPES)


def unit_index(name: str) -> int:
    """Index of a unit type by name; unknown names raise ValueError listing the known ones."""
    if name not in UNIT_INDEX:
        raise ValueError(f"unknown unit type {name!r}; known types: {sorted(UNIT_INDEX)}")
    return UNIT_INDEX[name]


@dataclass(frozen=True)
class UnitTable:
    """Each statistic as a float32 ``[num_unit_types]`` array (``heals`` is bool)."""

    health: np.ndarray
    shield: np.ndarray
    damage: np.ndarray
    attack_range: np.ndarray
    sight_range: np.ndarray
    speed: np.ndarray
    cooldown: np.ndarray
    radius: np.ndarray
    heal_rate: np.ndarray

    @property
    def heals(self) -> np.ndarray:
        """Which types heal allies instead of attacking enemies."""
        return self.heal_rate > 0


def unit_table(units: tuple[UnitType, ...] = UNIT_TYPES) -> UnitTable:
    """The statistics of ``units`` as arrays."""
    columns = {f.name: np.array([getattr(u, f.name) for u in units], np.float32) for f in fields(UnitTable)}
    return UnitTable(**columns)
