"""Every registered env, and each registered variant, passes every conformance check."""

from __future__ import annotations

import pytest

import jaxmarl_suite
from jaxmarl_suite.testing import ALL_CHECKS


def _cases() -> list[tuple[str, dict]]:
    cases = []
    for env_id in jaxmarl_suite.registered_envs():
        cases.append((env_id, {}))
        cases += [(env_id, variant) for variant in jaxmarl_suite.env_spec(env_id).variants]
    return cases


CASES = _cases()


@pytest.fixture(scope="module", params=CASES, ids=[f"{i}{v or ''}" for i, v in CASES])
def env(request: pytest.FixtureRequest):
    env_id, kwargs = request.param
    return jaxmarl_suite.make(env_id, **kwargs)


@pytest.mark.parametrize("check", ALL_CHECKS, ids=[c.__name__ for c in ALL_CHECKS])
def test_conformance(env, check) -> None:
    check(env)
