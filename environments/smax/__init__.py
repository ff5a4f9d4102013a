"""SMAX: StarCraft-style multi-agent micromanagement without a game engine, batch-native."""

from .heuristic import HeuristicEnv, heuristic_actions
from .scenarios import RACE_POOLS, SCENARIOS, Scenario, get_scenario, register_scenario, team
from .smax import SMAX, EnemyPolicy, SMAXParams, SMAXState
from .units import UNIT_TYPES, UnitType

__all__ = [
    "RACE_POOLS",
    "SCENARIOS",
    "SMAX",
    "UNIT_TYPES",
    "EnemyPolicy",
    "HeuristicEnv",
    "SMAXParams",
    "SMAXState",
    "Scenario",
    "UnitType",
    "get_scenario",
    "heuristic_actions",
    "register_scenario",
    "team",
]
