"""``to_jaxmarl``: JaxMARL 0.2's per-agent API over suite envs, checked against JaxMARL where installed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from toy_envs import TwoTeams

import jaxmarl_suite
from jaxmarl_suite.compat import to_jaxmarl
from jaxmarl_suite.wrappers import AutoReset

ENV_ID = "MPE_simple_spread_v3"
EPISODE_LENGTH = 25


def _random_actions(env, key: jax.Array) -> dict[str, jax.Array]:
    """One action per agent, drawn the way JaxMARL scripts do: ``env.action_space(agent).sample(key)``."""
    keys = jax.random.split(key, env.num_agents)
    return {agent: env.action_space(agent).sample(k) for agent, k in zip(env.agents, keys, strict=True)}


# ---------------------------------------------------------------------------------------------------
# Adapter semantics (no jaxmarl needed)
# ---------------------------------------------------------------------------------------------------


def test_per_agent_values_are_slices_of_the_group_arrays() -> None:
    core = TwoTeams()
    env = to_jaxmarl(core)
    key = jax.random.PRNGKey(4)
    obs, state = env.reset(key)
    _, timestep = core.reset(key)
    assert env.agents == ["red_0", "red_1", "blue_0"] and env.num_agents == 3
    assert env.agent_classes == {"red": ["red_0", "red_1"], "blue": ["blue_0"]}
    for agent, group, index in (("red_0", "red", 0), ("red_1", "red", 1), ("blue_0", "blue", 0)):
        np.testing.assert_array_equal(obs[agent], timestep.obs[group][index])
        assert env.observation_space(agent).shape == core.observation_space(group).shape
    assert obs["red_1"].shape == (3,) and obs["blue_0"].shape == (5,)


def test_step_env_is_the_core_step_with_actions_stacked_per_group() -> None:
    core = TwoTeams()
    env = to_jaxmarl(core)
    state_key, step_key = jax.random.split(jax.random.PRNGKey(0))
    _, state = env.reset(state_key)
    core_state, _ = core.reset(state_key)
    actions = {"red_0": jnp.int32(2), "red_1": jnp.int32(0), "blue_0": jnp.int32(3)}
    obs, next_state, reward, dones, info = env.step_env(step_key, state, actions)
    _, expected = core.step(step_key, core_state, {"red": jnp.array([2, 0]), "blue": jnp.array([3])})
    for agent, group, index in (("red_0", "red", 0), ("red_1", "red", 1), ("blue_0", "blue", 0)):
        # to the last bit or two: the two paths' ops are compiled apart (op by op), and without XLA's fusion
        # emitters (the default test selection, tests/conftest.py) their float rounding may differ
        np.testing.assert_allclose(obs[agent], expected.obs[group][index], rtol=1e-6, atol=0)
        np.testing.assert_array_equal(reward[agent], expected.reward[group][index])
        done = expected.terminated[group][index] | expected.truncated[group][index]
        assert bool(dones[agent]) == bool(done)
    # Blue's action 3 moved every blue observation entry by exactly 3.
    _, initial = core.reset(state_key)
    np.testing.assert_allclose(obs["blue_0"] - initial.obs["blue"][0], 3.0, rtol=1e-6)
    assert info == {}
    assert int(next_state.env_state.step) == 1


def test_dones_all_exactly_at_the_time_limit_then_auto_reset() -> None:
    env = to_jaxmarl(jaxmarl_suite.make(ENV_ID), extra_info=True)
    step = jax.jit(env.step)
    key = jax.random.PRNGKey(7)
    obs, state = env.reset(key)
    for t in range(1, EPISODE_LENGTH + 1):
        action_key, step_key = jax.random.split(jax.random.fold_in(key, t))
        actions = _random_actions(env, action_key)
        before = state
        obs, state, reward, dones, info = step(step_key, state, actions)
        if t < EPISODE_LENGTH:
            assert not bool(dones["__all__"]), f"episode ended early, at step {t}"
            assert not any(bool(dones[a]) for a in env.agents)
            assert int(state.env_state.step) == t
    assert bool(dones["__all__"]) and all(bool(dones[a]) for a in env.agents)
    assert all(bool(info["truncated"][a]) and not bool(info["terminated"][a]) for a in env.agents)

    # The returned obs and state are a fresh episode, reset with the second half of the step key.
    inner_key, reset_key = jax.random.split(step_key)
    fresh_obs, _ = env.reset(reset_key)
    assert int(state.env_state.step) == 0
    for agent in env.agents:
        np.testing.assert_array_equal(obs[agent], fresh_obs[agent])
    # Reward and final_obs describe the transition that ended the old episode (up to float rounding:
    # step_env runs eagerly here, fused under jit inside step).
    final_obs, _, final_reward, _, _ = env.step_env(inner_key, before, actions)
    for agent in env.agents:
        np.testing.assert_allclose(info["final_obs"][agent], final_obs[agent], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(reward[agent], final_reward[agent], rtol=1e-6)
        assert not np.array_equal(info["final_obs"][agent], obs[agent])


def test_partial_termination_does_not_end_the_episode() -> None:
    env = to_jaxmarl(TwoTeams())
    step = jax.jit(env.step)
    _, state = env.reset(jax.random.PRNGKey(0))
    push_red = {"red_0": jnp.int32(2), "red_1": jnp.int32(2), "blue_0": jnp.int32(0)}
    history = []
    for t in range(7):
        _, state, _, dones, _ = step(jax.random.PRNGKey(t), state, push_red)
        history.append({k: bool(v) for k, v in dones.items()})
    red_done_first = next(t for t, d in enumerate(history) if d["red_0"] and d["red_1"])
    assert red_done_first < 6, "red should terminate before the time limit of 7"
    assert not any(d["__all__"] for d in history[:6])
    assert not any(d["blue_0"] for d in history[:6])
    assert history[6]["__all__"] and history[6]["blue_0"]


def test_get_avail_actions_follows_the_env_action_mask() -> None:
    env = to_jaxmarl(TwoTeams())
    _, state = env.reset(jax.random.PRNGKey(1))
    actions = {"red_0": jnp.int32(0), "red_1": jnp.int32(0), "blue_0": jnp.int32(0)}
    for t in range(4):
        avail = env.get_avail_actions(state)
        np.testing.assert_array_equal(avail["blue_0"], [True, True, True, t % 2 == 0])
        np.testing.assert_array_equal(avail["red_1"], [True, True, True])
        _, state, _, _, _ = env.step(jax.random.PRNGKey(t), state, actions)


def test_get_avail_actions_is_not_defined_for_continuous_actions() -> None:
    env = to_jaxmarl(jaxmarl_suite.make(ENV_ID, continuous_actions=True))
    _, state = env.reset(jax.random.PRNGKey(0))
    with pytest.raises(NotImplementedError, match="no action mask"):
        env.get_avail_actions(state)


def test_spaces_have_the_attributes_jaxmarl_scripts_read() -> None:
    discrete = to_jaxmarl(jaxmarl_suite.make(ENV_ID))
    action_space = discrete.action_space("agent_1")
    assert action_space.n == 5 and action_space.shape == () and action_space.dtype == np.int32
    samples = jax.vmap(action_space.sample)(jax.random.split(jax.random.PRNGKey(0), 200))
    assert samples.shape == (200,) and set(np.unique(samples).tolist()) == {0, 1, 2, 3, 4}
    assert bool(action_space.contains(jnp.int32(4))) and not bool(action_space.contains(jnp.int32(5)))
    obs_space = discrete.observation_space("agent_1")
    assert (
        obs_space.shape == (18,)
        and np.all(np.isneginf(obs_space.low))
        and np.all(np.isposinf(obs_space.high))
    )
    assert discrete.observation_spaces["agent_2"] is discrete.observation_space("agent_2")

    continuous = to_jaxmarl(jaxmarl_suite.make(ENV_ID, continuous_actions=True))
    box = continuous.action_space("agent_0")
    assert box.shape == (5,) and box.dtype == np.float32
    np.testing.assert_array_equal(box.low, np.zeros(5))
    np.testing.assert_array_equal(box.high, np.ones(5))
    sample = box.sample(jax.random.PRNGKey(1))
    assert sample.shape == (5,) and bool(box.contains(sample))
    assert not bool(box.contains(jnp.full((5,), 1.5, jnp.float32)))
    with pytest.raises(KeyError, match="unknown agent"):
        continuous.action_space("agent_9")


def test_reset_state_replaces_the_reset_on_done() -> None:
    env = to_jaxmarl(jaxmarl_suite.make(ENV_ID, max_cycles=2))
    _, state = env.reset(jax.random.PRNGKey(0))
    chosen_obs, chosen = env.reset(jax.random.PRNGKey(99))
    actions = {agent: jnp.int32(1) for agent in env.agents}
    obs, state, _, dones, _ = env.step(jax.random.PRNGKey(1), state, actions, chosen)
    assert not bool(dones["__all__"])
    assert int(state.env_state.step) == 1
    obs, state, _, dones, _ = env.step(jax.random.PRNGKey(2), state, actions, chosen)
    assert bool(dones["__all__"])
    for agent in env.agents:
        np.testing.assert_array_equal(obs[agent], chosen_obs[agent])
    np.testing.assert_array_equal(state.env_state.pos, chosen.env_state.pos)


def test_actions_are_checked_when_traced() -> None:
    env = to_jaxmarl(jaxmarl_suite.make(ENV_ID))
    _, state = env.reset(jax.random.PRNGKey(0))
    with pytest.raises(KeyError, match="missing agents \\['agent_2'\\]"):
        env.step(jax.random.PRNGKey(1), state, {"agent_0": jnp.int32(0), "agent_1": jnp.int32(0)})
    with pytest.raises(TypeError, match="dtype float32"):
        env.step(jax.random.PRNGKey(1), state, {a: jnp.float32(1.0) for a in env.agents})
    with pytest.raises(ValueError, match="needs shape"):
        env.step(jax.random.PRNGKey(1), state, {a: jnp.zeros((2,), jnp.int32) for a in env.agents})
    # JaxMARL's IPPO hands each agent a [1]-shaped action; it means the same as a scalar.
    scalar = env.step(jax.random.PRNGKey(1), state, {a: jnp.int32(3) for a in env.agents})
    shaped = env.step(jax.random.PRNGKey(1), state, {a: jnp.array([3]) for a in env.agents})
    jax.tree.map(np.testing.assert_array_equal, scalar, shaped)


def test_batched_or_auto_resetting_envs_are_rejected() -> None:
    with pytest.raises(TypeError, match="single env"):
        to_jaxmarl(jaxmarl_suite.make(ENV_ID, num_envs=4))
    with pytest.raises(TypeError, match="AutoReset"):
        to_jaxmarl(AutoReset(jaxmarl_suite.make(ENV_ID)))


# ---------------------------------------------------------------------------------------------------
# Against JaxMARL itself
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("our_kwargs", "their_kwargs"),
    [({}, {}), ({"continuous_actions": True}, {"action_type": "Continuous"})],
    ids=["discrete", "continuous"],
)
def test_spaces_match_jaxmarl(our_kwargs: dict, their_kwargs: dict) -> None:
    jaxmarl = pytest.importorskip("jaxmarl")
    theirs = jaxmarl.make(ENV_ID, **their_kwargs)
    ours = to_jaxmarl(jaxmarl_suite.make(ENV_ID, **our_kwargs))
    assert ours.agents == list(theirs.agents) and ours.num_agents == theirs.num_agents == 3
    for agent in theirs.agents:
        their_obs, our_obs = theirs.observation_space(agent), ours.observation_space(agent)
        assert our_obs.shape == tuple(their_obs.shape) == (18,)
        np.testing.assert_array_equal(our_obs.low, np.broadcast_to(their_obs.low, their_obs.shape))
        np.testing.assert_array_equal(our_obs.high, np.broadcast_to(their_obs.high, their_obs.shape))
        their_act, our_act = theirs.action_space(agent), ours.action_space(agent)
        assert type(our_act).__name__ == type(their_act).__name__
        assert our_act.shape == tuple(their_act.shape)
        assert np.dtype(our_act.dtype) == np.dtype(their_act.dtype)
        if hasattr(their_act, "n"):
            assert our_act.n == their_act.n == 5
        else:
            np.testing.assert_array_equal(our_act.low, np.broadcast_to(their_act.low, their_act.shape))
            np.testing.assert_array_equal(our_act.high, np.broadcast_to(their_act.high, their_act.shape))
        obs, _ = ours.reset(jax.random.PRNGKey(0))
        assert bool(their_obs.contains(obs[agent]))


@pytest.mark.parametrize("wrapper_name", ["LogWrapper", "MPELogWrapper"])
def test_jaxmarl_log_wrappers_report_our_episodes(wrapper_name: str) -> None:
    pytest.importorskip("jaxmarl")
    from jaxmarl.wrappers import baselines

    env = getattr(baselines, wrapper_name)(to_jaxmarl(jaxmarl_suite.make(ENV_ID)))
    num_envs, num_steps = 4, 60

    def rollout(key: jax.Array):
        reset_key, scan_key = jax.random.split(key)
        _, state = jax.vmap(env.reset)(jax.random.split(reset_key, num_envs))

        def body(state, step_key):
            action_key, env_key = jax.random.split(step_key)
            actions = jax.vmap(lambda k: _random_actions(env, k))(jax.random.split(action_key, num_envs))
            _, state, reward, dones, info = jax.vmap(env.step)(
                jax.random.split(env_key, num_envs), state, actions
            )
            return state, (reward, dones, info)

        _, trajectory = jax.lax.scan(body, state, jax.random.split(scan_key, num_steps))
        return trajectory

    reward, dones, info = jax.device_get(jax.jit(rollout)(jax.random.PRNGKey(11)))
    rewards = np.stack([reward[a] for a in env.agents], axis=-1)  # [T, B, agents]
    ended = np.asarray(info["returned_episode"])  # [T, B, agents]
    assert ended.shape == (num_steps, num_envs, 3)
    end_steps = [t for t in range(num_steps) if ended[t].any()]
    assert end_steps == [24, 49] and ended[[24, 49]].all()
    np.testing.assert_array_equal(dones["__all__"], ended[..., 0])
    scale = 3.0 if wrapper_name == "MPELogWrapper" else 1.0  # MPELogWrapper multiplies by num_agents
    for end, start in ((24, 0), (49, 25)):
        np.testing.assert_array_equal(info["returned_episode_lengths"][end], EPISODE_LENGTH)
        expected = scale * rewards[start : end + 1].sum(axis=0)
        returned = info["returned_episode_returns"][end]
        assert np.isfinite(returned).all()
        np.testing.assert_allclose(returned, expected, rtol=1e-5)
    # simple_spread's reward is a negative distance sum: a real signal, not zeros.
    assert (rewards < 0).mean() > 0.5


def _batchify(values: dict, agents: list[str], num_actors: int) -> jax.Array:
    """IPPO's layout: agent-major stacking, flattened to ``[num_actors, -1]``."""
    return jnp.stack([values[a] for a in agents]).reshape((num_actors, -1))


