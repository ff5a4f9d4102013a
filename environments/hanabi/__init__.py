"""Hanabi for 2 to 5 players, move for move as the Hanabi Learning Environment (see README.md)."""

from .hanabi import Hanabi, HanabiParams, HanabiState

__all__ = ["Hanabi", "HanabiParams", "HanabiState"]
