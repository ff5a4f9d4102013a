"""RWARE rules on hand-built states (expected values worked out from the rules), spaces, argument checks,
batching, rendering and the emulation of CPython's set layout that networkx's tie-break depends on."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.core.spaces import Discrete, MultiDiscrete
from jaxmarl_suite.environments.rware import RobotWarehouse, RobotWarehouseParams, RobotWarehouseState
from jaxmarl_suite.environments.rware.rware import _set_table, cell_hash_bits

UP, DOWN, LEFT, RIGHT = range(4)
NOOP, FWD, TURN_L, TURN_R, TOGGLE = range(5)


def shelf_at(env: RobotWarehouse, x: int, y: int) -> int:
    """The index of the shelf that starts at ``(x, y)``."""
    return int(np.flatnonzero((env.shelf_cells[:, 0] == x) & (env.shelf_cells[:, 1] == y))[0])


def build(env: RobotWarehouse, robots: list[tuple[int, int, int]], carrying: dict[int, int] | None = None,
          queue: list[int] | None = None, **fields: Any) -> RobotWarehouseState:
    """A state with robots at ``(x, y, facing)``, robot ``i`` carrying shelf ``carrying[i]`` (moved onto
    the robot) and the given request queue."""
    state, _ = env.reset(jax.random.key(0))
    carried = np.full(len(robots), -1, np.int32)
    shelf_pos = np.array(env.shelf_cells)
    for robot, shelf in (carrying or {}).items():
        carried[robot] = shelf
        shelf_pos[shelf] = robots[robot][:2]
    changes = {
        "agent_pos": jnp.asarray([r[:2] for r in robots], jnp.int32),
        "agent_dir": jnp.asarray([r[2] for r in robots], jnp.int32),
        "carried": jnp.asarray(carried), "shelf_pos": jnp.asarray(shelf_pos),
    }
    if queue is not None:
        changes["request_queue"] = jnp.asarray(queue, jnp.int32)
    changes.update(fields)
    return dataclasses.replace(state, **changes)


_ENVS: dict[str, RobotWarehouse] = {}
_STEPS: dict[int, Any] = {}


def make(**kwargs: Any) -> RobotWarehouse:
    """One env per argument set, so tests share its compiled step."""
    key = repr(sorted(kwargs.items()))
    if key not in _ENVS:
        _ENVS[key] = RobotWarehouse(**kwargs)
    return _ENVS[key]


def step(env: RobotWarehouse, state: RobotWarehouseState, actions: list[int], key: int = 0,
         params: RobotWarehouseParams | None = None) -> tuple:
    """``env``'s jitted step with ``actions`` for ``agents``."""
    if id(env) not in _STEPS:
        _STEPS[id(env)] = jax.jit(env.step)
    params = env.default_params if params is None else params
    return _STEPS[id(env)](jax.random.key(key), state, {"agents": jnp.asarray(actions, jnp.int32)}, params)


def positions(state: RobotWarehouseState) -> list[list[int]]:
    return np.asarray(state.agent_pos).tolist()


# ------------------------------------------------------------------------------------------- layout
@pytest.mark.parametrize(("rows", "columns", "size", "shelves", "goals"), [
    (1, 3, (11, 10), 32, [[4, 10], [5, 10]]),
    (2, 3, (20, 10), 80, [[4, 19], [5, 19]]),
    (2, 5, (20, 16), 144, [[7, 19], [8, 19]]),
    (3, 5, (29, 16), 224, [[7, 28], [8, 28]]),
])
def test_registered_layouts(rows: int, columns: int, size: tuple[int, int], shelves: int,
                            goals: list[list[int]]) -> None:
    env = RobotWarehouse(shelf_columns=columns, shelf_rows=rows)
    assert (env.height, env.width) == size
    assert env.num_shelves == shelves
    assert env.goals.tolist() == goals


