"""Switch Riddle against JaxMARL 0.2.0's live ``switch_riddle``, key for key, over whole runs of episodes.

Each env of a batch runs JaxMARL's auto-resetting ``step`` and our ``AutoReset(SwitchRiddle).step`` from
the same reset key and the same step keys; nothing is injected, because ours draws today's prisoner with
the same ``randint`` calls on the same keys (``AutoReset`` splits a step key into step and reset keys in
JaxMARL's order). Actions are random (nothing / switch / tell with probabilities 0.45 / 0.4 / 0.15, so
episodes end by true and false announcements and by the day limit). On every step we compare every
prisoner's observation, the reward, the episode's end (JaxMARL's ``done`` against our terminated or
truncated), and the state: who is in the room, the bulb, who has been in the room and the day count. We
also check our split of JaxMARL's ``done``: truncated exactly when the day limit ended the episode
without an announcement. The run must exercise every kind of ending.

Negative controls: a wrong reward constant (through the traceable params), a prisoner draw from another
key, and one flipped observation bit must each make the comparison fail.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.environments.switch_riddle import SwitchRiddle, SwitchRiddleParams
from jaxmarl_suite.wrappers import AutoReset

jaxmarl = pytest.importorskip("jaxmarl", reason="JaxMARL's switch_riddle is the reference")

ACTION_PROBS = (0.45, 0.4, 0.15)
"""Nothing, switch, tell: rare enough announcements that some episodes reach the day limit."""


@functools.cache
def rollouts(num_agents: int, num_envs: int, num_steps: int, **kwargs: Any):
    """A jitted ``run(seed, params, key_salt, flip) -> (ours, theirs)`` of ``num_envs`` envs for
    ``num_steps`` steps. ``key_salt != 0`` makes our prisoner draws use other keys, ``flip`` flips one
    observation bit (negative controls); both are traced, so the controls reuse the compiled run."""
    ours_env = SwitchRiddle(num_agents=num_agents, **kwargs)
    env = AutoReset(ours_env)
    ref = jaxmarl.make("switch_riddle", num_agents=num_agents, **kwargs)
    names = ref.agents

    def ref_record(obs: dict, state: Any, reward: Any = 0.0, done: Any = False) -> dict:
        return {
            "obs": jnp.stack([obs[a] for a in names]).astype(jnp.float32),
            "reward": jnp.full((num_agents,), reward, jnp.float32),
            "done": jnp.full((num_agents,), done, bool),
            "in_room": state.agent_in_room.astype(jnp.int32),
            "bulb": state.bulb_state.astype(bool),
            "has_been": state.has_been.astype(bool),
            "step": jnp.asarray(state.step, jnp.int32),
        }

    def our_record(state: Any, timestep: Any) -> dict:
        return {
            "obs": timestep.obs["agents"],
            "reward": timestep.reward["agents"],
            "done": timestep.terminated["agents"] | timestep.truncated["agents"],
            "terminated": timestep.terminated["agents"],
            "truncated": timestep.truncated["agents"],
            "in_room": state.agent_in_room,
            "bulb": state.bulb,
            "has_been": state.has_been,
            "step": state.step,
        }

    def one_env(key: jax.Array, params: SwitchRiddleParams, key_salt: jax.Array, flip: jax.Array):
        reset_key, run_key = jax.random.split(key)
        ref_obs, ref_state = ref.reset(reset_key)
        state, timestep = env.reset(reset_key, params)

        def body(carry, step_key):
            ref_state, state = carry
            action_key, step_key = jax.random.split(step_key)
            actions = jax.random.choice(action_key, 3, (num_agents,), p=jnp.asarray(ACTION_PROBS))
            ref_obs, ref_state, ref_reward, ref_done, _ = ref.step(
                step_key, ref_state, {a: actions[i] for i, a in enumerate(names)})
            salted = jnp.where(key_salt == 0, step_key, jax.random.fold_in(step_key, key_salt))
            state, timestep = env.step(salted, state, {"agents": actions.astype(jnp.int32)}, params)
            ours = our_record(state, timestep)
            bit = ours["obs"][0, 0]
            ours["obs"] = ours["obs"].at[0, 0].set(jnp.where(flip, 1.0 - bit, bit))
            theirs = ref_record(ref_obs, ref_state, ref_reward[names[0]], ref_done["__all__"])
            theirs["pre_step"] = carry[0].step  # JaxMARL's day count before the step (for the day limit)
            return (ref_state, state), (ours, theirs)

        _, (ours, theirs) = jax.lax.scan(body, (ref_state, state), jax.random.split(run_key, num_steps))
        first = our_record(state, timestep), ref_record(ref_obs, ref_state)
        return first, ours, theirs

    def run(seed: int, params: SwitchRiddleParams, key_salt: int = 0, flip: bool = False):
        keys = jax.random.split(jax.random.PRNGKey(seed), num_envs)
        return jax.vmap(one_env, in_axes=(0, None, None, None))(keys, params, key_salt, flip)

    return ours_env, jax.jit(run)


def compare(num_agents: int, num_envs: int, num_steps: int, seed: int, *, params_change: dict | None = None,
            key_salt: int = 0, flip: bool = False, **kwargs: Any) -> dict[str, int]:
    """Run both sides and assert they agree at every step; returns how the episodes ended."""
    env, run = rollouts(num_agents, num_envs, num_steps, **kwargs)
    params = env.default_params.replace(**(params_change or {}))
    (first_ours, first_theirs), ours, theirs = jax.tree.map(np.asarray, run(seed, params, key_salt, flip))
    for name in ("obs", "in_room", "bulb", "has_been", "step"):
        np.testing.assert_array_equal(first_ours[name], first_theirs[name], err_msg=f"reset {name}")
    for name in ("obs", "reward", "done", "in_room", "bulb", "has_been", "step"):
        mismatch = np.argwhere(ours[name] != theirs[name])
        assert mismatch.size == 0, f"{name} differs first at env, step = {tuple(mismatch[0][:2])}"
    # Our split of JaxMARL's done: truncated iff the day limit ended an episode with no announcement.
    limit = theirs["pre_step"] + 1 >= env.default_params.max_steps
    told = theirs["done"][..., 0] & (theirs["reward"][..., 0] != 0)
    np.testing.assert_array_equal(ours["truncated"][..., 0], theirs["done"][..., 0] & ~told & limit)
    np.testing.assert_array_equal(ours["terminated"][..., 0], told)
    assert not (ours["terminated"] & ours["truncated"]).any()
    rewards = theirs["reward"][..., 0]
    return {"wins": int((rewards > 0).sum()), "losses": int((rewards < 0).sum()),
            "time_limits": int(ours["truncated"][..., 0].sum()),
            "last_day_tells": int((told & limit).sum())}


def test_episodes_match_jaxmarl_key_for_key() -> None:
    """3 prisoners (JaxMARL's default), 32 envs x 48 steps: about 350 episodes."""
    outcomes = compare(3, 32, 48, seed=0)
    assert min(outcomes.values()) > 0, outcomes  # true and false announcements, day limits, last-day tells


@pytest.mark.slow
@pytest.mark.parametrize(("num_agents", "kwargs"), [
    (3, {}), (4, {}), (5, {}), (6, {}),
    (3, {"initial_bulb_state": True}),
    (4, {"reward_all_live": 2.0, "reward_all_die": -0.5}),
])
@pytest.mark.parametrize("seed", [1, 2])
def test_more_episodes_match_jaxmarl(num_agents: int, kwargs: dict, seed: int) -> None:
    outcomes = compare(num_agents, 64, 4 * (4 * num_agents - 6), seed=seed, **kwargs)
    assert min(outcomes["wins"], outcomes["losses"], outcomes["time_limits"]) > 0, outcomes


@pytest.mark.parametrize("perturbation", [
    {"params_change": {"reward_all_live": 0.5}},
    {"key_salt": 1},
    {"flip": True},
], ids=["reward", "prisoner_draw", "observation_bit"])
def test_a_perturbed_env_fails_the_comparison(perturbation: dict) -> None:
    """Negative controls on the default case's compiled run: each perturbation must be caught."""
    with pytest.raises(AssertionError):
        compare(3, 32, 48, seed=0, **perturbation)
