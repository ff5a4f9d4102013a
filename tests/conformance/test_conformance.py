"""Every registered env, and each registered variant, passes every conformance check."""

from __future__ import annotations

import pytest

import jaxmarl_suite
from jaxmarl_suite.testing import ALL_CHECKS

# SMAX maps share one implementation; these cover every code path (fixed and procedural scenarios,
# shields, healers, both enemy modes). The other maps run with the slow suite (-m slow).
SMAX_DEFAULT_SUITE = ("SMAX", "SMAX_MMM", "SMAX_smacv2_5_units")


def _cases() -> list:
    cases = []
    for env_id in jaxmarl_suite.registered_envs():
        spec = jaxmarl_suite.env_spec(env_id)
        for variant in ({}, *spec.variants):
            slow = spec.family == "smax" and (
                env_id not in SMAX_DEFAULT_SUITE or "obs_last_actions" in variant
            )
            marks = [pytest.mark.slow] if slow else []
            cases.append(pytest.param((env_id, variant), marks=marks, id=f"{env_id}{variant or ''}"))
    return cases


CASES = _cases()


@pytest.fixture(scope="module", params=CASES)
def env(request: pytest.FixtureRequest):
    env_id, kwargs = request.param
    return jaxmarl_suite.make(env_id, **kwargs)


@pytest.mark.parametrize("check", ALL_CHECKS, ids=[c.__name__ for c in ALL_CHECKS])
def test_conformance(env, check) -> None:
    check(env)
