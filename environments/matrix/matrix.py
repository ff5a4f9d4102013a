"""Iterated two-player matrix games: the Prisoner's Dilemma, Stag Hunt, Chicken and Matching Pennies.

Each step both players pick one of two actions at once and receive the payoff the matrix gives that joint
action. They observe only the previous joint action (memory one), from their own side, so one network can
play either seat. Episodes are ``max_steps`` rounds long and never terminate early.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.env import BatchNativeEnv
from jaxmarl_suite.core.spaces import Box, Discrete
from jaxmarl_suite.core.types import EnvParams, TimeStep
from jaxmarl_suite.errors import require

Array = jax.Array

GAMES: dict[str, tuple[tuple[tuple[float, float], tuple[float, float]], ...]] = {
    # Row player's payoff for (own action, other's action); action 0 cooperates (C, stag, swerve, heads).
    "prisoners_dilemma": (((3.0, 0.0), (5.0, 1.0)), ((3.0, 0.0), (5.0, 1.0))),  # R 3, S 0, T 5, P 1
    "stag_hunt": (((4.0, 0.0), (3.0, 2.0)), ((4.0, 0.0), (3.0, 2.0))),  # stag pays only together
    "chicken": (((3.0, 1.0), (4.0, 0.0)), ((3.0, 1.0), (4.0, 0.0))),  # both going straight is worst
    "matching_pennies": (((1.0, -1.0), (-1.0, 1.0)), ((-1.0, 1.0), (1.0, -1.0))),  # player 0 matches
}
"""Each game's payoffs ``[player][own action][other's action]``."""

NUM_OUTCOMES = 5
"""Observation size: the episode's start, then the four joint actions (own, other's): CC, CD, DC, DD."""


@struct.dataclass
class MatrixParams(EnvParams):
    """The payoff matrices and the episode length, traceable: vmap over payoffs for a family of games."""

    payoffs: Any = None
    """``float32[2, 2, 2]``: player, own action, other's action."""
    max_steps: int = 100
    """Rounds per episode; the episode is truncated after the last."""


@struct.dataclass
class MatrixState:
    """Batch-last state of ``B`` games."""

    step: Array
    """``int32[B]``: rounds played."""
    last: Array
    """``int32[2, B]``: the previous joint action as player 0 saw it, ``[own, other]``; -1 at the start."""


class IteratedMatrixGame(BatchNativeEnv):
    """Two players repeat a 2x2 matrix game; ``game`` picks the default payoffs (``GAMES``), ``payoffs``
    overrides them (``[player][own][other]``)."""

    render_fps = 2
    social_measures = True
    episodes_end_together = True
    all_actions_legal = True
    random_reset = False

    def __init__(self, game: str = "prisoners_dilemma", payoffs: Any = None, max_steps: int = 100) -> None:
        require(game in GAMES, "game", f"must be one of {sorted(GAMES)}, got {game!r}")
        table = np.asarray(GAMES[game] if payoffs is None else payoffs, np.float32)
        require(table.shape == (2, 2, 2) and bool(np.isfinite(table).all()), "payoffs",
                f"must be finite numbers [player][own action][other's action], shape (2, 2, 2), got {table}")
        require(isinstance(max_steps, int) and not isinstance(max_steps, bool) and max_steps >= 1,
                "max_steps", f"must be an integer >= 1, got {max_steps!r}")
        self.game = game
        self.groups = {"agents": ("agent_0", "agent_1")}
        self._params = MatrixParams(payoffs=jnp.asarray(table), max_steps=max_steps)

    @property
    def default_params(self) -> MatrixParams:
        """The game's payoffs and ``max_steps``."""
        return self._params

    def observation_space(self, group: str) -> Box:
        """One-hot of the previous round from the agent's side: start, CC, CD, DC, DD (own action first)."""
        return Box(0.0, 1.0, (NUM_OUTCOMES,))

    def action_space(self, group: str) -> Discrete:
        """0 cooperates (C, stag, swerve, heads), 1 defects (D, hare, straight, tails)."""
        return Discrete(2)

    def _timestep(self, state: MatrixState, reward: Array, params: MatrixParams) -> TimeStep:
        own, other = state.last[0], state.last[1]
        seen = jnp.stack([jnp.where(own < 0, 0, 1 + 2 * own + other),       # player 0: (own, other)
                          jnp.where(own < 0, 0, 1 + 2 * other + own)])      # player 1 sees it mirrored
        obs = jax.nn.one_hot(seen, NUM_OUTCOMES, axis=1, dtype=jnp.float32)  # [2, 5, B]
        num_envs = state.step.shape[0]
        truncated = jnp.broadcast_to((state.step >= params.max_steps)[None], (2, num_envs))
        return TimeStep(obs={"agents": obs}, reward={"agents": reward},
                        terminated={"agents": jnp.zeros((2, num_envs), bool)},
                        truncated={"agents": truncated},
                        action_mask={"agents": jnp.ones((2, 2, num_envs), bool)}, info={})

    def reset_batch(self, keys: Array, params: MatrixParams) -> tuple[MatrixState, TimeStep]:
        """Every game starts before its first round (the start is the same for every key)."""
        num_envs = keys.shape[0]
        state = MatrixState(step=jnp.zeros((num_envs,), jnp.int32),
                            last=jnp.full((2, num_envs), -1, jnp.int32))
        return state, self._timestep(state, jnp.zeros((2, num_envs), jnp.float32), params)

    def step_batch(self, keys: Array, state: MatrixState, actions: dict[str, Array],
                   params: MatrixParams) -> tuple[MatrixState, TimeStep]:
        """One round: both actions at once, each player paid ``payoffs[player, own, other]``."""
        act = actions["agents"].astype(jnp.int32)  # [2, B]
        payoffs = jnp.asarray(params.payoffs, jnp.float32)
        reward = jnp.stack([payoffs[0, act[0], act[1]], payoffs[1, act[1], act[0]]])
        state = MatrixState(step=state.step + 1, last=act)
        return state, self._timestep(state, reward, params)

    def render(self, state: MatrixState, params: MatrixParams | None = None) -> Array:
        """The 2x2 table of joint actions (player 0's action picks the row), the last round's cell lit."""
        cell = 32
        row = jnp.arange(2 * cell) // cell
        rows, cols = jnp.meshgrid(row, row, indexing="ij")
        shade = jnp.where((rows + cols) % 2 == 0, 200, 150).astype(jnp.uint8)
        image = jnp.stack([shade, shade, shade], -1)
        lit = (rows == state.last[0]) & (cols == state.last[1])
        orange = jnp.array([240, 140, 30], jnp.uint8)
        image = jnp.where(lit[..., None], orange, image)
        border = (jnp.arange(2 * cell) % cell == 0)
        lines = border[:, None] | border[None, :]
        return jnp.where(lines[..., None], jnp.uint8(40), image)
