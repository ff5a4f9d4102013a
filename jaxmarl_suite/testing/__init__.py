"""Public testing kit: conformance checks that raise, so you can test your own envs in one call.

Example::

    from jaxmarl_suite.testing import check_env
    check_env(MyEnv())

``check_env`` compiles one rollout of the env and runs every check on it. To run checks one by one on the
same rollout, collect it once: ``rollout = collect_rollout(env)``, then ``check_finite(env, rollout)``.
"""

from jaxmarl_suite.testing.conformance import (
    ALL_CHECKS,
    ConformanceError,
    Rollout,
    check_action_masks,
    check_auto_reset,
    check_batched_matches_vmap,
    check_checked_errors,
    check_determinism,
    check_env,
    check_finite,
    check_jit_vmap,
    check_observations_in_space,
    check_render,
    check_spaces,
    check_time_limit,
    collect_rollout,
)

__all__ = [
    "ALL_CHECKS",
    "ConformanceError",
    "Rollout",
    "check_action_masks",
    "check_auto_reset",
    "check_time_limit",
    "check_batched_matches_vmap",
    "check_checked_errors",
    "check_determinism",
    "check_env",
    "check_finite",
    "check_jit_vmap",
    "check_observations_in_space",
    "check_render",
    "check_spaces",
    "collect_rollout",
]
