"""``Checked``: validates actions at the boundary and raises a clear error before anything runs."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.core.env import State
from jaxmarl_suite.core.spaces import Discrete, MultiDiscrete, Space
from jaxmarl_suite.core.types import EnvParams, GroupDict, TimeStep
from jaxmarl_suite.wrappers.base import Wrapper

Array = jax.Array


class InvalidActionError(ValueError):
    """An action does not fit its group's action space. The env state was not touched."""


class Checked(Wrapper):
    """Checks the action structure, shape and dtype (also when traced under ``jit``) and the range
    (when the actions are concrete arrays, i.e. called outside ``jit``), then steps.

    Errors name the group, the expected space and shape, and what was received. Because the check runs
    before the wrapped ``step``, a rejected call changes nothing: the caller's state is still valid.
    ``make(env_id, checked=True)`` applies it.
    """

    def step(
        self, key: Array, state: State, actions: GroupDict, params: EnvParams | None = None
    ) -> tuple[State, TimeStep]:
        """Validate ``actions``, then step."""
        return self.env.step(key, state, self.validate(actions), params)

    def validate(self, actions: Any) -> GroupDict:
        """Return ``actions`` as JAX arrays if valid; raise ``InvalidActionError`` otherwise."""
        if not isinstance(actions, dict):
            raise InvalidActionError(
                f"actions must be a dict {{group: array}} with groups {list(self.groups)}, "
                f"got {type(actions).__name__}"
            )
        missing = [g for g in self.groups if g not in actions]
        extra = [g for g in actions if g not in self.groups]
        if missing or extra:
            raise InvalidActionError(
                f"actions have groups {list(actions)}, expected exactly {list(self.groups)} "
                f"(missing {missing}, unexpected {extra})"
            )
        return {group: self._check_group(group, actions[group]) for group in self.groups}

    def _check_group(self, group: str, value: Any) -> Array:
        space = self.action_space(group)
        batch = () if self.num_envs is None else (self.num_envs,)
        expected_shape = (*batch, self.group_size(group), *space.shape)
        array = value if isinstance(value, jax.Array) else np.asarray(value)
        where = f"group {group!r} (action space {space}, expected shape {expected_shape}"
        if tuple(array.shape) != expected_shape:
            raise InvalidActionError(f"{where}): got shape {tuple(array.shape)}")
        if not _dtype_fits(space, array.dtype):
            want = "an integer dtype" if isinstance(space, Discrete | MultiDiscrete) else "a float dtype"
            raise InvalidActionError(f"{where}, {want}): got dtype {array.dtype}")
        try:
            concrete = np.asarray(array)
        except jax.errors.TracerArrayConversionError:
            concrete = None  # traced under jit: values are unknown until run time
        if concrete is not None:
            inside = np.asarray(space.contains(jnp.asarray(concrete)))
            if not inside.all():
                bad = np.argwhere(~inside)[0]
                offending = concrete[tuple(bad)]
                raise InvalidActionError(
                    f"{where}): out of range at index {tuple(int(i) for i in bad)}, value {offending}"
                )
        return jnp.asarray(array)


def _dtype_fits(space: Space, dtype: Any) -> bool:
    if isinstance(space, Discrete | MultiDiscrete):
        return bool(np.issubdtype(dtype, np.integer))
    return bool(np.issubdtype(dtype, np.floating))
