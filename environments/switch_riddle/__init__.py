"""The switch riddle: prisoners signal through one light bulb (see README.md)."""

from .switch_riddle import SwitchRiddle, SwitchRiddleParams, SwitchRiddleState

__all__ = ["SwitchRiddle", "SwitchRiddleParams", "SwitchRiddleState"]
