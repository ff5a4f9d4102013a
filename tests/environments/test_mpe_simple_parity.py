"""Live parity of our simple against mpe2's simple_v3: what is particular to the scenario.

The step-by-step comparison is a row of the table in ``test_mpe_parity.py``: both envs take the same
random actions for whole episodes (seeds 0..7; discrete and continuous actions, the latter drawn in
``[-0.25, 1.25]`` so that clipping is exercised; ``max_cycles`` 25 and 40) and observations, rewards,
terminations and truncations are compared on every step:

- **Injected** (``ATOL = 1e-5``): mpe2's world is copied into our state before every step, so any
  error is that step's own (float32 against mpe2's float64).
- **Free-running** (also ``ATOL``): our env runs from its own state for the whole episode. Nothing
  collides, so there is no stiff contact to amplify float32 rounding (see
  ``test_mpe_simple_spread_parity.py``); the error stays at the rounding of positions of magnitude ~1
  and needs no looser tolerance.

The table's negative controls tamper with our output or perturb our params.
"""

from __future__ import annotations

import pytest
from mpe_scenario_harness import (
    INJECTED,
    cached_harness,
    jaxmarl_space_sizes,
    kind,
    output_controls,
    perturbed,
    swap_obs,
)

REFERENCE = "mpe2.simple_v3"
pytest.importorskip(REFERENCE, reason="mpe2 is the parity reference")

SEEDS = range(8)
CONFIGS = {
    f"{kind(c)}-T{cycles}": {"continuous_actions": c, "max_cycles": cycles}
    for c in (False, True)
    for cycles in (25, 40)
}
"""The table's rows: mpe2's constructor arguments by configuration."""
ROW = {"seeds": SEEDS}
CONTROLS = {
    "discrete-T25": output_controls(("agents", swap_obs("agents", [2], [3])), ("agents", 2e-5), "agents"),
    "continuous-T25": perturbed(r"obs\[agents\]: differs", INJECTED, damping=0.26, accel=5.1, dt=0.11),
}


def test_jaxmarl_spaces_match() -> None:
    jaxmarl = pytest.importorskip("jaxmarl")
    discrete = cached_harness(REFERENCE, continuous_actions=False, max_cycles=25).env
    assert jaxmarl_space_sizes(discrete, jaxmarl.make("MPE_simple_v3")) == []
    continuous = cached_harness(REFERENCE, continuous_actions=True, max_cycles=25).env
    assert jaxmarl_space_sizes(continuous, jaxmarl.make("MPE_simple_v3", action_type="Continuous")) == []
