"""Live comparison of our STORM envs with JaxMARL 0.2.0's, step by step, key for key.

Nothing is injected: both sides reset from the same key and step with the same key and actions, and our
env consumes each key exactly as JaxMARL's ``step_env`` does (collision coin flip, respawn and inner-episode
draws), so the trajectories must agree exactly. A batch of envs runs side by side under ``lax.scan``
(JaxMARL's vmapped over the batch, ours batch-native) with actions drawn from a zap-heavy distribution so
that coins are taken, beams fired, interactions paid, agents frozen and respawned, and inner episodes
restarted; each test asserts those events happened. On every step we compare, exactly (rewards to 1e-6):

- every observation entry (JaxMARL's ``observation`` grid flattened row-major, then its ``inventory``);
- both rewards and the episode's end (JaxMARL's ``done["__all__"]`` against our ``truncated``);
- the board (every cell's code), positions, facings, inventories and the freeze counter.

On an episode's last step JaxMARL has already replaced its state by a fresh start (its ``step_env`` resets
at the inner boundary), so there only the rewards and the end are compared; ours keeps the final state
for ``final_obs``. Negative controls run ours with a perturbed freeze penalty or payoff and with one
observation entry flipped, and require the comparison to fail.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.environments.storm import Storm2p

jaxmarl = pytest.importorskip("jaxmarl", reason="JaxMARL's STORM is the reference")

RANDOM_SHARE = 0.3
"""Share of actions drawn uniformly; the rest chase the other agent and zap it when near."""


def chase(key: jax.Array, x: jax.Array, y: jax.Array, facing: jax.Array) -> jax.Array:
    """``int32[B, 2]`` actions from positions and facings ``[B, 2]``: turn toward the other agent along the
    longer axis, step forward, zap when within two cells; ``RANDOM_SHARE`` of them uniform instead."""
    dx, dy = x[:, ::-1] - x, y[:, ::-1] - y
    wanted = jnp.where(jnp.abs(dx) >= jnp.abs(dy), jnp.where(dx > 0, 1, 3), jnp.where(dy > 0, 0, 2))
    turn = (wanted - facing) % 4
    act = jnp.where(turn == 0, 2, jnp.where(turn == 1, 0, 1))  # forward, left (+1), right
    act = jnp.where((turn == 0) & (jnp.abs(dx) + jnp.abs(dy) <= 2), 3, act)
    pick, uniform = jax.random.split(key)
    random = jax.random.randint(uniform, act.shape, 0, 5)
    return jnp.where(jax.random.uniform(pick, act.shape) < RANDOM_SHARE, random, act).astype(jnp.int32)


def _flat_obs(obs: Any) -> jax.Array:
    """JaxMARL's two obs dicts as our ``[2, 256]`` layout."""
    return jnp.stack([jnp.concatenate([o["observation"].reshape(-1), o["inventory"].astype(jnp.float32)])
                      for o in obs]).astype(jnp.int32)


def _ref_state(state: Any) -> dict[str, jax.Array]:
    pos = jnp.stack([state.red_pos, state.blue_pos]).astype(jnp.int32)
    return {"grid": state.grid.reshape(-1).astype(jnp.int32), "x": pos[:, 0], "y": pos[:, 1],
            "facing": pos[:, 2],
            "inventory": jnp.stack([state.red_inventory, state.blue_inventory]).astype(jnp.int32),
            "freeze": jnp.asarray(state.freeze, jnp.int32)}


def _our_state(state: Any) -> dict[str, jax.Array]:
    return {"grid": state.grid.astype(jnp.int32), "x": state.x, "y": state.y, "facing": state.facing,
            "inventory": state.inventory, "freeze": state.freeze}


def _batch_first(tree: Any) -> Any:
    return jax.tree.map(lambda x: jnp.moveaxis(x, -1, 0), tree)


@functools.cache
def _rollout_fn(kwargs_items: tuple[tuple[str, Any], ...], num_steps: int) -> Any:
    """Both envs side by side in one scan: JaxMARL's ``storm_2p`` (reset, then ``step_env`` per key,
    vmapped) and ours (batch-native), the actions chosen from JaxMARL's state. Records are ``[B, T, ...]``."""
    ref = jaxmarl.make("storm_2p", **dict(kwargs_items))
    env = Storm2p(**dict(kwargs_items))
    ref_reset, ref_step = jax.vmap(ref.reset), jax.vmap(ref.step_env)

    def rollout(key: jax.Array, num_envs_like: jax.Array, params: Any, tamper: jax.Array) -> dict[str, Any]:
        num_envs = num_envs_like.shape[0]
        reset_key, step_key, action_key = jax.random.split(key, 3)
        reset_keys = jax.random.split(reset_key, num_envs)
        ref_obs, ref_state = ref_reset(reset_keys)
        state, ts = env.reset_batch(reset_keys, params)
        first = {"ref_obs": jax.vmap(_flat_obs)(ref_obs), "ref": jax.vmap(_ref_state)(ref_state),
                 "obs": _batch_first(ts.obs["agents"]).astype(jnp.int32),
                 "ours": _batch_first(_our_state(state))}

        def body(carry: tuple[Any, Any], t: jax.Array) -> tuple[tuple[Any, Any], dict[str, Any]]:
            ref_state, state = carry
            keys = jax.random.split(jax.random.fold_in(step_key, t), num_envs)
            pos = jnp.stack([ref_state.red_pos, ref_state.blue_pos], 1).astype(jnp.int32)  # [B, 2, 3]
            act = chase(jax.random.fold_in(action_key, t), pos[..., 0], pos[..., 1], pos[..., 2])
            obs, ref_state, rewards, done, _ = ref_step(keys, ref_state, (act[:, 0], act[:, 1]))
            state, ts = env.step_batch(keys, state, {"agents": act.T}, params)
            ours_obs = _batch_first(ts.obs["agents"]).astype(jnp.int32)
            ours_obs = ours_obs.at[0, 1, 7].add(jnp.where((t == 1) & tamper, 1, 0))
            record = {"ref_obs": jax.vmap(_flat_obs)(obs),
                      "ref_reward": jnp.stack(rewards, 1).astype(jnp.float32),
                      "ref_done": done["__all__"], "ref": jax.vmap(_ref_state)(ref_state),
                      "obs": ours_obs, "reward": _batch_first(ts.reward["agents"]),
                      "done": ts.truncated["agents"][0], "ours": _batch_first(_our_state(state)),
                      "cooperative": _batch_first(ts.info["cooperative_pickups"]),
                      "defecting": _batch_first(ts.info["defecting_pickups"])}
            return (ref_state, state), record

        _, records = jax.lax.scan(body, (ref_state, state), jnp.arange(num_steps))
        records = jax.tree.map(lambda x: jnp.moveaxis(x, 0, 1), records)  # [T, B, ...] -> [B, T, ...]
        return {"first": first, **records}

    return env, jax.jit(rollout)


