"""Hanabi: cooperative fireworks with hidden hands, move for move as DeepMind's Hanabi Learning Environment.

Written once for a batch of envs, the env batch last on every state array. Rules (HLE's full game by
default; its smaller configurations are constructor arguments):

- Each colour has ranks 1..R with 3 copies of the lowest, 1 of the highest and 2 of the others. Hands hold
  5 cards for 2-3 players and 4 for 4-5; players see every hand but their own.
- On their turn a player plays a card (onto its colour's firework if it is the next rank, else it is
  discarded and a life token is lost), discards one (illegal with every information token in the box;
  regains a token), or spends a token to hint another player a colour or a rank, touching every card of
  it (at least one). Completing a firework returns a token when one is missing.
- A played or discarded card leaves the hand, the cards after it move one place left, and the drawn card
  takes the last place.
- The game ends when the last life token is lost, when every firework is complete, or when every player
  has had one more turn after the deck ran out. The score is the fireworks' sum, 0 once the lives are gone.

One group, ``agents``; every player acts on every step, but only the player whose turn it is has legal
moves other than the no-op (the last action). Every player receives the team's reward: the change in
score, so losing the last life costs every point scored so far (HLE's ``rl_env``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.env import BatchNativeEnv, per_env
from jaxmarl_suite.core.spaces import Box, Discrete, Space
from jaxmarl_suite.core.types import EnvParams, TimeStep

from .rendering import render_table

Array = jax.Array

PLAY, DISCARD, REVEAL_COLOR, REVEAL_RANK = range(4)
"""Move kinds in the order of the last-action section of HLE's encoding."""
NO_MOVE = -1


def copies_of_rank(rank: int, num_ranks: int) -> int:
    """Copies of each card of ``rank`` (0-based) in a colour: 3 of the lowest, 1 of the highest, else 2."""
    if rank == 0:
        return 3
    return 1 if rank == num_ranks - 1 else 2


@struct.dataclass
class HanabiParams(EnvParams):
    """Traceable Hanabi parameters. The game ends by its rules, well before ``max_steps``."""

    max_steps: int = 500
    """A cap legal play does not reach with up to a few hundred information tokens (a full game has at most
    about 120 moves); it truncates an episode only when illegal actions keep passing the turn."""


@struct.dataclass
class HanabiState:
    """One game per env, batch last. Cards are ``color * num_ranks + rank``; an empty hand slot is -1."""

    deck: Array
    """``int32[D, B]`` every card in dealing order (the first ``P * hand_size`` were dealt at the start)."""
    drawn: Array
    """``int32[B]`` cards dealt so far."""
    hands: Array
    """``int32[P, hand_size, B]`` each player's cards, oldest first."""
    color_plausible: Array
    """``bool[P, hand_size, C, B]`` colours each card may still have, from the hints its holder got."""
    rank_plausible: Array
    """``bool[P, hand_size, R, B]`` likewise for ranks."""
    color_hint: Array
    """``int32[P, hand_size, B]`` the colour a hint revealed, or -1."""
    rank_hint: Array
    """``int32[P, hand_size, B]`` the rank a hint revealed, or -1."""
    fireworks: Array
    """``int32[C, B]`` cards played per colour."""
    discards: Array
    """``int32[C * R, B]`` discarded (or misplayed) copies of each card."""
    info_tokens: Array
    life_tokens: Array
    current_player: Array
    turns_to_play: Array
    """``int32[B]`` turns left once the deck is empty (starts at ``P``, counts down from then on)."""
    last_player: Array
    """``int32[B]`` who made the last move, or -1 before the first; the other ``last_*`` fields describe
    that move as HLE's history item does."""
    last_kind: Array
    last_target: Array
    """``int32[B]`` the hinted player (absolute)."""
    last_value: Array
    """``int32[B]`` the hinted colour or rank."""
    last_reveal: Array
    """``int32[B]`` bitmask of the target's cards the hint touched."""
    last_position: Array
    last_card: Array
    last_scored: Array
    last_info_token: Array
    done: Array
    """``bool[B]`` the game has ended."""
    time: Array


