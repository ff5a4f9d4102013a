"""Live comparison of our Overcooked V2 with JaxMARL 0.2.0's ``overcooked_v2``, key for key.

Both envs run from the same keys with the same joint actions, each with its own auto-reset (JaxMARL's
``step``; ``AutoReset`` over ours, which splits keys the same way), so every random draw (the recipe, the
observation permutations, random starts, recipes drawn on delivery) must come out the same for the
trajectories to agree; nothing of JaxMARL's state is injected. At every step we compare exactly (values,
shapes and dtypes):

- the state after the auto-reset: every chef's position, facing and held item, the whole grid (static
  objects, items, timers), the recipe, ``new_correct_delivery``, the step count and, with
  ``op_ingredient_permutations``, each chef's permutation;
- every agent's observation (default layers, with or without ``agent_view_size``, or featurized), and the
  pre-reset observation (JaxMARL's ``step_env`` with the key its ``step`` passes it) against our
  ``info["final_obs"]``;
- the team reward of every agent, the shaped rewards, JaxMARL's ``done`` against our ``truncated`` (we
  never terminate).

Random play rarely cooks, so the actions interact often and most cases start from JaxMARL's random
states (held dishes, filled and cooking pots); each test asserts that its rollouts delivered, cooked,
pressed buttons and earned shaped rewards, so it cannot pass vacuously. The default suite runs two
layouts (cramped_room with one default and one featurized chef; grounded_coord_simple, which has a recipe
indicator and a button, with a 2-cell view); the ``slow`` cases run all 23 layouts and every option.
Negative controls: a perturbed reward constant, a perturbed key use and the wrong view size must each
make the comparison fail.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.environments.overcooked_v2 import LAYOUT_NAMES, OvercookedV2, OvercookedV2Params
from jaxmarl_suite.environments.overcooked_v2.layouts import BUTTON_RECIPE_INDICATOR, POT
from jaxmarl_suite.wrappers import AutoReset

jaxmarl = pytest.importorskip("jaxmarl", reason="JaxMARL's overcooked_v2 is the reference")

STATE_FIELDS = ("agent_pos", "agent_dir", "agent_inventory", "grid", "recipe", "new_correct_delivery", "time")
STEP_FIELDS = ("reward", "shaped_reward", "done")
COOKED = 2


def actions_for(num_agents: int, seeds: int, steps: int, interact: float, seed: int = 0) -> np.ndarray:
    """``int32[seeds, steps, n]`` random joint actions: interact with probability ``interact``, else any
    of the six actions uniformly."""
    rng = np.random.default_rng(seed)
    uniform = rng.integers(0, 6, (seeds, steps, num_agents))
    return np.where(rng.random((seeds, steps, num_agents)) < interact, 5, uniform).astype(np.int32)


def _freeze(kwargs: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in kwargs.items()))


def _thaw(frozen: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in frozen}


@functools.cache
def reference_rollout(frozen: tuple[tuple[str, Any], ...], seeds: int, steps: int, interact: float
                      ) -> dict[str, np.ndarray]:
    """JaxMARL's trajectories ``[seeds, steps, ...]`` from seeds ``0..seeds-1``."""
    kwargs = _thaw(frozen)
    ref = jaxmarl.make("overcooked_v2", **kwargs)
    n = ref.num_agents
    perms = bool(kwargs.get("op_ingredient_permutations"))

    def one(seed_key: jax.Array, actions: jax.Array) -> dict[str, jax.Array]:
        reset_key, run_key = jax.random.split(seed_key)
        _, state = ref.reset(reset_key)

        def body(state: Any, xs: tuple[jax.Array, jax.Array]) -> tuple[Any, dict[str, jax.Array]]:
            key, action = xs
            joint = {f"agent_{i}": action[i] for i in range(n)}
            # JaxMARL's step hands step_env the first half of its key: the raw transition's observation is
            # the one the auto-reset replaces.
            raw_obs, _, _, _, _ = ref.step_env(jax.random.split(key)[0], state, joint)
            obs, state, reward, dones, info = ref.step(key, state, joint)
            record = {
                "agent_pos": jnp.stack([state.agents.pos.x, state.agents.pos.y], axis=-1),
                "agent_dir": state.agents.dir,
                "agent_inventory": state.agents.inventory,
                "grid": state.grid,
                "recipe": state.recipe,
                "new_correct_delivery": state.new_correct_delivery,
                "time": state.step,
                "reward": jnp.stack([reward[f"agent_{i}"] for i in range(n)]),
                "shaped_reward": jnp.stack([info["shaped_reward"][f"agent_{i}"] for i in range(n)]),
                "done": jnp.stack([dones[f"agent_{i}"] for i in range(n)] + [dones["__all__"]]),
                **{f"obs_{i}": obs[f"agent_{i}"] for i in range(n)},
                **{f"final_obs_{i}": raw_obs[f"agent_{i}"] for i in range(n)},
            }
            if perms:
                record["ingredient_permutations"] = state.ingredient_permutations
            return state, record

        keys = jax.random.split(run_key, actions.shape[0])
        return jax.lax.scan(body, state, (keys, actions))[1]

    run = jax.jit(jax.vmap(one))
    seed_keys = jnp.stack([jax.random.PRNGKey(s) for s in range(seeds)])
    return jax.tree.map(np.asarray, run(seed_keys, jnp.asarray(actions_for(n, seeds, steps, interact))))


