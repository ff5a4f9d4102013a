"""STORM: matrix games played through a grid of coins (JaxMARL's ``storm`` family; see README.md)."""

from .storm_2p import Storm2p, Storm2pParams, Storm2pState
from .storm_np import Storm, StormInTheGrid, StormParams, StormState

__all__ = ["Storm", "Storm2p", "StormInTheGrid", "Storm2pParams", "Storm2pState", "StormParams", "StormState"]
