"""Coin Game: two players on a 3x3 torus collect red and blue coins (JaxMARL 0.2.0's ``coin_game``).

Written once for a batch of envs, the env batch last on every array. One step:

1. Both players move at once (right, left, up, down or stay), wrapping around the torus.
2. A player standing on a coin's cell after the move picks it up; both players can pick up the same coin,
   and one player can pick up both coins when they share a cell. Player ``i`` earns
   ``payoffs[i, 0]`` for the red coin, ``payoffs[i, 1]`` for the blue coin, and ``payoffs[i, 2]`` (a
   penalty) when the other player picks up player ``i``'s coin (red is player 0's, blue player 1's).
3. Every coin picked up respawns on a uniformly random cell (possibly under a player or the other coin).
4. An episode (JaxMARL's outer episode) is ``num_outer_steps`` inner episodes of ``num_inner_steps``
   steps. On an inner episode's last step both players and both coins are placed afresh, the step's
   rewards are zeroed (as in JaxMARL) and ``info["inner_episode_done"]`` is True.

Randomness follows JaxMARL key for key (``step`` and ``reset`` split and draw exactly as its
``step_env`` and ``reset`` do), so ``AutoReset`` over this env reproduces JaxMARL's auto-resetting
``step`` from the same keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core import threefry
from jaxmarl_suite.core.env import BatchNativeEnv, per_env
from jaxmarl_suite.core.spaces import Box, Discrete
from jaxmarl_suite.core.types import EnvParams, TimeStep
from jaxmarl_suite.errors import require

Array = jax.Array

GRID = 3
"""The torus is ``GRID x GRID`` cells; positions are ``(row, col)``."""
NUM_CELLS = GRID * GRID
NUM_CHANNELS = 4
"""Observation planes, from the observer's side: itself, the other player, its own coin, the other's coin."""
RIGHT, LEFT, UP, DOWN, STAY = range(5)
"""JaxMARL's action order: right adds 1 to the column, up adds 1 to the row."""
DEFAULT_PAYOFFS = ((1.0, 1.0, -2.0), (1.0, 1.0, -2.0))
"""JaxMARL's default ``payoff_matrix``: +1 for any coin, -2 when the other player takes yours."""


@struct.dataclass
class CoinGameParams(EnvParams):
    """Traceable Coin Game parameters."""

    max_steps: int = 100
    """Steps per episode (JaxMARL's outer episode: ``num_inner_steps * num_outer_steps``); truncated after."""
    num_inner_steps: int = 10
    """Steps per inner episode; positions are redrawn and rewards zeroed on each inner episode's last step."""
    payoffs: Any = None
    """``float32[2, 3]``: player ``i`` gets ``payoffs[i, 0]`` per red coin and ``payoffs[i, 1]`` per blue
    coin it picks up, and ``payoffs[i, 2]`` when the other player picks up ``i``'s coin."""
    shared_rewards: bool = False
    """Give both players the sum of the two rewards (JaxMARL's ``shared_rewards``)."""


@struct.dataclass
class CoinGameState:
    """Batch-last state of ``B`` games. Player 0 is red, player 1 blue; coin ``i`` belongs to player ``i``."""

    agent_pos: Array
    """``int32[2, 2, B]``: each player's ``(row, col)``."""
    coin_pos: Array
    """``int32[2, 2, B]``: the red and the blue coin's ``(row, col)``."""
    inner_t: Array
    """``int32[B]``: steps taken in the current inner episode (JaxMARL's ``step``)."""
    time: Array
    """``int32[B]``: steps taken in the episode; the inner episode's index (JaxMARL's ``outer_t``) is
    ``time // num_inner_steps``."""


def _wrap(coord: Array) -> Array:
    """A coordinate in ``[-1, GRID]`` brought back onto the torus (cheaper than ``%`` on CPU)."""
    return jnp.where(coord >= GRID, coord - GRID, jnp.where(coord < 0, coord + GRID, coord))


def _start_draw(key: Array) -> Array:
    """``int32[4, 2]``: both players' then both coins' positions, drawn as JaxMARL's ``reset`` draws them."""
    _, subkey = jax.random.split(key)
    return jax.random.randint(subkey, (4, 2), 0, GRID)


def _respawn_draw(key: Array) -> Array:
    """``int32[2, 2]``: where a picked-up red and blue coin reappear, drawn as JaxMARL's ``step_env`` does."""
    return jax.random.randint(key, (2, 2), 0, GRID)