def _unbatchify(values: jax.Array, agents: list[str], num_envs: int, num_agents: int) -> dict:
    """IPPO's inverse: ``[num_actors]`` back to ``{agent: [num_envs, 1]}``."""
    values = values.reshape((num_agents, num_envs, -1))
    return {a: values[i] for i, a in enumerate(agents)}


def _ippo_env_loop(env, num_envs: int, num_steps: int):
    """The environment side of JaxMARL's ``ippo_ff_mpe`` (policy replaced by a random linear one)."""
    from jaxmarl.wrappers.baselines import MPELogWrapper as LogWrapper

    env = LogWrapper(env)
    num_actors = env.num_agents * num_envs
    action_dim = env.action_space(env.agents[0]).n
    obs_shape = env.observation_space(env.agents[0]).shape

    def run(rng: jax.Array):
        rng, init_rng, reset_rng = jax.random.split(rng, 3)
        weights = 0.1 * jax.random.normal(init_rng, (*obs_shape, action_dim))
        obsv, env_state = jax.vmap(env.reset)(jax.random.split(reset_rng, num_envs))

        def env_step(runner_state, unused):
            env_state, last_obs, rng = runner_state
            obs_batch = _batchify(last_obs, env.agents, num_actors)
            rng, action_rng, step_rng = jax.random.split(rng, 3)
            action = jax.random.categorical(action_rng, obs_batch @ weights)
            env_act = _unbatchify(action, env.agents, num_envs, env.num_agents)
            rng_step = jax.random.split(step_rng, num_envs)
            obsv, env_state, reward, done, info = jax.vmap(env.step)(rng_step, env_state, env_act)
            info = jax.tree.map(lambda x: x.reshape(num_actors), info)
            transition = (
                _batchify(done, env.agents, num_actors).squeeze(),
                action,
                _batchify(reward, env.agents, num_actors).squeeze(),
                obs_batch,
                info,
            )
            return (env_state, obsv, rng), transition

        _, trajectory = jax.lax.scan(env_step, (env_state, obsv, rng), None, num_steps)
        return trajectory

    return run


