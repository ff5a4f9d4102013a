"""``to_pettingzoo``: PettingZoo's own API test on every registered env, plus seeding, rewards and render."""

from __future__ import annotations

import subprocess
import sys
import warnings

import jax
import numpy as np
import pytest
from env_cases import registered_cases
from toy_envs import TwoTeams

import jaxmarl_suite
from jaxmarl_suite.compat import to_pettingzoo

pettingzoo_test = pytest.importorskip("pettingzoo.test")

ENV_ID = "MPE_simple_spread_v3"


CASES = registered_cases()


def _sample_actions(env, infos: dict, rng: np.random.Generator) -> dict:
    """Random legal actions for the live agents, from Gymnasium spaces (masks where infos give them)."""
    actions = {}
    for agent in env.agents:
        space = env.action_space(agent)
        space.seed(int(rng.integers(2**31)))
        mask = infos.get(agent, {}).get("action_mask")
        actions[agent] = space.sample(mask=mask) if mask is not None else space.sample()
    return actions


def _play(env, seed: int, num_steps: int, action_seed: int = 0) -> list[tuple]:
    """Reset with ``seed`` and play random actions (from ``action_seed``), returning every step's output."""
    rng = np.random.default_rng(action_seed)
    obs, infos = env.reset(seed=seed)
    out = [(obs, infos)]
    for _ in range(num_steps):
        obs, rewards, terminations, truncations, infos = env.step(_sample_actions(env, infos, rng))
        out.append((obs, rewards, terminations, truncations, infos))
    return out


