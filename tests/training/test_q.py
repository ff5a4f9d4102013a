"""The Q-learning pieces of the kit against plain Python: masked acting and maxima, epsilon schedules,
Q(lambda) returns with termination and truncation in one rollout, target updates, and the replay buffer's
memory check."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.errors import ConfigError
from jaxmarl_suite.training.kit import q as q_kit
from jaxmarl_suite.training.kit.q import (
    QNetwork,
    all_agents,
    bootstrap_q,
    check_replay_fits,
    chosen_q,
    env_epsilons,
    epsilon_greedy,
    final_obs_rows,
    greedy_actions,
    greedy_env_count,
    linear_epsilon,
    make_replay,
    max_q,
    next_masks,
    next_q_values,
    q_lambda_returns,
    replay_bytes,
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


def test_epsilon_schedule() -> None:
    assert float(linear_epsilon(0, 1.0, 0.05, 100)) == pytest.approx(1.0)
    assert float(linear_epsilon(50, 1.0, 0.05, 100)) == pytest.approx(0.525)
    assert float(linear_epsilon(10_000, 1.0, 0.05, 100)) == pytest.approx(0.05)


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
    per_example = jax.vmap(jax.grad(lambda q, s: mixer.apply(params, q[None], s[None])[0]))
    grads = jax.jit(per_example)(q_values, states)
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


def sequences_with_time_limit(rng: np.random.Generator, steps: int, batch: int, agents: int, features: int,
                              limit: int) -> dict[str, np.ndarray]:
    """Random training sequences as an auto-reset env makes them: episodes end by termination (at random)
    or by truncation at ``limit`` steps; where one went on, the next observation is the step's final one;
    where one ended, the next is a fresh reset's, unlike the final one."""
    obs = np.zeros((steps, batch, agents, features), np.float32)
    final_obs = rng.normal(size=obs.shape).astype(np.float32)
    starts = np.zeros((steps, batch), bool)
    terminated = np.zeros((steps, batch), bool)
    truncated = np.zeros((steps, batch), bool)
    for m in range(batch):
        length = int(rng.integers(0, limit))  # sequences start mid-episode
        obs[0, m] = rng.normal(size=(agents, features))
        starts[0, m] = length == 0
        for t in range(steps):
            length += 1
            truncated[t, m] = length == limit
            terminated[t, m] = not truncated[t, m] and rng.random() < 0.15
            if t + 1 < steps:
                ended = truncated[t, m] or terminated[t, m]
                starts[t + 1, m] = ended
                obs[t + 1, m] = rng.normal(size=(agents, features)) if ended else final_obs[t, m]
            if truncated[t, m] or terminated[t, m]:
                length = 0
    return {"obs": obs, "final_obs": final_obs, "starts": starts, "terminated": terminated,
            "truncated": truncated}


@pytest.mark.parametrize("recurrent", [True, False])
def test_next_values_match_a_pass_on_every_final_observation(recurrent: bool) -> None:
    """``next_q_values`` runs the net on ``final_obs`` only at the last step and at truncations (gathered
    into ``final_obs_rows`` rows per sequence); everywhere an episode did not terminate it must equal the
    net run one step on ``final_obs`` from the state after that step, computed here step by step."""
    steps, batch, agents, features, limit, actions = 12, 5, 2, 3, 4, 4
    rows = final_obs_rows(steps, limit)
    assert rows == 4 and rows < steps  # the gathered path, not the full pass
    data = sequences_with_time_limit(np.random.default_rng(0), steps, batch, agents, features, limit)
    assert data["truncated"][:-1].any() and data["terminated"].any()
    net = QNetwork(actions, (8,), "relu", recurrent, 6)
    start_hidden = jnp.asarray(np.random.default_rng(1).normal(size=(batch, agents, 6)), jnp.float32)
    starts = jnp.broadcast_to(jnp.asarray(data["starts"])[..., None], (steps, batch, agents))
    params = net.init(jax.random.PRNGKey(0), start_hidden, jnp.asarray(data["obs"]), starts)
    _, q_seq, hiddens = net.apply(params, start_hidden, jnp.asarray(data["obs"]), starts)

    want = np.zeros(q_seq.shape, np.float32)
    hidden = start_hidden
    for t in range(steps):  # one step at a time: the state after step t, then one step on its final obs
        hidden, _, _ = net.apply(params, hidden, jnp.asarray(data["obs"][t:t + 1]), starts[t:t + 1])
        _, value, _ = net.apply(params, hidden, jnp.asarray(data["final_obs"][t:t + 1]),
                                jnp.zeros((1, batch, agents), bool))
        want[t] = np.asarray(value[0])
    used = ~data["terminated"]

    def next_values(truncated: np.ndarray) -> np.ndarray:
        return np.asarray(jax.jit(next_q_values, static_argnums=(0, 6))(
            net.apply, params, q_seq, hiddens, jnp.asarray(data["final_obs"]), jnp.asarray(truncated), rows))

    np.testing.assert_allclose(next_values(data["truncated"])[used], want[used], rtol=1e-4, atol=1e-5)
    # Negative control: without the truncation flags, the truncated steps take the next episode's first value.
    wrong = next_values(np.zeros_like(data["truncated"]))
    lost = data["truncated"].copy()
    lost[-1] = False
    assert not np.allclose(wrong[lost], want[lost], atol=1e-3)


