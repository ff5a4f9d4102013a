"""Overcooked: two chefs cook onion soup in a small kitchen, step for step as overcooked-ai 1.1.0.

Written once for a batch of envs, the env batch last on every state array. One step (overcooked-ai's
``get_state_transition``):

1. **Interactions**, player 0 then player 1, each on the state the previous one left, from the positions
   and orientations before the move. The cell faced decides: a counter takes or gives an object; a
   dispenser gives an onion, tomato or dish to empty hands; a pot takes an ingredient (up to 3, while
   idle), gives its ready soup to a dish, and, under the new dynamics, starts cooking when interacted
   with empty-handed; the serving window takes a soup.
2. **Movement**: a move always turns the player; it steps only onto floor. Two players ending on one cell,
   or swapping cells, both stay.
3. **Environment effects**: time advances; under the old dynamics a pot holding 3 ingredients starts
   cooking by itself; every cooking soup ticks once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.env import BatchNativeEnv, per_env
from jaxmarl_suite.core.spaces import Box, Discrete, Space
from jaxmarl_suite.core.types import EnvParams, TimeStep

from .featurize import FEATURE_NAMES, featurize
from .layouts import (
    CLASSIC_GRIDS,
    COUNTER,
    DIRECTIONS,
    DISH,
    DISH_DISPENSER,
    FLOOR,
    NOTHING,
    ONION,
    ONION_DISPENSER,
    POT,
    SERVING,
    SOUP,
    TOMATO,
    TOMATO_DISPENSER,
    Layout,
    get_layout,
)
from .rendering import render_kitchen

Array = jax.Array

NORTH_ACTION, SOUTH_ACTION, EAST_ACTION, WEST_ACTION, STAY, INTERACT = range(6)
"""Actions in overcooked-ai's ``Action.ALL_ACTIONS`` order; 0-3 are also the orientation indices."""
NUM_CHANNELS = 26
NUM_FEATURES = len(FEATURE_NAMES)
RECIPE_ONIONS = 3
"""The one order of the classic layouts: three onions, no tomato."""
STATIC_TERRAIN = (POT, COUNTER, ONION_DISPENSER, TOMATO_DISPENSER, DISH_DISPENSER, SERVING)
STATIC_CHANNEL = 10
"""Channels 10-15 of the lossless encoding mark ``STATIC_TERRAIN`` in this order."""
COOK_CHANNEL = 20
"""The one channel not packed in a cell's word: remaining cook time, up to 255."""
CHANNEL_SHIFT = np.array([*range(16), 16, 18, 20, 22, 0, 24, 25, 26, 27, 28], np.int32)
"""Bit of each channel in a cell's int32 word (``Overcooked.encode``): channels 0-15 are flags, 16-19
ingredient counts of 2 bits each (at most 3), 21-25 flags."""


def channel_shift_and_mask(k: Array) -> tuple[Array, Array]:
    """Each channel's bit in a cell's encoding word (``CHANNEL_SHIFT``) and its mask: 3 for the 2-bit
    ingredient counts, 1 for flags; channel 20, the cook time, is not in the word. Computed from ``k`` (an
    iota) rather than read from a table, so that XLA folds them into constants."""
    shift = jnp.where(k < 16, k, jnp.where(k < 20, 2 * k - 16, k + 3))
    mask = jnp.where((k >= 16) & (k < 20), 3, 1)
    return shift, mask


@struct.dataclass
class OvercookedParams(EnvParams):
    """Traceable Overcooked parameters (overcooked-ai's classic values by default)."""

    max_steps: int = 400
    """Horizon: the episode is truncated after this many steps."""
    cook_time: int = 20
    """Ticks a soup cooks before it is ready."""
    delivery_reward: float = 20.0
    """Sparse reward for serving a three-onion soup (any other soup is taken and pays nothing)."""
    placement_in_pot_reward: float = 3.0
    """Shaped reward for putting an ingredient into a pot."""
    dish_pickup_reward: float = 3.0
    """Shaped reward for taking a dish from a dispenser when it is useful (overcooked-ai's rule)."""
    soup_pickup_reward: float = 5.0
    """Shaped reward for taking a ready soup out of a pot with a dish."""
    old_dynamics: bool = True
    """Pots start cooking by themselves at 3 ingredients, and interacting with a pot never starts it (the
    classic benchmark, overcooked-ai's ``old_dynamics=True``). False: overcooked-ai 1.1.0's dynamics, where
    an empty-handed interaction starts a pot holding 1 to 3 ingredients."""
    random_start: bool = False
    """Start each episode with both players on random distinct floor cells facing random directions
    (as JaxMARL does), instead of the layout's starts facing north."""
    urgency_steps: int = 40
    """The urgency channel of the observation turns on when fewer steps than this remain."""