STATE_FIELDS = ("grid", "x", "y", "facing", "inventory", "freeze")


def compare(record: dict[str, Any]) -> None:
    """Raise AssertionError at the first step where the two rollouts differ."""
    first = record["first"]
    for field in STATE_FIELDS:
        np.testing.assert_array_equal(first["ours"][field], first["ref"][field], err_msg=f"reset {field}")
    np.testing.assert_array_equal(first["obs"], first["ref_obs"], err_msg="reset obs")
    done = np.asarray(record["ref_done"])
    num_steps = done.shape[1]
    for t in range(num_steps):
        where = f"step {t + 1}"
        np.testing.assert_allclose(record["reward"][:, t], record["ref_reward"][:, t], atol=1e-6,
                                   err_msg=f"{where} reward")
        np.testing.assert_array_equal(record["done"][:, t], done[:, t], err_msg=f"{where} done")
        if t == num_steps - 1:
            break
        np.testing.assert_array_equal(record["obs"][:, t], record["ref_obs"][:, t], err_msg=f"{where} obs")
        for field in STATE_FIELDS:
            np.testing.assert_array_equal(record["ours"][field][:, t], record["ref"][field][:, t],
                                          err_msg=f"{where} {field}")


def run_pair(seed: int, num_envs: int, kwargs: dict[str, Any], perturb: Any = None,
             tamper_obs: bool = False) -> dict[str, Any]:
    """Both rollouts over a whole episode (``inner * outer`` steps) from ``seed``."""
    steps = kwargs.get("num_inner_steps", 152) * kwargs.get("num_outer_steps", 1)
    env, rollout = _rollout_fn(tuple(sorted(kwargs.items())), steps)
    params = env.default_params if perturb is None else perturb(env.default_params)
    key = jax.random.PRNGKey(seed)
    return jax.device_get(rollout(key, jnp.zeros(num_envs), params, jnp.asarray(tamper_obs)))


SHORT = {"num_inner_steps": 24, "num_outer_steps": 2}
"""Two inner episodes of 24 steps: restarts inside an episode, and the episode's end."""


def _coverage(record: dict[str, Any]) -> dict[str, int]:
    """How often the rollout exercised each rule (counted on JaxMARL's side)."""
    freeze = np.asarray(record["ref"]["freeze"])
    return {"interactions": int((np.asarray(record["ref_reward"]) != 0).any(-1).sum()),
            "respawns": int(((freeze[:, :-1] == 1) & (freeze[:, 1:] == -1)).sum()),
            "beams": int((np.asarray(record["ref"]["grid"]) == 6).any(-1).sum()),
            "cooperative": int(np.asarray(record["cooperative"]).sum()),
            "defecting": int(np.asarray(record["defecting"]).sum())}


def test_storm_2p_matches_jaxmarl() -> None:
    """32 envs x 48 steps (two inner episodes), every step equal to JaxMARL's."""
    record = run_pair(0, 32, SHORT)
    compare(record)
    seen = _coverage(record)
    assert all(count > 0 for count in seen.values()), seen


def test_storm_2p_negative_controls() -> None:
    """A freeze penalty off by one, a different payoff and one flipped observation bit are all caught."""
    with pytest.raises(AssertionError, match="freeze|obs|grid"):
        compare(run_pair(0, 32, SHORT, perturb=lambda p: p.replace(freeze_penalty=p.freeze_penalty + 1)))
    with pytest.raises(AssertionError, match="reward"):
        compare(run_pair(0, 32, SHORT,
                         perturb=lambda p: p.replace(payoff_matrix=p.payoff_matrix.at[0, 0, 0].add(1))))
    with pytest.raises(AssertionError, match="step 2 obs"):
        compare(run_pair(0, 32, SHORT, tamper_obs=True))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("kwargs", [{}, {"fixed_coin_location": False, "num_inner_steps": 50,
                                         "num_outer_steps": 3},
                                    {"freeze_penalty": 1, "num_inner_steps": 40, "num_outer_steps": 2}],
                         ids=["default", "random_coins", "freeze_1"])
def test_storm_2p_matches_jaxmarl_long(seed: int, kwargs: dict[str, Any]) -> None:
    """More seeds, the full 152-step episode, shuffled coin layouts and the shortest freeze."""
    record = run_pair(seed, 64, kwargs)
    compare(record)
    assert _coverage(record)["interactions"] > 0
