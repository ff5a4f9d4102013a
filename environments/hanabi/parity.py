"""Loading a game of DeepMind's Hanabi Learning Environment (HLE, ``hanabi_learning_environment``) into ours.

HLE deals by chance moves drawn from its own generator; ours deals from a shuffled deck. A game played in
HLE is replayed here by reading its deal moves, in order, into our deck (``deck_from_hle``) and converting
its moves to our actions, which are HLE's move ids (``move_to_action``). The reference package is only
needed by the caller: this module imports nothing from it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.core.types import TimeStep

from .hanabi import Hanabi, HanabiState

DEAL = 5
"""``pyhanabi.HanabiMoveType.DEAL``."""


def hle_config(env: Hanabi, seed: int = 0) -> dict[str, int]:
    """The ``pyhanabi.HanabiGame`` parameters of ``env``'s game (HLE's observation type: card knowledge)."""
    return {"players": env.num_players, "colors": env.num_colors, "ranks": env.num_ranks,
            "hand_size": env.hand_size, "max_information_tokens": env.max_info_tokens,
            "max_life_tokens": env.max_life_tokens, "seed": seed, "random_start_player": False,
            "observation_type": 1}


def deck_from_hle(hle_state: Any, env: Hanabi) -> np.ndarray:
    """``int32[D]``: the cards HLE dealt in ``hle_state``'s history, in order, then the cards it has not
    dealt yet (in a fixed order: they are never seen)."""
    dealt = [int(item.move().color()) * env.num_ranks + int(item.move().rank())
             for item in hle_state.move_history() if int(item.move().type()) == DEAL]
    left = Counter({card: int(n) for card, n in enumerate(env.copies)})
    left.subtract(dealt)
    if any(n < 0 for n in left.values()):
        raise ValueError("HLE's history deals more copies of a card than the deck holds: not this env's game")
    rest = [card for card in sorted(left) for _ in range(left[card])]
    return np.asarray(dealt + rest, np.int32)


def state_from_hle(hle_state: Any, env: Hanabi) -> tuple[HanabiState, TimeStep]:
    """Our single-env state and first TimeStep at the start of the game ``hle_state`` belongs to (its deal
    read from HLE's history; HLE's game must start with player 0 and have ``env``'s configuration, see
    ``hle_config``). Only the cards HLE has dealt by ``hle_state`` are HLE's: pass the state at the end of
    the stretch to replay (the tests pass the final state). Step it with ``move_to_action`` of HLE's moves
    to follow the game."""
    if hle_state.num_players() != env.num_players:
        raise ValueError(f"HLE's game has {hle_state.num_players()} players, the env {env.num_players}")
    deck = jnp.asarray(deck_from_hle(hle_state, env))[:, None]
    state, timestep = env.deal(deck, env.default_params)
    return jax.tree.map(lambda x: x[..., 0], (state, timestep))


def move_to_action(move: Any, hle_game: Any) -> int:
    """HLE move -> our action: its uid (``HanabiGame.get_move_uid``)."""
    return int(hle_game.get_move_uid(move))


def action_to_move(action: int, hle_game: Any, env: Hanabi) -> Any:
    """Our action -> HLE move (``HanabiGame.get_move``); the no-op has none."""
    if action == env.noop:
        raise ValueError("the no-op is ours alone: HLE has no move for it")
    return hle_game.get_move(int(action))