def test_jaxmarl_ippo_env_loop_runs_with_only_make_changed() -> None:
    jaxmarl = pytest.importorskip("jaxmarl")
    num_envs, num_steps = 2, 26
    ours = _ippo_env_loop(to_jaxmarl(jaxmarl_suite.make(ENV_ID)), num_envs, num_steps)
    theirs = _ippo_env_loop(jaxmarl.make(ENV_ID), num_envs, num_steps)
    key = jax.random.PRNGKey(0)
    # Same pytree structure, shapes and dtypes out of the loop as with JaxMARL's own env.
    our_shapes, their_shapes = jax.eval_shape(ours, key), jax.eval_shape(theirs, key)
    assert jax.tree.structure(our_shapes) == jax.tree.structure(their_shapes)
    for mine, reference in zip(jax.tree.leaves(our_shapes), jax.tree.leaves(their_shapes), strict=True):
        assert (mine.shape, mine.dtype) == (reference.shape, reference.dtype)

    done, action, reward, obs_batch, info = jax.device_get(jax.jit(ours)(key))
    num_actors = 3 * num_envs
    assert done.shape == (num_steps, num_actors) and obs_batch.shape == (num_steps, num_actors, 18)
    assert np.flatnonzero(done.any(axis=1)).tolist() == [24]
    assert done[24].all() and info["returned_episode"][24].all()
    np.testing.assert_array_equal(info["returned_episode_lengths"][24], EPISODE_LENGTH)
    # The script's info is env-major ([envs, agents] flattened) while its batchify is agent-major.
    returns = info["returned_episode_returns"][24].reshape(num_envs, 3)
    summed = reward[:25].sum(axis=0).reshape(3, num_envs).T
    np.testing.assert_allclose(returns, 3.0 * summed, rtol=1e-5)
    assert np.isfinite(obs_batch).all() and set(np.unique(action).tolist()) <= set(range(5))


