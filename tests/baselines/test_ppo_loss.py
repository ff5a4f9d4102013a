"""The clipped PPO objective on a hand-computed batch (``ppo_loss`` of ``ippo.py`` and of ``mappo.py``,
each file's own): three live agent-steps and one dead one, with the ratio clipped where the objective takes
the clipped side, clipped where it takes the unclipped side, and inside the clip range, and the value loss
clipped and not. Every expected value below is derived by hand in its comment, from the PPO paper's
formulas."""

from __future__ import annotations

import math
from collections.abc import Callable
from types import SimpleNamespace

import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.baselines import ippo, mappo

LOSSES = pytest.mark.parametrize("clipped_ppo_loss", [ippo.ppo_loss, mappo.ppo_loss], ids=["ippo", "mappo"])

HPARAMS = SimpleNamespace(clip_eps=0.2, vf_coef=0.5, ent_coef=0.01)
RATIOS = (1.5, 0.5, 1.1, 3.0)
"""New over old probability of each step's action; the fourth step is dead (``alive`` 0)."""


def _batch() -> tuple[tuple, dict]:
    old_log_prob = jnp.array([-1.0, -2.0, -0.5, -1.0])
    log_prob = old_log_prob + jnp.log(jnp.array(RATIOS))
    entropy = jnp.array([1.0, 2.0, 3.0, 50.0])
    value = jnp.array([1.5, 0.9, 2.0, 9.0])
    rollout = {
        "log_prob": old_log_prob,
        "value": jnp.ones(4),
        "advantage": jnp.array([0.0, 1.0, 5.0, 100.0]),
        "target": jnp.array([2.0, 0.0, 1.1, 0.0]),
        "alive": jnp.array([True, True, True, False]),
    }
    return (log_prob, entropy, value), rollout


# Advantages normalised over the live steps: mean 2, variance ((-2)^2 + (-1)^2 + 3^2) / 3 = 14/3.
SD = math.sqrt(14 / 3)
A = (-2 / SD, -1 / SD, 3 / SD)
# Step 0: A < 0, ratio 1.5 > 1.2: min(1.5 A, 1.2 A) = 1.5 A (the unclipped, more pessimistic side).
# Step 1: A < 0, ratio 0.5 < 0.8: min(0.5 A, 0.8 A) = 0.8 A (the clipped side).
# Step 2: ratio 1.1 inside [0.8, 1.2]: 1.1 A.
ACTOR_LOSS = -(1.5 * A[0] + 0.8 * A[1] + 1.1 * A[2]) / 3
# Values around the rollout's 1.0, clipped to [0.8, 1.2]: step 0 1.5 -> 1.2, max((1.5-2)^2, (1.2-2)^2) = 0.64;
# step 1 0.9 unclipped, (0.9-0)^2 = 0.81; step 2 2.0 -> 1.2, max((2.0-1.1)^2, (1.2-1.1)^2) = 0.81.
VALUE_LOSS = 0.5 * (0.64 + 0.81 + 0.81) / 3
ENTROPY = (1.0 + 2.0 + 3.0) / 3
APPROX_KL = sum((r - 1) - math.log(r) for r in RATIOS[:3]) / 3
CLIP_FRAC = 2 / 3  # steps 0 and 1 lie outside [0.8, 1.2]


@LOSSES
def test_the_clipped_surrogate_value_loss_and_entropy_by_hand(clipped_ppo_loss: Callable) -> None:
    outputs, rollout = _batch()
    total, parts = clipped_ppo_loss({"agents": outputs}, {"agents": rollout}, HPARAMS)
    assert float(parts["actor_loss"]) == pytest.approx(ACTOR_LOSS, rel=1e-5)
    assert float(parts["value_loss"]) == pytest.approx(VALUE_LOSS, rel=1e-5)
    assert float(parts["entropy"]) == pytest.approx(ENTROPY, rel=1e-6)
    assert float(parts["approx_kl"]) == pytest.approx(APPROX_KL, rel=1e-4)
    assert float(parts["clip_frac"]) == pytest.approx(CLIP_FRAC, rel=1e-6)
    assert float(total) == pytest.approx(ACTOR_LOSS + 0.5 * VALUE_LOSS - 0.01 * ENTROPY, rel=1e-5)


@LOSSES
def test_a_dead_step_changes_nothing_and_groups_add_up(clipped_ppo_loss: Callable) -> None:
    outputs, rollout = _batch()
    total, parts = clipped_ppo_loss({"agents": outputs}, {"agents": rollout}, HPARAMS)
    # the dead step's log-probability, value, entropy, advantage and target moved far: nothing changes
    moved = tuple(x.at[3].set(-7.0) for x in outputs)
    moved_rollout = {k: v.at[3].set(False if k == "alive" else 42.0) for k, v in rollout.items()}
    again, parts_again = clipped_ppo_loss({"agents": moved}, {"agents": moved_rollout}, HPARAMS)
    assert float(again) == float(total)
    # the same group twice: the total adds, the logged parts average over groups
    twice, parts_twice = clipped_ppo_loss({"a": outputs, "b": outputs}, {"a": rollout, "b": rollout}, HPARAMS)
    assert float(twice) == pytest.approx(2 * float(total), rel=1e-6)
    for name, value in parts.items():
        np.testing.assert_allclose(parts_twice[name], value, rtol=1e-6)
        np.testing.assert_allclose(parts_again[name], value, rtol=0)


@LOSSES
def test_the_hand_values_catch_a_loss_without_clipping(clipped_ppo_loss: Callable) -> None:
    """Negative control: with ``clip_eps`` so wide that nothing is clipped, step 1 takes 0.5 A and the
    value loss takes the unclipped errors, so the hand values above no longer hold."""
    outputs, rollout = _batch()
    _, parts = clipped_ppo_loss({"agents": outputs}, {"agents": rollout},
                                SimpleNamespace(clip_eps=10.0, vf_coef=0.5, ent_coef=0.01))
    assert float(parts["actor_loss"]) == pytest.approx(-(1.5 * A[0] + 0.5 * A[1] + 1.1 * A[2]) / 3, rel=1e-5)
    assert float(parts["actor_loss"]) != pytest.approx(ACTOR_LOSS, rel=1e-3)
    assert float(parts["value_loss"]) == pytest.approx(0.5 * (0.25 + 0.81 + 0.81) / 3, rel=1e-5)
    assert float(parts["clip_frac"]) == 0.0