@functools.cache
def our_env(frozen: tuple[tuple[str, Any], ...]) -> OvercookedV2:
    """One env per setting, so ``our_runner`` compiles once per setting."""
    return OvercookedV2(**_thaw(frozen))


@functools.cache
def our_runner(env: OvercookedV2) -> Any:
    """Our trajectories, jitted once per env (params are an argument, so perturbing them reuses it)."""
    auto = AutoReset(env)
    n = env.num_agents
    perms = bool(env.op_ingredient_permutations)

    def group_values(tree: dict[str, jax.Array]) -> list[jax.Array]:
        """Agent ``i``'s entry of a per-group dict, for every agent in order."""
        return [v for group in env.groups for v in tree[group]]

    def one(seed_key: jax.Array, actions: jax.Array, params: OvercookedV2Params, key_tweak: jax.Array
            ) -> dict[str, jax.Array]:
        reset_key, run_key = jax.random.split(seed_key)
        state, _ = auto.reset(reset_key, params)

        def body(state: Any, xs: tuple[jax.Array, jax.Array]) -> tuple[Any, dict[str, jax.Array]]:
            key, action = xs
            joint, start = {}, 0
            for group, names in env.groups.items():
                joint[group] = action[start:start + len(names)]
                start += len(names)
            state, ts = auto.step(key ^ key_tweak, state, joint, params)
            truncated = jnp.concatenate([ts.truncated[g] | ts.terminated[g] for g in env.groups])
            obs, final_obs = group_values(ts.obs), group_values(ts.info["final_obs"])
            record = {
                "agent_pos": state.agent_pos,
                "agent_dir": state.agent_dir,
                "agent_inventory": state.agent_inventory,
                "grid": state.grid,
                "recipe": state.recipe,
                "new_correct_delivery": state.new_correct_delivery,
                "time": state.time,
                "reward": jnp.stack(group_values(ts.reward)),
                "shaped_reward": ts.info["shaped_reward"],
                "done": jnp.concatenate([truncated, truncated.all()[None]]),
                **{f"obs_{i}": obs[i] for i in range(n)},
                **{f"final_obs_{i}": final_obs[i] for i in range(n)},
            }
            if perms:
                record["ingredient_permutations"] = state.ingredient_permutations
            return state, record

        keys = jax.random.split(run_key, actions.shape[0])
        return jax.lax.scan(body, state, (keys, actions))[1]

    return jax.jit(jax.vmap(one, in_axes=(0, 0, None, None)))


