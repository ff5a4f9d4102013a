"""The ``physics="c"`` backend: MuJoCo's C engine called from the compiled program (environments/mamujoco/
host.py). Its parity with ``mamujoco_v1`` from the reference's state, every task, is in
test_mamujoco_parity.py; here: whole free-running episodes equal to the reference's bit for bit under x64,
batching (nested ``vmap``, per-env physical constants, any thread count) equal to single-env steps, and the
errors at ``make()``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("mujoco.mjx", reason="the mujoco extra (mujoco, mujoco-mjx) is not installed")

import jaxmarl_suite  # noqa: E402
from jaxmarl_suite.environments.mamujoco import MaMuJoCo  # noqa: E402


def _random_actions(env: MaMuJoCo, key: jax.Array, lead: tuple[int, ...] = ()) -> dict[str, jax.Array]:
    actions = {}
    for group, key_g in zip(env.groups, jax.random.split(key, len(env.groups)), strict=True):
        shape = (*lead, len(env.groups[group]), env.action_space(group).shape[0])
        actions[group] = jax.random.uniform(key_g, shape, minval=-1.0, maxval=1.0)
    return actions


def test_bad_backend_arguments_fail_at_make() -> None:
    with pytest.raises(ValueError, match="physics must be one of 'mjx', 'c'"):
        jaxmarl_suite.make("MaMuJoCo_Reacher_2x1", physics="cpu")
    with pytest.raises(ValueError, match="host_threads must be an int >= 1"):
        jaxmarl_suite.make("MaMuJoCo_Reacher_2x1", physics="c", host_threads=0)
    with pytest.raises(ValueError, match="host_threads applies to physics='c' only"):
        jaxmarl_suite.make("MaMuJoCo_Reacher_2x1", host_threads=2)


def test_a_batch_with_per_env_masses_equals_its_envs_stepped_one_by_one() -> None:
    """Six Ants with six torso masses, under a nested ``vmap`` (2 x 3), on one and on three threads: every
    env's observations and reward equal its own unbatched steps; the masses reach the engine."""
    envs = {threads: MaMuJoCo("Ant", "4x2", physics="c", host_threads=threads) for threads in (1, 3)}
    env = envs[1]
    base = env.default_params
    masses = jnp.stack([base.body_mass.at[1].multiply(scale) for scale in (0.5, 0.8, 1.0, 1.3, 2.0, 3.0)])
    keys = jax.random.split(jax.random.key(4), 6).reshape(2, 3)
    steps = 8

    def episode(e: MaMuJoCo, key: jax.Array, p: Any) -> Any:  # one env; the same actions whatever the key
        state, _ = e.reset(key, p)
        rewards, obs = [], None
        for k in jax.random.split(jax.random.key(5), steps):
            state, ts = e.step(k, state, _random_actions(e, k), p)
            rewards.append(next(iter(ts.reward.values()))[0])
            obs = next(iter(ts.obs.values()))
        return jnp.stack(rewards), obs, state.qpos

    batched = {}
    for threads, e in envs.items():
        one_env = lambda k, m, e=e: episode(e, k, base.replace(body_mass=m))  # noqa: E731
        run = jax.jit(jax.vmap(jax.vmap(one_env)))
        batched[threads] = jax.tree.map(np.asarray, run(keys, masses.reshape(2, 3, -1)))
    for leaf_one, leaf_three in zip(jax.tree.leaves(batched[1]), jax.tree.leaves(batched[3]), strict=True):
        np.testing.assert_array_equal(leaf_one, leaf_three)  # the thread count changes nothing
    single = jax.jit(lambda k, p: episode(env, k, p))
    for i in range(2):
        for j in range(3):
            p_ij = base.replace(body_mass=masses[i * 3 + j])
            one = jax.tree.map(np.asarray, single(keys[i, j], p_ij))
            rewards, obs, qpos = (leaf[i, j] for leaf in batched[1])
            np.testing.assert_array_equal(qpos, one[2])  # the engine's output, bit for bit
            # XLA may fuse the reward's and observation's float32 arithmetic differently once batched
            np.testing.assert_allclose(rewards, one[0], rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(obs, one[1], rtol=1e-6, atol=1e-6)
    # same reset key and actions, different torso masses: the trajectories part
    same_key = jax.jit(jax.vmap(lambda m: episode(env, keys[0, 0], base.replace(body_mass=m))))
    qpos = np.asarray(same_key(masses)[2])
    assert np.all(np.abs(qpos[1:] - qpos[:1]).max(axis=1) > 1e-3), qpos


_EXACT_SCRIPT = textwrap.dedent(
    """
    import jax, numpy as np, sys
    jax.config.update("jax_enable_x64", True)
    from gymnasium_robotics import mamujoco_v1
    from jaxmarl_suite.environments.mamujoco import MaMuJoCo
    from jaxmarl_suite.environments.mamujoco.parity import (agent_observations, group_actions,
                                                            state_from_mamujoco)

    def free_run(scenario, conf, steps, seed, heavier_torso):
        env = MaMuJoCo(scenario, conf, physics="c")
        ref = mamujoco_v1.parallel_env(scenario, conf)
        ref.reset(seed=seed)
        state, params = state_from_mamujoco(ref, env)  # once: afterwards both run free
        if heavier_torso:
            params = params.replace(body_mass=params.body_mass.at[1].multiply(1.001))
        step = jax.jit(env.step)
        rng = np.random.default_rng(seed)
        worst = 0.0
        for t in range(steps):
            actions = {a: rng.uniform(-1, 1, ref.action_space(a).shape).astype(np.float32)
                       for a in ref.agents}
            state, ts = step(jax.random.key(t), state, group_actions(env, actions), params)
            obs, reward, term, trunc, _ = ref.step(actions)
            ours = agent_observations(env, ts.obs)
            ref_qpos = ref.single_agent_env.unwrapped.data.qpos
            worst = max(worst, float(np.max(np.abs(np.asarray(state.qpos) - ref_qpos))))
            for a in obs:  # observations are float32 in every mode: equal to the reference's rounded
                assert heavier_torso or np.allclose(ours[a], obs[a], rtol=1e-6, atol=1e-6), (t, a)
            ours_reward = float(ts.reward[next(iter(ts.reward))][0])  # rewards are float32 in every mode
            expected = reward["agent_0"]
            assert heavier_torso or abs(ours_reward - expected) <= 1e-6 * (1 + abs(expected))
            if term["agent_0"] or trunc["agent_0"]:
                assert heavier_torso or bool(next(iter(ts.terminated.values())).all()) == term["agent_0"]
                break
        return t + 1, worst

    cases = [("HalfCheetah", "6x1", 1000), ("Ant", "4x2", 300), ("Humanoid", "9|8", 300)]
    for scenario, conf, steps in cases:
        n, exact = free_run(scenario, conf, steps, 1, False)
        _, perturbed = free_run(scenario, conf, steps, 1, True)
        print(scenario, conf, n, exact, perturbed)
        assert exact == 0.0, (scenario, exact)
        assert perturbed > 1e-6, (scenario, perturbed)  # the negative control: a 0.1% heavier torso
    print("ok")
    """
)


def test_x64_episodes_run_free_equal_to_the_reference_bit_for_bit() -> None:
    """Under x64, set once from the reference's reset and then free-running with the same actions, our
X (HalfCheetah's 1,000
    steps; Ant and Humanoid, PGS solver included, to their end or 300 steps); a 0.1% heavier torso departs
    from it. In a subprocess: x64 is process-wide."""
    pytest.importorskip("gymnasium_robotics", reason="gymnasium-robotics is not installed")
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", _EXACT_SCRIPT], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout + done.stderr[-3000:]


RESET_TASKS = ["HalfCheetah_6x1", "Reacher_2x1", "Ant_4x2", "Hopper_3x1", "Humanoid_9|8",
               "HumanoidStandup_9|8", "ManySegmentAnt_2x3"]


@pytest.mark.parametrize("task", RESET_TASKS)
def test_reset_observations_equal_the_references_at_the_same_pose(task: str) -> None:
    """A reset runs only the stages of MuJoCo's forward pass its observations need (none for the cheetah and
    the ants, kinematics for Reacher, the centre-of-mass pass for the Humanoids): every agent's first
    observation and the world state equal the reference's after ``set_state`` at our reset's pose."""
    robotics = pytest.importorskip("gymnasium_robotics", reason="gymnasium-robotics is not installed")
    from jaxmarl_suite.environments.mamujoco.parity import agent_observations, reference_task

    env = jaxmarl_suite.make(f"MaMuJoCo_{task}", physics="c")
    ref = robotics.mamujoco_v1.parallel_env(env.scenario, env.agent_conf)
    reset = jax.jit(env.reset)
    for seed in range(3):
        state, timestep = reset(jax.random.key(seed))
        ref.reset(seed=seed)
        reference_task(ref).set_state(np.asarray(state.qpos, np.float64), np.asarray(state.qvel, np.float64))
        ours = agent_observations(env, timestep.obs)
        expected = ref._get_obs()
        for agent, values in expected.items():
            np.testing.assert_allclose(ours[agent], values, rtol=1e-6, atol=1e-6, err_msg=f"{task} {agent}")
        np.testing.assert_allclose(timestep.info["world_state"], ref.state(), rtol=1e-6, atol=1e-6)
