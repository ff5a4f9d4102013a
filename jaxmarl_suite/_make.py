"""``jaxmarl_suite.make``: the registry's ``make`` plus the wrappers its options ask for.

It lives above both layers it joins. The core builds envs and must not import wrappers; ``Checked`` is a
wrapper. So the core's ``make`` builds the (optionally vectorised) env, and this one applies
``Checked`` on top. Like the registry, it imports JAX and the wrappers only when called.
"""

from __future__ import annotations

from typing import Any

from jaxmarl_suite.core import registry


def make(env_id: str, num_envs: int | None = None, checked: bool = False, **kwargs: Any) -> Any:
    """Build a registered env.

    Args:
        env_id: a canonical id or alias (JaxMARL's ids such as ``MPE_simple_spread_v3`` work).
        num_envs: if given, return a ``VecEnv`` of that many envs (batch-leading arrays).
        checked: wrap in ``Checked``, which validates actions (structure, dtype, range, finiteness and
            the action mask) at the boundary and, under ``jit``, at run time. ``False`` adds nothing.
        **kwargs: constructor arguments of the env, overriding the registered defaults. Each is checked
            against the type the constructor declares (a ``bool`` parameter takes only a bool).

    Raises:
        TypeError: ``env_id`` is not a string, a keyword is unknown or of the wrong type, or
            ``checked`` is not a bool.
        ValueError: the id is unknown (naming the closest ids) or ``num_envs`` is not a positive int.
    """
    # The id is looked up first so that a bad id is reported before a bad ``checked``, as it always was.
    registry.env_spec(env_id)
    if not isinstance(checked, bool):
        raise TypeError(f"checked must be a bool, got {type(checked).__name__} {checked!r}")
    env = registry.make(env_id, num_envs, **kwargs)
    if checked:
        from jaxmarl_suite.wrappers.checked import Checked

        env = Checked(env)
    return env