def start_positions(keys: Array) -> Array:
    """``int32[4, 2, B]``: both players' then both coins' ``(row, col)`` from each env's key, drawn as
    JaxMARL's ``reset`` draws them (``key, subkey = split(key); randint(subkey, (4, 2), 0, 3)``)."""
    if not threefry.fast_path_ok(keys):
        return per_env(keys, _start_draw)
    _, subkey = threefry.split(threefry.key_pair(keys))
    return threefry.randint(subkey, 8, GRID).reshape(4, 2, -1)


def step_draws(keys: Array) -> tuple[Array, Array]:
    """``(respawn int32[2, 2, B], reset_keys)`` from each env's step key, as JaxMARL's ``step_env`` uses its
    key: ``key, subkey = split(key)``; the coins respawn at ``randint(subkey, (2, 2), 0, 3)`` and an inner
    reset draws from ``key`` (pass ``reset_keys`` to ``start_positions``)."""
    if not threefry.fast_path_ok(keys):
        split = jax.vmap(jax.random.split)(keys)
        return per_env(split[:, 1], _respawn_draw), split[:, 0]
    reset_pair, respawn_pair = threefry.split(threefry.key_pair(keys))
    respawn = threefry.randint(respawn_pair, 4, GRID).reshape(2, 2, -1)
    reset_keys = jnp.stack(reset_pair, axis=-1)
    if jnp.issubdtype(keys.dtype, jax.dtypes.prng_key):
        reset_keys = jax.random.wrap_key_data(reset_keys, impl=jax.random.key_impl(keys))
    return respawn, reset_keys


