"""Live parity of every MPE scenario against mpe2, as one table through one harness.

``SCENARIOS`` has a row per scenario: its name, our env id, the scenario's module (which names mpe2's
reference module, whose ``parallel_env`` is the constructor, and gives the constructor's arguments for
each configuration, the rows' options and the negative controls), and how many of its configurations
run by default. Each configuration is a ``ParityCase``, and four tests run on each:

- ``test_row_matches_the_registry``: the id's registry entry names the reference, and our env built from
  the constructed reference is the id's class.
- ``test_initial_observations_match``: our observations of mpe2's reset world, seed by seed.
- ``test_episode_matches_mpe2``: whole episodes, side by side, injected and free-running (see
  ``mpe_scenario_harness.py``); the step is compiled once.
- ``test_negative_control``: each perturbation of our side must make the same comparison raise, which
  proves its assertions run.

Why a scenario's tolerances, seeds and policies are what they are is in its module
(``test_mpe_<scenario>_parity.py``), with the tests particular to it. The family's first two scenarios
(simple_spread, simple) run every configuration by default. Of the others, those whose first
configuration costs about two seconds run it (with its negative controls) by default; collect_treasure,
simple_world_comm, simple_formation and simple_line (three to ten seconds a configuration: bigger worlds,
an assignment solver) and every other configuration run under ``-m slow`` (docs/testing.md).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import test_mpe_collect_treasure_parity as collect_treasure
import test_mpe_simple_adversary_parity as adversary
import test_mpe_simple_crypto_parity as crypto
import test_mpe_simple_formation_parity as formation
import test_mpe_simple_line_parity as line
import test_mpe_simple_parity as simple
import test_mpe_simple_push_parity as push
import test_mpe_simple_reference_parity as reference
import test_mpe_simple_speaker_listener_parity as speaker_listener
import test_mpe_simple_spread_parity as spread
import test_mpe_simple_tag_parity as tag
import test_mpe_simple_world_comm_parity as world_comm
from mpe_scenario_harness import MODES, Control, Mode, ParityCase, reset_matches, run_episode

import jaxmarl_suite

EVERY = None
"""Rows by default: all of the scenario's configurations."""

# scenario, our env id, its module (mpe2's reference, configurations, options, controls), rows by default
SCENARIOS: list[tuple[str, str, ModuleType, int | None]] = [
    ("simple_spread", "MPE_simple_spread_v3", spread, EVERY),
    ("simple", "MPE_simple_v3", simple, EVERY),
    ("simple_push", "MPE_simple_push_v3", push, 1),
    ("simple_adversary", "MPE_simple_adversary_v3", adversary, 1),
    ("simple_speaker_listener", "MPE_simple_speaker_listener_v4", speaker_listener, 1),
    ("simple_reference", "MPE_simple_reference_v3", reference, 1),
    ("simple_crypto", "MPE_simple_crypto_v3", crypto, 1),
    ("simple_tag", "MPE_simple_tag_v3", tag, 1),
    ("collect_treasure", "MPE_collect_treasure_v1", collect_treasure, 0),
    ("simple_world_comm", "MPE_simple_world_comm_v3", world_comm, 0),
    ("simple_formation", "MPE_simple_formation_v1", formation, 0),
    ("simple_line", "MPE_simple_line_v1", line, 0),
]


def scenario_cases(name: str, env_id: str, module: ModuleType, by_default: int | None) -> list[ParityCase]:
    """A ``ParityCase`` per configuration of the scenario, past the first ``by_default`` (None: all) slow."""
    cases = []
    for index, (config, kwargs) in enumerate(module.CONFIGS.items()):
        options = {**module.ROW, **getattr(module, "ROW_OPTIONS", {}).get(config, {})}
        controls = module.CONTROLS.get(config, ())
        slow = by_default is not None and index >= by_default
        cases.append(
            ParityCase(
                f"{name}-{config}", env_id, module.REFERENCE, kwargs, **options, controls=controls, slow=slow
            )
        )
    return cases


CASES = [case for scenario in SCENARIOS for case in scenario_cases(*scenario)]


def rows(cases: list[ParityCase]) -> list[Any]:
    return [pytest.param(case, id=case.name, marks=[pytest.mark.slow] if case.slow else []) for case in cases]


def test_scenario_is_read_from_the_env_not_the_shared_metadata() -> None:
    """mpe2's raw envs share one class-level ``metadata`` dict whose ``name`` the last constructor wrote;
    ``state_from_mpe2`` must still build a spread env from a spread reference made before a tag one."""
    from mpe2 import simple_spread_v3, simple_tag_v3

    from jaxmarl_suite.environments.mpe.parity import make_matching_env

    spread = simple_spread_v3.parallel_env()
    simple_tag_v3.parallel_env()
    assert spread.unwrapped.metadata["name"] == "simple_tag_v3"  # the trap is still there in mpe2
    env = make_matching_env(spread)
    assert list(env.groups) == ["agents"] and env.group_size("agents") == 3


def test_every_mpe2_scenario_has_a_row() -> None:
    """A scenario registered with an mpe2 reference cannot be added without its parity row."""
    specs = {env_id: jaxmarl_suite.env_spec(env_id) for env_id in jaxmarl_suite.registered_envs()}
    expected = {env_id for env_id, spec in specs.items() if (spec.reference or "").startswith("mpe2.")}
    assert {env_id for _, env_id, _, _ in SCENARIOS} == expected
    assert all(scenario_cases(*scenario)[0].controls for scenario in SCENARIOS), "a first row has no control"


@pytest.mark.parametrize("case", rows(CASES))
def test_row_matches_the_registry(case: ParityCase) -> None:
    assert jaxmarl_suite.env_spec(case.env_id).reference == case.reference
    assert type(case.harness().env) is type(jaxmarl_suite.make(case.env_id))


@pytest.mark.parametrize("case", rows(CASES))
def test_initial_observations_match(case: ParityCase) -> None:
    h = case.harness()
    drawn = []
    for seed in case.seeds:
        reset_matches(h, seed, case.reset_atol)
        if case.reset_probe is not None:
            drawn.append(case.reset_probe(h))
    if case.resets_cover is not None:
        assert case.resets_cover(drawn), f"the seeds do not draw every case the scenario has: {drawn}"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", rows(CASES))
def test_episode_matches_mpe2(case: ParityCase, mode: Mode) -> None:
    h, atol = case.harness(), case.tolerance(mode)
    reports = [run_episode(h, seed, mode, atol, **case.episode) for seed in case.seeds]
    assert max(report.max_error for report in reports) <= atol
    assert h.traces == [1], "our step was retraced inside the episode loop"
    if case.check_episodes is not None:
        case.check_episodes(case.seeds, reports)


CONTROLS = [
    pytest.param(case, control, mode, id=f"{case.name}-{control.name}-{mode}", marks=row.marks)
    for row, case in zip(rows(CASES), CASES, strict=True)
    for control in case.controls
    for mode in control.modes
]


@pytest.mark.parametrize(("case", "control", "mode"), CONTROLS)
def test_negative_control(case: ParityCase, control: Control, mode: Mode) -> None:
    h, episode = case.harness(), {**case.episode, **control.episode}
    with pytest.raises(AssertionError, match=control.match):
        for seed in control.seeds:
            run_episode(h, seed, mode, control.atol or case.tolerance(mode), **episode)
