"""The switch riddle (Foerster et al., 2016, "Learning to Communicate with Deep Multi-Agent RL").

Each day the warden takes one of ``n`` prisoners, chosen uniformly at random, to a room with a light bulb.
That prisoner sees the bulb and may leave it, toggle it, or announce that every prisoner has been in the
room. An announcement ends the episode: every prisoner gets ``reward_all_live`` if it was true and
``reward_all_die`` if not. Without one the episode is cut after ``max_steps`` days (``4n - 6`` by default,
the riddle's horizon) with no reward. The bulb is the only channel between prisoners, so they must learn a
counting protocol with it.

The rules, observations, actions, rewards and random draws follow JaxMARL 0.2.0's ``switch_riddle`` key
for key (see README.md for the differences in API).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.env import BatchNativeEnv
from jaxmarl_suite.core.spaces import Box, Discrete
from jaxmarl_suite.core.threefry import randint_per_key
from jaxmarl_suite.core.types import EnvParams, TimeStep
from jaxmarl_suite.errors import require

Array = jax.Array

NOTHING, SWITCH_LIGHT, TELL = 0, 1, 2
"""The actions. Only the prisoner in the room acts; any other value does nothing, as in JaxMARL."""
NUM_ACTIONS = 3
OBS_SIZE = 2
"""Observation: ``[in the room, bulb on and in the room]``; only the prisoner in the room sees the bulb."""


@struct.dataclass
class SwitchRiddleParams(EnvParams):
    """The day limit, the two rewards and the bulb's first state, all traceable."""

    max_steps: int = 6
    """Days per episode at most (``4 * num_agents - 6`` unless set); the episode is truncated after it."""
    reward_all_live: float = 1.0
    """Every prisoner's reward for a true announcement (all have been in the room)."""
    reward_all_die: float = -1.0
    """Every prisoner's reward for a false announcement."""
    initial_bulb_state: bool = False
    """Whether the bulb is on when an episode starts."""


@struct.dataclass
class SwitchRiddleState:
    """Batch-last state of ``B`` riddles with ``n`` prisoners."""

    bulb: Array
    """``bool[B]``: the light is on."""
    agent_in_room: Array
    """``int32[B]``: the prisoner in the room today, who acts on the next step."""
    has_been: Array
    """``bool[n, B]``: prisoners who have acted in the room this episode (today's one counts once it acts)."""
    step: Array
    """``int32[B]``: days passed."""


def _positive_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


