"""Every registered env, and each registered variant, passes every conformance check."""

from __future__ import annotations

import pytest
from env_cases import registered_cases

import jaxmarl_suite
from jaxmarl_suite.testing import ALL_CHECKS

CASES = registered_cases()


@pytest.fixture(scope="module", params=CASES)
def env(request: pytest.FixtureRequest):
    env_id, kwargs = request.param
    return jaxmarl_suite.make(env_id, **kwargs)


@pytest.mark.parametrize("check", ALL_CHECKS, ids=[c.__name__ for c in ALL_CHECKS])
def test_conformance(env, check) -> None:
    check(env)
