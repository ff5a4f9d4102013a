"""Every registered env and variant as pytest params, for the suites that run on all of them.

The per-family rule keeps the default suite inside its budget as families are added (docs/testing.md):
the first ``DEFAULT_PER_FAMILY`` cases of each family, in registration order (an env's registered
variants follow it), run by default; every other case carries the ``slow`` mark and runs under
``-m slow``. A new family gets the rule by registering: nothing here names an env.
"""

from __future__ import annotations

from typing import Any

import pytest

import jaxmarl_suite

DEFAULT_PER_FAMILY = 2
"""Cases per family in the default suite: for MPE ``simple_spread`` discrete and continuous, for SMAX
``SMAX`` (3m) against the heuristic enemy and against agents."""


def env_cases(per_family: int = DEFAULT_PER_FAMILY) -> list[Any]:
    """``pytest.param((env_id, kwargs))`` for every registered env and each of its variants, with every
    case after the first ``per_family`` of its family marked ``slow``.

    Suites too costly to run even two cases per family by default (a five-second benchmark) pass
    ``per_family=1``.
    """
    seen: dict[str, int] = {}
    cases = []
    for env_id in jaxmarl_suite.registered_envs():
        spec = jaxmarl_suite.env_spec(env_id)
        for variant in ({}, *spec.variants):
            seen[spec.family] = seen.get(spec.family, 0) + 1
            marks = [pytest.mark.slow] if seen[spec.family] > per_family else []
            cases.append(pytest.param((env_id, variant), marks=marks, id=f"{env_id}{variant or ''}"))
    return cases


def first_of_each_family() -> list[str]:
    """The first registered env id of every built-in family, sorted (for suites that need one per family)."""
    families: dict[str, str] = {}
    for env_id in jaxmarl_suite.registered_envs():
        family = jaxmarl_suite.env_spec(env_id).family
        if family != "user":
            families.setdefault(family, env_id)
    return sorted(families.values())
