"""GAE against a plain Python loop, with termination and truncation in the same rollout, and the team
version MAPPO uses with ``team_returns``."""

import numpy as np
import pytest

from jaxmarl_suite.training.kit.gae import gae, reverse_scan, team_gae
from jaxmarl_suite.training.kit.loops import ACCELERATOR_UNROLL


def reference_gae(rewards, values, next_values, terminated, ended, gamma, lam):
    """Textbook GAE, one env, written as a loop over time from the end."""
    steps = len(rewards)
    advantages = np.zeros(steps)
    running = 0.0
    for t in reversed(range(steps)):
        bootstrap = 0.0 if terminated[t] else next_values[t]
        delta = rewards[t] + gamma * bootstrap - values[t]
        running = delta + (0.0 if ended[t] else gamma * lam * running)
        advantages[t] = running
    return advantages, advantages + values


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gae_matches_python_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    steps, envs = 40, 5
    rewards = rng.normal(size=(steps, envs)).astype(np.float32)
    values = rng.normal(size=(steps, envs)).astype(np.float32)
    next_values = rng.normal(size=(steps, envs)).astype(np.float32)
    truncated = rng.random((steps, envs)) < 0.08
    terminated = (rng.random((steps, envs)) < 0.08) & ~truncated
    ended = terminated | truncated
    advantages, targets = gae(rewards, values, next_values, terminated, ended, 0.97, 0.9)
    for env in range(envs):
        want_adv, want_target = reference_gae(rewards[:, env], values[:, env], next_values[:, env],
                                              terminated[:, env], ended[:, env], 0.97, 0.9)
        np.testing.assert_allclose(np.asarray(advantages)[:, env], want_adv, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(targets)[:, env], want_target, rtol=1e-5, atol=1e-5)


def test_the_unrolled_recursion_accelerators_run_matches_the_rolled_one_the_cpu_runs() -> None:
    """GPUs unroll the backward loop (one launch per iteration costs); the values agree to float rounding,
    and on the CPU the default is the rolled loop itself, bit for bit, so CPU results do not move."""
    rng = np.random.default_rng(3)
    deltas = rng.normal(size=(37, 6)).astype(np.float32)  # not a multiple of the unroll: a remainder runs
    continues = (rng.random((37, 6)) > 0.1).astype(np.float32)

    def backwards(ahead, step):
        delta, carry_on = step
        advantage = delta + np.float32(0.97 * 0.9) * carry_on * ahead
        return advantage, advantage

    init = np.zeros(6, np.float32)
    rolled = np.asarray(reverse_scan(backwards, init, (deltas, continues), unroll=1))
    unrolled = np.asarray(reverse_scan(backwards, init, (deltas, continues), unroll=ACCELERATOR_UNROLL))
    default = np.asarray(reverse_scan(backwards, init, (deltas, continues)))
    np.testing.assert_allclose(unrolled, rolled, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(default, rolled)
    want = np.zeros_like(deltas)
    running = np.zeros(6, np.float32)
    for t in reversed(range(37)):
        running = deltas[t] + np.float32(0.97 * 0.9) * continues[t] * running
        want[t] = running
    np.testing.assert_allclose(rolled, want, rtol=1e-5, atol=1e-5)


def test_truncation_bootstraps_and_termination_does_not() -> None:
    """One step, gamma 1: a truncated step adds V(final_obs); a terminated one adds nothing."""
    ones = np.ones((1, 2), np.float32)
    terminated = np.array([[True, False]])
    ended = np.array([[True, True]])
    advantages, _ = gae(ones, 0 * ones, 5 * ones, terminated, ended, 1.0, 1.0)
    np.testing.assert_allclose(np.asarray(advantages), [[1.0, 6.0]])


def test_team_gae_credits_an_agent_that_died_with_the_rest_of_its_team() -> None:
    """gamma = lambda = 1, zero values. Two agents earn 1 each for two steps; agent 1 dies on the second
    (terminated from then on, earning 0); agent 0 earns 1, then 5 on the winning step. Alone, agent 1's
    return from step 0 is 2; as a team member it is the team's 1 + 1 + 1 + 5 = 8, like agent 0's."""
    rewards = np.array([[1, 1], [1, 1], [1, 0], [5, 0]], np.float32)[:, None]  # [T, B=1, n=2]
    terminated = np.array([[0, 0], [0, 1], [0, 1], [1, 1]], bool)[:, None]
    playing = np.array([[1, 1], [1, 1], [1, 0], [1, 0]], bool)[:, None]
    zeros = np.zeros_like(rewards)
    alone, _ = gae(rewards, zeros, zeros, terminated, terminated, 1.0, 1.0)
    team, targets = team_gae(rewards, zeros, zeros, terminated, terminated, playing, 1.0, 1.0)
    np.testing.assert_allclose(np.asarray(alone)[0, 0], [8.0, 2.0])
    np.testing.assert_allclose(np.asarray(team)[:, 0], [[8, 8], [7, 7], [6, 6], [5, 5]])
    np.testing.assert_allclose(np.asarray(targets), np.asarray(team))


@pytest.mark.parametrize("seed", [0, 1])
def test_team_gae_matches_python_loop(seed: int) -> None:
    """Random deaths and episode ends: per env, the team's reward and value are the means over the agents
    playing, the bootstrap the mean over those not terminated, and the team ends with its last agent."""
    rng = np.random.default_rng(seed)
    steps, envs, agents = 30, 4, 3
    shape = (steps, envs, agents)
    rewards, values, next_values = (rng.normal(size=shape).astype(np.float32) for _ in range(3))
    playing = rng.random((steps, envs, agents)) < 0.7
    terminated = rng.random((steps, envs, agents)) < 0.2
    truncated = (rng.random((steps, envs, agents)) < 0.1) & ~terminated
    ended = terminated | truncated
    advantages, targets = team_gae(rewards, values, next_values, terminated, ended, playing, 0.95, 0.9)
    for env in range(envs):
        r, v, nv, term, end = np.zeros(steps), np.zeros(steps), np.zeros(steps), [], []
        for t in range(steps):
            on = [i for i in range(agents) if playing[t, env, i]]
            left = [i for i in on if not terminated[t, env, i]]
            r[t] = np.mean([rewards[t, env, i] for i in on]) if on else 0.0
            v[t] = np.mean([values[t, env, i] for i in on]) if on else 0.0
            nv[t] = np.mean([next_values[t, env, i] for i in left]) if left else 0.0
            term.append(all(terminated[t, env, i] for i in on))
            end.append(all(ended[t, env, i] for i in on))
        want_adv, want_target = reference_gae(r, v, nv, term, end, 0.95, 0.9)
        for i in range(agents):
            np.testing.assert_allclose(np.asarray(advantages)[:, env, i], want_adv, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(np.asarray(targets)[:, env, i], want_target, rtol=1e-5, atol=1e-5)
