"""Public testing kit: conformance checks that raise, so you can test your own envs in one call.

Example::

    from jaxmarl_suite.testing import check_env
    check_env(MyEnv())
"""

from jaxmarl_suite.testing.conformance import (
    ALL_CHECKS,
    ConformanceError,
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
)

__all__ = [
    "ALL_CHECKS",
    "ConformanceError",
    "check_action_masks",
    "check_auto_reset",
    "check_batched_matches_vmap",
    "check_checked_errors",
    "check_determinism",
    "check_env",
    "check_finite",
    "check_jit_vmap",
    "check_observations_in_space",
    "check_render",
    "check_spaces",
]