def _jaxmarl_ids() -> list[str]:
    # JaxMARL's declared 6a/9a FACMAC spaces do not match its own observations (README card); skip them.
    return [
        i
        for i in jaxmarl_suite.registered_envs()
        if i.startswith("MPE_") and not i.endswith(("6a_v1", "9a_v1"))
    ]


@pytest.mark.parametrize("env_id", _jaxmarl_ids())
def test_to_jaxmarl_spaces_match_jaxmarl_for_the_same_id(env_id: str) -> None:
    """For every id JaxMARL also has (default constructor), to_jaxmarl gives JaxMARL's agents and sizes."""
    jaxmarl = pytest.importorskip("jaxmarl")
    try:
        theirs = jaxmarl.make(env_id)
    except ValueError:
        pytest.skip(f"JaxMARL has no {env_id}")  # reason: mpe2-only scenarios (collect_treasure, ...)
    # JaxMARL defaults some envs (simple_world_comm, FACMAC) to continuous actions; compare like with like.
    continuous = not hasattr(theirs.action_space(theirs.agents[0]), "n")
    ours = to_jaxmarl(jaxmarl_suite.make(env_id, continuous_actions=continuous))
    assert sorted(ours.agents) == sorted(theirs.agents)
    for agent in theirs.agents:
        our_obs, their_obs = ours.observation_space(agent).shape, tuple(theirs.observation_space(agent).shape)
        # FACMAC's prey too: the adapter pads them to JaxMARL's 16 (the native env gives them 14).
        assert our_obs == their_obs, agent
        our_act, their_act = ours.action_space(agent), theirs.action_space(agent)
        if hasattr(their_act, "n"):
            assert our_act.n == their_act.n, agent
        else:
            assert tuple(our_act.shape) == tuple(their_act.shape), agent


