"""Iterated two-player matrix games with memory-one observations (see README.md)."""

from .matrix import GAMES, IteratedMatrixGame, MatrixParams, MatrixState

__all__ = ["GAMES", "IteratedMatrixGame", "MatrixParams", "MatrixState"]
