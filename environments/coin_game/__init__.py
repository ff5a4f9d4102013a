"""Coin Game: two players collect red and blue coins on a 3x3 torus (see README.md)."""

from .coin_game import CoinGame, CoinGameParams, CoinGameState

__all__ = ["CoinGame", "CoinGameParams", "CoinGameState"]
