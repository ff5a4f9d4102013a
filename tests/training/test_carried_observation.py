"""What a runner carries from one rollout step to the next (``kit.envs.observation``): a world state that
``WorldState`` builds from the observations is rebuilt from them (``kit.envs.world_state``, the one path
to a critic, for the current and the final world state), exactly, not carried beside them; an env's own
world state (SMAX's) is carried where a critic reads it, and only there. For a GPU (H200 target, where
JAX's CUDA plugin is installed, as CI installs it) the rebuilt world state takes a copy out of every step
of MAPPO's rollout."""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest

from jaxmarl_suite import bench
from jaxmarl_suite.baselines import mappo
from jaxmarl_suite.errors import IncompatibleEnvError
from jaxmarl_suite.training.kit import envs, make_train


@pytest.mark.parametrize(("env_id", "param_sharing", "carried"), [
    ("MPE_simple_spread_v3", "group", False),
    ("MPE_simple_adversary_v3", "group", False),  # two groups, concatenated in order
    ("MPE_simple_adversary_v3", "all", False),  # padded observations (FlattenGroups)
    ("SMAX_3m", "group", True),  # SMAX's own world state
])
def test_the_world_state_is_rebuilt_exactly_or_carried(env_id: str, param_sharing: str,
                                                       carried: bool) -> None:
    env = envs.make_training_env(env_id, 8, {}, param_sharing, world_state=True)
    state, timestep = jax.jit(env.reset)(jax.random.PRNGKey(0))
    step, sample = jax.jit(env.step), jax.jit(env.sample_actions)
    restarts = 0
    for t in range(30):  # MPE's episodes end at 25 steps, random 3m battles sooner: through auto-resets
        carry = envs.observation(env, timestep)
        assert ("world_state" in carry.info) == carried
        np.testing.assert_array_equal(envs.world_state(env, carry), timestep.info["world_state"])
        # the one the step led to, before the reset: what a critic bootstraps from on truncation
        final = envs.world_state(env, timestep, final=True)
        np.testing.assert_array_equal(final, timestep.info["final_world_state"])
        if not carried:  # every agent's observation, group after group (mpe2's state())
            laid_out = [np.asarray(timestep.obs[g]).reshape(8, -1) for g in env.groups]
            np.testing.assert_array_equal(envs.world_state(env, carry), np.concatenate(laid_out, -1))
            ended = [np.asarray(timestep.info["final_obs"][g]).reshape(8, -1) for g in env.groups]
            np.testing.assert_array_equal(final, np.concatenate(ended, -1))
        restarted = np.asarray(timestep.info["episode_done"])
        if restarted.any():  # where an episode restarted, the final world state is the ended one's
            assert not np.array_equal(np.asarray(final)[restarted],
                                      np.asarray(timestep.info["world_state"])[restarted])
        key = jax.random.PRNGKey(t + 1)
        state, timestep = step(key, state, sample(key, timestep.action_mask))
        restarts += int(np.asarray(timestep.info["episode_done"]).sum())
    assert restarts > 0


def test_a_stack_without_a_world_state_carries_none_and_says_so() -> None:
    env = envs.make_training_env("SMAX_3m", 4, {}, "group")  # as IPPO builds it
    _, timestep = jax.jit(env.reset)(jax.random.PRNGKey(0))
    assert "world_state" in timestep.info  # SMAX reports one; IPPO's runner does not carry it
    carry = envs.observation(env, timestep)
    assert carry.info == {}
    with pytest.raises(IncompatibleEnvError, match="world_state=True"):
        envs.world_state(env, carry)


@pytest.mark.slow  # a GPU compile of MAPPO (about 25 s); the rebuilt world state's values are checked above
def test_for_a_gpu_mappo_no_longer_copies_the_world_state_every_step(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        bench.gpu_target_device()
    except bench.GpuTargetUnavailableError:
        pytest.skip("needs JAX's CUDA plugin to compile for a GPU (the gpu-target extra)")
    config = mappo.Config(num_envs=64, num_steps=4, total_timesteps=64 * 4, num_minibatches=1,
                          update_epochs=1)
    state_dim = 3 * 18  # simple_spread: 3 agents' observations
    copy = re.compile(rf"= f32\[{config.num_envs},{state_dim}\]\S* copy\(")

    def copies() -> int:
        program = bench.compile_for_gpu(make_train(mappo, config), jax.random.PRNGKey(0), mappo.HParams())
        return len(copy.findall(program.as_text()))

    assert copies() == 0
    # the world state carried beside the observations, as before: XLA copies it every step
    original = envs.observation

    def carrying(env: object, timestep: object) -> envs.Observation:
        carried = original(env, timestep)
        return carried._replace(info={"world_state": timestep.info["world_state"]})

    monkeypatch.setattr(envs, "observation", carrying)
    monkeypatch.setattr(envs, "world_state", lambda env, observation, final=False: observation.info[
        "final_world_state" if final else "world_state"])
    assert copies() > 0