class SwitchRiddle(BatchNativeEnv):
    """``num_agents`` prisoners (at least 3) and one light bulb; see the module docstring for the rules.

    Constructor arguments keep JaxMARL's names; ``max_steps=None`` means its ``4 * num_agents - 6``.
    """

    render_fps = 2
    episodes_end_together = False
    random_reset = True

    def __init__(
        self,
        num_agents: int = 3,
        initial_bulb_state: bool = False,
        reward_all_die: float = -1.0,
        reward_all_live: float = 1.0,
        max_steps: int | None = None,
    ) -> None:
        require(_positive_int(num_agents) and num_agents >= 3, "num_agents",
                f"must be an integer >= 3 (as in JaxMARL), got {num_agents!r}")
        require(isinstance(initial_bulb_state, bool | np.bool_), "initial_bulb_state",
                f"must be a bool, got {initial_bulb_state!r}")
        for name, value in (("reward_all_die", reward_all_die), ("reward_all_live", reward_all_live)):
            require(isinstance(value, int | float | np.number) and not isinstance(value, bool)
                    and bool(np.isfinite(value)), name, f"must be a finite number, got {value!r}")
        # JaxMARL's day limit is fixed at 4n - 6; another one has no reference to match.
        self.reference = "jaxmarl.switch_riddle" if max_steps in (None, 4 * num_agents - 6) else None
        if max_steps is None:
            max_steps = 4 * int(num_agents) - 6
        require(_positive_int(max_steps) and max_steps >= 1, "max_steps",
                f"must be an integer >= 1 or None (4 * num_agents - 6), got {max_steps!r}")
        self.num_prisoners = int(num_agents)
        self.groups = {"agents": tuple(f"agent_{i}" for i in range(self.num_prisoners))}
        self._params = SwitchRiddleParams(
            max_steps=int(max_steps),
            reward_all_live=float(reward_all_live),
            reward_all_die=float(reward_all_die),
            initial_bulb_state=bool(initial_bulb_state),
        )

    @property
    def default_params(self) -> SwitchRiddleParams:
        """The constructor's day limit, rewards and first bulb state."""
        return self._params

    def observation_space(self, group: str) -> Box:
        """``float32[2]`` of 0/1: ``[in the room, bulb on]``; the bulb reads 0 outside the room."""
        return Box(0.0, 1.0, (OBS_SIZE,))

    def action_space(self, group: str) -> Discrete:
        """0 does nothing, 1 toggles the bulb, 2 announces that everyone has been in the room."""
        return Discrete(NUM_ACTIONS)

    def _draw_prisoner(self, keys: Array) -> Array:
        # JaxMARL draws today's prisoner with randint(key, (), 0, n) in both reset and step_env; this is
        # that draw for every env's key, bit for bit, written over the batch (core/threefry.py).
        return randint_per_key(keys, self.num_prisoners)

    def _observe(self, state: SwitchRiddleState) -> Array:
        in_room = jnp.arange(self.num_prisoners, dtype=jnp.int32)[:, None] == state.agent_in_room[None]
        sees_light = in_room & state.bulb[None]
        return jnp.stack([in_room, sees_light], axis=1).astype(jnp.float32)  # [n, 2, B]

    def _action_mask(self, state: SwitchRiddleState) -> Array:
        # Only today's prisoner acts (the others' actions change nothing, as in JaxMARL), so by the API's
        # turn-taking rule the others may only do nothing; a learner then gets no gradient from the
        # actions that cannot matter.
        in_room = jnp.arange(self.num_prisoners, dtype=jnp.int32)[:, None] == state.agent_in_room[None]
        acts = jnp.arange(NUM_ACTIONS)[None, :, None] == NOTHING
        return acts | in_room[:, None, :]  # [n, 3, B]

    def _timestep(self, state: SwitchRiddleState, reward: Array, terminated: Array, truncated: Array,
                  won: Array) -> TimeStep:
        shape = (self.num_prisoners, state.step.shape[0])
        return TimeStep(
            obs={"agents": self._observe(state)},
            reward={"agents": jnp.broadcast_to(reward[None], shape)},
            terminated={"agents": jnp.broadcast_to(terminated[None], shape)},
            truncated={"agents": jnp.broadcast_to(truncated[None], shape)},
            action_mask={"agents": self._action_mask(state)},
            info={"won": won},
        )

    def reset_batch(self, keys: Array, params: SwitchRiddleParams) -> tuple[SwitchRiddleState, TimeStep]:
        """Day 0: the bulb in its first state, nobody has been in the room, a random prisoner enters."""
        num_envs = keys.shape[0]
        state = SwitchRiddleState(
            bulb=jnp.broadcast_to(jnp.asarray(params.initial_bulb_state, bool), (num_envs,)),
            agent_in_room=self._draw_prisoner(keys),
            has_been=jnp.zeros((self.num_prisoners, num_envs), bool),
            step=jnp.zeros((num_envs,), jnp.int32),
        )
        no = jnp.zeros((num_envs,), bool)
        return state, self._timestep(state, jnp.zeros((num_envs,), jnp.float32), no, no, no)

    def step_batch(self, keys: Array, state: SwitchRiddleState, actions: dict[str, Array],
                   params: SwitchRiddleParams) -> tuple[SwitchRiddleState, TimeStep]:
        """Today's prisoner acts (the others' actions are ignored), then tomorrow's prisoner is drawn."""
        in_room = jnp.arange(self.num_prisoners, dtype=jnp.int32)[:, None] == state.agent_in_room[None]
        # Exactly one prisoner is in the room, so the masked sum is that prisoner's action.
        action = jnp.sum(jnp.where(in_room, actions["agents"].astype(jnp.int32), 0), axis=0)
        has_been = state.has_been | in_room
        tell = action == TELL
        everyone = jnp.all(has_been, axis=0)
        reward = jnp.where(tell, jnp.where(everyone, params.reward_all_live, params.reward_all_die), 0.0)
        step = state.step + 1
        new_state = SwitchRiddleState(
            bulb=state.bulb ^ (action == SWITCH_LIGHT),
            agent_in_room=self._draw_prisoner(keys),
            has_been=has_been,
            step=step,
        )
        # An announcement on the last day ends the game (terminated), so truncation is the day limit only.
        truncated = ~tell & (step >= params.max_steps)
        return new_state, self._timestep(new_state, reward.astype(jnp.float32), tell, truncated,
                                         tell & everyone)

    def render(self, state: SwitchRiddleState, params: EnvParams | None = None) -> Array:
        """``uint8[48, 24 (n + 1), 3]`` of one env. Top row: the prisoners, today's one on an orange
        floor, then the bulb (yellow when on). Bottom row: green under each prisoner who has been in the
        room, then a bar filling with the days passed."""
        params = self.default_params if params is None else params
        assert isinstance(params, SwitchRiddleParams)
        cell, n = 24, self.num_prisoners
        rows = jnp.arange(2 * cell)[:, None]
        cols = jnp.arange((n + 1) * cell)[None, :]
        column, y, x = cols // cell, rows % cell, cols % cell
        top, prisoner = rows < cell, column < n
        room = jnp.arange(n) == state.agent_in_room
        been = jnp.concatenate([state.has_been.astype(bool), jnp.zeros((1,), bool)])[column]
        in_room = jnp.concatenate([room, jnp.zeros((1,), bool)])[column]
        inset = (x >= 5) & (x < cell - 5) & (y >= 5) & (y < cell - 5)
        centre = (x - cell / 2 + 0.5) ** 2 + (y - cell / 2 + 0.5) ** 2
        bulb_disc = centre <= (cell / 2 - 4) ** 2
        progress = jnp.clip(state.step / jnp.maximum(params.max_steps, 1), 0.0, 1.0)
        bar = (y >= 8) & (y < cell - 8) & (x >= 2) & (x < 2 + progress * (cell - 4))

        def colour(rgb: tuple[int, int, int]) -> Array:
            return jnp.array(rgb, jnp.uint8)

        image = jnp.broadcast_to(colour((235, 235, 235)), (2 * cell, (n + 1) * cell, 3))
        image = jnp.where((top & prisoner & in_room)[..., None], colour((245, 160, 60)), image)
        image = jnp.where((top & prisoner & inset)[..., None], colour((60, 90, 200)), image)
        bulb_colour = jnp.where(state.bulb, colour((250, 220, 40)), colour((70, 70, 70)))
        image = jnp.where((top & ~prisoner & bulb_disc)[..., None], bulb_colour, image)
        been_colour = jnp.where(been[..., None], colour((60, 180, 80)), colour((190, 190, 190)))
        image = jnp.where((~top & prisoner & inset)[..., None], been_colour, image)
        image = jnp.where((~top & ~prisoner & bar)[..., None], colour((120, 120, 120)), image)
        grid = (x == 0) | (y == 0)
        return jnp.where(grid[..., None], colour((150, 150, 150)), image)