class CoinGame(BatchNativeEnv):
    """Two players, a red and a blue coin, on a 3x3 torus (see the module docstring for the rules).

    One group, ``agents`` (``agent_0`` red, ``agent_1`` blue), five actions each. Observations are four
    0/1 planes over the grid, ``float32[36]`` (``[3, 3, 4]`` with ``cnn=True``), each player seeing itself
    and its own coin first; with ``egocentric=True`` the grid is also shifted so the observer sits in the
    centre cell.

    Args:
        num_inner_steps: steps per inner episode.
        num_outer_steps: inner episodes per episode.
        cnn: observations shaped ``[3, 3, 4]`` (row, column, plane) instead of flat ``[36]``.
        egocentric: each player's grid is centred on itself.
        shared_rewards: both players get the sum of the two rewards.
        payoff_matrix: ``[[red coin, blue coin, penalty] for player 0, ... for player 1]``.
    """

    reference = "jaxmarl.coin_game"
    render_fps = 5
    episodes_end_together = True
    all_actions_legal = True
    social_measures = True

    def __init__(self, num_inner_steps: int = 10, num_outer_steps: int = 10, cnn: bool = False,
                 egocentric: bool = False, shared_rewards: bool = False,
                 payoff_matrix: Sequence[Sequence[float]] = DEFAULT_PAYOFFS) -> None:
        for name, value in (("num_inner_steps", num_inner_steps), ("num_outer_steps", num_outer_steps)):
            require(isinstance(value, int) and not isinstance(value, bool) and value >= 1,
                    name, f"must be an integer >= 1, got {value!r}")
        for name, value in (("cnn", cnn), ("egocentric", egocentric), ("shared_rewards", shared_rewards)):
            require(isinstance(value, bool), name, f"must be a bool, got {value!r}")
        try:
            table = np.asarray(payoff_matrix, np.float32)
        except (TypeError, ValueError):
            table = np.full((0,), np.nan, np.float32)
        require(table.shape == (2, 3) and bool(np.isfinite(table).all()), "payoff_matrix",
                f"must be finite numbers [[red coin, blue coin, penalty] per player], shape (2, 3), "
                f"got {payoff_matrix!r}")
        self.cnn = cnn
        self.egocentric = egocentric
        self.groups = {"agents": ("agent_0", "agent_1")}
        self._params = CoinGameParams(max_steps=num_inner_steps * num_outer_steps,
                                      num_inner_steps=num_inner_steps, payoffs=jnp.asarray(table),
                                      shared_rewards=shared_rewards)

    @property
    def default_params(self) -> CoinGameParams:
        """The constructor's episode lengths, payoffs and reward sharing."""
        return self._params

    def observation_space(self, group: str) -> Box:
        """``float32[36]`` (``[3, 3, 4]`` with ``cnn``), 0 or 1: planes self, other player, own coin, other's
        coin."""
        shape = (GRID, GRID, NUM_CHANNELS) if self.cnn else (NUM_CELLS * NUM_CHANNELS,)
        return Box(0.0, 1.0, shape, np.float32)

    def action_space(self, group: str) -> Discrete:
        """Right, left, up, down, stay."""
        return Discrete(5)

    # ------------------------------------------------------------------------------------------ reset
    def reset_batch(self, keys: Array, params: EnvParams) -> tuple[CoinGameState, TimeStep]:
        """Players and coins on uniformly random cells (overlaps allowed, as in JaxMARL)."""
        assert isinstance(params, CoinGameParams)
        num_envs = keys.shape[0]
        start = start_positions(keys)  # [4, 2, B]
        zeros = jnp.zeros((num_envs,), jnp.int32)
        state = CoinGameState(agent_pos=start[:2], coin_pos=start[2:], inner_t=zeros, time=zeros)
        no_pickups = jnp.zeros((2, num_envs), jnp.float32)
        return state, self._timestep(state, no_pickups, jnp.zeros((num_envs,), bool), no_pickups,
                                     no_pickups, params)

    # ------------------------------------------------------------------------------------------- step
    def step_batch(self, keys: Array, state: CoinGameState, actions: dict[str, Array],
                   params: EnvParams) -> tuple[CoinGameState, TimeStep]:
        """One step of every env; ``actions["agents"]`` is ``int[2, B]`` (anything but 0-3 stays)."""
        assert isinstance(params, CoinGameParams)
        respawn, reset_keys = step_draws(keys)  # respawn: [2, 2, B]

        action = actions["agents"].astype(jnp.int32)
        d_row = jnp.where(action == UP, 1, jnp.where(action == DOWN, -1, 0))
        d_col = jnp.where(action == RIGHT, 1, jnp.where(action == LEFT, -1, 0))
        moved = _wrap(state.agent_pos + jnp.stack([d_row, d_col], axis=1))  # [2, 2, B]

        # on[i, c]: player i ends its move on coin c's cell.
        on = jnp.all(moved[:, None] == state.coin_pos[None], axis=2)  # [2, 2, B]
        payoffs = jnp.asarray(params.payoffs, jnp.float32)

        def earned(player: int) -> Array:
            other = 1 - player
            return (jnp.where(on[player, 0], payoffs[player, 0], 0.0)
                    + jnp.where(on[player, 1], payoffs[player, 1], 0.0)
                    + jnp.where(on[other, player], payoffs[player, 2], 0.0))

        reward = jnp.stack([earned(0), earned(1)])
        reward = jnp.where(params.shared_rewards, reward.sum(0, keepdims=True), reward)
        picked = on[0] | on[1]  # [coin, B]
        coin_pos = jnp.where(picked[:, None], respawn, state.coin_pos)
        own = jnp.stack([on[0, 0], on[1, 1]]).astype(jnp.float32)
        others = jnp.stack([on[0, 1], on[1, 0]]).astype(jnp.float32)

        inner_t = state.inner_t + 1
        time = state.time + 1
        inner_done = inner_t >= params.num_inner_steps
        # Fresh positions are needed only where an inner episode ends: all envs of a batch started
        # together end their inner episodes on the same step, so most steps skip these draws.
        start = jax.lax.cond(jnp.any(inner_done), lambda: start_positions(reset_keys),
                             lambda: jnp.zeros((4, 2, keys.shape[0]), jnp.int32))
        restart = inner_done[None, None]
        state = CoinGameState(
            agent_pos=jnp.where(restart, start[:2], moved),
            coin_pos=jnp.where(restart, start[2:], coin_pos),
            inner_t=jnp.where(inner_done, 0, inner_t),
            time=time,
        )
        reward = jnp.where(inner_done[None], 0.0, reward)
        return state, self._timestep(state, reward, inner_done, own, others, params)

    # ------------------------------------------------------------------------------------ observation
    def observe(self, state: CoinGameState) -> Array:
        """``float32[2, 36, B]`` (``[2, 3, 3, 4, B]`` with ``cnn``): each player's four planes."""
        red, blue = state.agent_pos[0], state.agent_pos[1]
        red_coin, blue_coin = state.coin_pos[0], state.coin_pos[1]
        # Each player's view lists (self, other player, own coin, other's coin), each [2 (row, col), B].
        views = [(red, blue, red_coin, blue_coin), (blue, red, blue_coin, red_coin)]
        if self.egocentric:
            views = [tuple(_wrap(p - view[0] + 1) for p in view) for view in views]
        cells = jnp.stack([jnp.stack([GRID * p[0] + p[1] for p in view]) for view in views])  # [2, 4, B]
        grid = jnp.arange(NUM_CELLS, dtype=jnp.int32)[None, :, None, None]
        obs = (cells[:, None] == grid).astype(jnp.float32)  # [2, cell, plane, B]
        shape = (GRID, GRID, NUM_CHANNELS) if self.cnn else (NUM_CELLS * NUM_CHANNELS,)
        return obs.reshape(2, *shape, obs.shape[-1])

    def _timestep(self, state: CoinGameState, reward: Array, inner_done: Array, own: Array,
                  others: Array, params: CoinGameParams) -> TimeStep:
        num_envs = state.time.shape[0]
        truncated = jnp.broadcast_to((state.time >= params.max_steps)[None], (2, num_envs))
        return TimeStep(
            obs={"agents": self.observe(state)},
            reward={"agents": reward.astype(jnp.float32)},
            terminated={"agents": jnp.zeros((2, num_envs), bool)},
            truncated={"agents": truncated},
            action_mask={"agents": jnp.ones((2, 5, num_envs), bool)},
            info={"inner_episode_done": inner_done, "cooperative_pickups": own, "defecting_pickups": others},
        )

    # ----------------------------------------------------------------------------------------- render
    def render(self, state: CoinGameState, params: EnvParams | None = None) -> Array:
        """``uint8[104, 96, 3]`` of one env: the torus with row 0 at the bottom (so ``up`` moves up), each
        cell holding the red player (top left), blue player (top right), red coin (bottom left) and blue
        coin (bottom right, coins ringed in gold) where they are; below, the inner episode's progress."""
        params = self.default_params if params is None else params
        assert isinstance(params, CoinGameParams)
        tile, bar = 32, 8
        height, width = GRID * tile + bar, GRID * tile
        rows, cols = np.mgrid[0:height, 0:width]
        grid_row = jnp.asarray(GRID - 1 - np.minimum(rows // tile, GRID - 1))  # torus row under the pixel
        grid_col = jnp.asarray(cols // tile)
        local_y = jnp.asarray((rows % tile + 0.5) / tile, jnp.float32)
        local_x = jnp.asarray((cols % tile + 0.5) / tile, jnp.float32)
        in_grid = jnp.asarray(rows < GRID * tile)
        image = jnp.broadcast_to(jnp.asarray([235, 232, 222], jnp.uint8), (height, width, 3))

        def disc(pos: Array, centre: tuple[float, float], radius: float) -> Array:
            here = (grid_row == pos[0]) & (grid_col == pos[1]) & in_grid
            dist = jnp.sqrt((local_x - centre[0]) ** 2 + (local_y - centre[1]) ** 2)
            return here & (dist <= radius)

        def paint(image: Array, mask: Array, colour: tuple[int, int, int]) -> Array:
            return jnp.where(mask[..., None], jnp.asarray(colour, jnp.uint8), image)

        gold = (230, 185, 40)
        for coin, (x, colour) in enumerate(((0.3, (240, 120, 120)), (0.7, (120, 150, 245)))):
            image = paint(image, disc(state.coin_pos[coin], (x, 0.72), 0.17), gold)
            image = paint(image, disc(state.coin_pos[coin], (x, 0.72), 0.11), colour)
        for player, (x, colour) in enumerate(((0.3, (210, 40, 40)), (0.7, (40, 80, 210)))):
            image = paint(image, disc(state.agent_pos[player], (x, 0.3), 0.2), colour)
        lines = in_grid & ((jnp.asarray(rows % tile) == 0) | (jnp.asarray(cols % tile) == 0))
        image = paint(image, lines, (90, 90, 90))
        progress = state.inner_t.astype(jnp.float32) / jnp.asarray(params.num_inner_steps, jnp.float32)
        filled = ~in_grid & (jnp.asarray((cols + 0.5) / width, jnp.float32) < progress)
        return paint(image, filled, (60, 60, 60))
