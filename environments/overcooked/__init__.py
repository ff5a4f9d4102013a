"""Overcooked: two chefs, one kitchen, onion soup (overcooked-ai 1.1.0's rules; see README.md)."""

from .layouts import CLASSIC_GRIDS, LAYOUT_ALIASES, Layout, get_layout, layout_from_grid
from .overcooked import Overcooked, OvercookedParams, OvercookedState

__all__ = [
    "CLASSIC_GRIDS",
    "LAYOUT_ALIASES",
    "Layout",
    "Overcooked",
    "OvercookedParams",
    "OvercookedState",
    "get_layout",
    "layout_from_grid",
]
