"""STORM: matrix games played through a grid of coins (JaxMARL's ``storm`` family; see README.md)."""

from .storm_2p import Storm2p, Storm2pParams, Storm2pState

__all__ = ["Storm2p", "Storm2pParams", "Storm2pState"]