# ---------------------------------------------------------------------------------------------------
# JaxMARL's space classes, wrappers and rollout managers on our envs (MPE, FACMAC, SMAX)
# ---------------------------------------------------------------------------------------------------


def test_spaces_are_instances_of_jaxmarl_spaces() -> None:
    pytest.importorskip("jaxmarl")
    from jaxmarl.environments import spaces
    from jaxmarl.wrappers.baselines import get_space_dim

    discrete = to_jaxmarl(jaxmarl_suite.make(ENV_ID))
    assert isinstance(discrete.action_space("agent_0"), spaces.Discrete)
    assert isinstance(discrete.observation_space("agent_0"), spaces.Box)
    # JaxMARL's Q-learning scripts size their networks with get_space_dim, which checks isinstance.
    assert get_space_dim(discrete.action_space("agent_0")) == 5
    assert get_space_dim(discrete.observation_space("agent_0")) == 18
    continuous = to_jaxmarl(jaxmarl_suite.make(ENV_ID, continuous_actions=True))
    assert isinstance(continuous.action_space("agent_0"), spaces.Box)
    assert get_space_dim(continuous.action_space("agent_0")) == 5


def test_spaces_do_not_need_jaxmarl(monkeypatch: pytest.MonkeyPatch) -> None:
    from jaxmarl_suite.compat import jaxmarl as compat

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "jaxmarl" else real_find_spec(name, *a)
    )
    # Uncached: what the adapter builds in a process where jaxmarl is not installed.
    plain = compat._with_jaxmarl_base.__wrapped__(compat.Discrete)
    assert plain is compat.Discrete
    space = plain(jaxmarl_suite.make(ENV_ID).action_space("agents"))
    assert space.n == 5 and bool(space.contains(jnp.int32(4)))
    assert all(not cls.__module__.startswith("jaxmarl.") for cls in type(space).__mro__)


def test_ctrollout_manager_on_mpe() -> None:
    pytest.importorskip("jaxmarl")
    from jaxmarl.wrappers.baselines import CTRolloutManager, MPELogWrapper

    batch = 4
    env = MPELogWrapper(to_jaxmarl(jaxmarl_suite.make(ENV_ID)))
    manager = CTRolloutManager(env, batch_size=batch)
    assert manager.obs_size == 18 + 3  # padded to the longest observation, plus a one-hot agent id

    def run(key: jax.Array):
        reset_key, action_key, step_key = jax.random.split(key, 3)
        obs, state = manager.batch_reset(reset_key)
        keys = jax.random.split(action_key, 3)
        actions = {a: manager.batch_sample(k, a) for a, k in zip(env.agents, keys, strict=True)}
        next_obs, _, reward, dones, _ = manager.batch_step(step_key, state, actions)
        return obs, next_obs, reward, dones

    obs, next_obs, reward, dones = jax.device_get(jax.jit(run)(jax.random.PRNGKey(3)))
    for o in (obs, next_obs):
        raw = np.concatenate([o[a][:, :18] for a in env.agents], axis=-1)
        # The default global state is every agent's raw observation, concatenated.
        np.testing.assert_array_equal(o["__all__"], raw)
        for i, agent in enumerate(env.agents):
            np.testing.assert_array_equal(o[agent][:, 18:], np.broadcast_to(np.eye(3)[i], (batch, 3)))
    np.testing.assert_allclose(reward["__all__"], sum(reward[a] for a in env.agents), rtol=1e-6)
    assert (reward["__all__"] < 0).all() and not dones["__all__"].any()


