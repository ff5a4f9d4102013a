"""Overcooked V2: chefs cook and deliver recipes of several ingredients (JaxMARL 0.2.0's ``overcooked_v2``
rules; see README.md)."""

from .layouts import GRIDS, LAYOUT_NAMES, Layout, get_layout, layout_from_grid
from .overcooked_v2 import OvercookedV2, OvercookedV2Params, OvercookedV2State

__all__ = [
    "GRIDS",
    "LAYOUT_NAMES",
    "Layout",
    "OvercookedV2",
    "OvercookedV2Params",
    "OvercookedV2State",
    "get_layout",
    "layout_from_grid",
]