def test_final_obs_rows_bound_truncations_per_sequence() -> None:
    """The last step, plus one per ``max_steps`` among the others (rounded up)."""
    assert final_obs_rows(26, 25) == 2  # MPE: a 26-step sequence can hold two truncations
    assert final_obs_rows(25, 25) == 2
    assert final_obs_rows(16, 25) == 2
    assert final_obs_rows(1, 25) == 1
    assert final_obs_rows(128, 100) == 3
    assert final_obs_rows(10, 1) == 10


@pytest.mark.parametrize(("terminated", "expected"), [
    # step 1 terminates: G_1 = r_1 = 2; G_0 = 1 + 0.5 * (0.5 * 10 + 0.5 * G_1) = 4; the rollout's last step
    # bootstraps from its own M: G_2 = 3 + 0.5 * 30 = 18
    ((0, 1, 0), (4.0, 2.0, 18.0)),
    # step 1 is truncated instead: it bootstraps from its M, G_1 = 2 + 0.5 * 20 = 12, and the episode ends
    # there, so G_0 = 1 + 0.5 * (0.5 * 10 + 0.5 * G_1) = 6.5
    ((0, 0, 0), (6.5, 12.0, 18.0)),
])
def test_q_lambda_targets_by_hand_with_termination_and_truncation(terminated: tuple, expected: tuple) -> None:
    """gamma 0.5, lambda 0.5, rewards 1, 2, 3, next max-Q 10, 20, 30; the episode ends at step 1."""
    targets = q_kit.q_lambda_returns(jnp.array([1.0, 2.0, 3.0]), jnp.array([10.0, 20.0, 30.0]),
                                 jnp.array(terminated, bool), jnp.array([False, True, False]), 0.5, 0.5)
    np.testing.assert_allclose(targets, expected, rtol=1e-6)
    # lambda 0 is the one-step target r + gamma * (1 - terminated) * M
    one_step = q_kit.q_lambda_returns(jnp.array([1.0, 2.0, 3.0]), jnp.array([10.0, 20.0, 30.0]),
                                  jnp.array(terminated, bool), jnp.array([False, True, False]), 0.5, 0.0)
    np.testing.assert_allclose(one_step, [6.0, 2.0 if terminated[1] else 12.0, 18.0], rtol=1e-6)


def test_the_bootstrap_value_respects_the_mask_by_hand() -> None:
    """Target Q 1, 5, 3 and online Q 9, 0, 8 with action 0 illegal: plain max over legal target values is 5;
    double Q takes the online net's best legal action (2, Q 8) and the target's value of it, 3."""
    target, online = jnp.array([[1.0, 5.0, 3.0]]), jnp.array([[9.0, 0.0, 8.0]])
    mask = jnp.array([[False, True, True]])
    assert float(q_kit.bootstrap_q(target, None, mask)[0]) == 5.0
    assert float(q_kit.bootstrap_q(target, online, mask)[0]) == 3.0
    assert float(q_kit.bootstrap_q(target, online, jnp.ones((1, 3), bool))[0]) == 1.0  # unmasked: action 0