class Hanabi(BatchNativeEnv):
    """Hanabi for 2 to 5 players. Actions are HLE's move ids (``move_to_uid``: discards, plays, colour
    hints by target offset, rank hints by target offset) followed by the no-op.

    Observations are HLE's canonical vectorised encoding, ``float32[obs_size]`` per player (658 for the
    2-player full game), or with ``observation="v0_belief"`` JaxMARL's variant, whose card-knowledge
    section weights each plausible card by the copies not yet discarded or played.
    """

    OBSERVATIONS = ("canonical", "v0_belief")
    render_fps = 2

    def __init__(self, num_agents: int = 2, num_colors: int = 5, num_ranks: int = 5,
                 hand_size: int | None = None, max_info_tokens: int = 8, max_life_tokens: int = 3,
                 observation: str = "canonical") -> None:
        def positive_int(name: str, value: Any, low: int, high: int | None = None) -> int:
            if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < low or (
                    high is not None and value > high):
                bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
                raise ValueError(f"Hanabi {name} must be an int {bound}, got {value!r}")
            return int(value)

        self.num_players = positive_int("num_agents", num_agents, 2, 5)
        self.num_colors = positive_int("num_colors", num_colors, 1, 5)
        self.num_ranks = positive_int("num_ranks", num_ranks, 1, 5)
        default_hand = 5 if self.num_players < 4 else 4
        self.hand_size = positive_int("hand_size", default_hand if hand_size is None else hand_size, 1, 8)
        self.max_info_tokens = positive_int("max_info_tokens", max_info_tokens, 1)
        self.max_life_tokens = positive_int("max_life_tokens", max_life_tokens, 1)
        if observation not in self.OBSERVATIONS:
            raise ValueError(f"observation must be one of {self.OBSERVATIONS}, got {observation!r}")
        self.observation = observation
        copies = np.array([copies_of_rank(r, self.num_ranks) for r in range(self.num_ranks)], np.int32)
        self.copies = np.tile(copies, self.num_colors)
        """``int32[C * R]`` copies of each card in the deck."""
        self.deck_size = int(self.copies.sum())
        if self.hand_size * self.num_players > self.deck_size:
            raise ValueError(f"{self.num_players} hands of {self.hand_size} need more than the deck's "
                             f"{self.deck_size} cards")
        self.num_cards = self.num_colors * self.num_ranks
        self.num_moves = 2 * self.hand_size + (self.num_players - 1) * (self.num_colors + self.num_ranks)
        """HLE's ``max_moves``; the no-op is action ``num_moves``."""
        self.noop = self.num_moves
        self.groups = {"agents": tuple(f"agent_{i}" for i in range(self.num_players))}
        self.reference = "hanabi_learning_environment" if self._is_full_game() else None
        self._params = HanabiParams()
        self.section_sizes = {
            "hands": (self.num_players - 1) * self.hand_size * self.num_cards + self.num_players,
            "board": (self.deck_size - self.num_players * self.hand_size) + self.num_cards
                     + self.max_info_tokens + self.max_life_tokens,
            "discards": self.deck_size,
            "last_action": 2 * self.num_players + 4 + self.num_colors + self.num_ranks + 2 * self.hand_size
                           + self.num_cards + 2,
            "card_knowledge": self.num_players * self.hand_size
                              * (self.num_cards + self.num_colors + self.num_ranks),
        }
        """Lengths of the encoding's sections, in order (README.md describes each field)."""
        self.obs_size = sum(self.section_sizes.values())

    def _is_full_game(self) -> bool:
        return (self.num_colors, self.num_ranks, self.max_info_tokens, self.max_life_tokens) == (5, 5, 8, 3)

    @property
    def default_params(self) -> HanabiParams:
        """The one default: ``max_steps`` 500."""
        return self._params

    def observation_space(self, group: str) -> Space:
        """``float32[obs_size]``: bits, or beliefs in [0, 1] with ``observation="v0_belief"``."""
        return Box(0.0, 1.0, (self.obs_size,), np.float32)

    def action_space(self, group: str) -> Space:
        """HLE's move ids, then the no-op (``num_moves + 1`` actions)."""
        return Discrete(self.num_moves + 1)

    # ----------------------------------------------------------------------------------------- moves
    def decode(self, action: Array) -> tuple[Array, Array, Array, Array]:
        """HLE move id -> ``(kind, card index, target offset, colour or rank)``; kind is -1 for the no-op."""
        hand, colors, ranks = self.hand_size, self.num_colors, self.num_ranks
        color_moves = (self.num_players - 1) * colors
        hint = action - 2 * hand
        rank_hint = hint - color_moves
        kind = jnp.select(
            [action < hand, action < 2 * hand, hint < color_moves, action < self.num_moves],
            [DISCARD, PLAY, REVEAL_COLOR, REVEAL_RANK], NO_MOVE)
        card_index = jnp.where(kind == DISCARD, action, action - hand)
        offset = jnp.where(kind == REVEAL_COLOR, 1 + hint // colors, 1 + rank_hint // ranks)
        value = jnp.where(kind == REVEAL_COLOR, hint % colors, rank_hint % ranks)
        return kind, card_index, offset, value

    # ------------------------------------------------------------------------------------------ reset
    def reset_batch(self, keys: Array, params: EnvParams) -> tuple[HanabiState, TimeStep]:
        """Shuffle every env's deck and deal ``hand_size`` cards to each player, player 0 first."""
        return self.deal(self.shuffle(keys), params)

    def shuffle(self, keys: Array) -> Array:
        """``int32[D, B]``: a uniformly random deck per env. Position ``i`` gets the card of sorted rank
        ``r_i``, the number of the env's ``D`` random draws below draw ``i`` (ties broken by position):
        ranks of i.i.d. draws are a uniform permutation. Counting vectorises across envs, where
        ``jax.random.permutation``'s sort took half of a step at batch 4,096 on the CPU."""
        # 32 random bits per card: a tie (broken by position) is ~500x rarer than with float32 uniforms
        draws = per_env(keys, lambda key: jax.random.bits(key, (self.deck_size,), jnp.uint32))  # [D, B]
        position = np.arange(self.deck_size)[:, None]
        rank = jnp.zeros(draws.shape, jnp.int32)
        for j in range(self.deck_size):  # D elementwise terms XLA fuses into one pass over [D, B]
            other = draws[j][None]
            rank = rank + ((other < draws) | ((other == draws) & jnp.asarray(j < position))).astype(jnp.int32)
        first_of_next = np.cumsum(self.copies)[:-1]  # sorted rank at which each card after the first starts
        return (rank[None] >= jnp.asarray(first_of_next)[:, None, None]).sum(0).astype(jnp.int32)

    def deal(self, deck: Array, params: EnvParams) -> tuple[HanabiState, TimeStep]:
        """The start of the games whose cards come in the order ``deck`` (``int32[D, B]``): player 0 gets
        the first ``hand_size``, player 1 the next, and so on; player 0 moves first."""
        assert isinstance(params, HanabiParams)
        num_envs = deck.shape[-1]
        players, hand = self.num_players, self.hand_size
        hands = deck[: players * hand].reshape(players, hand, num_envs)
        zeros = jnp.zeros((num_envs,), jnp.int32)
        none = zeros - 1
        state = HanabiState(
            deck=deck.astype(jnp.int32), drawn=zeros + players * hand, hands=hands.astype(jnp.int32),
            color_plausible=jnp.ones((players, hand, self.num_colors, num_envs), bool),
            rank_plausible=jnp.ones((players, hand, self.num_ranks, num_envs), bool),
            color_hint=jnp.full((players, hand, num_envs), -1, jnp.int32),
            rank_hint=jnp.full((players, hand, num_envs), -1, jnp.int32),
            fireworks=jnp.zeros((self.num_colors, num_envs), jnp.int32),
            discards=jnp.zeros((self.num_cards, num_envs), jnp.int32),
            info_tokens=zeros + self.max_info_tokens, life_tokens=zeros + self.max_life_tokens,
            current_player=zeros, turns_to_play=zeros + players,
            last_player=none, last_kind=none, last_target=none, last_value=none, last_reveal=zeros,
            last_position=none, last_card=none, last_scored=zeros.astype(bool),
            last_info_token=zeros.astype(bool), done=zeros.astype(bool), time=zeros,
        )
        reward = jnp.zeros((players, num_envs), jnp.float32)
        return state, self._timestep(state, reward, params)

    # ------------------------------------------------------------------------------------------- step
    def step_batch(self, keys: Array, state: HanabiState, actions: dict[str, Array],
                   params: EnvParams) -> tuple[HanabiState, TimeStep]:
        """The current player's move; every other player's action is ignored (only the no-op is legal).
        An illegal move by the current player, or any move after the game ended, changes nothing but the
        turn (and, after the end, not even that); ``info["illegal_move"]`` marks it."""
        assert isinstance(params, HanabiParams)
        players, hand, ranks = self.num_players, self.hand_size, self.num_ranks
        is_current = jnp.arange(players)[:, None] == state.current_player[None]  # [P, B]
        action = jnp.where(is_current, actions["agents"].astype(jnp.int32), 0).sum(0)
        legal_now = self.legal_moves(state)  # [P, A, B]
        legal = (jnp.where(is_current[:, None], legal_now, False).any(0)
                 & (jnp.arange(self.num_moves + 1)[:, None] == action[None])).any(0)
        active = ~state.done
        moves = active & legal
        kind, card_index, offset, value = self.decode(action)
        playing, discarding = moves & (kind == PLAY), moves & (kind == DISCARD)
        hinting_color, hinting_rank = moves & (kind == REVEAL_COLOR), moves & (kind == REVEAL_RANK)
        removing = playing | discarding

        own = jnp.where(is_current[:, None], state.hands, 0).sum(0)  # [hand, B]
        at_index = jnp.arange(hand)[:, None] == card_index[None]
        card = jnp.where(at_index, own, 0).sum(0)
        color, rank = card // ranks, card % ranks
        color_onehot = jnp.arange(self.num_colors)[:, None] == color[None]
        height = jnp.where(color_onehot, state.fireworks, 0).sum(0)
        scored = playing & (height == rank)
        completed = scored & (rank == ranks - 1)
        token_back = (completed | discarding) & (state.info_tokens < self.max_info_tokens)
        lost = playing & ~scored
        fireworks = state.fireworks + (color_onehot & scored[None])
        card_onehot = jnp.arange(self.num_cards)[:, None] == card[None]
        discards = state.discards + (card_onehot & (discarding | lost)[None])
        info = state.info_tokens + token_back - (hinting_color | hinting_rank)
        lives = state.life_tokens - lost

        # hints: every card of the target that matches is revealed, every other one is ruled out
        target = (state.current_player + offset) % players
        is_target = (jnp.arange(players)[:, None] == target[None])[:, None]  # [P, 1, B]
        valid = state.hands >= 0
        hinted_color = is_target & hinting_color[None, None]
        hinted_rank = is_target & hinting_rank[None, None]
        color_match = valid & (state.hands // ranks == value[None, None])
        rank_match = valid & (state.hands % ranks == value[None, None])
        reveal = jnp.where(hinted_color, color_match, rank_match) & (hinted_color | hinted_rank)
        reveal_mask = (reveal * (1 << jnp.arange(hand))[None, :, None]).sum((0, 1))
        is_value_c = (jnp.arange(self.num_colors) == value[:, None]).T[None, None]  # [1, 1, C, B]
        is_value_r = (jnp.arange(self.num_ranks) == value[:, None]).T[None, None]
        color_plausible = jnp.where((hinted_color & valid)[:, :, None],
                                    jnp.where(color_match[:, :, None], is_value_c,
                                              state.color_plausible & ~is_value_c),
                                    state.color_plausible)
        rank_plausible = jnp.where((hinted_rank & valid)[:, :, None],
                                   jnp.where(rank_match[:, :, None], is_value_r,
                                             state.rank_plausible & ~is_value_r),
                                   state.rank_plausible)
        color_hint = jnp.where(hinted_color & color_match, value[None, None], state.color_hint)
        rank_hint = jnp.where(hinted_rank & rank_match, value[None, None], state.rank_hint)

        # the played or discarded card leaves; later cards move left; the drawn card goes last
        deck_left = state.drawn < self.deck_size
        drawing = removing & deck_left
        new_card = jnp.where(drawing, jnp.where(
            jnp.arange(self.deck_size)[:, None] == state.drawn[None], state.deck, 0).sum(0), -1)
        shifting = (is_current & removing[None])[:, None]  # [P, 1, B]
        keep = jnp.arange(hand)[:, None] < card_index[None]  # [hand, B]

        def remove(values: Array, fresh: Any) -> Array:
            """Shift the cards (axis 1) after ``card_index`` left and put ``fresh`` last, for the mover."""
            extra = values.ndim - 3
            later = jnp.concatenate([values[:, 1:], jnp.broadcast_to(
                jnp.asarray(fresh, values.dtype), values[:, :1].shape)], axis=1)
            kept = keep.reshape(1, hand, *([1] * extra), -1)
            moved = jnp.where(kept, values, later)
            return jnp.where(shifting.reshape(players, 1, *([1] * extra), -1), moved, values)

        hands = remove(state.hands, new_card[None, None])
        color_plausible = remove(color_plausible, True)
        rank_plausible = remove(rank_plausible, True)
        color_hint = remove(color_hint, -1)
        rank_hint = remove(rank_hint, -1)

        turns_to_play = state.turns_to_play - (active & ~deck_left)
        score_before = self.score(state.fireworks, state.life_tokens)
        score_after = self.score(fireworks, lives)
        done = state.done | (lives < 1) | (fireworks.sum(0) == self.num_cards) | (turns_to_play <= 0)

        def last(new: Array, old: Array) -> Array:
            return jnp.where(moves, new, old)

        new_state = HanabiState(
            deck=state.deck, drawn=state.drawn + drawing, hands=hands, color_plausible=color_plausible,
            rank_plausible=rank_plausible, color_hint=color_hint, rank_hint=rank_hint,
            fireworks=fireworks, discards=discards, info_tokens=info, life_tokens=lives,
            current_player=jnp.where(active, (state.current_player + 1) % players, state.current_player),
            turns_to_play=turns_to_play,
            last_player=last(state.current_player, state.last_player),
            last_kind=last(kind, state.last_kind),
            last_target=last(jnp.where(hinting_color | hinting_rank, target, -1), state.last_target),
            last_value=last(jnp.where(hinting_color | hinting_rank, value, -1), state.last_value),
            last_reveal=last(reveal_mask, state.last_reveal),
            last_position=last(jnp.where(removing, card_index, -1), state.last_position),
            last_card=last(jnp.where(removing, card, -1), state.last_card),
            last_scored=last(scored, state.last_scored),
            last_info_token=last(token_back, state.last_info_token),
            done=done, time=state.time + 1,
        )
        gain = (score_after - score_before).astype(jnp.float32)
        reward = jnp.broadcast_to(gain[None], (players, action.shape[0]))
        timestep = self._timestep(new_state, reward, params)
        info = {**timestep.info, "illegal_move": jnp.broadcast_to((active & ~legal)[None], reward.shape)}
        return new_state, timestep._replace(info=info)

    def score(self, fireworks: Array, life_tokens: Array) -> Array:
        """``int32[B]``: the fireworks' sum, 0 once every life token is lost (HLE's ``score``)."""
        return jnp.where(life_tokens > 0, fireworks.sum(0), 0)

    # ---------------------------------------------------------------------------------- legal moves
    def legal_moves(self, state: HanabiState) -> Array:
        """``bool[P, num_moves + 1, B]``: HLE's legal moves for the player whose turn it is, and only the
        no-op for everyone else (and for everyone once the game has ended)."""
        players, ranks = self.num_players, self.num_ranks
        num_envs = state.done.shape[0]
        valid = state.hands >= 0  # [P, hand, B]
        has_color = ((state.hands // ranks)[:, :, None] == jnp.arange(self.num_colors)[None, None, :, None]) \
            & valid[:, :, None]
        has_rank = ((state.hands % ranks)[:, :, None] == jnp.arange(ranks)[None, None, :, None]) \
            & valid[:, :, None]
        has_color, has_rank = has_color.any(1), has_rank.any(1)  # [P, C, B], [P, R, B]
        can_hint = state.info_tokens > 0
        can_discard = state.info_tokens < self.max_info_tokens
        rows = []
        for player in range(players):
            others = [(player + offset) % players for offset in range(1, players)]
            rows.append(jnp.concatenate([
                valid[player] & can_discard[None],
                valid[player],
                *[has_color[other] & can_hint[None] for other in others],
                *[has_rank[other] & can_hint[None] for other in others],
                jnp.zeros((1, num_envs), bool),
            ]))
        moving = (jnp.arange(players)[:, None] == state.current_player[None]) & ~state.done[None]
        noop_only = jnp.zeros((self.num_moves + 1,), bool).at[self.noop].set(True)[None, :, None]
        return jnp.where(moving[:, None], jnp.stack(rows), noop_only)

    # ------------------------------------------------------------------------------------ observation
    def encode(self, state: HanabiState) -> Array:
        """``float32[P, obs_size, B]``: every player's observation, HLE's canonical encoding (or the V0
        belief variant), players seen in turn order starting from the observer."""
        players, hand, ranks, colors = self.num_players, self.hand_size, self.num_ranks, self.num_colors
        num_envs = state.done.shape[0]
        cards = jnp.arange(self.num_cards)[None, None, :, None]
        valid = state.hands >= 0  # [P, hand, B]
        card_bits = (state.hands[:, :, None] == cards).reshape(players, hand * self.num_cards, num_envs)
        missing = valid.sum(1) < hand  # [P, B]

        def thermometer(count: Array, length: int) -> Array:
            return jnp.arange(length)[:, None] < count[None]

        fireworks = (state.fireworks[:, None] - 1 == jnp.arange(ranks)[None, :, None]).reshape(-1, num_envs)
        board = [thermometer(self.deck_size - state.drawn, self.deck_size - players * hand), fireworks,
                 thermometer(state.info_tokens, self.max_info_tokens),
                 thermometer(state.life_tokens, self.max_life_tokens)]
        discards = [thermometer(state.discards[card], int(self.copies[card]))
                    for card in range(self.num_cards)]

        moved = state.last_player >= 0
        kind = state.last_kind
        is_hint = (kind == REVEAL_COLOR) | (kind == REVEAL_RANK)
        removed = (kind == PLAY) | (kind == DISCARD)
        shared_last = [
            jnp.arange(4)[:, None] == kind[None],
            jnp.arange(colors)[:, None] == jnp.where(kind == REVEAL_COLOR, state.last_value, -1)[None],
            jnp.arange(ranks)[:, None] == jnp.where(kind == REVEAL_RANK, state.last_value, -1)[None],
            ((state.last_reveal[None] >> jnp.arange(hand)[:, None]) & 1).astype(bool) & is_hint[None],
            jnp.arange(hand)[:, None] == jnp.where(removed, state.last_position, -1)[None],
            jnp.arange(self.num_cards)[:, None] == jnp.where(removed, state.last_card, -1)[None],
            (state.last_scored & (kind == PLAY))[None],
            (state.last_info_token & (kind == PLAY))[None],
        ]

        plausible = state.color_plausible[:, :, :, None] & state.rank_plausible[:, :, None, :]  # [P,h,C,R,B]
        plausible = plausible.reshape(players, hand, self.num_cards, num_envs) & valid[:, :, None]
        if self.observation == "v0_belief":
            played = state.fireworks[:, None] > jnp.arange(ranks)[None, :, None]  # [C, R, B]
            left = jnp.asarray(self.copies)[:, None] - state.discards - played.reshape(-1, num_envs)
            weights = plausible * left[None, None]
            total = weights.sum(2, keepdims=True)
            knowledge = jnp.where(total > 0, weights / jnp.maximum(total, 1), 0.0)
        else:
            knowledge = plausible.astype(jnp.float32)
        color_hinted = (state.color_hint[:, :, None] == jnp.arange(colors)[None, None, :, None])
        rank_hinted = (state.rank_hint[:, :, None] == jnp.arange(ranks)[None, None, :, None])
        color_hinted, rank_hinted = color_hinted & valid[:, :, None], rank_hinted & valid[:, :, None]
        per_card = jnp.concatenate([knowledge, color_hinted.astype(jnp.float32),
                                    rank_hinted.astype(jnp.float32)], axis=2)  # [P, hand, 35, B]
        per_player_knowledge = per_card.reshape(players, -1, num_envs)

        def bits(parts: list[Array]) -> Array:
            return jnp.concatenate([p.astype(jnp.float32) for p in parts])

        common = bits([*board, *discards])
        views = []
        for observer in range(players):
            order = [(observer + j) % players for j in range(players)]
            last_action = bits([
                (state.last_player[None] == jnp.asarray(order)[:, None]) & moved[None],
                shared_last[0],
                (state.last_target[None] == jnp.asarray(order)[:, None]) & is_hint[None],
                *shared_last[1:],
            ])
            views.append(jnp.concatenate([
                bits([*[card_bits[p] for p in order[1:]], jnp.stack([missing[p] for p in order])]),
                common, last_action, *[per_player_knowledge[p] for p in order],
            ]))
        return jnp.stack(views)

    def render(self, state: HanabiState, params: EnvParams | None = None) -> Array:
        """``uint8[H, W, 3]`` of one game as a spectator sees it: every hand face up, whose turn it is, the
        fireworks, the tokens, the discards and the deck."""
        return render_table(self, state)

    def render_view(self, state: HanabiState, observer: int | Array) -> Array:
        """The table as player ``observer`` sees it: its own cards face down, showing only what hints told
        it."""
        return render_table(self, state, observer)

    def _timestep(self, state: HanabiState, reward: Array, params: HanabiParams) -> TimeStep:
        players, num_envs = self.num_players, state.done.shape[0]
        terminated = jnp.broadcast_to(state.done[None], (players, num_envs))
        capped = (state.time >= params.max_steps) & ~state.done
        truncated = jnp.broadcast_to(capped[None], (players, num_envs))
        return TimeStep(
            obs={"agents": self.encode(state)},
            reward={"agents": reward},
            terminated={"agents": terminated},
            truncated={"agents": truncated},
            action_mask={"agents": self.legal_moves(state)},
            info={"score": jnp.broadcast_to(self.score(state.fireworks, state.life_tokens)[None],
                                            (players, num_envs)).astype(jnp.float32),
                  "illegal_move": jnp.zeros((players, num_envs), bool)},
        )
