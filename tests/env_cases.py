"""Every registered env and variant as pytest params, for the suites that run on all of them.

The per-family rule keeps the default suite inside its budget as families are added (docs/testing.md):
the first ``DEFAULT_PER_FAMILY`` cases of each family, in registration order (an env's registered
variants follow it), run by default; every other case carries the ``slow`` mark and runs under
``-m slow``. A new family gets the rule by registering: nothing here names an env.
"""

from __future__ import annotations

import importlib.util
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
        missing = missing_modules(spec.requires)
        for variant in ({}, *spec.variants):
            seen[spec.family] = seen.get(spec.family, 0) + 1
            marks = [pytest.mark.slow] if seen[spec.family] > per_family else []
            if missing:
                reason = f"{env_id} needs {', '.join(missing)} (an optional extra)"
                marks.append(pytest.mark.skip(reason=reason))
            cases.append(pytest.param((env_id, variant), marks=marks, id=f"{env_id}{variant or ''}"))
    return cases


def registered_ids() -> list[Any]:
    """Every registered env id; an env whose optional modules are missing comes as a ``pytest.param`` that
    skips with the reason (for cheap suites that build every env once)."""
    cases: list[Any] = []
    for env_id in jaxmarl_suite.registered_envs():
        missing = missing_modules(jaxmarl_suite.env_spec(env_id).requires)
        reason = f"{env_id} needs {', '.join(missing)} (an optional extra)"
        cases.append(pytest.param(env_id, marks=pytest.mark.skip(reason=reason)) if missing else env_id)
    return cases


def missing_modules(modules: tuple[str, ...]) -> list[str]:
    """The modules of ``modules`` that this install cannot import."""
    missing = []
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a submodule of a missing package
            found = False
        if not found:
            missing.append(module)
    return missing


def first_of_each_family() -> list[Any]:
    """The first registered env id of every built-in family, sorted (for suites that need one per family);
    an env whose optional modules are missing comes as a ``pytest.param`` that skips with the reason."""
    families: dict[str, str] = {}
    for env_id in jaxmarl_suite.registered_envs():
        family = jaxmarl_suite.env_spec(env_id).family
        if family != "user":
            families.setdefault(family, env_id)
    cases: list[Any] = []
    for env_id in sorted(families.values()):
        missing = missing_modules(jaxmarl_suite.env_spec(env_id).requires)
        reason = f"{env_id} needs {', '.join(missing)} (an optional extra)"
        cases.append(pytest.param(env_id, marks=pytest.mark.skip(reason=reason)) if missing else env_id)
    return cases