@struct.dataclass
class OvercookedState:
    """One kitchen per env, batch last. Cells are indexed ``y * width + x``."""

    position: Array
    """``int32[2, B]`` each player's cell."""
    orientation: Array
    """``int32[2, B]`` direction index (north, south, east, west)."""
    held: Array
    """``int32[2, B]`` object kind in each player's hands."""
    held_onions: Array
    """``int32[2, B]`` onions in a held soup."""
    held_tomatoes: Array
    """``int32[2, B]`` tomatoes in a held soup."""
    kind: Array
    """``int32[C, B]`` object kind on each cell (counters and pots; a pot's soup is ``SOUP``)."""
    onions: Array
    """``int32[C, B]`` onions in the soup on each cell."""
    tomatoes: Array
    """``int32[C, B]`` tomatoes in the soup on each cell."""
    tick: Array
    """``int32[C, B]`` cooking tick of the soup on each cell: -1 idle, ready at ``cook_time``."""
    time: Array
    """``int32[B]`` steps taken this episode."""



class Overcooked(BatchNativeEnv):
    """Overcooked on one layout. One group, ``agents`` (``agent_0``, ``agent_1``); six actions each.

    Observations are overcooked-ai's lossless encoding, ``uint8[width, height, 26]`` indexed ``[x, y,
    channel]``, each agent seeing itself first. ``reward`` is the team's sparse reward, to both agents;
    ``info["sparse_reward"]`` and ``info["shaped_reward"]`` hold each agent's own.
    """

    render_fps = 5
    episodes_end_together = True
    all_actions_legal = True

    @property
    def random_reset(self) -> bool:  # type: ignore[override]
        """Only with ``random_start``: the layout's start is one state."""
        return bool(self.default_params.random_start)

    OBSERVATIONS = ("lossless", "featurized")

    def __init__(self, layout: str | Layout | Mapping[str, Any] = "cramped_room",
                 max_steps: int | None = None, old_dynamics: bool | None = None,
                 random_start: bool | None = None, observation: str = "lossless") -> None:
        if observation not in self.OBSERVATIONS:
            raise ValueError(f"observation must be one of {self.OBSERVATIONS}, got {observation!r}")
        self.observation = observation
        self.layout = get_layout(layout)
        classic = self.layout.name in CLASSIC_GRIDS
        self.reference = f"overcooked_ai_py.{self.layout.name}" if classic else None
        self.groups = {"agents": ("agent_0", "agent_1")}
        if max_steps is not None and (not isinstance(max_steps, int) or isinstance(max_steps, bool)
                                      or max_steps < 1):
            raise ValueError(f"max_steps must be a positive int, got {max_steps!r}")
        flags = {"old_dynamics": old_dynamics, "random_start": random_start}
        for name, value in flags.items():
            if value is not None and not isinstance(value, bool):
                raise TypeError(f"{name} must be a bool, got {value!r}")
        overrides = {"max_steps": max_steps, **flags}
        self._params = OvercookedParams(**{k: v for k, v in overrides.items() if v is not None})
        layout = self.layout
        self.terrain = layout.terrain.reshape(-1).astype(np.int32)
        self.floor_cells = layout.cells_of(FLOOR)
        self.pot_cells = layout.cells_of(POT)
        width = layout.width
        self.offsets = (DIRECTIONS[:, 1] * width + DIRECTIONS[:, 0]).astype(np.int32)
        """Cell index change of a step north, south, east, west."""
        self.start_cells = np.array([layout.cell(p) for p in layout.start_positions], np.int32)
        self.static_bits = np.zeros(layout.num_cells, np.int32)
        """Each cell's terrain flag (channels 10-15) in its encoding word."""
        for offset, code in enumerate(STATIC_TERRAIN):
            self.static_bits[self.terrain == code] = 1 << CHANNEL_SHIFT[STATIC_CHANNEL + offset]

    @property
    def default_params(self) -> OvercookedParams:
        """Parameters from the constructor's arguments."""
        return self._params

    def observation_space(self, group: str) -> Space:
        """``uint8[width, height, 26]``: overcooked-ai's lossless encoding (0/1 masks, ingredient counts,
        remaining cook time); with ``observation="featurized"``, ``float32[96]``: its ``featurize_state``
        (offsets are signed)."""
        if self.observation == "featurized":
            return Box(-np.inf, np.inf, (NUM_FEATURES,), np.float32)
        return Box(0, 255, (self.layout.width, self.layout.height, NUM_CHANNELS), np.uint8)

    def action_space(self, group: str) -> Space:
        """North, south, east, west, stay, interact."""
        return Discrete(6)

    # ------------------------------------------------------------------------------------------ reset
    def reset_batch(self, keys: Array, params: EnvParams) -> tuple[OvercookedState, TimeStep]:
        """Empty kitchens with the players at the layout's starts (or random ones with ``random_start``)."""
        assert isinstance(params, OvercookedParams)
        num_envs = keys.shape[0]
        cells = self.layout.num_cells
        floor = jnp.asarray(self.floor_cells)

        def draw(key: Array) -> tuple[Array, Array]:
            cell_key, orientation_key = jax.random.split(key)
            picks = jax.random.choice(cell_key, floor.shape[0], (2,), replace=False)
            return floor[picks], jax.random.randint(orientation_key, (2,), 0, 4)

        random_cells, random_orientations = per_env(keys, draw)
        start_cells = jnp.broadcast_to(jnp.asarray(self.start_cells)[:, None], (2, num_envs))
        start_orientations = jnp.broadcast_to(
            jnp.asarray(self.layout.start_orientations, jnp.int32)[:, None], (2, num_envs))
        zeros_players = jnp.zeros((2, num_envs), jnp.int32)
        zeros_cells = jnp.zeros((cells, num_envs), jnp.int32)
        state = OvercookedState(
            position=jnp.where(params.random_start, random_cells, start_cells).astype(jnp.int32),
            orientation=jnp.where(params.random_start, random_orientations,
                                  start_orientations).astype(jnp.int32),
            held=zeros_players, held_onions=zeros_players, held_tomatoes=zeros_players,
            kind=zeros_cells, onions=zeros_cells, tomatoes=zeros_cells, tick=zeros_cells - 1,
            time=jnp.zeros((num_envs,), jnp.int32),
        )
        zeros = jnp.zeros((2, num_envs), jnp.float32)
        return state, self._timestep(state, zeros, zeros, params)

    # ------------------------------------------------------------------------------------------- step
    def step_batch(self, keys: Array, state: OvercookedState, actions: dict[str, Array],
                   params: EnvParams) -> tuple[OvercookedState, TimeStep]:
        """One step of every env; ``actions["agents"]`` is ``int[2, B]``."""
        assert isinstance(params, OvercookedParams)
        action = actions["agents"].astype(jnp.int32)
        useful_pots = self._pots_worth_a_dish(state, params)
        sparse, shaped = [], []
        for player in range(2):
            state, sparse_reward, shaped_reward = self._interact(state, player, action[player] == INTERACT,
                                                                 useful_pots, params)
            sparse.append(sparse_reward)
            shaped.append(shaped_reward)
        state = self._move(state, action)
        state = self._cook(state, params)
        return state, self._timestep(state, jnp.stack(sparse), jnp.stack(shaped), params)

    def _pots_worth_a_dish(self, state: OvercookedState, params: OvercookedParams) -> Array:
        """``int32[B]``: pots that are cooking, ready, or hold 1 or 2 ingredients while idle, before anyone
        acts (overcooked-ai's ``is_dish_pickup_useful`` reads the pots from before the interactions)."""
        pots = jnp.asarray(self.pot_cells)
        soup = state.kind[pots] == SOUP
        count = state.onions[pots] + state.tomatoes[pots]
        idle = state.tick[pots] < 0
        worth = soup & (~idle | ((count >= 1) & (count <= 2)))
        return worth.astype(jnp.int32).sum(0)

    def _interact(self, state: OvercookedState, player: int, acting: Array, useful_pots: Array,
                  params: OvercookedParams) -> tuple[OvercookedState, Array, Array]:
        """Player ``player``'s interaction (where ``acting``), on the cell it faces."""
        front = state.position[player] + jnp.asarray(self.offsets)[state.orientation[player]]
        # One cell per env, always inside the grid (layouts have no floor on the border): a gather and a
        # scatter of B elements. Selecting it with a one-hot mask over [C, B] was most of a step's rules,
        # and grew with the kitchen (3.3M against 16M env steps/s on counter_circuit at 4,096 envs).
        envs = jnp.arange(front.shape[0])

        def read(values: Array) -> Array:
            return values[front, envs]

        terrain = jnp.asarray(self.terrain)[front]
        kind, onions, tomatoes, tick = (read(state.kind), read(state.onions), read(state.tomatoes),
                                        read(state.tick))
        held = state.held[player]
        held_onions, held_tomatoes = state.held_onions[player], state.held_tomatoes[player]
        empty_hands = held == NOTHING

        on_counter = acting & (terrain == COUNTER)
        place = on_counter & ~empty_hands & (kind == NOTHING)
        pick = on_counter & empty_hands & (kind != NOTHING)
        take_onion = acting & (terrain == ONION_DISPENSER) & empty_hands
        take_tomato = acting & (terrain == TOMATO_DISPENSER) & empty_hands
        take_dish = acting & (terrain == DISH_DISPENSER) & empty_hands
        at_pot = acting & (terrain == POT)
        pot_soup = kind == SOUP
        idle = tick < 0
        count = onions + tomatoes
        start = at_pot & empty_hands & pot_soup & idle & (count >= 1) & ~params.old_dynamics
        take_soup = at_pot & (held == DISH) & pot_soup & (tick >= params.cook_time)
        ingredient = (held == ONION) | (held == TOMATO)
        add = at_pot & ingredient & (~pot_soup | (idle & (count < 3)))
        serve = acting & (terrain == SERVING) & (held == SOUP)

        dishes_on_counters = ((state.kind == DISH) & (jnp.asarray(self.terrain)[:, None] == COUNTER)).any(0)
        dishes_held = (state.held == DISH).astype(jnp.int32).sum(0)
        useful_dish = ~dishes_on_counters & (dishes_held < useful_pots)
        recipe = (held_onions == RECIPE_ONIONS) & (held_tomatoes == 0)
        sparse = jnp.where(serve & recipe, params.delivery_reward, 0.0)
        shaped = (jnp.where(add, params.placement_in_pot_reward, 0.0)
                  + jnp.where(take_dish & useful_dish, params.dish_pickup_reward, 0.0)
                  + jnp.where(take_soup, params.soup_pickup_reward, 0.0))

        cleared = pick | take_soup
        new_kind = jnp.where(place, held, jnp.where(cleared, NOTHING, jnp.where(add, SOUP, kind)))
        new_onions = jnp.where(place, held_onions, jnp.where(cleared, 0, onions + (add & (held == ONION))))
        new_tomatoes = jnp.where(place, held_tomatoes,
                                 jnp.where(cleared, 0, tomatoes + (add & (held == TOMATO))))
        placed_tick = jnp.where(held == SOUP, params.cook_time, -1)  # a soup off the stove is done
        new_pot_tick = jnp.where(start, 0, jnp.where(add & ~pot_soup, -1, tick))
        new_tick = jnp.where(place, placed_tick, jnp.where(cleared, -1, new_pot_tick))

        gives = jnp.where(take_onion, ONION, jnp.where(take_tomato, TOMATO, jnp.where(take_dish, DISH, held)))
        new_held = jnp.where(place | add | serve, NOTHING,
                             jnp.where(pick, kind, jnp.where(take_soup, SOUP, gives)))
        emptied = place | serve
        new_held_onions = jnp.where(emptied, 0, jnp.where(pick | take_soup, onions, held_onions))
        new_held_tomatoes = jnp.where(emptied, 0, jnp.where(pick | take_soup, tomatoes, held_tomatoes))

        state = dataclasses.replace(
            state,
            held=state.held.at[player].set(new_held),
            held_onions=state.held_onions.at[player].set(new_held_onions),
            held_tomatoes=state.held_tomatoes.at[player].set(new_held_tomatoes),
            kind=state.kind.at[front, envs].set(new_kind, unique_indices=True),  # one cell per env
            onions=state.onions.at[front, envs].set(new_onions, unique_indices=True),
            tomatoes=state.tomatoes.at[front, envs].set(new_tomatoes, unique_indices=True),
            tick=state.tick.at[front, envs].set(new_tick, unique_indices=True),
        )
        return state, sparse, shaped

    def _move(self, state: OvercookedState, action: Array) -> OvercookedState:
        """Turn and step; two players ending on one cell or swapping both stay."""
        moving = action < STAY
        direction = jnp.clip(action, 0, 3)
        target = state.position + jnp.asarray(self.offsets)[direction]
        floor = jnp.asarray(self.terrain == FLOOR)[jnp.clip(target, 0, self.layout.num_cells - 1)]
        proposed = jnp.where(moving & floor, target, state.position)
        same = proposed[0] == proposed[1]
        swap = (proposed[0] == state.position[1]) & (proposed[1] == state.position[0])
        position = jnp.where((same | swap)[None], state.position, proposed)
        orientation = jnp.where(moving, direction, state.orientation)
        return dataclasses.replace(state, position=position, orientation=orientation)

    def _cook(self, state: OvercookedState, params: OvercookedParams) -> OvercookedState:
        """Time advances; old dynamics start full pots; every cooking soup ticks."""
        pot = jnp.asarray(self.terrain == POT)[:, None]
        soup = state.kind == SOUP
        full = (state.onions + state.tomatoes) == 3
        tick = jnp.where(params.old_dynamics & pot & soup & (state.tick < 0) & full, 0, state.tick)
        cooking = soup & (tick >= 0) & (tick < params.cook_time)
        return dataclasses.replace(state, tick=tick + cooking, time=state.time + 1)

    # ------------------------------------------------------------------------------------ observation
    def observe(self, state: OvercookedState, params: OvercookedParams) -> Array:
        """The observation this env was built with: ``encode`` or ``featurize`` (``[2, *obs_shape, B]``)."""
        if self.observation == "featurized":
            return featurize(self, state, params)
        return self.encode(state, params)

    def encode(self, state: OvercookedState, params: OvercookedParams) -> Array:
        """``uint8[2, width, height, 26, B]``: overcooked-ai's ``lossless_state_encoding`` for each agent
        (itself first), indexed ``[agent, x, y, channel, env]``. The remaining-cook-time channel saturates
        at 255 (overcooked-ai's classic cook time is 20).

        Two steps, because XLA's CPU backend writes the 26 channels of a cell as 26 scalar stores, once
        per channel, whatever computes them: first, per cell and agent, one int32 word holding every
        channel but the cook time at a fixed bit (``CHANNEL_SHIFT``), built in the state's ``[cell, env]``
        layout, where it is cheap; then each channel is ``word >> shift & mask``. Shift and mask are
        computed from an iota rather than read from a table, so XLA folds them into constants and
        vectorises the 26 stores (a table made them variables: 2.5M against 3.0M env steps/s on
        counter_circuit at 4,096 envs).
        Built batch-first and handed back batch-last: ``VecEnv`` moves the batch to the front again and
        XLA cancels the two moves. uint8 as JaxMARL's (networks cast on input).
        """
        num_envs = state.time.shape[0]
        width, height = self.layout.width, self.layout.height
        cell = jnp.arange(self.layout.num_cells, dtype=jnp.int32)[:, None]
        here = [cell == state.position[p][None] for p in range(2)]  # [C, B]

        def of_player_here(values: Array, default: int) -> Array:
            return jnp.where(here[0], values[0][None], jnp.where(here[1], values[1][None], default))

        lying = state.kind != NOTHING  # objects lie on counters and pots, players stand on floor
        item = jnp.where(lying, state.kind, of_player_here(state.held, NOTHING))
        onions = jnp.where(lying, state.onions, of_player_here(state.held_onions, 0))
        tomatoes = jnp.where(lying, state.tomatoes, of_player_here(state.held_tomatoes, 0))
        in_pot = jnp.asarray(self.terrain == POT)[:, None]
        soup, tick = item == SOUP, state.tick
        pot_idle, pot_busy = in_pot & soup & (tick < 0), in_pot & soup & (tick >= 0)
        ready = (pot_busy & (tick >= params.cook_time)) | (soup & ~in_pot)
        urgent = (params.max_steps - state.time) < params.urgency_steps

        def bit(flag: Array, channel: int) -> Array:
            return flag.astype(jnp.int32) << CHANNEL_SHIFT[channel]

        ingredients = onions | (tomatoes << 2)  # two 2-bit counts, as channels 16-17 or 18-19 lie
        ingredients_at = jnp.where(pot_idle, CHANNEL_SHIFT[16], CHANNEL_SHIFT[18])
        shared = (jnp.asarray(self.static_bits)[:, None] | jnp.where(soup, ingredients << ingredients_at, 0)
                  | bit(ready, 21) | bit(item == DISH, 22) | bit(item == ONION, 23) | bit(item == TOMATO, 24)
                  | bit(urgent, 25)[None])
        words = []
        for viewer in range(2):
            word = shared
            for p in range(2):
                slot = int(viewer != p)  # 0 for the viewer itself, 1 for the other
                player_bits = (1 << slot) | (1 << (2 + 4 * slot + state.orientation[p]))
                word = word | jnp.where(here[p], player_bits[None], 0)
            words.append(word)
        words.append(jnp.where(pot_busy, jnp.minimum(params.cook_time - tick, 255), 0))
        # The two agents' words and the cook time, stored as [B / block, 3, C, block] and read as
        # [B, 3, x, y]. Env-last ([3, C, B]) put a cell's words 4 * B bytes from the next cell's (16 KB at
        # 4,096 envs, a page apart), and the expansion, which walks the cells of one env, ran at 3.0M env
        # steps/s on counter_circuit against 4.6M with blocks of 32 envs (16 to 64 measure alike; 8 was
        # slower than env-last, which other batch sizes keep).
        block = next((size for size in (32, 16) if num_envs % size == 0), num_envs)
        cells = self.layout.num_cells
        blocked = jnp.stack([word.reshape(cells, num_envs // block, block).transpose(1, 0, 2)
                             for word in words], axis=1)
        per_cell = (blocked.transpose(0, 3, 1, 2).reshape(num_envs, 3, height, width)
                    .transpose(0, 1, 3, 2)[..., None])
        k = jnp.arange(NUM_CHANNELS, dtype=jnp.int32)
        shift, mask = channel_shift_and_mask(k)
        obs = jnp.where(k == COOK_CHANNEL, per_cell[:, 2:], (per_cell[:, :2] >> shift) & mask)
        return jnp.moveaxis(obs.astype(jnp.uint8), 0, -1)

    def render(self, state: OvercookedState, params: EnvParams | None = None) -> Array:
        """``uint8[height * 24, width * 24, 3]`` of one env: terrain, objects, pots (a dot per ingredient,
        a bar for cooking, green when ready) and the chefs (blue player 0, pink player 1) with a notch on
        the side they face and what they hold."""
        params = self.default_params if params is None else params
        assert isinstance(params, OvercookedParams)
        return render_kitchen(self.layout, state.position, state.orientation, state.held, state.kind,
                              state.onions, state.tomatoes, state.tick, jnp.asarray(params.cook_time))

    def _timestep(self, state: OvercookedState, sparse: Array, shaped: Array,
                  params: OvercookedParams) -> TimeStep:
        num_envs = state.time.shape[0]
        team = jnp.broadcast_to(sparse.sum(0)[None], (2, num_envs))
        truncated = jnp.broadcast_to((state.time >= params.max_steps)[None], (2, num_envs))
        return TimeStep(
            obs={"agents": self.observe(state, params)},
            reward={"agents": team},
            terminated={"agents": jnp.zeros((2, num_envs), bool)},
            truncated={"agents": truncated},
            action_mask={"agents": jnp.ones((2, 6, num_envs), bool)},
            info={"sparse_reward": sparse, "shaped_reward": shaped},
        )