def our_rollout(env: OvercookedV2, seeds: int, steps: int, interact: float,
                params: OvercookedV2Params | None = None, key_tweak: int = 0) -> dict[str, np.ndarray]:
    """Our trajectories from the same keys and actions as ``reference_rollout`` (``key_tweak``, for the
    negative control, is XORed into every step's key)."""
    params = env.default_params if params is None else params
    seed_keys = jnp.stack([jax.random.PRNGKey(s) for s in range(seeds)])
    actions = jnp.asarray(actions_for(env.num_agents, seeds, steps, interact))
    out = our_runner(env)(seed_keys, actions, params, jnp.asarray(key_tweak, jnp.uint32))
    return jax.tree.map(np.asarray, out)


def compare(ref: dict[str, np.ndarray], ours: dict[str, np.ndarray]) -> dict[str, int]:
    """Raise AssertionError at the first step where any field differs; return what the run exercised."""
    assert set(ref) == set(ours), f"fields {sorted(ours)} != JaxMARL's {sorted(ref)}"
    seeds, steps = ref["reward"].shape[:2]
    fields = sorted(ref)
    bad = {}
    for field in fields:
        want, got = ref[field], ours[field]
        assert want.shape == got.shape, f"{field}: shape {got.shape} != JaxMARL's {want.shape}"
        assert want.dtype == got.dtype, f"{field}: dtype {got.dtype} != JaxMARL's {want.dtype}"
        bad[field] = (want != got).reshape(seeds, steps, -1).any(-1)
    anywhere = np.stack(list(bad.values())).any(0)
    if anywhere.any():
        seed, t = (int(i) for i in np.argwhere(anywhere)[0])
        field = next(f for f in fields if bad[f][seed, t])
        raise AssertionError(f"seed {seed} step {t + 1}: {field} differs"
                             f"\nJaxMARL: {ref[field][seed, t].tolist()}"
                             f"\nours:    {ours[field][seed, t].tolist()}")
    grid = ref["grid"]
    pots = grid[..., 0] == POT
    buttons = grid[..., 0] == BUTTON_RECIPE_INDICATOR
    return {
        "deliveries": int(ref["new_correct_delivery"].sum()),
        "positive_rewards": int((ref["reward"][..., 0] > 0).sum()),
        "pots_cooking": int((pots & (grid[..., 2] > 0)).sum()),
        "pots_cooked": int((pots & ((grid[..., 1] & COOKED) != 0)).sum()),
        # a press sets the button to 10 and the tick takes one off in the same step
        "button_presses": int((buttons & (grid[..., 2] == 9)).sum()),
        "shaped_rewards": int((ref["shaped_reward"] > 0).sum()),
        "episode_ends": int(ref["done"][..., -1].sum()),
    }


def check_pair(kwargs: dict[str, Any], seeds: int, steps: int, interact: float = 0.4) -> dict[str, int]:
    """Run JaxMARL's env and ours built with ``kwargs`` side by side and compare every step."""
    frozen = _freeze(kwargs)
    ref = reference_rollout(frozen, seeds, steps, interact)
    return compare(ref, our_rollout(our_env(frozen), seeds, steps, interact))


CRAMPED = {"layout": "cramped_room", "max_steps": 40, "random_reset": True,
           "observation_type": ["default", "featurized"]}
GROUNDED = {"layout": "grounded_coord_simple", "max_steps": 40, "random_reset": True, "agent_view_size": 2,
            "sample_recipe_on_delivery": True, "indicate_successful_delivery": True}


def test_cramped_room_default_and_featurized_match_jaxmarl() -> None:
    seen = check_pair(CRAMPED, seeds=8, steps=100)
    assert seen["episode_ends"] == 8 * 2, seen
    assert seen["deliveries"] > 0 and seen["pots_cooking"] > 0 and seen["pots_cooked"] > 0, seen
    assert seen["shaped_rewards"] > 0, seen


def test_grounded_coord_simple_with_view_and_button_matches_jaxmarl() -> None:
    seen = check_pair(GROUNDED, seeds=8, steps=100)
    assert seen["episode_ends"] == 8 * 2, seen
    assert seen["deliveries"] > 0 and seen["pots_cooking"] > 0 and seen["button_presses"] > 0, seen