def test_transformers_rollout_manager_reads_mpe_state_fields() -> None:
    """TransfQMix on MPE builds observations from JaxMARL's state fields (p_pos, p_vel) and env sizes."""
    pytest.importorskip("jaxmarl")
    from jaxmarl.wrappers.baselines import MPELogWrapper
    from jaxmarl.wrappers.transformers import TransformersCTRolloutManager

    adapter = to_jaxmarl(jaxmarl_suite.make(ENV_ID))
    assert (adapter.num_entities, adapter.num_landmarks, adapter.max_steps) == (6, 3, EPISODE_LENGTH)
    manager = TransformersCTRolloutManager(MPELogWrapper(adapter), batch_size=2)
    obs, state = jax.jit(manager.batch_reset)(jax.random.PRNGKey(5))
    positions = np.asarray(state.env_state.p_pos)  # [2 envs, 6 entities, 2]: agents, then landmarks
    np.testing.assert_array_equal(positions, state.env_state.env_state.pos)
    assert obs["agent_1"].shape == (2, 6, 4) and obs["__all__"].shape == (2, 6, 5)
    # Agent 1's first feature pair is entity j's position relative to agent 1.
    np.testing.assert_allclose(obs["agent_1"][..., :2], positions - positions[:, 1:2], atol=1e-6)
    np.testing.assert_array_equal(obs["__all__"][..., :2], positions)


def test_facmac_observations_have_jaxmarl_sizes() -> None:
    core = jaxmarl_suite.make("MPE_simple_facmac_v1")
    env = to_jaxmarl(core)
    assert core.observation_space("agents").shape == (14,)  # the native prey: no padding
    assert all(env.observation_space(a).shape == (16,) for a in env.agents)
    key = jax.random.PRNGKey(2)
    obs, _ = env.reset(key)
    _, timestep = core.reset(key)
    np.testing.assert_array_equal(obs["agent_0"][:14], timestep.obs["agents"][0])
    np.testing.assert_array_equal(obs["agent_0"][14:], np.zeros(2))
    np.testing.assert_array_equal(obs["adversary_2"], timestep.obs["adversaries"][2])
    assert all(bool(env.observation_space(a).contains(obs[a])) for a in env.agents)
    # JaxMARL's IPPO stacks every agent's observation into one array, which needs one length.
    assert jnp.stack([obs[a] for a in env.agents]).shape == (4, 16)


# SMAX --------------------------------------------------------------------------------------------------


