"""Overcooked V2: chefs cook recipes of up to ten ingredients (JaxMARL 0.2.0's ``overcooked_v2``).

The state is batch-last: every array ends in the env batch. The rules are written for one env and mapped
over the batch at the boundary (``reset_batch``/``step_batch``), each env drawing from its own key exactly
as JaxMARL's ``reset`` and ``step_env`` do, so ``AutoReset`` over this env reproduces JaxMARL's
auto-resetting ``step`` from the same keys. The default observation, most of a step's cost, is built for the
whole batch at once from bit-packed words (``_default_observation_batch``). One step:

1. **Move**: right, down, left and up turn the chef that way and step onto floor (the grid is clipped at its
   edge); stay and interact do neither. Chefs that would share a cell stay where they were (repeated until
   no two share one), then chefs that would swap cells stay too.
2. **Interact**, chef 0 first, each on the grid the previous one left, at the cell the chef faces: piles
   give an ingredient or a plate to empty hands; counters take or give one item; an idle pot takes an
   ingredient while it holds fewer than three (and starts cooking at three, or, with
   ``start_cooking_interaction``, when an empty-handed chef interacts); a cooked pot fills a held plate; the
   goal takes a plated dish (+``delivery_reward`` to every chef if it is the recipe); an idle button shows
   the recipe for ``indicator_activation_time`` steps at a cost of ``indicator_activation_cost``.
3. **Tick**: cooking pots count down and are cooked at zero; active buttons count down.
4. With ``sample_recipe_on_delivery`` a correct delivery draws a new recipe.

Items are bit fields, as in JaxMARL: bit 0 a plate, bit 1 cooked, then two bits per ingredient counting it.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.env import BatchNativeEnv
from jaxmarl_suite.core.spaces import Box, Discrete, Space
from jaxmarl_suite.core.types import EnvParams, TimeStep

from .layouts import (
    BUTTON_RECIPE_INDICATOR,
    EMPTY,
    GOAL,
    INGREDIENT_PILE_BASE,
    PLATE_PILE,
    POT,
    RECIPE_INDICATOR,
    WALL,
    Layout,
    get_layout,
)
from .rendering import render_kitchen

Array = jax.Array

RIGHT, DOWN, LEFT, UP_ACTION, STAY, INTERACT = range(6)
"""JaxMARL V2's action order (V1's Overcooked orders them north, south, east, west, stay, interact)."""
NUM_ACTIONS = 6
UP, DOWN_DIR, RIGHT_DIR, LEFT_DIR = range(4)
"""Facing directions, JaxMARL's ``Direction``: up, down, right, left."""
DIRECTION_VECTORS = np.array([(0, -1), (0, 1), (1, 0), (-1, 0)], np.int32)
"""``(dx, dy)`` of a step in each facing direction."""
ACTION_DIRECTION = np.array([RIGHT_DIR, DOWN_DIR, LEFT_DIR, UP, -1, -1], np.int32)
"""The facing each action turns to (-1: stay and interact keep it)."""
OPPOSITE = np.array([DOWN_DIR, UP, LEFT_DIR, RIGHT_DIR], np.int32)

PLATE = 1
COOKED = 2
MAX_COUNTED_INGREDIENTS = 15
"""Two-bit ingredient fields read when counting (an int32 holds at most 15 past the plate and cooked bits)."""
NUM_POT_FEATURES = 10
NUM_FEATURIZED_POTS = 2
PLAYER_FEATURES = 26 + NUM_FEATURIZED_POTS * NUM_POT_FEATURES
"""Featurized features of one chef (its own block; the observation adds offsets and the position)."""
OBSERVATION_TYPES = ("default", "featurized")
STATIC_LAYER_CODES = (WALL, GOAL, POT, RECIPE_INDICATOR, BUTTON_RECIPE_INDICATOR, PLATE_PILE)


def ingredient_bits(index: Any) -> Any:
    """The item word of one ingredient ``index`` (a 1 in its two-bit field)."""
    return 4 << (2 * index)


def ingredient_count(item: Array) -> Array:
    """How many ingredients an item word holds (plate and cooked bits ignored)."""
    fields = jnp.arange(MAX_COUNTED_INGREDIENTS, dtype=jnp.int32)
    return ((item[..., None] >> (2 + 2 * fields)) & 3).sum(-1)


@struct.dataclass
class OvercookedV2Params(EnvParams):
    """Traceable Overcooked V2 parameters (JaxMARL's ``settings`` constants and reward switches)."""

    max_steps: int = 400
    """Steps per episode; every chef is truncated at this step."""
    delivery_reward: float = 20.0
    """Team reward for delivering the recipe (minus this for a wrong dish with ``negative_rewards``)."""
    pot_cook_time: int = 20
    """Steps a pot cooks."""
    indicator_activation_time: int = 10
    """Steps a pressed button shows the recipe."""
    indicator_activation_cost: float = 5.0
    """Team reward lost per button press."""
    placement_in_pot_reward: float = 3.0
    """Shaped reward for putting an ingredient the recipe still needs into a pot."""
    pot_start_cooking_reward: float = 5.0
    """Shaped reward for starting a pot that holds the recipe (``start_cooking_interaction``)."""
    dish_pickup_reward: float = 5.0
    """Shaped reward for plating a cooked pot that holds the recipe."""
    plate_pickup_reward: float = 3.0
    """Shaped reward for taking a plate while fewer plates are held than pots hold something and no plate
    lies on a counter."""
    negative_rewards: bool = False
    """A wrong delivery costs ``delivery_reward``."""
    start_cooking_interaction: bool = False
    """Pots start cooking when an empty-handed chef interacts, not by themselves at three ingredients."""
    sample_recipe_on_delivery: bool = False
    """Draw a new recipe after each correct delivery (else only at reset)."""


@struct.dataclass
class OvercookedV2State:
    """Batch-last state of ``B`` kitchens with ``n`` chefs (shapes below end in ``B``)."""

    agent_pos: Array
    """``int32[n, 2, B]``: each chef's ``(x, y)``."""
    agent_dir: Array
    """``int32[n, B]``: each chef's facing (0 up, 1 down, 2 right, 3 left)."""
    agent_inventory: Array
    """``int32[n, B]``: the item word each chef holds (0: nothing)."""
    grid: Array
    """``int32[height, width, 3, B]``: per cell the static object, the item word on it (a pot's contents),
    and the pot's remaining cook time or the button's remaining display time."""
    recipe: Array
    """``int32[B]``: the recipe's item word (its ingredients, no plate or cooked bit)."""
    new_correct_delivery: Array
    """``bool[B]``: a correct dish was delivered on the last step."""
    ingredient_permutations: Array
    """``int32[n, num_ingredients, B]``: how each chef's observation relabels ingredients (identity unless
    ``op_ingredient_permutations``)."""
    time: Array
    """``int32[B]``: steps taken in the episode."""


