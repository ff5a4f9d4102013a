"""Scenarios: which units fight, on what map, for how long; SMAC's maps and SMACv2-style draws.

A ``Scenario`` lists each team's unit types. ``race`` makes it procedural (SMACv2-style): every reset
draws each ally's type from the race's pool (the enemies mirror the allies) and the start positions
from "surrounded" or "reflected" layouts. Episode limits are SMAC's for its maps.
``register_scenario`` adds a user scenario and its ``SMAX_<name>`` env id in one call.
``resolve_scenario`` also takes JaxMARL's ``Scenario`` objects, so JaxMARL's SMAX configs build our maps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .units import UNIT_TYPES, unit_index

RACE_POOLS: dict[str, dict[str, float]] = {
    # SMACv2's pools and weights (colossi and banelings are not modelled, so their share is spread
    # over the rest); "mixed" draws any attacking type, as JaxMARL's SMAX does.
    "terran": {"marine": 0.45, "marauder": 0.45, "medivac": 0.1},
    "protoss": {"stalker": 0.5, "zealot": 0.5},
    "zerg": {"zergling": 0.5, "hydralisk": 0.5},
    "mixed": {u.name: 1.0 for u in UNIT_TYPES if u.heal_rate == 0.0},
}


@dataclass(frozen=True)
class Scenario:
    """One SMAX map. ``allies``/``enemies`` are unit-type names, one per unit (fixed scenarios) or
    placeholders counting the units (procedural ones, where ``race`` is set)."""

    allies: tuple[str, ...]
    enemies: tuple[str, ...]
    max_steps: int = 100
    """Episode limit in agent steps (truncation)."""
    map_width: float = 32.0
    map_height: float = 32.0
    race: str | None = None
    """Procedural unit types from ``RACE_POOLS[race]`` and SMACv2 start layouts; None: fixed."""

    def __post_init__(self) -> None:
        if not self.allies or not self.enemies:
            raise ValueError("a scenario needs at least one ally and one enemy")
        for name in (*self.allies, *self.enemies):
            unit_index(name)
        if not isinstance(self.max_steps, int) or isinstance(self.max_steps, bool) or self.max_steps < 1:
            raise ValueError(f"max_steps must be a positive int, got {self.max_steps!r}")
        if not (self.map_width > 8 and self.map_height > 8):
            raise ValueError(f"the map must be larger than 8 x 8, got {self.map_width} x {self.map_height}")
        if self.race is not None and self.race not in RACE_POOLS:
            raise ValueError(f"unknown race {self.race!r}; choose from {sorted(RACE_POOLS)}")

    @property
    def num_allies(self) -> int:
        """Units on the allied (learning) team."""
        return len(self.allies)

    @property
    def num_enemies(self) -> int:
        """Units on the enemy team."""
        return len(self.enemies)

    def unit_types(self) -> tuple[str, ...]:
        """Every unit's type, allies first."""
        return (*self.allies, *self.enemies)

    def may_heal(self, team: int) -> bool:
        """Whether ``team`` (0 allies, 1 enemies) can field a healer, which widens its target slots."""
        if self.race is not None:
            return any(UNIT_TYPES[unit_index(n)].heal_rate > 0 for n in RACE_POOLS[self.race])
        units = self.allies if team == 0 else self.enemies
        return any(UNIT_TYPES[unit_index(n)].heal_rate > 0 for n in units)


def team(spec: str) -> tuple[str, ...]:
    """Units from SMAC-style shorthand: ``"2s3z"`` -> 2 stalkers then 3 zealots (see ``units.py``)."""
    by_letter = {u.shorthand: u.name for u in UNIT_TYPES}
    parts = re.findall(r"(\d+)([A-Za-z])", spec)
    if not parts or "".join(f"{n}{c}" for n, c in parts) != spec:
        raise ValueError(f"cannot parse team {spec!r}; write counts and unit letters like '2s3z'")
    units: list[str] = []
    for count, letter in parts:
        if letter not in by_letter:
            raise ValueError(f"unknown unit letter {letter!r} in {spec!r}; known: {sorted(by_letter)}")
        units += [by_letter[letter]] * int(count)
    return tuple(units)


def _mirror(spec: str, max_steps: int) -> Scenario:
    return Scenario(team(spec), team(spec), max_steps)


def _versus(allies: str, enemies: str, max_steps: int) -> Scenario:
    return Scenario(team(allies), team(enemies), max_steps)


def _procedural(count: int, race: str = "mixed") -> Scenario:
    return Scenario(team(f"{count}m"), team(f"{count}m"), 200, race=race)


SCENARIOS: dict[str, Scenario] = {
    "3m": _mirror("3m", 60),
    "8m": _mirror("8m", 120),
    "25m": _mirror("25m", 150),
    "5m_vs_6m": _versus("5m", "6m", 70),
    "10m_vs_11m": _versus("10m", "11m", 150),
    "27m_vs_30m": _versus("27m", "30m", 180),
    "2s3z": _mirror("2s3z", 120),
    "3s5z": _mirror("3s5z", 150),
    "3s5z_vs_3s6z": _versus("3s5z", "3s6z", 170),
    "3s_vs_5z": _versus("3s", "5z", 250),
    "6h_vs_8z": _versus("6h", "8z", 150),
    "MMM": _mirror("1V2M7m", 150),
    "MMM2": _versus("1V2M7m", "1V3M8m", 180),
    "smacv2_5_units": _procedural(5),
    "smacv2_10_units": _procedural(10),
    "smacv2_20_units": _procedural(20),
}
"""Built-in scenarios; each is registered as ``SMAX_<name>``."""


