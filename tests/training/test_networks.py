"""The kit's action sampling: drawn over flattened leading axes (fast on the CPU), yet the same actions and
log-probabilities as sampling the distribution over ``[envs, agents, actions]`` directly."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.core.spaces import Box, Discrete
from jaxmarl_suite.training.kit.networks import action_distribution, sample_action


@pytest.mark.parametrize("space", [Discrete(5), Box(-1.0, 1.0, (2,))], ids=["discrete", "box"])
def test_sample_action_equals_sampling_the_unflattened_distribution(space) -> None:
    key, head_key, mask_key = jax.random.split(jax.random.PRNGKey(0), 3)
    width = 5 if isinstance(space, Discrete) else 2
    head = jax.random.normal(head_key, (64, 3, width))
    log_std = jnp.full((width,), -0.5) if isinstance(space, Box) else None
    mask = None
    if isinstance(space, Discrete):
        mask = jax.random.uniform(mask_key, head.shape) < 0.6
        mask = mask.at[..., 0].set(True)
    action, log_prob = sample_action(space, head, log_std, mask, key)
    want_action, want_log_prob = action_distribution(space, head, log_std, mask).sample_and_log_prob(seed=key)
    assert action.shape == want_action.shape and log_prob.shape == (64, 3)
    np.testing.assert_array_equal(action, want_action)
    np.testing.assert_allclose(log_prob, want_log_prob, rtol=1e-6, atol=1e-6)
    if mask is not None:
        assert bool(jnp.take_along_axis(mask, action[..., None], -1).all()), "an illegal action was drawn"