def _min_moves_tables(move_area: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every floor cell and facing: the fewest actions after which a chef faces each non-floor cell from
    a neighbouring floor cell (``inf`` if never), other chefs ignored. A move action steps onto floor or, when
    blocked, only turns; each costs one. Returns ``(position_to_index int32[H, W], float32[P, 4, H, W])``."""
    height, width = move_area.shape
    cells = np.argwhere(move_area)
    index = np.full((height, width), -1, np.int32)
    index[cells[:, 0], cells[:, 1]] = np.arange(len(cells), dtype=np.int32)
    tables = np.full((len(cells), 4, height, width), np.inf, np.float32)
    for p, (y0, x0) in enumerate(cells):
        for facing in range(4):
            dist = np.full((height, width, 4), np.inf, np.float32)
            dist[y0, x0, facing] = 0
            queue = deque([(int(y0), int(x0), facing)])
            while queue:
                y, x, d = queue.popleft()
                for a, (dx, dy) in enumerate(DIRECTION_VECTORS):
                    ny, nx = y + dy, x + dx
                    if not (0 <= ny < height and 0 <= nx < width and move_area[ny, nx]):
                        ny, nx = y, x
                    if dist[ny, nx, a] == np.inf:
                        dist[ny, nx, a] = dist[y, x, d] + 1
                        queue.append((ny, nx, a))
            for ty in range(height):
                for tx in range(width):
                    if move_area[ty, tx]:
                        continue
                    best = np.inf
                    for d, (dx, dy) in enumerate(DIRECTION_VECTORS):
                        ny, nx = ty + dy, tx + dx
                        if 0 <= ny < height and 0 <= nx < width:
                            best = min(best, dist[ny, nx, OPPOSITE[d]])
                    tables[p, facing, ty, tx] = best
    return index, tables


def _floor_regions(move_area: np.ndarray) -> np.ndarray:
    """``int32[H, W]``: a label per 4-connected floor region (-1 off the floor)."""
    height, width = move_area.shape
    labels = np.full((height, width), -1, np.int32)
    for y0, x0 in np.argwhere(move_area):
        if labels[y0, x0] >= 0:
            continue
        labels[y0, x0] = y0 * width + x0
        queue = deque([(int(y0), int(x0))])
        while queue:
            y, x = queue.popleft()
            for dx, dy in DIRECTION_VECTORS:
                ny, nx = y + dy, x + dx
                if 0 <= ny < height and 0 <= nx < width and move_area[ny, nx] and labels[ny, nx] < 0:
                    labels[ny, nx] = labels[y0, x0]
                    queue.append((ny, nx))
    return labels


class OvercookedV2(BatchNativeEnv):
    """Overcooked V2 on one layout (see the module docstring for the rules and README.md for the spaces).

    Agents ``agent_0..agent_{n-1}``, one per ``A`` of the layout, six actions each in JaxMARL V2's order
    (right, down, left, up, stay, interact). They form one group, ``agents``, unless ``observation_type``
    is a list with both types, which gives each agent its own group. ``reward`` is the team's reward, to every
    chef; ``info["shaped_reward"]`` holds each chef's own shaped reward.

    Args:
        layout: a layout name (``LAYOUT_NAMES``), a ``Layout``, or a grid string.
        max_steps: steps per episode.
        observation_type: ``"default"`` (grid layers), ``"featurized"`` (overcooked-ai's hand-made features;
            one-ingredient layouts only), or one of these per agent.
        agent_view_size: if set, default observations show only the ``2 * size + 1`` square around the chef.
        random_reset: start with random positions, facings, held items, counters and pots.
        random_agent_positions: start with random positions and facings (each chef stays in its room).
        start_cooking_interaction: pots start cooking on an empty-handed interaction.
        negative_rewards: wrong deliveries cost the delivery reward.
        sample_recipe_on_delivery: draw a new recipe after each correct delivery.
        indicate_successful_delivery: default observations gain a layer flagging the goal after a correct
            delivery.
        op_ingredient_permutations: ingredient indices whose labels each chef's observation shuffles (a
            permutation per chef, drawn at reset).
    """

    render_fps = 5
    episodes_end_together = True
    all_actions_legal = True

    def __init__(self, layout: str | Layout = "cramped_room", max_steps: int = 400,
                 observation_type: str | Sequence[str] = "default", agent_view_size: int | None = None,
                 random_reset: bool = False, random_agent_positions: bool = False,
                 start_cooking_interaction: bool = False, negative_rewards: bool = False,
                 sample_recipe_on_delivery: bool = False, indicate_successful_delivery: bool = False,
                 op_ingredient_permutations: Sequence[int] | None = None) -> None:
        self.layout = get_layout(layout)
        n = self.layout.num_agents
        num_ingredients = self.layout.num_ingredients
        if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive int, got {max_steps!r}")
        flags = {"random_reset": random_reset, "random_agent_positions": random_agent_positions,
                 "start_cooking_interaction": start_cooking_interaction, "negative_rewards": negative_rewards,
                 "sample_recipe_on_delivery": sample_recipe_on_delivery,
                 "indicate_successful_delivery": indicate_successful_delivery}
        for name, value in flags.items():
            if not isinstance(value, bool | np.bool_):
                raise TypeError(f"{name} must be a bool, got {value!r}")
        types = [observation_type] * n if isinstance(observation_type, str) else list(observation_type)
        if len(types) != n:
            raise ValueError(f"observation_type lists {len(types)} types but the layout has {n} agents")
        types = [str(getattr(t, "value", t)) for t in types]
        for obs_type in types:
            if obs_type not in OBSERVATION_TYPES:
                raise ValueError(f"observation_type must be one of {OBSERVATION_TYPES}, got {obs_type!r}")
        if "featurized" in types and num_ingredients > 1:
            raise ValueError(f"the featurized observation needs a one-ingredient layout; "
                             f"{self.layout.name!r} has {num_ingredients}")
        if agent_view_size is not None:
            if (not isinstance(agent_view_size, int) or isinstance(agent_view_size, bool)
                    or agent_view_size < 1):
                raise ValueError(f"agent_view_size must be None or a positive int, got {agent_view_size!r}")
            if "featurized" in types:
                raise ValueError("agent_view_size applies to the default observation only, not to featurized")
        perm = list(op_ingredient_permutations or [])
        if perm and (len(set(perm)) != len(perm) or not all(
                isinstance(i, int | np.integer) and 0 <= i < num_ingredients for i in perm)):
            raise ValueError(f"op_ingredient_permutations must be distinct ingredient indices in "
                             f"[0, {num_ingredients}), got {op_ingredient_permutations!r}")
        self.observation_types = tuple(types)
        self.agent_view_size = agent_view_size
        self.random_start_state = random_reset
        self.random_agent_positions = random_agent_positions
        self.indicate_successful_delivery = indicate_successful_delivery
        self.op_ingredient_permutations = tuple(int(i) for i in perm)
        # A fixed start with the packed observation is as cheap as a step: AutoReset then selects a fresh
        # start every step instead of branching (see MultiAgentEnv.cheap_reset).
        self.cheap_reset = not (random_reset or random_agent_positions) and self._packed_observation
        self.reference = "jaxmarl.overcooked_v2"
        names = tuple(f"agent_{i}" for i in range(n))
        self.groups = ({"agents": names} if len(set(types)) == 1 else {name: (name,) for name in names})
        self._params = OvercookedV2Params(
            max_steps=max_steps, negative_rewards=negative_rewards,
            start_cooking_interaction=start_cooking_interaction,
            sample_recipe_on_delivery=sample_recipe_on_delivery)
        self.static_objects = np.asarray(self.layout.static_objects, np.int32)
        self.move_area = self.static_objects == EMPTY
        self.regions = _floor_regions(self.move_area)
        self.recipes = np.asarray(self.layout.possible_recipes, np.int32).reshape(-1, 3)
        if "featurized" in types:
            self.position_index, self.min_moves = _min_moves_tables(self.move_area)

    @property
    def random_reset(self) -> bool:  # type: ignore[override]
        """Whether two keys can start differently in what the agents observe."""
        shown = "default" in self.observation_types and bool((self.static_objects == RECIPE_INDICATOR).any())
        return self.random_start_state or self.random_agent_positions or (shown and len(self.recipes) > 1)

    @property
    def default_params(self) -> OvercookedV2Params:
        """Parameters from the constructor's arguments and JaxMARL's constants."""
        return self._params

    @property
    def num_layers(self) -> int:
        """Channels of the default observation: ``25 + 5 * num_ingredients`` (+1 with
        ``indicate_successful_delivery``)."""
        return 25 + 5 * self.layout.num_ingredients + int(self.indicate_successful_delivery)

    def agent_observation_shape(self, agent: int) -> tuple[int, ...]:
        """The observation shape of ``agent_{agent}``."""
        if self.observation_types[agent] == "featurized":
            return (PLAYER_FEATURES * self.layout.num_agents + 2 * self.layout.num_agents,)
        if self.agent_view_size is not None:
            side = 2 * self.agent_view_size + 1
            return (side, side, self.num_layers)
        return (self.layout.height, self.layout.width, self.num_layers)

    def observation_space(self, group: str) -> Space:
        """Default: ``int32[height, width, layers]`` (or the ``2 * agent_view_size + 1`` square), small
        counts; featurized: ``float32[48 * n]`` (signed offsets)."""
        agent = self.agents.index(self.groups[group][0])
        shape = self.agent_observation_shape(agent)
        if self.observation_types[agent] == "featurized":
            return Box(-np.inf, np.inf, shape, np.float32)
        return Box(0, 255, shape, np.int32)

    def action_space(self, group: str) -> Discrete:
        """Right, down, left, up, stay, interact."""
        return Discrete(NUM_ACTIONS)

    # ------------------------------------------------------------------------------ batch boundary
    def reset_batch(self, keys: Array, params: EnvParams) -> tuple[OvercookedV2State, TimeStep]:
        """Start ``B`` kitchens, each from its own key (see ``start_one``)."""
        assert isinstance(params, OvercookedV2Params)
        state = jax.vmap(self.start_one, in_axes=(0, None), out_axes=-1)(keys, params)
        zeros = jnp.zeros((self.layout.num_agents, keys.shape[0]), jnp.float32)
        return state, self._timestep(state, zeros, zeros, params)

    def step_batch(self, keys: Array, state: OvercookedV2State, actions: dict[str, Array],
                   params: EnvParams) -> tuple[OvercookedV2State, TimeStep]:
        """Step ``B`` kitchens; ``actions[group]`` is ``int[n_in_group, B]``."""
        assert isinstance(params, OvercookedV2Params)
        state, reward, shaped = jax.vmap(self.transition_one, in_axes=(0, -1, -1, None), out_axes=-1)(
            keys, state, actions, params)
        return state, self._timestep(state, reward, shaped, params)

    # ------------------------------------------------------------------------------------- reset
    def start_one(self, key: Array, params: OvercookedV2Params) -> OvercookedV2State:
        """One kitchen's start, drawing from ``key`` as JaxMARL's ``reset`` does: the recipe from the first
        split's second half, the observation permutations from its first half, then (from a further split)
        the random start."""
        n, num_ingredients = self.layout.num_agents, self.layout.num_ingredients
        identity = jnp.arange(num_ingredients, dtype=jnp.int32)
        static = jnp.asarray(self.static_objects)
        grid = jnp.stack([static, jnp.zeros_like(static), jnp.zeros_like(static)], axis=-1)
        key, recipe_key = jax.random.split(key)
        state = OvercookedV2State(
            agent_pos=jnp.asarray(self.layout.agent_positions, jnp.int32).reshape(n, 2),
            agent_dir=jnp.full((n,), UP, jnp.int32),
            agent_inventory=jnp.zeros((n,), jnp.int32),
            grid=grid,
            recipe=self._draw_recipe(recipe_key),
            new_correct_delivery=jnp.array(False),
            ingredient_permutations=(self._draw_permutations(key) if self.op_ingredient_permutations
                                     else jnp.broadcast_to(identity, (n, num_ingredients))),
            time=jnp.array(0, jnp.int32),
        )
        _, start_key = jax.random.split(key)
        if self.random_start_state:
            state = self._random_start(state, start_key, params)
        elif self.random_agent_positions:
            state = self._random_positions(state, start_key)
        return state

    def _draw_recipe(self, key: Array) -> Array:
        recipes = jnp.asarray(self.recipes)
        chosen = recipes[jax.random.randint(key, (), 0, recipes.shape[0])]
        return ingredient_bits(chosen).sum()

    def _draw_permutations(self, key: Array) -> Array:
        indices = jnp.asarray(self.op_ingredient_permutations, jnp.int32)
        identity = jnp.arange(self.layout.num_ingredients, dtype=jnp.int32)
        _, subkey = jax.random.split(key)
        agent_keys = jax.random.split(subkey, self.layout.num_agents)
        return jax.vmap(lambda k: identity.at[indices].set(jax.random.permutation(k, indices)))(agent_keys)

    def _random_positions(self, state: OvercookedV2State, key: Array) -> OvercookedV2State:
        """Each chef, in order, on a uniformly random free floor cell of its own region; random facings."""
        height, width = self.static_objects.shape
        regions = jnp.asarray(self.regions)
        key, cells_key = jax.random.split(key)
        agent_keys = jax.random.split(cells_key, self.layout.num_agents)
        taken = jnp.zeros((height, width), bool)
        positions = []
        for agent in range(self.layout.num_agents):
            x, y = state.agent_pos[agent, 0], state.agent_pos[agent, 1]
            allowed = ((regions == regions[y, x]) & ~taken).reshape(-1)
            cell = jax.random.choice(agent_keys[agent], allowed.size, (), p=allowed / jnp.sum(allowed))
            new_x, new_y = cell % width, cell // width
            taken = taken.at[new_y, new_x].set(True)
            positions.append(jnp.stack([new_x, new_y]))
        _, facing_key = jax.random.split(key)
        facings = jax.random.randint(facing_key, (self.layout.num_agents,), 0, 4)
        return dataclasses.replace(state, agent_pos=jnp.stack(positions).astype(jnp.int32), agent_dir=facings)

    def _random_start(self, state: OvercookedV2State, key: Array, params: OvercookedV2Params
                      ) -> OvercookedV2State:
        """Random positions, then random held items (nothing, a plate, an ingredient or a plated recipe) and
        random counters and pots, each from its own key."""
        key, positions_key = jax.random.split(key)
        state = self._random_positions(state, positions_key)
        recipes = jnp.asarray(self.recipes)
        num_ingredients = self.layout.num_ingredients

        def dish(dish_key: Array) -> Array:
            chosen = recipes[jax.random.randint(dish_key, (), 0, recipes.shape[0])]
            return ingredient_bits(chosen).sum() | COOKED | PLATE

        def held_item(agent_key: Array) -> Array:
            dish_key, ingredient_key, pick_key = jax.random.split(agent_key, 3)
            ingredient = jax.random.randint(ingredient_key, (), 0, num_ingredients)
            options = jnp.array([0, PLATE, ingredient_bits(ingredient), dish(dish_key)], jnp.int32)
            return jax.random.choice(pick_key, options, (), p=jnp.array([0.5, 0.1, 0.25, 0.15]))

        key, items_key = jax.random.split(key)
        inventory = jax.vmap(held_item)(jax.random.split(items_key, self.layout.num_agents))

        def cell_state(cell: Array, cell_key: Array) -> Array:
            # pot: untouched, filling, cooking or cooked
            pick_key, ingredients_key, count_key, timer_key = jax.random.split(cell_key, 4)
            drawn = ingredient_bits(jax.random.randint(ingredients_key, (3,), 0, num_ingredients))
            count = jax.random.randint(count_key, (), 1, 4)
            partial = jnp.sum(drawn * (jnp.arange(3) < count))
            # without start_cooking_interaction a cooking pot must be full
            cooking = jnp.where(params.start_cooking_interaction, partial, jnp.sum(drawn))
            timer = jax.random.randint(timer_key, (), 0, params.pot_cook_time) + 1
            pot_options = jnp.array([cell, [cell[0], partial, 0], [cell[0], cooking, timer],
                                     [cell[0], cooking | COOKED, 0]])
            pot = jax.random.choice(pick_key, pot_options, p=jnp.array([0.4, 0.35, 0.15, 0.1]))
            # counter: empty, a plate, an ingredient or a plated recipe
            pick_key, ingredient_key, dish_key = jax.random.split(cell_key, 3)
            ingredient = jax.random.randint(ingredient_key, (), 0, num_ingredients)
            counter_options = jnp.array([0, PLATE, ingredient_bits(ingredient), dish(dish_key)])
            item = jax.random.choice(pick_key, counter_options, p=jnp.array([0.5, 0.1, 0.3, 0.1]))
            counter = cell.at[1].set(item)
            return jnp.where(cell[0] == POT, pot, jnp.where(cell[0] == WALL, counter, cell))

        key, grid_key = jax.random.split(key)
        height, width = self.static_objects.shape
        cell_keys = jax.random.split(grid_key, (height, width))
        grid = jax.vmap(jax.vmap(cell_state))(state.grid, cell_keys)
        return dataclasses.replace(state, agent_inventory=inventory, grid=grid)

    # -------------------------------------------------------------------------------------- step
    def transition_one(self, key: Array, state: OvercookedV2State, actions: dict[str, Array],
                       params: OvercookedV2Params) -> tuple[OvercookedV2State, Array, Array]:
        """One kitchen's step (``actions[group]`` is ``int[n_in_group]``), drawing as JaxMARL's ``step_env``:
        the next state, the team reward and each chef's shaped reward (``float32[n]`` each)."""
        n = self.layout.num_agents
        action = jnp.concatenate([jnp.asarray(actions[g]).reshape(-1) for g in self.groups]).astype(jnp.int32)
        pos, facing = self._move(state, action)
        grid = state.grid
        held_before = state.agent_inventory
        inventory = []
        shaped = []
        reward = jnp.array(0.0, jnp.float32)
        delivered = jnp.array(False)
        for agent in range(n):
            new_grid, held, agent_delivered, agent_reward, agent_shaped = self._interact(
                grid, pos[agent], facing[agent], held_before[agent], held_before, state.recipe, params)
            acts = action[agent] == INTERACT
            grid = jnp.where(acts, new_grid, grid)
            inventory.append(jnp.where(acts, held, held_before[agent]))
            delivered = delivered | (acts & agent_delivered)
            reward = reward + jnp.where(acts, agent_reward, 0.0)
            shaped.append(jnp.where(acts, agent_shaped, 0.0))
        grid = self._tick(grid)
        _, recipe_key = jax.random.split(key)
        recipe = jnp.where(delivered & params.sample_recipe_on_delivery, self._draw_recipe(recipe_key),
                           state.recipe)
        state = dataclasses.replace(state, agent_pos=pos, agent_dir=facing,
                                    agent_inventory=jnp.stack(inventory), grid=grid, recipe=recipe,
                                    new_correct_delivery=delivered,
                                    time=state.time + 1)
        team = jnp.broadcast_to(reward, (n,)).astype(jnp.float32)
        return state, team, jnp.stack(shaped).astype(jnp.float32)

    def _move(self, state: OvercookedV2State, action: Array) -> tuple[Array, Array]:
        """Positions and facings after the move phase (``int32[n, 2]``, ``int32[n]``)."""
        height, width = self.static_objects.shape
        direction = jnp.asarray(ACTION_DIRECTION)[action]
        moving = direction >= 0
        step = jnp.asarray(DIRECTION_VECTORS)[jnp.maximum(direction, 0)]
        old = state.agent_pos
        target = jnp.clip(old + step, 0, jnp.array([width - 1, height - 1]))
        onto_floor = state.grid[target[:, 1], target[:, 0], 0] == EMPTY
        new = jnp.where((moving & onto_floor)[:, None], target, old)
        facing = jnp.where(moving, direction, state.agent_dir)
        # Chefs landing on one cell stay put; staying can make new clashes, so repeat (n rounds suffice).
        blocked = jnp.zeros(old.shape[0], bool)
        for _ in range(old.shape[0]):
            where_now = jnp.where(blocked[:, None], old, new)
            shared = jnp.all(where_now[:, None] == where_now[None], axis=-1).sum(1) > 1
            blocked = blocked | shared
        new = jnp.where(blocked[:, None], old, new)
        # Chefs trading cells both stay (checked once, after the clashes).
        onto_other = jnp.all(new[:, None] == old[None], axis=-1) & ~jnp.eye(old.shape[0], dtype=bool)
        swapped = jnp.any(onto_other & onto_other.T, axis=0)
        return jnp.where(swapped[:, None], old, new), facing

    def _interact(self, grid: Array, pos: Array, facing: Array, held: Array, held_before: Array,
                  recipe: Array, params: OvercookedV2Params) -> tuple[Array, Array, Array, Array, Array]:
        """One chef interacting with the cell it faces: ``(grid, held, correct delivery, team reward, shaped
        reward)``. ``held_before`` is every chef's item before this step's interactions."""
        ahead = pos + jnp.asarray(DIRECTION_VECTORS)[facing]
        cell = grid[ahead[1], ahead[0]]
        kind, contents, timer = cell[0], cell[1], cell[2]
        plated_recipe = recipe | PLATE | COOKED

        is_pot = kind == POT
        is_counter = kind == WALL
        is_button = kind == BUTTON_RECIPE_INDICATOR
        is_ingredient_pile = kind >= INGREDIENT_PILE_BASE
        is_pile = (kind == PLATE_PILE) | is_ingredient_pile
        cell_empty = contents == 0
        hands_empty = held == 0
        holds_ingredient = ((held >> 2) != 0) & ((held & PLATE) == 0)
        holds_plate = held == PLATE
        holds_dish = (held & COOKED) != 0
        combined = contents + held

        pot_cooking = is_pot & (timer > 0)
        pot_cooked = is_pot & ((contents & COOKED) != 0)
        pot_idle = is_pot & ~pot_cooking & ~pot_cooked

        plates_dish = pot_cooked & holds_plate
        takes = (is_pile & hands_empty) | plates_dish | (is_counter & ~cell_empty & hands_empty)
        presses = is_button & hands_empty & cell_empty
        fills_pot = pot_idle & holds_ingredient & (ingredient_count(contents) != 3)
        drops = (is_counter & cell_empty & ~hands_empty) | fills_pot
        delivers = (kind == GOAL) & holds_dish
        unchanged = ~takes & ~drops & ~delivers

        new_contents = jnp.where(drops, combined, jnp.where(unchanged, contents, 0))
        by_hand = jnp.asarray(params.start_cooking_interaction)
        starts_by_hand = pot_idle & ~cell_empty & hands_empty & by_hand
        starts_by_itself = pot_idle & (ingredient_count(new_contents) == 3) & ~by_hand
        starts = starts_by_hand | starts_by_itself
        new_timer = jnp.where(starts, params.pot_cook_time,
                              jnp.where(presses, params.indicator_activation_time, timer))
        new_cell = jnp.stack([kind, new_contents, new_timer]).astype(grid.dtype)
        new_grid = grid.at[ahead[1], ahead[0]].set(new_cell)

        pile_item = jnp.where(kind == PLATE_PILE, PLATE,
                              jnp.where(is_ingredient_pile, ingredient_bits(kind - INGREDIENT_PILE_BASE), 0))
        new_held = jnp.where(takes, pile_item + combined, jnp.where(unchanged, held, 0))

        correct = held == plated_recipe
        wrong_sign = jnp.where(params.negative_rewards, -1.0, 0.0)
        reward = jnp.where(delivers, jnp.where(correct, 1.0, wrong_sign) * params.delivery_reward, 0.0)
        reward = reward - jnp.where(presses, params.indicator_activation_cost, 0.0)

        shaped = jnp.where(plates_dish & (combined == plated_recipe), params.dish_pickup_reward, 0.0)
        # Usefulness compares the counts of the held ingredient; JaxMARL multiplies its +1/-1 sign by the
        # usefulness flag itself, so a useless placement never costs anything, negative_rewards or not.
        field = held | (held << 1)
        useful = (contents & field) < (recipe & field)
        shaped = shaped + jnp.where(fills_pot & useful, params.placement_in_pot_reward, 0.0)
        useful_start = starts_by_hand & (contents == recipe)
        shaped = shaped + jnp.where(useful_start, params.pot_start_cooking_reward, 0.0)
        # the plate rule reads the grid as this chef found it
        plates_held = jnp.sum(held_before == PLATE)
        filled_pots = jnp.sum((grid[:, :, 0] == POT) & (grid[:, :, 1] != 0))
        no_loose_plates = jnp.sum(grid[:, :, 1] == PLATE) == 0
        takes_plate = takes & (new_held == PLATE)
        shaped = shaped + jnp.where(takes_plate & (plates_held < filled_pots) & no_loose_plates,
                                    params.plate_pickup_reward, 0.0)
        return new_grid, new_held, delivers & correct, reward, shaped

    def _tick(self, grid: Array) -> Array:
        """Cooking pots count down (cooked at zero); shown buttons count down."""
        kind, contents, timer = grid[..., 0], grid[..., 1], grid[..., 2]
        cooking = (kind == POT) & (timer > 0)
        timer = jnp.where(cooking, timer - 1,
                          jnp.where(kind == BUTTON_RECIPE_INDICATOR, jnp.maximum(timer - 1, 0), timer))
        contents = jnp.where(cooking & (timer == 0), contents | COOKED, contents)
        return jnp.stack([kind, contents, timer], axis=-1)

    # ------------------------------------------------------------------------------------- render
    def render(self, state: OvercookedV2State, params: EnvParams | None = None) -> Array:
        """``uint8[height * 24, width * 24, 3]`` of one env: the kitchen, items (a white disc is a plate,
        coloured dots its ingredients), pots (ingredient dots, an orange cooking bar, green when cooked), the
        recipe on indicators and shown buttons, the chefs (a notch on the side they face, their item in the
        middle) and, with ``agent_view_size``, each chef's view window outlined in its colour."""
        params = self.default_params if params is None else params
        assert isinstance(params, OvercookedV2Params)
        return render_kitchen(self.static_objects, self.layout.num_ingredients, state.grid, state.recipe,
                              state.agent_pos, state.agent_dir, state.agent_inventory,
                              jnp.asarray(params.pot_cook_time), self.agent_view_size)

    # ------------------------------------------------------------------------------- observations
    def _timestep(self, state: OvercookedV2State, reward: Array, shaped: Array,
                  params: OvercookedV2Params) -> TimeStep:
        """The batch's timestep from its state and ``float32[n, B]`` team and shaped rewards."""
        n, num_envs = self.layout.num_agents, state.time.shape[0]
        if self._packed_observation:
            per_agent: Any = self._default_observation_batch(state)  # [n, ..., B]
        else:  # one array per agent: mixed observation types differ in shape
            per_agent = jax.vmap(self.observe, in_axes=-1, out_axes=-1)(state)
        if "agents" in self.groups:
            obs = {"agents": jnp.stack(list(per_agent)) if isinstance(per_agent, list) else per_agent}
            split = lambda x: {"agents": x}  # noqa: E731
        else:
            obs = {f"agent_{i}": per_agent[i][None] for i in range(n)}
            split = lambda x: {f"agent_{i}": x[i:i + 1] for i in range(n)}  # noqa: E731
        truncated = jnp.broadcast_to(state.time >= params.max_steps, (n, num_envs))
        return TimeStep(
            obs=obs,
            reward=split(reward),
            terminated=split(jnp.zeros((n, num_envs), bool)),
            truncated=split(truncated),
            action_mask=split(jnp.ones((n, NUM_ACTIONS, num_envs), bool)),
            info={"shaped_reward": shaped},
        )

    def observe(self, state: OvercookedV2State) -> list[Array]:
        """Each agent's observation of one kitchen (``int32`` default layers or ``float32`` features)."""
        types = self.observation_types
        default = self.default_observation(state) if "default" in types else None
        featurized = self.featurized_observation(state) if "featurized" in types else None
        return [default[i] if t == "default" else featurized[i]  # type: ignore[index]
                for i, t in enumerate(types)]

    def default_observation(self, state: OvercookedV2State) -> Array:
        """``int32[n, height, width, layers]`` (or the view squares): per observer, its own position, facing
        and held item, the same summed over the other chefs, the static objects, the ingredient piles, the
        items on cells, the recipe where shown, pot timers (and the delivery flag), ingredients relabelled
        by the observer's permutation."""
        height, width = self.static_objects.shape
        num_ingredients = self.layout.num_ingredients
        grid = state.grid
        kind, contents, timer = grid[..., 0], grid[..., 1], grid[..., 2]
        shifts = jnp.array([0, 1] + [2 * (i + 1) for i in range(num_ingredients)], jnp.int32)
        masks = jnp.array([1, 1] + [3] * num_ingredients, jnp.int32)

        def item_layers(items: Array, relabel: Array) -> Array:
            layers = (items[..., None] >> shifts) & masks
            return jnp.concatenate([layers[..., :2], layers[..., 2:][..., relabel]], axis=-1)

        rows, cols = jnp.arange(height)[:, None], jnp.arange(width)[None, :]
        here = ((rows[None] == state.agent_pos[:, 1, None, None])
                & (cols[None] == state.agent_pos[:, 0, None, None])).astype(jnp.int32)  # [n, H, W]
        facing = (state.agent_dir[:, None] == jnp.arange(4)).astype(jnp.int32)  # [n, 4]
        held_here = here * state.agent_inventory[:, None, None]

        static_layers = (kind[..., None] == jnp.asarray(STATIC_LAYER_CODES)).astype(jnp.int32)
        shown = (kind == RECIPE_INDICATOR) | ((kind == BUTTON_RECIPE_INDICATOR) & (timer > 0))
        recipe_cells = jnp.where(shown, state.recipe, 0)
        extra = [jnp.where(kind == POT, timer, 0)]
        if self.indicate_successful_delivery:
            extra.append(jnp.where(kind == GOAL, state.new_correct_delivery, 0).astype(jnp.int32))
        extra_layers = jnp.stack(extra, axis=-1)

        def observer(relabel: Array) -> tuple[Array, Array]:
            chefs = jnp.concatenate([here[..., None], here[..., None] * facing[:, None, None, :],
                                     item_layers(held_here, relabel)], axis=-1)  # [n, H, W, 7 + I]
            piles = (kind[..., None] == INGREDIENT_PILE_BASE + relabel).astype(jnp.int32)
            common = jnp.concatenate([static_layers, piles, item_layers(contents, relabel),
                                      item_layers(recipe_cells, relabel), extra_layers], axis=-1)
            return chefs, common

        views = []
        for agent in range(self.layout.num_agents):
            chefs, common = observer(state.ingredient_permutations[agent])
            own = chefs[agent]
            views.append(jnp.concatenate([own, chefs.sum(0) - own, common], axis=-1))
        obs = jnp.stack(views)
        if self.agent_view_size is not None:
            size = self.agent_view_size
            side = 2 * size + 1
            padded = jnp.pad(obs, ((0, 0), (size, size), (size, size), (0, 0)))
            obs = jax.vmap(lambda o, p: jax.lax.dynamic_slice(o, (p[1], p[0], 0), (side, side, o.shape[-1])))(
                padded, state.agent_pos)
        return obs

    # ---------------------------------------------------------------------- batched default observation
    # The default observation is what a step costs: n * H * W * (25 + 5I) int32 per env, and it was 80% of a
    # step written per env (each layer a select and a concatenate). Every layer but the pot timer holds 0-3,
    # so it is built as 2-bit slots packed into 16-slot uint32 words per cell, batch-first, where a cell's
    # words are a few integer ops, then each layer is ``word >> 2 * (slot % 16) & 3`` with the shift from an
    # iota, which XLA folds into constants and vectorises.
    def _slot_layout(self) -> dict[str, int]:
        """First slot of each packed block. The pot timer is not packed: ``"timer"`` is its layer, after the
        recipe, and the delivery flag's slot is that index, the flag being the layer after it."""
        i = self.layout.num_ingredients
        return {"own": 0, "others": 7 + i, "static": 14 + 2 * i, "piles": 20 + 2 * i,
                "contents": 20 + 3 * i, "recipe": 22 + 4 * i, "timer": 24 + 5 * i, "flag": 24 + 5 * i}

    @property
    def _packed_observation(self) -> bool:
        """Whether the batch observes through ``_default_observation_batch``: every chef's observation is the
        default one with ingredients unshuffled, and at most 9 ingredients."""
        # a chef's block (7 + ingredients fields of 2 bits) must fit one uint32
        return (set(self.observation_types) == {"default"} and not self.op_ingredient_permutations
                and 7 + self.layout.num_ingredients <= 16)

    @property
    def _packed_slots(self) -> int:
        return self._slot_layout()["flag"] + int(self.indicate_successful_delivery)

    @property
    def _num_words(self) -> int:
        return -(-self._packed_slots // 16)

    def _place(self, value: Array, slot: int, slots: int) -> list[Array]:
        """``value`` (``slots`` 2-bit fields, uint32) put at packed ``slot``: its part of every word."""
        parts = []
        for word in range(self._num_words):
            offset = 2 * (slot - 16 * word)  # where the value's first bit falls in this word
            if offset >= 32 or offset + 2 * slots <= 0:
                parts.append(jnp.zeros_like(value))
            else:
                parts.append(value << offset if offset >= 0 else value >> -offset)
        return parts

    def _static_words(self) -> np.ndarray:
        """``uint32[words, cells]``: the static-object and pile layers, which never change."""
        kinds = self.static_objects.reshape(-1)
        words = np.zeros((self._num_words, kinds.size), np.uint32)
        slots = self._slot_layout()
        flags = [(slots["static"] + k, kinds == code) for k, code in enumerate(STATIC_LAYER_CODES)]
        flags += [(slots["piles"] + j, kinds == INGREDIENT_PILE_BASE + j)
                  for j in range(self.layout.num_ingredients)]
        for slot, on in flags:
            word, within = divmod(slot, 16)
            words[word] |= on.astype(np.uint32) << np.uint32(2 * within)
        return words

    def _default_observation_batch(self, state: OvercookedV2State) -> Array:
        """``int32[n, height, width, layers, B]`` (or the view squares): ``default_observation`` of every env,
        for chefs that see ingredients unshuffled."""
        height, width = self.static_objects.shape
        n, num_ingredients = self.layout.num_agents, self.layout.num_ingredients
        cells, num_envs = height * width, state.time.shape[0]
        slots = self._slot_layout()
        # Built batch-first, each env's cells together, from the few state arrays moved to the front (moving
        # the packed words or the layers instead was most of the cost), and handed back batch-last, which
        # VecEnv's move to the front cancels. Arrays below are [B, observer, cell] (axes of size 1 where
        # every observer or env sees the same).
        kind = jnp.asarray(self.static_objects.reshape(1, 1, -1))  # no rule changes a cell's kind
        static = [jnp.asarray(w)[None, None] for w in self._static_words()]
        contents = state.grid[:, :, 1].reshape(cells, num_envs).T.astype(jnp.uint32)[:, None]
        timer = state.grid[:, :, 2].reshape(cells, num_envs).T[:, None]

        def spread(item: Array) -> Array:
            """An item word's plate, cooked and ingredient-count fields as consecutive 2-bit slots (item words
            hold no bits past the layout's ingredients, so nothing spills into the next block)."""
            item = item.astype(jnp.uint32)
            return (item & 1) | ((item & 2) << 1) | ((item & ~np.uint32(3)) << 2)

        shown = (kind == RECIPE_INDICATOR) | ((kind == BUTTON_RECIPE_INDICATOR) & (timer > 0))
        recipe = jnp.where(shown, spread(state.recipe)[:, None, None], np.uint32(0))
        words = [w | c | r for w, c, r in zip(
            static, self._place(spread(contents), slots["contents"], 2 + num_ingredients),
            self._place(recipe, slots["recipe"], 2 + num_ingredients), strict=True)]
        if self.indicate_successful_delivery:
            flag = ((kind == GOAL) & state.new_correct_delivery[:, None, None]).astype(jnp.uint32)
            words = [w | f for w, f in zip(words, self._place(flag, slots["flag"], 1), strict=True)]
        pot_timer = jnp.where(kind == POT, timer, 0).astype(jnp.uint32)
        words = [*words, pot_timer]
        # each chef's block where it stands, as the observer itself and as another chef (OR-ed: chefs never
        # share a cell, so this is the reference's sum over the other chefs)
        chef = (1 | (jnp.uint32(1) << (2 + 2 * state.agent_dir).astype(jnp.uint32))
                | (spread(state.agent_inventory) << 10)).T  # [B, n]
        if self.agent_view_size is None:
            rows, cols = height, width
            position = (state.agent_pos[:, 1] * width + state.agent_pos[:, 0]).T  # [B, n]
            cell = jnp.arange(cells, dtype=jnp.int32)[None, None]
            chef_at = [cell == position[:, a, None, None] for a in range(n)]  # [B, 1, cells]
        else:
            # The observer's square, cut from the kitchen's shared words padded with empty cells (all layers
            # 0); the chefs are added inside the square, where only their offsets matter.
            size = self.agent_view_size
            rows = cols = 2 * size + 1
            shared = jnp.stack(jnp.broadcast_arrays(*words), axis=-1)[:, 0]  # [B, cells, words + 1]
            padded = jnp.pad(shared.reshape(num_envs, height, width, -1),
                             ((0, 0), (size, size), (size, size), (0, 0)))
            # a chef's (x, y) in the kitchen is its square's top-left corner in the padded kitchen
            corner = state.agent_pos.transpose(2, 0, 1)  # [B, n, (x, y)]

            def cut(grid: Array, at: Array) -> Array:
                return jax.lax.dynamic_slice(grid, (at[1], at[0], 0), (rows, cols, grid.shape[-1]))

            square = jax.vmap(jax.vmap(cut, in_axes=(None, 0)))(padded, corner)  # [B, n, side, side, words]
            words = list(jnp.moveaxis(square.reshape(num_envs, n, rows * cols, -1), -1, 0))
            dy, dx = np.divmod(np.arange(rows * cols), cols)
            offset = corner[:, None, :, :] - corner[:, :, None, :] + size  # [B, observer, chef, (x, y)]
            chef_at = [(offset[:, :, a, 0, None] == dx) & (offset[:, :, a, 1, None] == dy) for a in range(n)]
        for a in range(n):
            itself = jnp.asarray(np.arange(n) == a)[None, :, None]
            block = chef[:, a, None, None]
            own = self._place(block, slots["own"], 7 + num_ingredients)
            other = self._place(block, slots["others"], 7 + num_ingredients)
            words[:-1] = [w | jnp.where(chef_at[a], jnp.where(itself, o, t), np.uint32(0))
                          for w, o, t in zip(words[:-1], own, other, strict=True)]
        words = jnp.stack(jnp.broadcast_arrays(*words), axis=-1)  # [B, n, cells seen, words + 1]
        # Layer k's word and shift are arithmetic on an iota, not a table, so XLA folds them into constants
        # and vectorises the stores (the pot timer, unpacked, is the layer before the flag).
        timer_at = slots["timer"]
        k = jnp.arange(self.num_layers, dtype=jnp.uint32)
        slot = jnp.where(k < timer_at, k, k - 1)
        word = words[..., :1]
        for index in range(1, self._num_words):
            word = jnp.where(slot // 16 == index, words[..., index:index + 1], word)
        obs = jnp.where(k == timer_at, words[..., -1:], (word >> (2 * (slot % 16))) & 3)
        obs = obs.astype(jnp.int32).reshape(num_envs, n, rows, cols, -1)
        return jnp.moveaxis(obs, 0, -1)

    def _closest(self, targets: Array, pos: Array, facing: Array) -> tuple[Array, Array]:
        """The target cell reachable in the fewest actions (ties: first in reading order) as ``(x, y)``, and
        whether any is reachable; a chef standing on a target finds itself."""
        width = self.static_objects.shape[1]
        index = jnp.asarray(self.position_index)[pos[1], pos[0]]
        costs = jnp.where(targets, jnp.asarray(self.min_moves)[index, facing], jnp.inf)
        best = jnp.argmin(costs)
        found = jnp.stack([best % width, best // width]).astype(jnp.int32)
        on_target = targets[pos[1], pos[0]] | (index < 0)
        return jnp.where(on_target, pos, found), jnp.where(on_target, index >= 0, jnp.isfinite(costs).any())

    def featurized_observation(self, state: OvercookedV2State) -> Array:
        """``float32[n, 48 * n]``: overcooked-ai's featurized state as JaxMARL computes it (see README.md)."""
        n = self.layout.num_agents
        grid = state.grid
        kind, contents, timer = grid[..., 0], grid[..., 1], grid[..., 2]
        onion = ingredient_bits(0)
        soup = 3 * onion | COOKED | PLATE
        regions = jnp.asarray(self.regions)
        wall = ~(kind == EMPTY)

        def player(pos: Array, facing: Array, held: Array) -> Array:
            x, y = pos[0], pos[1]
            room = regions == regions[y, x]
            # the room plus the cells bordering it (where its chefs can reach things)
            reach = (room | jnp.pad(room[1:], ((0, 1), (0, 0))) | jnp.pad(room[:-1], ((1, 0), (0, 0)))
                     | jnp.pad(room[:, 1:], ((0, 0), (0, 1))) | jnp.pad(room[:, :-1], ((0, 0), (1, 0))))

            def offset_to(static_code: int | None = None, item: int | None = None,
                          only_empty: bool = False) -> Array:
                targets = jnp.zeros_like(room)
                if static_code is not None:
                    targets = targets | ((kind == static_code) & ((contents == 0) if only_empty else True))
                if item is not None:
                    targets = targets | ((contents == item) & (kind != POT))
                    targets = targets.at[y, x].set(held == item)
                found, ok = self._closest(targets & reach, pos, facing)
                return jnp.where(ok, found - pos, 0)

            closest = [
                offset_to(INGREDIENT_PILE_BASE, onion),
                offset_to(INGREDIENT_PILE_BASE + 1, ingredient_bits(1)),
                offset_to(PLATE_PILE, PLATE),
                offset_to(item=soup),
            ]
            soup_onions = jnp.where(jnp.any(contents == soup) | (held == soup), 3, 0)
            goal = offset_to(GOAL)
            empty_counter = offset_to(WALL, only_empty=True)

            pots_left = (kind == POT) & reach
            pot_blocks = []
            for _ in range(NUM_FEATURIZED_POTS):
                at, ok = self._closest(pots_left, pos, facing)
                pot_contents, pot_timer = contents[at[1], at[0]], timer[at[1], at[0]]
                count = ingredient_count(pot_contents)
                flags = jnp.stack([1, pot_contents == 0, count == 3, pot_timer > 0,
                                   (pot_contents & COOKED) == COOKED, count, 0, pot_timer])
                block = jnp.concatenate([flags.astype(jnp.float32), (at - pos).astype(jnp.float32)])
                pot_blocks.append(jnp.where(ok, block, 0.0))
                pots_left = pots_left.at[at[1], at[0]].set(False)

            walls = jnp.stack([wall[y - 1, x], wall[y + 1, x], wall[y, x + 1], wall[y, x - 1]])
            return jnp.concatenate([
                jax.nn.one_hot(facing, 4),
                (held == jnp.array([onion, soup, PLATE, ingredient_bits(1)])).astype(jnp.float32),
                *[c.astype(jnp.float32) for c in closest],
                jnp.stack([soup_onions, 0]).astype(jnp.float32),
                goal.astype(jnp.float32), empty_counter.astype(jnp.float32),
                *pot_blocks, walls.astype(jnp.float32),
            ])

        features = jax.vmap(player)(state.agent_pos, state.agent_dir, state.agent_inventory)
        rows = []
        for agent in range(n):
            others = [j for j in range(n) if j != agent]
            offsets = [(state.agent_pos[j] - state.agent_pos[agent]).astype(jnp.float32) for j in others]
            rows.append(jnp.concatenate([features[agent], *[features[j] for j in others], *offsets,
                                         state.agent_pos[agent].astype(jnp.float32)]))
        return jnp.stack(rows)