def test_jaxmarl_smax_config_builds_our_map() -> None:
    """JaxMARL's SMAX configs: ``make(ENV_NAME, scenario=map_name_to_scenario(MAP_NAME), **ENV_KWARGS)``."""
    jaxmarl_smax = pytest.importorskip("jaxmarl.environments.smax")
    from jaxmarl.environments.smax.smax_env import MAP_NAME_TO_SCENARIO

    kwargs = {"see_enemy_actions": True, "walls_cause_death": True, "attack_mode": "closest"}
    scenario = jaxmarl_smax.map_name_to_scenario("2s3z")
    env = to_jaxmarl(jaxmarl_suite.make("HeuristicEnemySMAX", scenario=scenario, **kwargs))
    assert env.env.scenario_name == "2s3z" and env.env.walls_cause_death
    assert "smax" in env.name.lower() and env.agents == [f"ally_{i}" for i in range(5)]
    assert (env.num_allies, env.num_enemies, env.max_steps) == (5, 5, 120)  # SMAC's 2s3z limit
    assert env.state_size == 10 * 18 and env.obs_size == env.observation_space("ally_0").shape[0] == 174
    # Every map JaxMARL names is the map of the same name here.
    for name, theirs in MAP_NAME_TO_SCENARIO.items():
        assert jaxmarl_suite.make("SMAX", scenario=theirs).scenario_name == name


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"see_enemy_actions": False}, "hide only the opponents' last actions"),
        ({"see_enemy_actions": True, "obs_last_actions": False}, "needs obs_last_actions=True"),
        ({"attack_mode": "random"}, "attack_mode='closest'"),
    ],
    ids=["see_enemy_actions=False", "no last actions", "attack_mode=random"],
)
def test_jaxmarl_smax_kwargs_without_an_equivalent_are_rejected(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        jaxmarl_suite.make("SMAX_3m", **kwargs)


def test_jaxmarl_scenarios_without_an_equivalent_are_rejected() -> None:
    pytest.importorskip("jaxmarl")
    from jaxmarl.environments.smax.smax_env import Scenario as JaxMARLScenario

    half_procedural = JaxMARLScenario(jnp.zeros((6,), jnp.uint8), 3, 3, True, False)
    with pytest.raises(ValueError, match="draws only its start positions SMACv2-style"):
        jaxmarl_suite.make("SMAX", scenario=half_procedural)
    unknown_type = JaxMARLScenario(jnp.array([0, 0, 9, 0]), 2, 2, False, False)
    with pytest.raises(ValueError, match=r"indices \[9\]"):
        jaxmarl_suite.make("SMAX", scenario=unknown_type)
    # A composition none of our maps has is built as it is, with JaxMARL's 100-step limit.
    custom = jaxmarl_suite.make("SMAX", scenario=JaxMARLScenario(jnp.array([1, 1, 4]), 2, 1, False, False))
    assert custom.scenario_name == "custom" and custom.scenario.allies == ("marauder", "marauder")
    assert custom.scenario.enemies == ("zergling",) and custom.default_params.max_steps == 100


def test_walls_cause_death_kills_units_that_touch_the_map_edge() -> None:
    from jaxmarl_suite.environments.smax import SMAX

    stop, north, west = 1, 2, 5
    env = SMAX("3m", walls_cause_death=True)
    state, _ = jax.jit(env.reset)(jax.random.PRNGKey(0))
    # Ally 0 half a move from the left edge moves west (a masked move, sent anyway) and ends on the edge;
    # ally 1 stays as near the edge without touching it; ally 2 walks onto the top edge.
    start = jnp.array([[0.5, 16.0], [0.5, 10.0], [16.0, 31.5]])
    state = state.replace(pos=state.pos.at[:3].set(start))
    actions = {"allies": jnp.array([west, stop, north])}
    state, timestep = jax.jit(env.step)(jax.random.PRNGKey(1), state, actions)
    np.testing.assert_array_equal(np.asarray(state.pos)[[0, 2]], [[0.0, 16.0], [16.0, 32.0]])
    np.testing.assert_array_equal(np.asarray(state.health[:3]), [0.0, 45.0, 0.0])
    np.testing.assert_array_equal(np.asarray(timestep.terminated["allies"]), [True, False, True])
    # Without the flag (the default) the same moves are clamped at the edge and everyone lives: the
    # existing rule test (tests/environments/test_smax.py::test_walls_and_boundaries) covers that.
    assert not SMAX("3m").walls_cause_death


def test_smax_world_state_in_jaxmarl_layout() -> None:
    """TransfQMix splits SMAX observations and world states with JaxMARL's sizes and layout."""
    pytest.importorskip("jaxmarl")
    from jaxmarl.wrappers.baselines import SMAXLogWrapper
    from jaxmarl.wrappers.transformers import TransformersCTRolloutManager

    adapter = to_jaxmarl(jaxmarl_suite.make("SMAX_3m"))
    manager = TransformersCTRolloutManager(SMAXLogWrapper(adapter), batch_size=2)
    obs, state = jax.jit(manager.batch_reset)(jax.random.PRNGKey(6))
    units = np.asarray(obs["__all__"])  # [2 envs, 6 units, features]
    assert units.shape == (2, 6, 12 + 6)
    smax_state = state.env_state.env_state
    np.testing.assert_array_equal(units[..., 0], 1.0)  # health fractions at the start
    np.testing.assert_array_equal(units[..., 1], 0.0)  # marines have no shields
    np.testing.assert_allclose(units[..., 2:4], np.asarray(smax_state.pos) / 32.0, rtol=1e-6)
    np.testing.assert_array_equal(units[..., 5], 1.0)  # the marine bit of the type one-hot
    np.testing.assert_array_equal(units[..., 12], 1.0)  # alive
    np.testing.assert_array_equal(units[..., 13], [[0, 0, 0, 1, 1, 1]] * 2)  # team
    np.testing.assert_array_equal(units[..., 14:], 0.0)  # no last actions, no time elapsed
    # Each agent's observation as a matrix: 2 allies and 3 enemies (18 features), then itself (padded).
    assert obs["ally_0"].shape == (2, 6, 18 + 2)
    np.testing.assert_array_equal(obs["ally_0"][:, -1, :12], units[:, 0, :12])


WIN_ALLIES, WIN_ENEMIES, WIN_LIMIT = "2m", "1m", 30


def test_jaxmarl_smax_wrappers_count_real_wins() -> None:
    """SMAXLogWrapper counts a win when an episode's last reward is at least 1. Through the adapter the
    rewards follow JaxMARL's convention, so its count matches the env's own win signal, episode by episode.

    Random legal play, through CTRolloutManager(SMAXLogWrapper(env)) as JaxMARL's Q-learning scripts run it.
    """
    pytest.importorskip("jaxmarl")
    from jaxmarl.wrappers.baselines import CTRolloutManager, SMAXLogWrapper

    from jaxmarl_suite.environments.smax import SMAX, Scenario, team

    core = SMAX(Scenario(team(WIN_ALLIES), team(WIN_ENEMIES), WIN_LIMIT))
    env = SMAXLogWrapper(to_jaxmarl(core, extra_info=True))
    batch, num_steps = 16, 120
    manager = CTRolloutManager(env, batch_size=batch)

    def rollout(key: jax.Array):
        reset_key, scan_key = jax.random.split(key)
        obs, state = manager.batch_reset(reset_key)

        def body(carry, step_key):
            state, obs = carry
            action_key, env_key = jax.random.split(step_key)
            valid = manager.get_valid_actions(state.env_state)
            keys = jax.random.split(action_key, len(env.agents))
            actions = {
                a: jax.random.categorical(k, jnp.log(valid[a].astype(jnp.float32)))
                for a, k in zip(env.agents, keys, strict=True)
            }
            next_obs, state, reward, dones, info = manager.batch_step(env_key, state, actions)
            return (state, next_obs), (obs["__all__"], valid, reward, dones, info)

        return jax.lax.scan(body, (state, obs), jax.random.split(scan_key, num_steps))[1]

    global_state, valid, reward, dones, info = jax.device_get(jax.jit(rollout)(jax.random.PRNGKey(0)))
    agents = env.agents
    # The global state is the world state in JaxMARL's layout: 12 features per unit, then one row per
    # feature (alive, team, ...). Its alive row agrees with the masks: a living ally may stop.
    num_units = core.num_units
    assert global_state.shape == (num_steps, batch, env.state_size) == (num_steps, batch, 18 * num_units)
    rows = global_state[..., 12 * num_units :].reshape(num_steps, batch, 6, num_units)
    np.testing.assert_array_equal(rows[:, :, 1], np.broadcast_to([0.0, 0.0, 1.0], (num_steps, batch, 3)))
    for i, agent in enumerate(agents):
        np.testing.assert_array_equal(rows[:, :, 0, i] == 1.0, valid[agent][..., 1])
    # Valid actions are the env's masks: no-op for the dead, stop for the living, never both; some die.
    for agent in agents:
        assert (valid[agent][..., 0] != valid[agent][..., 1]).all()
    assert any(valid[agent][..., 0].any() for agent in agents)
    # The global reward is the team's, which every agent gets, dead or alive.
    for agent in agents:
        np.testing.assert_array_equal(reward[agent], reward["__all__"])
    ends = dones["__all__"]
    won = info["won"][ends]
    logged = info["returned_won_episode"][ends]  # [episodes, agents]
    returns = info["returned_episode_returns"][ends]
    for i in range(len(agents)):
        np.testing.assert_array_equal(logged[:, i], won)
    # The control: both outcomes happen, so the count is neither stuck at zero nor always on.
    assert won.sum() >= 3 and (~won).sum() >= 3, (won.sum(), (~won).sum())
    # Marines have no shields or heals: a won episode removed every enemy hit point (1) and won (1).
    np.testing.assert_allclose(returns[won], 2.0, rtol=1e-5)
    assert ((returns[~won] >= 0.0) & (returns[~won] < 1.0)).all()
    step_won = info["won"]
    assert (reward["__all__"][step_won] >= 1.0).all() and (reward["__all__"][~step_won] < 1.0).all()


# ---------------------------------------------------------------------------------------------------
# scripts/run_jaxmarl_baselines.py (the table in docs/compat.md)
# ---------------------------------------------------------------------------------------------------

FAKE_SCRIPT = '''
from jaxmarl import make


def env_from_config(config):
    env = make(config["ENV_NAME"], **config["ENV_KWARGS"])
    assert type(env).__name__ == "JaxMARLEnv", type(env)  # the redirected make built ours
    return env, config["ENV_NAME"]


def make_train(config, env):
    assert (config["NUM_ENVS"], config["BUFFER_SIZE"], config["TEST_INTERVAL"]) == (4, 32, 0.5)

    def train(rng):
        obs, _ = env.reset(rng)
        return obs[env.agents[0]]

    return train
'''


def _runner(monkeypatch: pytest.MonkeyPatch):
    path = Path(__file__).resolve().parents[2] / "scripts" / "run_jaxmarl_baselines.py"
    spec = importlib.util.spec_from_file_location("run_jaxmarl_baselines", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_baseline_runner_redirects_make_and_shortens_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("jaxmarl")
    pytest.importorskip("omegaconf")
    runner = _runner(monkeypatch)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the runner puts the script's folder on it
    scripts = tmp_path / "baselines" / "QLearning"
    (scripts / "config" / "alg").mkdir(parents=True)
    (scripts / "fake_ql.py").write_text(FAKE_SCRIPT)
    (scripts / "config" / "config.yaml").write_text('"SEED": 3\n"SAVE_PATH": "models"\n')
    (scripts / "config" / "alg" / "fake.yaml").write_text(
        '"ENV_NAME": "MPE_simple_spread_v3"\n"ENV_KWARGS": {}\n"NUM_ENVS": 8\n"NUM_STEPS": 26\n'
        '"TOTAL_TIMESTEPS": 1e7\n"LR": 5e-4\n"BUFFER_SIZE": 5000\n"TEST_INTERVAL": 0.05\n'
    )
    run = runner.Run("Fake", "QLearning/fake_ql.py", "QLearning/config/alg/fake.yaml", "q", "MPE")
    config = runner.load_config(tmp_path, run)
    assert config["LR"] == 5e-4 and config["alg"]["NUM_ENVS"] == 8  # hydra's YAML: 5e-4 is a float
    budget = runner.short_budget(config, run.kind)
    assert (budget["TOTAL_TIMESTEPS"], budget["SAVE_PATH"], budget["alg"]["NUM_ENVS"]) == (416, None, 4)
    assert "LEARNING_STARTS" not in budget  # only keys the config has are set
    note = runner.execute(tmp_path, run, reference=False, aliases=False)
    assert "replaced ['make']" in note
    with pytest.raises(AssertionError, match="SimpleSpreadMPE"):  # the control: JaxMARL's own env
        runner.execute(tmp_path, run, reference=True, aliases=False)