def test_layout_string() -> None:
    env = RobotWarehouse(layout="""
        x.x
        ...
        g.g
    """, request_queue_size=1)
    assert (env.height, env.width) == (3, 3)
    assert env.shelf_cells.tolist() == [[0, 0], [2, 0]]
    assert env.goals.tolist() == [[0, 2], [2, 2]]


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"shelf_columns": 2}, ValueError), ({"num_agents": 0}, ValueError), ({"msg_bits": -1}, ValueError),
    ({"sensor_range": 1.5}, ValueError), ({"max_steps": 0}, ValueError),
    ({"max_inactivity_steps": 0}, ValueError), ({"request_queue_size": 33}, ValueError),
    ({"reward_type": "team"}, ValueError), ({"observation_type": "pixels"}, ValueError),
    ({"image_observation_layers": ("walls",)}, ValueError),
    ({"image_observation_layers": "agents"}, TypeError),
    ({"layout": "x.\n.", "request_queue_size": 0}, ValueError), ({"layout": "x.\n.."}, ValueError),
    ({"layout": "xg\n.q"}, ValueError), ({"layout": 3}, TypeError),
    ({"normalised_coordinates": "yes"}, TypeError), ({"image_observation_directional": 1}, TypeError),
    ({"num_agents": 111}, ValueError), ({"num_agents": True}, ValueError),
])
def test_bad_arguments_raise(kwargs: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        RobotWarehouse(**kwargs)


def test_spaces() -> None:
    env = RobotWarehouse()
    assert env.observation_space("agents").shape == (71,)
    assert env.action_space("agents") == Discrete(5)
    assert env.all_actions_legal
    _, timestep = jax.eval_shape(env.reset, jax.random.key(0))
    assert timestep.action_mask["agents"].shape == (2, 5) and timestep.obs["agents"].shape == (2, 71)
    talking = RobotWarehouse(msg_bits=2, sensor_range=2)
    assert talking.observation_space("agents").shape == (8 + 25 * 9,)
    assert talking.action_space("agents") == MultiDiscrete([5, 2, 2])
    _, timestep = jax.eval_shape(talking.reset, jax.random.key(0))
    assert timestep.action_mask == {} and timestep.obs["agents"].shape == (2, 233)
    image = RobotWarehouse(observation_type="image", image_observation_layers=("agents", "agent_direction"))
    assert image.observation_space("agents").shape == (2, 3, 3)
    assert float(image.observation_space("agents").high.max()) == 4.0
    assert RobotWarehouse(observation_type="image_dict").observation_space("agents").shape == (6 + 45,)


def test_reset_places_robots_and_requests() -> None:
    env = RobotWarehouse(num_agents=6, request_queue_size=5)
    for seed in range(5):
        state, timestep = env.reset(jax.random.key(seed))
        cells = {tuple(p) for p in positions(state)}
        assert len(cells) == 6
        assert len(set(np.asarray(state.request_queue).tolist())) == 5
        assert np.array_equal(state.shelf_pos, env.shelf_cells)
        assert bool((state.carried == -1).all()) and int(state.step) == 0
        assert not bool(timestep.terminated["agents"].any() | timestep.truncated["agents"].any())


# -------------------------------------------------------------------------------------------- moves
def test_head_on_swap_blocks_everyone_in_it() -> None:
    env = make(num_agents=3)
    state = build(env, [(4, 0, RIGHT), (5, 0, LEFT), (3, 0, RIGHT)])
    new, _ = step(env, state, [FWD, FWD, FWD])
    assert positions(new) == [[4, 0], [5, 0], [3, 0]]


def test_rotation_of_four_moves_and_its_tail_waits() -> None:
    env = make(num_agents=4)
    state = build(env, [(0, 0, RIGHT), (1, 0, DOWN), (1, 1, LEFT), (0, 1, UP)])
    new, _ = step(env, state, [FWD] * 4)
    assert positions(new) == [[1, 0], [1, 1], [0, 1], [0, 0]]
    # three robots turning round a corner into each other's cells, with robot 3 queued behind robot 0
    state = build(env, [(0, 0, RIGHT), (1, 0, DOWN), (1, 1, LEFT), (0, 1, UP)])
    new, _ = step(env, state, [FWD, FWD, FWD, NOOP])
    assert positions(new) == [[0, 0], [1, 0], [1, 1], [0, 1]]  # the chain ends at a robot that stays
    state = build(env, [(0, 0, RIGHT), (1, 0, DOWN), (0, 1, UP), (0, 2, UP)])
    new, _ = step(env, state, [FWD, FWD, FWD, FWD])
    assert positions(new) == [[1, 0], [1, 1], [0, 0], [0, 1]]  # a chain into a free cell moves whole


def test_contested_cell_goes_to_the_longest_chain_then_the_first_robot() -> None:
    env = make(num_agents=3)
    # robot 0 alone against the chain 1 -> 2, all heading for (5, 0): the chain wins
    state = build(env, [(6, 0, LEFT), (3, 0, RIGHT), (4, 0, RIGHT)])
    new, _ = step(env, state, [FWD] * 3)
    assert positions(new) == [[6, 0], [4, 0], [5, 0]]
    # two single robots: the first in the graph (robot 0) wins
    state = build(env, [(2, 5, LEFT), (0, 5, RIGHT), (9, 9, UP)])
    new, _ = step(env, state, [FWD, FWD, NOOP])
    assert positions(new) == [[1, 5], [0, 5], [9, 9]]


def test_following_walls_and_turns() -> None:
    env = make(num_agents=4)
    state = build(env, [(0, 3, UP), (0, 4, UP), (9, 0, RIGHT), (5, 10, DOWN)])
    new, _ = step(env, state, [FWD, FWD, FWD, FWD])
    assert positions(new) == [[0, 2], [0, 3], [9, 0], [5, 10]]
    for facing, right, left in ((UP, RIGHT, LEFT), (RIGHT, DOWN, UP), (DOWN, LEFT, RIGHT), (LEFT, UP, DOWN)):
        state = build(env, [(0, 0, facing), (3, 0, facing), (6, 0, facing), (9, 0, facing)])
        new, _ = step(env, state, [TURN_R, TURN_L, NOOP, TOGGLE])
        assert np.asarray(new.agent_dir).tolist() == [right, left, facing, facing]
        assert positions(new) == positions(state)


def test_carried_shelves_block_and_follow() -> None:
    env = make(num_agents=4)
    a, b, c = shelf_at(env, 1, 1), shelf_at(env, 2, 1), shelf_at(env, 7, 1)
    # loaded robot 0 faces a standing shelf: cancelled; unloaded robot 1 drives under one; loaded robot 3
    # follows loaded robot 2 into its cell
    state = build(env, [(0, 2, RIGHT), (0, 6, RIGHT), (9, 3, UP), (9, 4, UP)], carrying={0: a, 2: b, 3: c})
    new, _ = step(env, state, [FWD] * 4)
    assert positions(new) == [[0, 2], [1, 6], [9, 2], [9, 3]]
    shelf_pos = np.asarray(new.shelf_pos)
    assert [shelf_pos[a].tolist(), shelf_pos[b].tolist(), shelf_pos[c].tolist()] == [[0, 2], [9, 2], [9, 3]]


def test_pick_up_and_put_down() -> None:
    env = make(num_agents=3)
    under = shelf_at(env, 1, 2)
    carried = shelf_at(env, 7, 1)
    # robot 0 picks up the shelf it stands under; robot 1 (loaded, on a highway) cannot put down
    state = build(env, [(1, 2, UP), (0, 5, UP), (9, 9, UP)], carrying={1: carried})
    new, _ = step(env, state, [TOGGLE, TOGGLE, NOOP])
    assert np.asarray(new.carried).tolist() == [under, carried, -1]
    # on the emptied shelf cell its shelf came from, robot 1 puts it down
    state = build(env, [(1, 2, UP), (7, 1, UP), (9, 9, UP)], carrying={1: carried})
    new, _ = step(env, state, [NOOP, TOGGLE, NOOP])
    assert np.asarray(new.carried).tolist() == [-1, -1, -1]
    assert np.asarray(new.shelf_pos)[carried].tolist() == [7, 1]


# ---------------------------------------------------------------------------------------- deliveries
@pytest.mark.parametrize(("reward_type", "expected"), [
    ("individual", [1.0, 1.0, 0.0]), ("global", [2.0, 2.0, 2.0]), ("two_stage", [0.5, 0.5, 0.0])])
def test_deliveries(reward_type: str, expected: list[float]) -> None:
    env = make(num_agents=3, request_queue_size=3, reward_type=reward_type)
    first, second, other = shelf_at(env, 1, 1), shelf_at(env, 2, 1), shelf_at(env, 7, 1)
    queue = [second, other, first]
    state = build(env, [(4, 9, DOWN), (5, 9, DOWN), (9, 9, UP)], carrying={0: first, 1: second}, queue=queue,
                  inactive_steps=jnp.asarray(7, jnp.int32))
    new, timestep = step(env, state, [FWD, FWD, NOOP])
    assert positions(new)[:2] == [[4, 10], [5, 10]]
    assert np.asarray(timestep.reward["agents"]).tolist() == expected
    assert int(timestep.info["deliveries"]) == 2 and int(new.inactive_steps) == 0
    new_queue = np.asarray(new.request_queue).tolist()
    # replaced in place (slots 2 then 0), by shelves not requested when drawn
    assert new_queue[1] == other and new_queue[0] not in queue and new_queue[2] not in queue
    assert len(set(new_queue)) == 3
    assert np.asarray(new.carried).tolist() == [first, second, -1]  # still carried
    if reward_type == "two_stage":
        assert np.asarray(new.has_delivered).tolist() == [True, True, False]
        # robot 0 drops its shelf on a non-highway cell: the second half; the flag clears
        dropped = build(env, [(1, 1, DOWN), (5, 10, DOWN), (9, 9, UP)], carrying={0: first, 1: second},
                        queue=new_queue, has_delivered=new.has_delivered)
        after, timestep = step(env, dropped, [TOGGLE, TOGGLE, NOOP])
        assert np.asarray(timestep.reward["agents"]).tolist() == [0.5, 0.0, 0.0]
        assert np.asarray(after.has_delivered).tolist() == [False, True, False]


def test_replacements_are_uniform_over_unrequested_shelves() -> None:
    env = RobotWarehouse(num_agents=1, request_queue_size=2)
    requested = shelf_at(env, 1, 1)
    state = build(env, [(4, 9, DOWN)], carrying={0: requested}, queue=[requested, 5])
    replacement = jax.jit(jax.vmap(
        lambda k: env.step(k, state, {"agents": jnp.asarray([FWD])})[0].request_queue[0]))
    draws = replacement(jax.random.split(jax.random.key(0), 3000))
    counts = np.bincount(np.asarray(draws), minlength=env.num_shelves)
    assert counts[requested] == 0 and counts[5] == 0
    assert counts.sum() == 3000 and counts[counts > 0].size == env.num_shelves - 2
    assert counts[counts > 0].min() > 50


def test_full_queue_keeps_the_delivered_shelf_requested() -> None:
    """With every shelf requested there is nothing to draw (rware raises): the delivered shelf stays."""
    env = make(num_agents=1, request_queue_size=32)
    shelf = shelf_at(env, 1, 1)
    queue = [shelf] + [i for i in range(32) if i != shelf]
    state = build(env, [(4, 9, DOWN)], carrying={0: shelf}, queue=queue)
    new, timestep = step(env, state, [FWD])
    assert np.asarray(new.request_queue).tolist() == queue
    assert np.asarray(timestep.reward["agents"]).tolist() == [1.0]


def test_time_limit_truncates_and_inactivity_terminates() -> None:
    env = make(num_agents=3)
    start = build(env, [(0, 0, UP), (3, 0, UP), (6, 0, UP)])
    state, params = start, RobotWarehouseParams(max_steps=3)
    for index in range(3):
        state, timestep = step(env, state, [NOOP] * 3, params=params)
        assert bool(timestep.truncated["agents"].all()) == (index == 2)
        assert not bool(timestep.terminated["agents"].any())
    state, params = start, RobotWarehouseParams(max_steps=10, max_inactivity_steps=2)
    for index in range(2):
        state, timestep = step(env, state, [NOOP] * 3, params=params)
        assert bool(timestep.terminated["agents"].all()) == (index == 1)
        assert not bool(timestep.truncated["agents"].any())
    assert make(max_inactivity_steps=7).default_params.max_inactivity_steps == 7


# -------------------------------------------------------------------------------------- observations
def test_flattened_observation_fields() -> None:
    env = make(num_agents=2, request_queue_size=1)
    requested = shelf_at(env, 1, 1)
    state = build(env, [(0, 0, DOWN), (1, 0, LEFT)], queue=[requested])
    obs = np.asarray(env.observe(state))[0]
    assert obs[:8].tolist() == [0, 0, 0, 0, 1, 0, 0, 1]
    cells = obs[8:].reshape(9, 7)
    empty = [0, 1, 0, 0, 0, 0, 0]  # an empty (or off-map) cell reads facing "up"
    assert cells[0].tolist() == empty and cells[3].tolist() == empty and cells[7].tolist() == empty
    assert cells[4].tolist() == [1, 0, 1, 0, 0, 0, 0]  # itself, facing down
    assert cells[5].tolist() == [1, 0, 0, 1, 0, 0, 0]  # robot 1 to the right, facing left
    assert cells[8].tolist() == [0, 1, 0, 0, 0, 1, 1]  # the requested shelf at (1, 1)
    normalised = make(num_agents=2, request_queue_size=1, normalised_coordinates=True)
    state = build(normalised, [(9, 5, UP), (3, 10, UP)], queue=[requested])
    obs = np.asarray(normalised.observe(state))
    assert obs[0, :2].tolist() == [1.0, np.float32(0.5)] and obs[1, :2].tolist() == [np.float32(1 / 3), 1.0]
    as_dict = make(num_agents=2, request_queue_size=1, normalised_coordinates=True,
                             observation_type="dict")
    obs = np.asarray(as_dict.observe(state))
    assert obs[0, :2].tolist() == [1.0, 0.0] and obs[1, :2].tolist() == [0.0, 1.0]  # int32-cast


def test_image_observation_faces_up_and_transposed_layers() -> None:
    env = make(num_agents=2, observation_type="image", image_observation_layers=("agents",))
    state = build(env, [(3, 5, RIGHT), (4, 5, UP)])
    view = np.asarray(env.observe(state))[:, 0]
    assert view[0].tolist() == [[0, 1, 0], [0, 1, 0], [0, 0, 0]]  # the robot on its right shows ahead
    assert view[1].tolist() == [[0, 0, 0], [1, 1, 0], [0, 0, 0]]
    fixed = make(num_agents=2, observation_type="image", image_observation_layers=("agents",),
                           image_observation_directional=False)
    assert np.asarray(fixed.observe(state))[0, 0].tolist() == [[0, 0, 0], [0, 1, 1], [0, 0, 0]]
    layered = make(num_agents=2, observation_type="image",
                             image_observation_layers=("agent_direction", "agent_load", "accessible"))
    state = build(layered, [(1, 2, LEFT), (9, 10, UP)], carrying={0: shelf_at(layered, 1, 2)})
    layers = np.asarray(layered.global_layers(state))
    assert layers[0, 1, 2] == LEFT + 1 and layers[0].sum() == LEFT + 1  # at [x, y]; (9, 10) is off-grid
    assert layers[1, 1, 2] == 1 and layers[1].sum() == 1
    assert layers[2, 2, 1] == 0 and layers[2, 10, 9] == 0 and layers[2].sum() == 11 * 10 - 2


def test_image_dict_is_features_then_image() -> None:
    env = make(num_agents=1, observation_type="image_dict")
    state = build(env, [(1, 2, LEFT)], carrying={0: shelf_at(env, 1, 2)})
    obs = np.asarray(env.observe(state))[0]
    assert obs[:6].tolist() == [0, 0, 1, 0, 0, 1]
    image = make(num_agents=1, observation_type="image")
    assert np.array_equal(obs[6:], np.asarray(image.observe(state))[0].reshape(-1))


# -------------------------------------------------------------------------------- batching, rendering
# slow: the default suite's conformance rollouts compare the batch-native step with jax.vmap of the
# per-env one on the family's first two cases already; this also steps each env on its own
@pytest.mark.slow
def test_batch_equals_one_by_one() -> None:
    env = RobotWarehouse(num_agents=4, request_queue_size=4, msg_bits=1)
    keys = jax.random.split(jax.random.key(3), 4)
    state, timestep = jax.jit(env.reset_batch)(keys, env.default_params)
    singles = [env.reset(k) for k in keys]
    step_batch = jax.jit(env.step_batch)
    step_one = jax.jit(env.step)
    for index in range(12):
        action_keys = jax.random.split(jax.random.key(100 + index), 4)
        actions = jnp.stack([env.action_space("agents").sample(k, (4,)) for k in action_keys], axis=-1)
        step_keys = jax.random.split(jax.random.key(200 + index), 4)
        state, timestep = step_batch(step_keys, state, {"agents": actions}, env.default_params)
        for b in range(4):
            singles[b] = step_one(step_keys[b], singles[b][0], {"agents": actions[..., b]})
            for ours, single in zip(jax.tree.leaves((state, timestep)), jax.tree.leaves(singles[b]),
                                    strict=True):
                assert np.array_equal(np.asarray(ours)[..., b], np.asarray(single))


def test_render() -> None:
    env = make(num_agents=3)
    state = build(env, [(1, 2, LEFT), (0, 0, UP), (4, 10, DOWN)], carrying={0: shelf_at(env, 1, 2)})
    frame = jax.jit(env.render)(state)
    assert frame.shape == (11 * 16, 10 * 16, 3) and frame.dtype == jnp.uint8
    assert len(np.unique(np.asarray(frame).reshape(-1, 3), axis=0)) > 5
    states = jax.tree.map(lambda x: jnp.stack([x, x]), state)
    assert jax.vmap(env.render)(states).shape == (2, 176, 160, 3)


# --------------------------------------------------------------------------------- networkx tie-break
def test_set_table_matches_python_sets() -> None:
    """The emulated CPython set layout (insertion, linear probes, perturbation, growth) gives a set's
    iteration order, for sets of 1 to 21 cells of a large layout."""
    height, width = 29, 16
    bits = cell_hash_bits(height, width)
    table = jax.jit(_set_table)
    rng = np.random.default_rng(0)
    for _ in range(60):
        size = int(rng.integers(1, 22))
        cells = rng.choice(height * width, size, replace=False)
        cell_tuples = [(int(c % width), int(c // width)) for c in cells]
        padded = np.zeros((21, bits.shape[1]), np.int32)
        padded[:size] = bits[cells]
        slots = np.asarray(table(jnp.asarray(padded), jnp.asarray(size)))
        assert [cell_tuples[i] for i in slots if i >= 0] == list(set(cell_tuples))


def test_set_ordered_ties_in_batches() -> None:
    """A tie networkx breaks by a Python set's layout (two robots into (1, 5) while two others move into
    free cells: the component has 3 of the graph's 7 nodes) goes to networkx's winner (robot 1, though robot
    0 comes first in the graph), alone in a batch (the emulation runs on a gathered subset) or everywhere
    (it runs on the whole batch)."""
    networkx = pytest.importorskip("networkx")
    env = make(num_agents=4)
    robots = [(0, 5, RIGHT), (2, 5, LEFT), (9, 2, UP), (6, 8, UP)]
    graph = networkx.DiGraph()
    for x, y, facing in robots:
        dx, dy = {UP: (0, -1), DOWN: (0, 1), LEFT: (-1, 0), RIGHT: (1, 0)}[facing]
        graph.add_edge((x, y), (x + dx, y + dy))
    component = next(c for c in networkx.weakly_connected_components(graph) if (1, 5) in c)
    winner = networkx.dag_longest_path(graph.subgraph(component).copy())[0]
    expected = [[1, 5] if (x, y) == winner else [x, y] for x, y, _ in robots[:2]] + [[9, 1], [6, 7]]
    tied = build(env, robots)
    assert bool(env._plan_one(tied, jnp.full((4,), FWD))["needs_hash_order"])
    single, _ = step(env, tied, [FWD] * 4)
    assert positions(single) == expected
    calm = build(env, [(0, 0, DOWN), (3, 0, DOWN), (6, 0, DOWN), (9, 0, DOWN)])
    calm_after, _ = step(env, calm, [FWD] * 4)
    batch_step = jax.jit(env.step_batch)
    for states in ([tied] + [calm] * 19, [tied] * 20):
        stacked = jax.tree.map(lambda *xs: jnp.stack(xs, axis=-1), *states)
        keys = jax.random.split(jax.random.key(0), 20)
        new, _ = batch_step(keys, stacked, {"agents": jnp.full((4, 20), FWD)}, env.default_params)
        for b, state in enumerate(states):
            want = expected if state is tied else positions(calm_after)
            assert np.asarray(new.agent_pos)[..., b].tolist() == want
