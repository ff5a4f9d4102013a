"""The Q-learning pieces of the kit against plain Python: masked acting and maxima, epsilon schedules,
Q(lambda) returns with termination and truncation in one rollout, target updates, and the replay buffer's
memory check."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.errors import ConfigError
from jaxmarl_suite.training.kit.q import (
    all_agents,
    bootstrap_q,
    check_replay_fits,
    chosen_q,
    env_epsilons,
    epsilon_greedy,
    greedy_actions,
    greedy_env_count,
    linear_epsilon,
    make_replay,
    max_q,
    next_masks,
    q_lambda_returns,
    replay_bytes,
    soft_update,
    team_reward,
)


def reference_q_lambda(rewards, next_max, terminated, ended, gamma, lam):
    """Peng's Q(lambda) for one env, a loop from the end; an episode boundary cuts the lambda chain."""
    steps = len(rewards)
    targets = np.zeros(steps)
    following = next_max[-1]
    for t in reversed(range(steps)):
        if terminated[t]:
            targets[t] = rewards[t]
        else:
            ahead = next_max[t] if (ended[t] or t == steps - 1) else following
            targets[t] = rewards[t] + gamma * ((1 - lam) * next_max[t] + lam * ahead)
        following = targets[t]
    return targets


@pytest.mark.parametrize(("seed", "lam"), [(0, 0.65), (1, 0.0), (2, 1.0)])
def test_q_lambda_matches_a_python_loop(seed: int, lam: float) -> None:
    rng = np.random.default_rng(seed)
    steps, envs = 30, 4
    rewards = rng.normal(size=(steps, envs)).astype(np.float32)
    next_max = rng.normal(size=(steps, envs)).astype(np.float32)
    truncated = rng.random((steps, envs)) < 0.1
    terminated = (rng.random((steps, envs)) < 0.1) & ~truncated
    ended = terminated | truncated
    targets = np.asarray(q_lambda_returns(rewards, next_max, terminated, ended, 0.95, lam))
    for env in range(envs):
        want = reference_q_lambda(rewards[:, env], next_max[:, env], terminated[:, env], ended[:, env],
                                  0.95, lam)
        np.testing.assert_allclose(targets[:, env], want, rtol=1e-5, atol=1e-5)
    if lam == 0.0:  # the one-step target
        np.testing.assert_allclose(targets, rewards + 0.95 * next_max * ~terminated, rtol=1e-6)


def test_masks_rule_acting_and_targets() -> None:
    q = jnp.array([[5.0, 1.0, 3.0], [0.0, -2.0, -1.0]])
    mask = jnp.array([[False, True, True], [False, True, True]])
    np.testing.assert_array_equal(greedy_actions(q, mask), [2, 2])
    np.testing.assert_array_equal(max_q(q, mask), [3.0, -1.0])
    np.testing.assert_array_equal(greedy_actions(q, None), [0, 0])
    grad = jax.grad(lambda x: max_q(x, mask).sum())(q)
    assert np.isfinite(np.asarray(grad)).all()
    # exploring always: only legal actions, every one of them drawn
    keys = jax.random.split(jax.random.PRNGKey(0), 400)
    drawn = np.asarray(jax.vmap(lambda k: epsilon_greedy(k, q, mask, 1.0))(keys))
    assert set(drawn[:, 0]) == {1, 2} and set(drawn[:, 1]) == {1, 2}
    # never exploring: greedy
    never = np.asarray(jax.vmap(lambda k: epsilon_greedy(k, q, mask, 0.0))(keys))
    assert (never == [2, 2]).all()
    half = np.asarray(jax.vmap(lambda k: epsilon_greedy(k, q, mask, 0.5))(keys))[:, 0]
    # greedy (2) half the time plus half of the random draws: 75% +- 4 standard deviations
    assert abs((half == 2).mean() - 0.75) < 4 * np.sqrt(0.75 * 0.25 / 400)


def test_epsilon_schedule_and_target_update() -> None:
    assert float(linear_epsilon(0, 1.0, 0.05, 100)) == pytest.approx(1.0)
    assert float(linear_epsilon(50, 1.0, 0.05, 100)) == pytest.approx(0.525)
    assert float(linear_epsilon(10_000, 1.0, 0.05, 100)) == pytest.approx(0.05)
    target, online = {"w": jnp.zeros(3)}, {"w": jnp.ones(3)}
    np.testing.assert_allclose(soft_update(target, online, 0.1)["w"], 0.1)
    np.testing.assert_allclose(soft_update(target, online, 1.0)["w"], 1.0)


