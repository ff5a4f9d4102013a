"""Level-Based Foraging as ``lbforaging`` 2.0.0, batch-native (see README.md)."""

from .lbf import LBFParams, LBFState, LevelBasedForaging

__all__ = ["LBFParams", "LBFState", "LevelBasedForaging"]
