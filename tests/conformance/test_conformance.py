"""Every registered env, and each registered variant, passes every conformance check.

Per case one rollout is compiled and run (``collect_rollout``) and every check inspects it, inside one
test, so that pytest-xdist cannot split a case's checks across workers and compile its rollout twice. A
failing case reports every check that failed, by name. Past the first two cases of a family the test is
``slow`` (``env_cases``).
"""

from __future__ import annotations

import pytest
from env_cases import env_cases

import jaxmarl_suite
from jaxmarl_suite.testing import ALL_CHECKS, ConformanceError, collect_rollout


@pytest.mark.parametrize("case", env_cases())
def test_conformance(case: tuple[str, dict]) -> None:
    env_id, kwargs = case
    env = jaxmarl_suite.make(env_id, **kwargs)
    # at XLA's default backend level, as users' programs compile, even where the default suite compiles at
    # level 0 (conftest): 1,000 steps of 16 envs through four step paths are run-bound for physics envs
    # (MJX HalfCheetah: 74 s at the default level, 150 s at level 0)
    rollout = collect_rollout(env, compiler_options={"xla_backend_optimization_level": 3})
    failures = []
    for check in ALL_CHECKS:
        try:
            check(env, rollout)
        except ConformanceError as error:
            failures.append(f"{check.__name__}: {error}")
    assert not failures, "\n".join(failures)