def test_replay_buffer_is_sized_and_checked_before_allocating() -> None:
    item = {"obs": jnp.zeros((3, 18), jnp.float32), "action": jnp.zeros((3,), jnp.int32)}
    assert replay_bytes(item, 1000) == 1000 * (3 * 18 * 4 + 3 * 4)
    buffer = make_replay(item, capacity=64, sample_batch_size=8, items_per_add=4)
    state = buffer.init(item)
    assert not bool(buffer.can_sample(state))
    for add in range(4):
        batch = jax.tree.map(lambda x, add=add: jnp.stack([x + 4 * add + i for i in range(4)]), item)
        state = buffer.add(state, batch)
    assert bool(buffer.can_sample(state))
    sample = buffer.sample(state, jax.random.PRNGKey(0)).experience
    assert sample["obs"].shape == (8, 3, 18)
    # every sampled item is one that was added, whole: item k holds k everywhere
    firsts = np.asarray(sample["obs"][:, 0, 0])
    assert set(firsts) <= set(range(16))
    np.testing.assert_array_equal(np.asarray(sample["action"]), firsts[:, None].astype(int) * np.ones((1, 3)))
    expected = r"^buffer_size: the replay buffer needs 2\.00 GiB.*lower --buffer-size"
    with pytest.raises(ConfigError, match=expected):
        check_replay_fits(2 * 2**30, free_bytes=2**30)
    check_replay_fits(2**20, free_bytes=2**30)  # fits: no error
    with pytest.raises(ConfigError, match="buffer_size: .* GiB"):
        make_replay(item, capacity=10**12, sample_batch_size=8, items_per_add=4, free_bytes=2**30)
    with pytest.raises(ConfigError, match="buffer_size: must hold at least the 16 sequences"):
        make_replay(item, capacity=12, sample_batch_size=8, items_per_add=16)


def test_double_q_bootstrap_and_team_pieces() -> None:
    target = jnp.array([[1.0, 5.0, 2.0], [4.0, 0.0, 3.0]])
    online = jnp.array([[0.0, 1.0, 9.0], [7.0, 0.0, 8.0]])
    mask = jnp.array([[True, True, False], [False, True, True]])
    # plain: the target net's legal max; double Q: the target's value of the online net's legal argmax
    np.testing.assert_array_equal(bootstrap_q(target, None, mask), [5.0, 3.0])
    np.testing.assert_array_equal(bootstrap_q(target, online, mask), [5.0, 3.0])
    np.testing.assert_array_equal(bootstrap_q(target, online, jnp.ones_like(mask)), [2.0, 3.0])
    np.testing.assert_array_equal(chosen_q(target, jnp.array([2, 0])), [2.0, 4.0])
    rewards = {"red": jnp.array([[1.0, 3.0], [5.0, 0.0]]), "blue": jnp.array([[8.0], [5.0]])}
    alive = {"red": jnp.array([[True, True], [True, False]]), "blue": jnp.array([[True], [True]])}
    # the mean over the agents alive at the step: a dead agent's 0 does not dilute its team's reward
    np.testing.assert_allclose(team_reward(rewards, alive), [4.0, 5.0])
    assert all_agents(rewards).shape == (2, 3)
    masks = {"g": jnp.zeros((2, 1, 3), bool)}
    ended = next_masks(masks, jnp.array([True, False]))
    np.testing.assert_array_equal(ended["g"][:, 0], [[True] * 3, [False] * 3])


def test_qmix_mixer_is_monotonic_in_every_agent() -> None:
    from jaxmarl_suite.baselines.qmix import MonotonicMixer

    mixer = MonotonicMixer(embedding=8, hypernet_hidden=16, init_scale=1.0)
    key_q, key_s, key_p = jax.random.split(jax.random.PRNGKey(0), 3)
    q_values = jax.random.normal(key_q, (64, 3))
    states = jax.random.normal(key_s, (64, 10))
    params = mixer.init(key_p, q_values, states)
    grads = jax.vmap(jax.grad(lambda q, s: mixer.apply(params, q[None], s[None])[0]))(q_values, states)
    assert grads.shape == (64, 3)
    assert np.all(np.asarray(grads) >= 0.0) and np.any(np.asarray(grads) > 0.0)
    # and the mix depends on the state: the same values mix differently under two states
    same_q = jnp.broadcast_to(q_values[:1], (2, 3))
    mixed = mixer.apply(params, same_q, states[:2])
    assert not np.isclose(float(mixed[0]), float(mixed[1]))


def test_greedy_envs_are_a_slice_of_the_batch() -> None:
    assert [greedy_env_count(n, 0.125) for n in (2, 4, 8, 16, 256)] == [1, 1, 1, 2, 32]
    assert greedy_env_count(8, 0.0) == 0 and greedy_env_count(2, 0.9) == 1  # never every env
    np.testing.assert_allclose(env_epsilons(4, 1, jnp.float32(0.3)), [0.0, 0.3, 0.3, 0.3], rtol=1e-6)