def test_negative_controls_are_caught() -> None:
    """A smaller shaped reward constant, draws from other keys and a different view size must each fail the
    comparison (the first two reuse the compiled runs of the main tests)."""
    ref = reference_rollout(_freeze(CRAMPED), 8, 100, 0.4)
    env = our_env(_freeze(CRAMPED))
    cheaper = env.default_params.replace(placement_in_pot_reward=2.0)
    with pytest.raises(AssertionError, match="shaped_reward differs"):
        compare(ref, our_rollout(env, 8, 100, 0.4, cheaper))
    with pytest.raises(AssertionError, match="differs"):
        compare(ref, our_rollout(env, 8, 100, 0.4, key_tweak=1))
    grounded_ref = reference_rollout(_freeze(GROUNDED), 8, 100, 0.4)
    narrower = our_env(_freeze({**GROUNDED, "agent_view_size": 1}))
    with pytest.raises(AssertionError, match="obs_0: shape"):
        compare(grounded_ref, our_rollout(narrower, 8, 100, 0.4))


@pytest.mark.slow
@pytest.mark.parametrize("layout", LAYOUT_NAMES)
@pytest.mark.parametrize("random_reset", [False, True])
def test_every_layout_matches_jaxmarl(layout: str, random_reset: bool) -> None:
    seen = check_pair({"layout": layout, "max_steps": 50, "random_reset": random_reset}, seeds=8, steps=120)
    assert seen["episode_ends"] == 8 * 2, seen
    if random_reset:
        assert seen["pots_cooking"] > 0, seen


# long_room (one ingredient) has a single chef, for which JaxMARL's featurized observation fails to build
# (it concatenates an empty list of other chefs); ours is tested in test_overcooked_v2.py.
ONE_INGREDIENT = ("cramped_room", "asymm_advantages", "coord_ring", "forced_coord", "counter_circuit")


@pytest.mark.slow
@pytest.mark.parametrize("layout", ONE_INGREDIENT)
def test_featurized_matches_jaxmarl_on_every_one_ingredient_layout(layout: str) -> None:
    seen = check_pair({"layout": layout, "max_steps": 50, "random_reset": True,
                       "observation_type": "featurized"}, seeds=8, steps=120)
    assert seen["episode_ends"] == 8 * 2 and seen["pots_cooking"] > 0, seen


@pytest.mark.slow
@pytest.mark.parametrize("kwargs", [
    {"layout": "cramped_room_v2", "random_agent_positions": True},
    {"layout": "two_rooms", "random_agent_positions": True},
    {"layout": "cramped_room", "start_cooking_interaction": True, "random_reset": True},
    {"layout": "fun_coordination", "start_cooking_interaction": True, "random_reset": True},
    {"layout": "cramped_room_v2", "negative_rewards": True, "random_reset": True},
    {"layout": "cramped_room_v2", "sample_recipe_on_delivery": True, "random_reset": True},
    {"layout": "grounded_coord_ring", "indicate_successful_delivery": True, "random_reset": True},
    {"layout": "fun_coordination", "op_ingredient_permutations": [0, 1, 2, 3], "random_reset": True},
    {"layout": "more_fun_coordination", "op_ingredient_permutations": [1, 2], "agent_view_size": 3,
     "random_reset": True},
    {"layout": "demo_cook_wide", "agent_view_size": 1, "random_reset": True},
    {"layout": "test_time_wide", "agent_view_size": 3, "random_agent_positions": True},
    {"layout": "forced_coord", "observation_type": ["featurized", "default"], "random_reset": True,
     "negative_rewards": True},
    {"layout": "coord_ring", "observation_type": ["default", "featurized"], "start_cooking_interaction": True,
     "random_reset": True, "sample_recipe_on_delivery": True, "indicate_successful_delivery": True},
], ids=str)
def test_every_option_matches_jaxmarl(kwargs: dict[str, Any]) -> None:
    seen = check_pair({"max_steps": 50, **kwargs}, seeds=16, steps=120)
    assert seen["episode_ends"] == 16 * 2, seen
