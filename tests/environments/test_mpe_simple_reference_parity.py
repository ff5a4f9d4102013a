"""Live parity of our simple_reference against mpe2's simple_reference_v3: what is particular to it.

The step-by-step comparison is a row of the table in ``test_mpe_parity.py``: both envs take the same
random actions for whole episodes (seeds 0..11, which cover every goal of both agents; discrete and
continuous actions, continuous ones drawn in ``[-0.25, 1.25]`` so both sides clip; ``local_ratio`` 0.5
and 0.2). Every step compares observations, rewards, terminations and truncations:

- **Injected** (``ATOL = 1e-5``): mpe2's world, goals included, is copied into our state before each
  step. Worst observed: 3e-7.
- **Free-running**, at the same ``ATOL``: nothing collides in this scenario, so there are no stiff
  contact forces to amplify float32 rounding. Worst observed: 5e-7.

The table's negative controls falsify the goals, ``local_ratio``, a physics constant, an observation and
a reward.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest
from mpe_scenario_harness import (
    ATOL,
    INJECTED,
    MODES,
    Control,
    Harness,
    jaxmarl_space_sizes,
    kind,
    make_harness,
    perturbed,
    reward_off,
    run_episode,
    set_obs,
)

from jaxmarl_suite.environments.mpe import SimpleReference
from jaxmarl_suite.environments.mpe.parity import state_from_mpe2

REFERENCE = "mpe2.simple_reference_v3"
reference = pytest.importorskip(REFERENCE, reason="mpe2 is the parity reference")
pytest.importorskip("pettingzoo.utils.env_logger").EnvLogger.suppress_output()  # clipping warnings

SEEDS = range(12)
LANDMARK_COLORS = np.array([[0.75, 0.25, 0.25], [0.25, 0.75, 0.25], [0.25, 0.25, 0.75]], np.float32)


def goals(h: Harness) -> tuple[int, int]:
    """Both agents' goals as mpe2 drew them, which the injected state must name, as must its params
    ``local_ratio``."""
    state, params = state_from_mpe2(h.ref, h.env)
    world = h.ref.unwrapped.world
    goal = np.asarray(state.extra["goal"])
    assert goal.shape == (2,) and goal.dtype == np.int32
    assert all(agent.goal_b is world.landmarks[g] for agent, g in zip(world.agents, goal, strict=True))
    assert params.local_ratio == h.ref.unwrapped.local_ratio
    return int(goal[0]), int(goal[1])


def every_goal_of_both(drawn: list[tuple[int, int]]) -> bool:
    return all(set(column) == {0, 1, 2} for column in np.array(drawn).T)


def swap_goals(state: Any) -> Any:
    return state.replace(extra={"goal": state.extra["goal"][::-1]})


def local_ratio_off(p: Any) -> Any:
    return p.replace(local_ratio=p.local_ratio + 0.01)


CONFIGS = {
    f"{kind(c)}-local{ratio}": {"continuous_actions": c, "local_ratio": ratio}
    for c, ratio in [(False, 0.5), (True, 0.5), (False, 0.2), (True, 0.2)]
}
"""The table's rows: mpe2's constructor arguments by configuration."""
ROW = {"seeds": SEEDS, "reset_probe": goals, "resets_cover": every_goal_of_both}
CONTROLS = dict.fromkeys(
    CONFIGS,
    (
        # Seed 0 has different goals for the two agents, so swapping them changes what each one sees.
        Control("swapped-goals", r"obs\[agents\]: differs", {"perturb_state": swap_goals}),
        Control("local-ratio", r"reward\[agents\]: differs", {"perturb_params": local_ratio_off}),
        *perturbed(r"obs\[agents\]: differs", MODES, damping=0.26),
        Control("message", r"obs\[agents\]", {"tamper": set_obs("agents", slice(11, None), 0.0)}, INJECTED),
        reward_off("agents", 2 * ATOL, INJECTED),
    ),
)


def test_perturbed_reference_is_followed() -> None:
    """World constants are read from the reference, so a perturbed mpe2 still matches step by step."""
    h = make_harness(reference, continuous_actions=False, local_ratio=1.0, max_cycles=9)
    world = h.ref.unwrapped.world
    world.damping, world.dt = 0.4, 0.07
    for agent in world.agents:
        agent.accel = 3.0
    for mode in ("injected", "free"):
        run_episode(h, 3, mode, ATOL)


def test_our_reset_distribution() -> None:
    """Our own reset (JAX's PRNG): independent uniform goals, positions in ``[-1, 1]``, goal colours."""
    env = SimpleReference()
    states, timesteps = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), 3000))
    drawn = np.asarray(states.extra["goal"])  # [B, 2]
    assert drawn.shape == (3000, 2) and drawn.dtype == np.int32
    pair_frequency = np.bincount(drawn[:, 0] * 3 + drawn[:, 1], minlength=9) / len(drawn)
    np.testing.assert_allclose(pair_frequency, 1 / 9, atol=0.02)
    assert np.all(np.abs(np.asarray(states.pos)) <= 1.0) and not np.any(np.asarray(states.vel))
    np.testing.assert_array_equal(timesteps.obs["agents"][:, :, 8:11], LANDMARK_COLORS[drawn])
    colors = jax.vmap(env.entity_colors)(states)
    np.testing.assert_array_equal(colors[:, :2], LANDMARK_COLORS[drawn[:, ::-1]])


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
def test_spaces_match_jaxmarl(continuous: bool) -> None:
    jaxmarl = pytest.importorskip("jaxmarl")
    env = SimpleReference(continuous_actions=continuous)
    action_type = "Continuous" if continuous else "Discrete"
    assert jaxmarl_space_sizes(env, jaxmarl.make("MPE_simple_reference_v3", action_type=action_type)) == []


def test_unsupported_reference_raises() -> None:
    ref = reference.parallel_env()
    ref.reset(seed=0)
    first = ref.unwrapped.world.agents[0]
    first.goal_a = first
    with pytest.raises(ValueError, match="goal agent"):
        state_from_mpe2(ref)
