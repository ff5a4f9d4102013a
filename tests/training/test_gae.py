"""GAE against a plain Python loop, with termination and truncation in the same rollout."""

import numpy as np
import pytest

from jaxmarl_suite.training.gae import gae


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


def test_truncation_bootstraps_and_termination_does_not() -> None:
    """One step, gamma 1: a truncated step adds V(final_obs); a terminated one adds nothing."""
    ones = np.ones((1, 2), np.float32)
    terminated = np.array([[True, False]])
    ended = np.array([[True, True]])
    advantages, _ = gae(ones, 0 * ones, 5 * ones, terminated, ended, 1.0, 1.0)
    np.testing.assert_allclose(np.asarray(advantages), [[1.0, 6.0]])
