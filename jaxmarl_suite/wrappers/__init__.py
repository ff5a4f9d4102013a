"""Wrappers: auto-reset, episode statistics, group flattening, world state and checked mode."""

from jaxmarl_suite.wrappers.auto_reset import AutoReset
from jaxmarl_suite.wrappers.base import Wrapper, episode_done
from jaxmarl_suite.wrappers.checked import (
    Checked,
    CheckedState,
    InvalidActionError,
    checked_errors,
    invalid_action_message,
)
from jaxmarl_suite.wrappers.episode_stats import EpisodeStats
from jaxmarl_suite.wrappers.flatten import FlattenGroups
from jaxmarl_suite.wrappers.world_state import WorldState

__all__ = [
    "AutoReset",
    "Checked",
    "CheckedState",
    "EpisodeStats",
    "FlattenGroups",
    "InvalidActionError",
    "WorldState",
    "Wrapper",
    "checked_errors",
    "episode_done",
    "invalid_action_message",
]