class JaxMARLScenario(Protocol):
    """The fields of a JaxMARL ``Scenario`` (from ``jaxmarl.environments.smax.map_name_to_scenario``)."""

    unit_types: Any
    num_allies: int
    num_enemies: int
    smacv2_position_generation: bool
    smacv2_unit_type_generation: bool


JAXMARL_UNIT_NAMES = ("marine", "marauder", "stalker", "zealot", "zergling", "hydralisk")
"""JaxMARL's unit-type indices (its ``unit_type_names``), by index."""

JAXMARL_MAX_STEPS = 100
"""JaxMARL's SMAX episode limit, used for a JaxMARL scenario that none of ours matches."""

_JAXMARL_FIELDS = (
    "unit_types",
    "num_allies",
    "num_enemies",
    "smacv2_position_generation",
    "smacv2_unit_type_generation",
)


def is_jaxmarl_scenario(scenario: object) -> bool:
    """Whether ``scenario`` looks like a JaxMARL ``Scenario`` (it has all of that class's fields)."""
    return all(hasattr(scenario, name) for name in _JAXMARL_FIELDS)


def from_jaxmarl_scenario(scenario: JaxMARLScenario) -> tuple[str, Scenario]:
    """``(name, Scenario)`` for a JaxMARL scenario: one of ours when the units match (so the map keeps
    SMAC's episode limit), else a custom one with JaxMARL's limit of 100 steps (name ``"custom"``).

    JaxMARL's SMACv2 draws (both flags set) become our procedural ``mixed`` pool, which draws from the same
    six types. A scenario with only one of the two flags has no equivalent here and raises ValueError.
    """
    num_allies, num_enemies = int(scenario.num_allies), int(scenario.num_enemies)
    positions, types = bool(scenario.smacv2_position_generation), bool(scenario.smacv2_unit_type_generation)
    if positions != types:
        raise ValueError(
            "this JaxMARL scenario draws only its "
            + ("start positions" if positions else "unit types")
            + " SMACv2-style; SMAX's procedural scenarios draw both (race=...) and fixed ones neither"
        )
    if types:
        allies, enemies, race = team(f"{num_allies}m"), team(f"{num_enemies}m"), "mixed"
    else:
        indices = np.asarray(scenario.unit_types).astype(int).tolist()
        if len(indices) != num_allies + num_enemies:
            raise ValueError(
                f"JaxMARL scenario lists {len(indices)} unit types for {num_allies} + {num_enemies} units"
            )
        unknown = sorted({i for i in indices if not 0 <= i < len(JAXMARL_UNIT_NAMES)})
        if unknown:
            raise ValueError(
                f"JaxMARL unit-type indices {unknown} are not JaxMARL's default types "
                f"{list(enumerate(JAXMARL_UNIT_NAMES))}"
            )
        names = tuple(JAXMARL_UNIT_NAMES[i] for i in indices)
        allies, enemies, race = names[:num_allies], names[num_allies:], None
    for name, ours in SCENARIOS.items():
        if (ours.allies, ours.enemies, ours.race) == (allies, enemies, race):
            return name, ours
    return "custom", Scenario(allies, enemies, JAXMARL_MAX_STEPS, race=race)


def resolve_scenario(scenario: str | Scenario | JaxMARLScenario) -> tuple[str, Scenario]:
    """``(name, Scenario)`` from a map name, one of our ``Scenario`` objects (name ``"custom"``) or a
    JaxMARL ``Scenario`` (see ``from_jaxmarl_scenario``). Unknown names raise ValueError."""
    if isinstance(scenario, Scenario):
        return "custom", scenario
    if isinstance(scenario, str):
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown SMAX scenario {scenario!r}; known: {sorted(SCENARIOS)}")
        return scenario, SCENARIOS[scenario]
    if is_jaxmarl_scenario(scenario):
        return from_jaxmarl_scenario(scenario)
    raise TypeError(
        f"scenario must be a map name, a jaxmarl_suite Scenario or a JaxMARL Scenario, "
        f"got {type(scenario).__name__}"
    )


def get_scenario(scenario: str | Scenario | JaxMARLScenario) -> Scenario:
    """A scenario by name (or the object itself, or the equivalent of a JaxMARL ``Scenario``).
    Unknown names raise ValueError listing the known ones."""
    return resolve_scenario(scenario)[1]


def register_scenario(name: str, scenario: Scenario, overwrite: bool = False) -> str:
    """Add ``scenario`` under ``name`` and register the env id ``SMAX_<name>``; returns that id.

    Example: ``register_scenario("4m_vs_3z", Scenario(team("4m"), team("3z"), max_steps=80))``,
    then ``make("SMAX_4m_vs_3z")`` or ``make("SMAX", scenario="4m_vs_3z")``.
    """
    from jaxmarl_suite.core.registry import register

    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a Scenario, got {type(scenario).__name__}")
    if not re.fullmatch(r"[A-Za-z0-9_]+", name or ""):
        raise ValueError(f"scenario names use letters, digits and underscores, got {name!r}")
    if name in SCENARIOS and not overwrite:
        raise ValueError(f"scenario {name!r} exists; pass overwrite=True to replace it")
    env_id = f"SMAX_{name}"
    register(
        env_id,
        "jaxmarl_suite.environments.smax:SMAX",
        family="smax",
        kwargs={"scenario": name},
        description=f"SMAX {name}: {scenario.num_allies} allies vs {scenario.num_enemies} enemies.",
        overwrite=overwrite,
    )
    SCENARIOS[name] = scenario
    return env_id
