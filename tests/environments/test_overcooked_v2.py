"""Overcooked V2's rules on hand-built kitchens, with expected values worked out from the rules (the
module docstring of ``overcooked_v2.py``), not read off the code; plus layouts, spaces and validation."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmarl_suite
from jaxmarl_suite.environments.overcooked_v2 import LAYOUT_NAMES, OvercookedV2, get_layout, layout_from_grid
from jaxmarl_suite.environments.overcooked_v2.layouts import GOAL, POT, WALL

RIGHT, DOWN, LEFT, UP, STAY, INTERACT = range(6)
FACE_UP, FACE_DOWN, FACE_RIGHT, FACE_LEFT = range(4)
ONION = 4  # ingredient 0: a 1 in the field at bits 2-3
PLATE, COOKED = 1, 2
ONION_SOUP = 3 * ONION  # the recipe's item word
PLATED_SOUP = ONION_SOUP | COOKED | PLATE

# (x, y): pile 0 at (0, 1), pot at (2, 0), goal at (4, 1), plates at (1, 3), counters elsewhere on the rim.
KITCHEN = "WWPWW\n0A AX\nW   W\nWBWWW"
THREE_CHEFS = "WWPWWW\n0A A X\nW  A W\nWBWWWW"
NINE_PILES = "W012345678W\nW    A    X\nW  A      W\nWBWWPWWRWWW"
BUTTON_KITCHEN = "WWLWW\n0A AR\nW   W\nWBWXW"


def make(grid: str = KITCHEN, **kwargs) -> OvercookedV2:
    return OvercookedV2(layout_from_grid(grid, possible_recipes=[[0, 0, 0]]), **kwargs)


@functools.cache
def compiled(env: OvercookedV2):
    """``(reset, step)`` jitted once per env."""
    return jax.jit(env.reset), jax.jit(env.step)


def start(env: OvercookedV2, pos: list[tuple[int, int]], facing: list[int], held: list[int]):
    state, _ = compiled(env)[0](jax.random.PRNGKey(0), env.default_params)
    return state.replace(agent_pos=jnp.asarray(pos, jnp.int32), agent_dir=jnp.asarray(facing, jnp.int32),
                         agent_inventory=jnp.asarray(held, jnp.int32))


def step(env: OvercookedV2, state, actions: list[int], params=None):
    params = env.default_params if params is None else params
    return compiled(env)[1](jax.random.PRNGKey(1), state, {"agents": jnp.asarray(actions, jnp.int32)}, params)


def test_all_jaxmarl_layouts_are_registered_under_their_names() -> None:
    assert len(LAYOUT_NAMES) == 23
    for name in LAYOUT_NAMES:
        assert jaxmarl_suite.make(f"OvercookedV2_{name}").layout.name == name
    assert get_layout("cramped_room").agent_positions == ((3, 1), (1, 1))  # listed in reverse, as JaxMARL
    assert get_layout("grounded_coord_simple").possible_recipes == ((0, 0, 0), (1, 1, 1))
    assert get_layout("grounded_coord_ring").num_agents == 2


def test_bad_arguments_fail_clearly() -> None:
    with pytest.raises(ValueError, match="closest: cramped_room"):
        OvercookedV2("cramped_rom")
    with pytest.raises(ValueError, match="one-ingredient layout"):
        OvercookedV2("cramped_room_v2", observation_type="featurized")
    with pytest.raises(ValueError, match="default observation only"):
        OvercookedV2("cramped_room", observation_type="featurized", agent_view_size=2)
    with pytest.raises(ValueError, match="lists 1 types but the layout has 2"):
        OvercookedV2("cramped_room", observation_type=["default"])
    with pytest.raises(ValueError, match="observation_type must be one of"):
        OvercookedV2("cramped_room", observation_type="pixels")
    with pytest.raises(ValueError, match="op_ingredient_permutations"):
        OvercookedV2("cramped_room_v2", op_ingredient_permutations=[0, 2])
    with pytest.raises(ValueError, match="needs possible_recipes"):
        layout_from_grid("WWPWW\n0A AX\nWBWWW")
    with pytest.raises(TypeError, match="negative_rewards must be a bool"):
        OvercookedV2("cramped_room", negative_rewards=1)


def test_spaces_and_groups() -> None:
    env = OvercookedV2("cramped_room")  # 4 x 5, one ingredient: 25 + 5 layers
    assert env.groups == {"agents": ("agent_0", "agent_1")}
    assert env.observation_space("agents").shape == (4, 5, 30)
    assert OvercookedV2("cramped_room_v2", indicate_successful_delivery=True).observation_space(
        "agents").shape == (4, 5, 36)
    assert OvercookedV2("cramped_room", agent_view_size=2).observation_space("agents").shape == (5, 5, 30)
    mixed = OvercookedV2("cramped_room", observation_type=["default", "featurized"])
    assert mixed.groups == {"agent_0": ("agent_0",), "agent_1": ("agent_1",)}
    assert mixed.observation_space("agent_1").shape == (96,)
    _, ts = compiled(mixed)[0](jax.random.PRNGKey(0), mixed.default_params)
    assert ts.obs["agent_0"].shape == (1, 4, 5, 30) and ts.obs["agent_1"].shape == (1, 96)
    assert ts.obs["agent_0"].dtype == jnp.int32 and ts.obs["agent_1"].dtype == jnp.float32


def test_actions_are_right_down_left_up_and_walls_only_turn() -> None:
    env = make()
    state = start(env, [(1, 2), (3, 2)], [FACE_UP, FACE_UP], [0, 0])
    moved, _ = step(env, state, [RIGHT, UP])
    assert moved.agent_pos.tolist() == [[2, 2], [3, 1]]
    assert moved.agent_dir.tolist() == [FACE_RIGHT, FACE_UP]
    # (1, 3) below agent 0 is the plate pile: it only turns down; agent 1 steps left to (2, 1)
    turned, _ = step(env, start(env, [(1, 2), (3, 1)], [FACE_UP, FACE_UP], [0, 0]), [DOWN, LEFT])
    assert turned.agent_pos.tolist() == [[1, 2], [2, 1]]
    assert turned.agent_dir.tolist() == [FACE_DOWN, FACE_LEFT]


def test_chefs_that_would_meet_or_swap_both_stay() -> None:
    env = make()
    meet, _ = step(env, start(env, [(1, 2), (3, 2)], [FACE_UP, FACE_UP], [0, 0]), [RIGHT, LEFT])
    assert meet.agent_pos.tolist() == [[1, 2], [3, 2]]
    assert meet.agent_dir.tolist() == [FACE_RIGHT, FACE_LEFT]  # they still turn
    swap, _ = step(env, start(env, [(1, 2), (2, 2)], [FACE_UP, FACE_UP], [0, 0]), [RIGHT, LEFT])
    assert swap.agent_pos.tolist() == [[1, 2], [2, 2]]


def test_three_onions_cook_by_themselves_and_useful_placements_are_shaped() -> None:
    env = make()
    state, ts = step(env, start(env, [(1, 1), (3, 2)], [FACE_LEFT, FACE_UP], [0, 0]), [INTERACT, STAY])
    assert state.agent_inventory.tolist() == [ONION, 0]  # from the pile
    state = state.replace(agent_pos=jnp.asarray([[2, 1], [3, 2]], jnp.int32),
                          agent_dir=jnp.asarray([FACE_UP, FACE_UP], jnp.int32))
    for placed in range(1, 4):
        state = state.replace(agent_inventory=jnp.asarray([ONION, 0], jnp.int32))
        state, ts = step(env, state, [INTERACT, STAY])
        assert int(state.grid[0, 2, 1]) == placed * ONION and ts.info["shaped_reward"].tolist() == [3.0, 0.0]
    # the third onion starts the 20-step cook, and the step's tick already takes one off
    assert int(state.grid[0, 2, 2]) == 19
    state = state.replace(agent_inventory=jnp.asarray([ONION, 0], jnp.int32))
    state, ts = step(env, state, [INTERACT, STAY])  # a cooking pot takes nothing
    assert state.agent_inventory.tolist() == [ONION, 0] and int(state.grid[0, 2, 2]) == 18
    for _ in range(18):
        state, _ = step(env, state, [STAY, STAY])
    assert int(state.grid[0, 2, 2]) == 0 and int(state.grid[0, 2, 1]) == ONION_SOUP | COOKED
    # a plate takes the cooked soup: the dish pick-up is shaped +5
    state = state.replace(agent_inventory=jnp.asarray([PLATE, 0], jnp.int32))
    state, ts = step(env, state, [INTERACT, STAY])
    assert state.agent_inventory.tolist() == [PLATED_SOUP, 0] and int(state.grid[0, 2, 1]) == 0
    assert ts.info["shaped_reward"].tolist() == [5.0, 0.0]


def test_start_cooking_interaction_waits_for_an_empty_handed_chef() -> None:
    env = make(start_cooking_interaction=True)
    state = start(env, [(2, 1), (3, 2)], [FACE_UP, FACE_UP], [ONION, 0])
    state = state.replace(grid=state.grid.at[0, 2, 1].set(2 * ONION))
    state, _ = step(env, state, [INTERACT, STAY])
    assert int(state.grid[0, 2, 1]) == ONION_SOUP and int(state.grid[0, 2, 2]) == 0  # full, not cooking
    state, ts = step(env, state, [INTERACT, STAY])
    assert int(state.grid[0, 2, 2]) == 19 and ts.info["shaped_reward"].tolist() == [5.0, 0.0]


def test_delivery_rewards_every_chef_and_wrong_dishes_cost_only_with_negative_rewards() -> None:
    env = make()
    chefs = [(1, 2), (3, 1)], [FACE_UP, FACE_RIGHT]
    state, ts = step(env, start(env, *chefs, [0, PLATED_SOUP]), [STAY, INTERACT])
    assert ts.reward["agents"].tolist() == [20.0, 20.0] and bool(state.new_correct_delivery)
    assert state.agent_inventory.tolist() == [0, 0]
    wrong = (2 * ONION) | COOKED | PLATE
    _, ts = step(env, start(env, *chefs, [0, wrong]), [STAY, INTERACT])
    assert ts.reward["agents"].tolist() == [0.0, 0.0]
    strict = make(negative_rewards=True)
    state, ts = step(strict, start(strict, *chefs, [0, wrong]), [STAY, INTERACT])
    assert ts.reward["agents"].tolist() == [-20.0, -20.0] and not bool(state.new_correct_delivery)
    # with indicate_successful_delivery, the last layer flags the goal, at (4, 1), after a correct delivery
    flagged = make(indicate_successful_delivery=True)
    _, ts = step(flagged, start(flagged, *chefs, [0, PLATED_SOUP]), [STAY, INTERACT])
    flag = np.asarray(ts.obs["agents"])[..., -1]  # [agent, y, x]
    assert flag[:, 1, 4].tolist() == [1, 1] and flag.sum() == 2
    _, ts = step(flagged, start(flagged, *chefs, [0, wrong]), [STAY, INTERACT])
    assert not np.asarray(ts.obs["agents"])[..., -1].any()


def test_counters_take_and_give_one_item_and_plates_are_shaped_only_when_useful() -> None:
    env = make()
    # agent 0 at (1, 2) faces the plate pile below; the pot holds an onion, nobody holds a plate: +3
    state = start(env, [(1, 2), (3, 2)], [FACE_DOWN, FACE_RIGHT], [0, ONION])
    state = state.replace(grid=state.grid.at[0, 2, 1].set(ONION))
    state, ts = step(env, state, [INTERACT, INTERACT])
    assert state.agent_inventory.tolist() == [PLATE, 0] and ts.info["shaped_reward"].tolist() == [3.0, 0.0]
    assert int(state.grid[2, 4, 1]) == ONION  # agent 1 put its onion on the counter to its right
    state, _ = step(env, state, [STAY, INTERACT])
    assert state.agent_inventory.tolist() == [PLATE, ONION] and int(state.grid[2, 4, 1]) == 0
    # with a plate lying on a counter a new plate earns nothing
    state = start(env, [(1, 2), (3, 2)], [FACE_DOWN, FACE_UP], [0, 0])
    state = state.replace(grid=state.grid.at[0, 2, 1].set(ONION).at[2, 0, 1].set(PLATE))
    _, ts = step(env, state, [INTERACT, STAY])
    assert ts.info["shaped_reward"].tolist() == [0.0, 0.0]


def test_the_button_shows_the_recipe_for_ten_steps_at_a_cost() -> None:
    env = make(BUTTON_KITCHEN)
    state = start(env, [(2, 1), (3, 2)], [FACE_UP, FACE_UP], [0, 0])
    recipe_layer = 28  # 8 own + 8 others + 6 static + 1 pile + 3 items, then plate, cooked, onions
    _, first = compiled(env)[0](jax.random.PRNGKey(0), env.default_params)
    assert int(first.obs["agents"][0, 0, 2, recipe_layer]) == 0  # the button is off at the start
    state, ts = step(env, state, [INTERACT, STAY])
    assert ts.reward["agents"].tolist() == [-5.0, -5.0] and int(state.grid[0, 2, 2]) == 9
    assert int(ts.obs["agents"][0, 0, 2, recipe_layer]) == 3  # three onions shown on the button
    assert int(ts.obs["agents"][0, 1, 4, recipe_layer]) == 3  # and always on the indicator
    for _ in range(9):
        state, ts = step(env, state, [STAY, STAY])
    assert int(state.grid[0, 2, 2]) == 0 and int(ts.obs["agents"][0, 0, 2, recipe_layer]) == 0


def test_observation_layers_and_view_window() -> None:
    env = make()
    state = start(env, [(1, 1), (3, 2)], [FACE_LEFT, FACE_DOWN], [0, ONION])
    _, ts = step(env, state, [STAY, STAY])
    obs = np.asarray(ts.obs["agents"])  # [agent, y, x, layer]
    # layers: self (pos, 4 facings, plate, cooked, onions), others (same), 6 static, 1 pile, items, recipe,
    # pot timer
    assert obs[0, 1, 1, 0] == 1 and obs[0, 1, 1, 1 + FACE_LEFT] == 1 and obs[0, 2, 3, 8] == 1
    assert obs[1, 2, 3, 0] == 1 and obs[1, 2, 3, 7] == 1  # agent 1 sees its own onion
    assert obs[0, 2, 3, 8 + 7] == 1  # and agent 0 sees it on the other chef
    static = obs[0, ..., 16:22]
    assert static[0, 0, 0] == 1 and static[1, 4, 1] == 1 and static[0, 2, 2] == 1  # wall, goal, pot
    assert obs[0, 1, 0, 22] == 1  # the onion pile
    viewed = make(agent_view_size=2)
    _, ts = step(viewed, state, [STAY, STAY])
    window = np.asarray(ts.obs["agents"])
    assert window.shape == (2, 5, 5, 30)
    # agent 0 at (1, 1) sees rows and columns -1..3: the first row and column lie off the grid
    np.testing.assert_array_equal(window[0, 1:, 1:], obs[0, 0:4, 0:4])
    assert not window[0, 0].any() and not window[0, :, 0].any()


@pytest.mark.parametrize("layout, kwargs", [
    ("grounded_coord_simple", {"agent_view_size": 2, "indicate_successful_delivery": True}),
    (NINE_PILES, {}),  # the most ingredients packed: a chef's block fills a word, the recipe's straddles two
    (THREE_CHEFS, {"agent_view_size": 1}),  # two other chefs in one block
    # four ingredients: 44 packed layers over three words
    pytest.param("fun_coordination", {}, marks=pytest.mark.slow),
    pytest.param("long_room", {"agent_view_size": 1}, marks=pytest.mark.slow),  # one chef
    pytest.param(NINE_PILES, {"agent_view_size": 2}, marks=pytest.mark.slow),
])
def test_the_packed_batch_observation_equals_the_layer_by_layer_one(layout: str, kwargs: dict) -> None:
    """Batches observe through bit-packed words (``_default_observation_batch``); the per-env
    ``default_observation`` builds each layer by itself. On random starts (items everywhere, pots at every
    stage, random places) and the steps after them, the two agree layer for layer; JaxMARL parity
    (test_overcooked_v2_parity.py) checks the batch path against the reference."""
    if layout == NINE_PILES:
        layout = layout_from_grid(NINE_PILES, possible_recipes=[[0, 4, 8], [1, 1, 7]])
    elif layout == THREE_CHEFS:
        layout = layout_from_grid(THREE_CHEFS, possible_recipes=[[0, 0, 0]])
    env = OvercookedV2(layout, random_reset=True, **kwargs)
    assert env._packed_observation
    params = env.default_params
    batch, n = 32, env.layout.num_agents
    reset, step_batch = jax.jit(env.reset_batch), jax.jit(env.step_batch)
    observe_each = jax.jit(jax.vmap(env.default_observation, in_axes=-1, out_axes=-1))
    state, ts = reset(jax.random.split(jax.random.PRNGKey(3), batch), params)
    for t in range(12):
        packed = ts.obs["agents"]
        np.testing.assert_array_equal(packed, observe_each(state))
        assert packed.dtype == jnp.int32 and np.asarray(packed).any()
        actions = jax.random.randint(jax.random.PRNGKey(t), (n, batch), 0, 6)
        state, ts = step_batch(jax.random.split(jax.random.PRNGKey(50 + t), batch), state,
                               {"agents": actions}, params)


def test_ten_ingredients_observe_layer_by_layer() -> None:
    """A chef's packed block (7 + ingredients 2-bit fields) must fit 32 bits: ten ingredients observe
    through the per-env path (its layers are the reference; the shape is checked)."""
    env = OvercookedV2(layout_from_grid(NINE_PILES.replace("678", "789", 1).replace("W  ", "6  ", 1),
                                        possible_recipes=[[0, 9, 9]]))
    assert env.layout.num_ingredients == 10 and not env._packed_observation
    _, ts = env.reset(jax.random.PRNGKey(0))
    assert ts.obs["agents"].shape == (2, 4, 11, 25 + 50)


def test_episodes_are_truncated_at_max_steps_and_never_terminate() -> None:
    env = make(max_steps=3)
    state, _ = compiled(env)[0](jax.random.PRNGKey(0), env.default_params)
    flags = []
    for _ in range(3):
        state, ts = step(env, state, [STAY, STAY])
        flags.append((bool(ts.truncated["agents"].all()), bool(ts.terminated["agents"].any())))
    assert flags == [(False, False), (False, False), (True, False)]


def test_static_objects_of_a_layout() -> None:
    layout = layout_from_grid(KITCHEN, possible_recipes=[[0, 0, 0]])
    assert layout.static_objects[0, 2] == POT and layout.static_objects[1, 4] == GOAL
    assert layout.static_objects[0, 0] == WALL and layout.agent_positions == ((1, 1), (3, 1))


def test_render_draws_the_kitchen_and_view_windows() -> None:
    env = make(agent_view_size=1)
    state = start(env, [(1, 1), (3, 2)], [FACE_LEFT, FACE_DOWN], [0, ONION])
    frame = np.asarray(jax.jit(env.render)(state))
    assert frame.shape == (4 * 24, 5 * 24, 3) and frame.dtype == np.uint8
    plain = np.asarray(jax.jit(make().render)(state))
    assert (frame != plain).any()  # the windows are drawn
    assert env.renders


def test_a_single_chef_gets_a_featurized_observation() -> None:
    env = OvercookedV2("long_room", observation_type="featurized")  # one chef, facing up at (13, 1)
    assert env.num_agents == 1 and env.observation_space("agents").shape == (48,)
    _, ts = compiled(env)[0](jax.random.PRNGKey(0), env.default_params)
    features = np.asarray(ts.obs["agents"][0])
    assert features[:4].tolist() == [1, 0, 0, 0]  # facing up
    assert features[-2:].tolist() == [13, 1]  # its own position closes the vector
    # the pot is right next to it at (14, 1): the first pot block exists, is empty, offset (1, 0)
    pot = features[22:32]  # after facing 4, held 4, six offsets 12 and soup counts 2
    assert pot[:2].tolist() == [1, 1] and pot[-2:].tolist() == [1, 0]
