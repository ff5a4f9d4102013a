"""Live parity of our simple_adversary against mpe2's simple_adversary_v3: what is particular to it.

The step-by-step comparison is a row of the table in ``test_mpe_parity.py``: both envs take the same
random actions for whole episodes (seeds 0..11, which draw every goal; N = 1, 2 (the default) and 3
good agents; discrete and continuous actions, the latter partly outside ``[0, 1]`` so that clipping is
exercised). Observations, rewards, terminations and truncations are compared on every step:

- **Injected** (``ATOL = 1e-5``): mpe2's world is copied into our state before every step, so any
  error is that step's own (float32 against mpe2's float64). Worst observed: 3.4e-7.
- **Free-running** (also ``ATOL``): our env runs from its own state for the whole episode. Nothing
  collides, so no stiff contact amplifies float32 rounding (see ``test_mpe_simple_spread_parity.py``)
  and no looser tolerance is needed (worst observed: 7.2e-7). Every reward term is continuous in the
  state (the ``min`` over good agents included), so rounding cannot flip a discrete outcome. No
  observation holds a velocity, so only this comparison checks the velocity update (an injected step's
  positions use the injected velocity): the table's perturbed-params controls run free.

The table's negative controls tamper with our output, perturb our params or falsify the goal.
"""

from __future__ import annotations

from typing import Any

import pytest
from mpe_scenario_harness import (
    INJECTED,
    Control,
    Harness,
    cached_harness,
    jaxmarl_space_sizes,
    kind,
    output_controls,
    perturbed,
    swap_obs,
)

from jaxmarl_suite.environments.mpe.parity import make_matching_env, state_from_mpe2

REFERENCE = "mpe2.simple_adversary_v3"
simple_adversary_v3 = pytest.importorskip(REFERENCE, reason="mpe2 is the parity reference")

SEEDS = range(12)


def goal_index(h: Harness) -> int:
    """The goal landmark mpe2 drew (the table checks that the seeds draw every one)."""
    world = h.ref.unwrapped.world
    return next(i for i, landmark in enumerate(world.landmarks) if landmark is world.agents[0].goal_a)


def other_goal(state: Any) -> Any:
    """A falsified goal: it changes the good agents' observations and everyone's reward."""
    return state.replace(extra={"goal": (state.extra["goal"] + 1) % 2})


# The default (N = 2, discrete) first: the table runs a scenario's first row by default.
CONFIGS = {
    f"N{n}-{kind(c)}": {"N": n, "continuous_actions": c}
    for n, c in sorted([(n, c) for n in (1, 2, 3) for c in (False, True)], key=lambda nc: nc != (2, False))
}
"""The table's rows: mpe2's constructor arguments by configuration."""
ROW = {"seeds": SEEDS, "reset_probe": goal_index}
ROW_OPTIONS = {
    config: {"resets_cover": lambda goals, n=kwargs["N"]: set(goals) == set(range(n))}
    for config, kwargs in CONFIGS.items()
}
CONTROLS = {
    "N2-discrete": (
        *output_controls(("agents", swap_obs("agents", [0], [1])), ("agents", 2e-5), "adversaries"),
        Control("wrong-goal", r"obs\[agents\]: differs", {"perturb_state": other_goal}, INJECTED),
    ),
    # No one observes a velocity, and damping and accel change only the next one: free-running shows them.
    "N2-continuous": perturbed(
        r"obs\[(agents|adversaries)\]: differs", ("free",), damping=0.26, accel=5.1, dt=0.11
    ),
}


def test_jaxmarl_spaces_match() -> None:
    jaxmarl = pytest.importorskip("jaxmarl")
    discrete = cached_harness(REFERENCE, N=2, continuous_actions=False).env
    assert jaxmarl_space_sizes(discrete, jaxmarl.make("MPE_simple_adversary_v3")) == []
    continuous = jaxmarl.make("MPE_simple_adversary_v3", action_type="Continuous")
    assert jaxmarl_space_sizes(cached_harness(REFERENCE, N=2, continuous_actions=True).env, continuous) == []


def test_jaxmarl_spaces_differ_with_three_good_agents() -> None:
    """Documented difference: JaxMARL's observation spaces stay at 8 and 10 whatever the count, although
    its observations grow like mpe2's and ours (12 and 14 for three good agents)."""
    jaxmarl = pytest.importorskip("jaxmarl")
    theirs = jaxmarl.make("MPE_simple_adversary_v3", num_good_agents=3, num_obs=3)
    differences = jaxmarl_space_sizes(cached_harness(REFERENCE, N=3, continuous_actions=False).env, theirs)
    expected = [("adversary_0 obs", (12,), (8,))] + [(f"agent_{i} obs", (14,), (10,)) for i in range(3)]
    assert differences == expected


def test_unsupported_references_raise() -> None:
    for option in ("num_agent_neighbors", "num_landmark_neighbors"):
        with pytest.raises(ValueError, match=option):
            make_matching_env(simple_adversary_v3.parallel_env(**{option: 1}))
    ref = simple_adversary_v3.parallel_env()
    ref.reset(seed=0)
    world = ref.unwrapped.world
    world.agents[2].goal_a = next(lm for lm in world.landmarks if lm is not world.agents[0].goal_a)
    with pytest.raises(ValueError, match="different goal"):
        state_from_mpe2(ref)
