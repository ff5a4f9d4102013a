"""Every registered env and variant as pytest params, for the suites that run on all of them.

SMAX maps share one implementation, so the default suite runs ``SMAX`` (3m) with both enemy modes; the
other maps (procedural draws, shields and healers have their own rule tests in
tests/environments/test_smax.py) and variants carry the ``slow`` mark.
"""

from __future__ import annotations

from typing import Any

import pytest

import jaxmarl_suite

SMAX_DEFAULT_SUITE = ("SMAX",)


def registered_cases() -> list[Any]:
    """``pytest.param((env_id, kwargs))`` for every registered env and each of its variants."""
    cases = []
    for env_id in jaxmarl_suite.registered_envs():
        spec = jaxmarl_suite.env_spec(env_id)
        for variant in ({}, *spec.variants):
            subset = env_id in SMAX_DEFAULT_SUITE and "obs_last_actions" not in variant
            slow = spec.family == "smax" and not subset
            marks = [pytest.mark.slow] if slow else []
            cases.append(pytest.param((env_id, variant), marks=marks, id=f"{env_id}{variant or ''}"))
    return cases


def first_cases_per_family(per_family: int) -> list[Any]:
    """``registered_cases()`` with every case after the first ``per_family`` of its family marked ``slow``.

    For suites too costly to run on every default case: the default suite keeps the first cases of each
    family (for MPE ``simple_spread`` discrete and continuous, for SMAX both enemy modes) and ``-m slow``
    runs the rest.
    """
    seen: dict[str, int] = {}
    cases = []
    for case in registered_cases():
        env_id, _ = case.values[0]
        family = jaxmarl_suite.env_spec(env_id).family
        seen[family] = seen.get(family, 0) + 1
        slow = seen[family] > per_family and not any(mark.name == "slow" for mark in case.marks)
        marks = [*case.marks, pytest.mark.slow] if slow else list(case.marks)
        cases.append(pytest.param(*case.values, marks=marks, id=case.id))
    return cases