@pytest.mark.parametrize("case", CASES)
def test_parallel_api_test_passes_without_warnings(case: tuple[str, dict]) -> None:
    env_id, kwargs = case
    env = to_pettingzoo(jaxmarl_suite.make(env_id, **kwargs), seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # More cycles than an episode lasts, so the end of the episode is checked too.
        pettingzoo_test.parallel_api_test(env, num_cycles=40)
    from_pettingzoo = [w for w in caught if "pettingzoo" in w.filename]
    assert not from_pettingzoo, [str(w.message) for w in from_pettingzoo]


@pytest.mark.parametrize("case", CASES)
def test_observations_are_float32_inside_their_spaces_until_the_episode_ends(case: tuple[str, dict]) -> None:
    env_id, kwargs = case
    env = to_pettingzoo(jaxmarl_suite.make(env_id, **kwargs), seed=0)
    rng = np.random.default_rng(0)
    obs, infos = env.reset(seed=3)
    steps = 0
    while env.agents:
        for agent, value in obs.items():
            assert isinstance(value, np.ndarray) and value.dtype == np.float32
            assert env.observation_space(agent).contains(value), agent
        state = env.state()
        assert state.dtype == np.float32 and env.state_space.contains(state)
        if len(obs) == len(env.possible_agents):  # agents that died (SMAX) left the obs dict
            np.testing.assert_array_equal(state, np.concatenate([obs[a] for a in env.possible_agents]))
        obs, rewards, terminations, truncations, infos = env.step(_sample_actions(env, infos, rng))
        assert all(isinstance(r, float) and np.isfinite(r) for r in rewards.values())
        assert all(isinstance(f, bool) for f in (*terminations.values(), *truncations.values()))
        steps += 1
    assert env.agents == []
    if not any(terminations.values()):  # the game did not end it (win/loss): the time limit did
        assert steps == jaxmarl_suite.make(env_id, **kwargs).default_params.max_steps
        assert all(truncations.values())
    with pytest.raises(RuntimeError, match="call reset"):
        env.step({})


def test_agents_that_finish_early_leave_the_agent_list() -> None:
    """TwoTeams' red agents terminate before the time limit; blue plays on alone until it."""
    env = to_pettingzoo(TwoTeams(), seed=0)
    pettingzoo_test.parallel_api_test(env, num_cycles=10)
    env.reset(seed=1)
    push_red = {"red_0": 2, "red_1": 2, "blue_0": 0}
    _, _, terminations, _, _ = env.step(push_red)
    while not (terminations.get("red_0") and terminations.get("red_1")):
        _, _, terminations, _, _ = env.step({a: push_red[a] for a in env.agents})
    assert env.agents == ["blue_0"]
    with pytest.raises(ValueError, match="not live or unknown \\['red_0'\\]"):
        env.step({"red_0": 0, "blue_0": 0})
    obs, rewards, _, truncations, _ = env.step({"blue_0": 1})
    assert set(obs) == set(rewards) == {"blue_0"}
    while env.agents:
        _, _, _, truncations, _ = env.step({"blue_0": 1})
    assert truncations == {"blue_0": True}


def test_same_seed_same_episode_and_no_seed_continues_the_key_sequence() -> None:
    first = _play(to_pettingzoo(jaxmarl_suite.make(ENV_ID)), seed=5, num_steps=10)
    second = _play(to_pettingzoo(jaxmarl_suite.make(ENV_ID)), seed=5, num_steps=10)
    for a, b in zip(first, second, strict=True):
        jax.tree.map(np.testing.assert_array_equal, a, b)

    env = to_pettingzoo(jaxmarl_suite.make(ENV_ID))
    seeded, _ = env.reset(seed=5)
    continued, _ = env.reset()
    reseeded, _ = env.reset(seed=5)
    np.testing.assert_array_equal(seeded["agent_0"], reseeded["agent_0"])
    assert not np.array_equal(seeded["agent_0"], continued["agent_0"])
    other_seed, _ = env.reset(seed=6)
    assert not np.array_equal(seeded["agent_0"], other_seed["agent_0"])

    # The constructor's seed starts the same key sequence as reset(seed=...).
    from_constructor, _ = to_pettingzoo(jaxmarl_suite.make(ENV_ID), seed=5).reset()
    np.testing.assert_array_equal(seeded["agent_0"], from_constructor["agent_0"])


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
def test_rewards_and_obs_equal_the_env_stepped_with_the_same_keys(continuous: bool) -> None:
    core = jaxmarl_suite.make(ENV_ID, continuous_actions=continuous)
    env = to_pettingzoo(core)
    rng = np.random.default_rng(1)
    obs, infos = env.reset(seed=9)
    # The documented key sequence: split into (next key, call key) on every reset and step.
    key, call_key = jax.random.split(jax.random.PRNGKey(9))
    state, timestep = jax.jit(core.reset)(call_key)
    step = jax.jit(core.step)
    for t in range(12):
        for index, agent in enumerate(env.possible_agents):
            np.testing.assert_allclose(obs[agent], timestep.obs["agents"][index], rtol=1e-6, atol=1e-6)
        actions = _sample_actions(env, infos, rng)
        group_actions = {"agents": np.stack([actions[a] for a in env.possible_agents])}
        obs, rewards, _, _, infos = env.step(actions)
        key, call_key = jax.random.split(key)
        state, timestep = step(call_key, state, group_actions)
        expected = np.asarray(timestep.reward["agents"])
        np.testing.assert_allclose([rewards[a] for a in env.possible_agents], expected, rtol=1e-6)
        assert t == 0 or not np.allclose(expected, 0.0)


def test_python_and_numpy_integer_actions_are_the_same_action() -> None:
    outputs = []
    for to_action in (int, np.int64, np.int32, np.asarray):
        env = to_pettingzoo(jaxmarl_suite.make(ENV_ID), seed=2)
        env.reset()
        moves = [1, 2, 3, 4, 0, 2]
        for t in range(6):
            step_out = env.step({a: to_action(moves[(t + i) % 5]) for i, a in enumerate(env.agents)})
        outputs.append(step_out)
    for other in outputs[1:]:
        jax.tree.map(np.testing.assert_array_equal, outputs[0], other)
    # A different action sequence really changes the outcome, so the comparison above has teeth.
    env = to_pettingzoo(jaxmarl_suite.make(ENV_ID), seed=2)
    env.reset()
    for _ in range(6):
        changed = env.step({a: 0 for a in env.agents})
    assert not np.array_equal(changed[0]["agent_0"], outputs[0][0]["agent_0"])


def test_bad_actions_raise_clear_errors() -> None:
    env = to_pettingzoo(jaxmarl_suite.make(ENV_ID), seed=0)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step({a: 0 for a in env.possible_agents})
    env.reset()
    with pytest.raises(ValueError, match="missing \\['agent_2'\\]"):
        env.step({"agent_0": 0, "agent_1": 0})
    with pytest.raises(ValueError, match="out of range"):
        env.step({"agent_0": 5, "agent_1": 0, "agent_2": 0})
    with pytest.raises(ValueError, match="must be an integer"):
        env.step({"agent_0": 1.0, "agent_1": 0, "agent_2": 0})
    with pytest.raises(ValueError, match="needs shape"):
        env.step({"agent_0": [1, 2], "agent_1": 0, "agent_2": 0})
    with pytest.raises(KeyError, match="unknown agent"):
        env.action_space("agent_7")
    # None of the rejected calls advanced the episode: the next step is a fresh env's first step.
    fresh = to_pettingzoo(jaxmarl_suite.make(ENV_ID), seed=0)
    fresh.reset()
    expected = fresh.step({a: 0 for a in fresh.agents})
    jax.tree.map(np.testing.assert_array_equal, env.step({a: 0 for a in env.agents}), expected)
    with pytest.raises(TypeError, match="single env"):
        to_pettingzoo(jaxmarl_suite.make(ENV_ID, num_envs=2))


def test_render_returns_an_rgb_frame_of_the_current_state() -> None:
    env = to_pettingzoo(jaxmarl_suite.make(ENV_ID), seed=0, render_mode="rgb_array")
    assert env.metadata["render_modes"] == ["rgb_array"] and env.metadata["name"] == "SimpleSpread"
    env.reset()
    first = env.render()
    assert isinstance(first, np.ndarray) and first.dtype == np.uint8
    assert first.ndim == 3 and first.shape[2] == 3 and first.shape[0] > 0 and first.shape[1] > 0
    assert len(np.unique(first.reshape(-1, 3), axis=0)) > 1, "frame should show agents on a background"
    for _ in range(5):
        env.step({a: 1 for a in env.agents})
    assert not np.array_equal(env.render(), first), "moving agents should change the frame"

    no_mode = to_pettingzoo(jaxmarl_suite.make(ENV_ID), seed=0)
    no_mode.reset()
    with pytest.warns(UserWarning, match="without a render_mode"):
        assert no_mode.render() is None
    with pytest.raises(ValueError, match="render_mode 'human'"):
        to_pettingzoo(jaxmarl_suite.make(ENV_ID), render_mode="human")


def test_spaces_are_gymnasium_and_cached_per_agent() -> None:
    import gymnasium

    env = to_pettingzoo(jaxmarl_suite.make(ENV_ID, continuous_actions=True))
    obs_space = env.observation_space("agent_0")
    assert isinstance(obs_space, gymnasium.spaces.Box) and obs_space.shape == (18,)
    assert obs_space.dtype == np.float32
    action_space = env.action_space("agent_1")
    assert isinstance(action_space, gymnasium.spaces.Box) and action_space.shape == (5,)
    np.testing.assert_array_equal(action_space.low, np.zeros(5))
    np.testing.assert_array_equal(action_space.high, np.ones(5))
    assert env.action_space("agent_1") is action_space
    assert env.action_space("agent_0") is not action_space  # each agent seeds its own space
    assert env.state_space.shape == (54,)
    discrete = to_pettingzoo(jaxmarl_suite.make(ENV_ID))
    assert discrete.action_space("agent_2") == gymnasium.spaces.Discrete(5)


def test_importing_compat_loads_neither_pettingzoo_nor_gymnasium_nor_jax() -> None:
    code = (
        "import sys, jaxmarl_suite.compat as c; "
        "assert callable(c.__getattr__); "
        "heavy = [m for m in ('pettingzoo', 'gymnasium', 'jax') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
