"""``Checked``: validates actions at the boundary and raises a clear error before anything runs.

Two kinds of check, so that each runs as early as it can:

- **Structure, shape and dtype** are static, so they are checked in Python whenever ``step`` runs,
  eagerly or while ``jit`` traces it, and raise ``InvalidActionError`` on the spot.
- **Values** (in range, finite, allowed by the action mask of the previous TimeStep) are checked in
  Python when the actions and the mask are concrete arrays. When they are traced (under ``jit``,
  ``vmap`` or ``scan``) the same test runs on the device, and only when it finds a bad action does a
  ``jax.debug.callback`` run the Python check on the offending arrays and raise ``InvalidActionError``
  from the host. XLA then fails the computation with a ``jax.errors.JaxRuntimeError`` whose message
  contains the eager message word for word. One message-building function serves both paths.

Why the message is not the first line of that ``JaxRuntimeError``: XLA builds its text in C++, as
``INTERNAL: CpuCallback error calling callback: Traceback (most recent call last):``, the callback's
frames, then ``InvalidActionError: <message>`` last; JAX offers no hook between that error and the caller
of a jitted function (``checkify`` needs the caller to transform the function, ``error_check`` needs the
caller to ask). So the message comes first where code we control awaits the result: ``checked_errors()``
is that boundary, for the PettingZoo adapter's ``step`` and for a user's own jitted loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.env import MultiAgentEnv, State
from jaxmarl_suite.core.spaces import Box, Discrete, MultiDiscrete, Space
from jaxmarl_suite.core.types import EnvParams, GroupDict, TimeStep
from jaxmarl_suite.wrappers.base import Wrapper, broadcast_to_leaf

Array = jax.Array


class InvalidActionError(ValueError):
    """An action does not fit its group's action space or action mask. The env state was not touched."""


_RAISED_AS = f"{InvalidActionError.__name__}: "
"""What precedes the message in the last line of the traceback that XLA's error quotes."""


def invalid_action_message(error: BaseException) -> str | None:
    """The checked-mode message a ``jax.errors.JaxRuntimeError`` carries (the words after the quoted
    traceback's ``InvalidActionError:``), or None if ``error`` is not a checked-mode failure."""
    if not isinstance(error, jax.errors.JaxRuntimeError):
        return None
    text = str(error)
    at = text.rfind(_RAISED_AS)
    if at < 0:
        return None
    return text[at + len(_RAISED_AS):].strip() or None


@contextlib.contextmanager
def checked_errors() -> Iterator[None]:
    """Within the block, a jitted checked env's run-time failure is re-raised as ``InvalidActionError``
    whose text is the check's message alone (the eager one, word for word), with XLA's error as its
    ``__cause__``; other errors pass unchanged. Await the results inside the block (``block_until_ready``,
    reading a value): XLA reports the failure when the result is awaited, which may be after the call.

    ``with checked_errors(): state, timestep = jax.jit(env.step)(key, state, actions)``
    """
    try:
        yield
    except jax.errors.JaxRuntimeError as error:
        message = invalid_action_message(error)
        if message is None:
            raise
        raise InvalidActionError(message) from error


@struct.dataclass
class CheckedState:
    """The wrapped env's state plus the action mask that the next actions are checked against."""

    env_state: State
    action_mask: GroupDict
    """``{group: [*batch, n, num_actions]}`` from the last TimeStep (``Discrete`` groups only)."""


class Checked(Wrapper):
    """Rejects malformed or illegal actions before the wrapped env sees them.

    Checks, in order: the action dict's groups; each group's shape and dtype; then every action's
    value: NaN or inf in continuous actions, values outside the action space, and discrete actions
    that the last TimeStep's ``action_mask`` forbids. Value errors name the group, the agent (from
    ``env.groups``), the env index in a batch, and the action.

    Eagerly, errors raise ``InvalidActionError`` before the wrapped ``step`` runs, so the caller's
    state stays valid. Under ``jit`` the shape and dtype errors still raise while tracing; value errors
    stop the compiled program at run time with a ``jax.errors.JaxRuntimeError`` carrying the same
    message after XLA's own lines, and ``checked_errors()`` turns it back into ``InvalidActionError``
    (see the module docstring). That costs one reduction and a branch per step; under an
    outer ``vmap`` the branch becomes a select, so the host callback then runs on every step.

    The state is a ``CheckedState`` wrapping the inner env's state, because the mask reaches users in
    the TimeStep, not in the state. ``make(env_id, checked=True)`` applies this wrapper;
    ``checked=False`` (the default) adds nothing at all.
    """

    def __init__(self, env: MultiAgentEnv) -> None:
        super().__init__(env)
        self._spaces: dict[str, Space] = {group: env.action_space(group) for group in self.groups}

    def reset(self, key: Array, params: EnvParams | None = None) -> tuple[CheckedState, TimeStep]:
        """Reset, keeping the first action mask for the first ``step``."""
        env_state, timestep = self.env.reset(key, params)
        return CheckedState(env_state, self._masks(timestep)), timestep

    def step(
        self, key: Array, state: CheckedState, actions: GroupDict, params: EnvParams | None = None
    ) -> tuple[CheckedState, TimeStep]:
        """Validate ``actions`` against the spaces and the last action mask, then step."""
        if not isinstance(state, CheckedState):
            raise TypeError(
                f"Checked.step needs the state returned by this env's reset or step, got "
                f"{type(state).__name__}; a state from the unwrapped env does not carry the action mask"
            )
        actions = self.validate(actions, state.action_mask)
        env_state, timestep = self.env.step(key, state.env_state, actions, params)
        return CheckedState(env_state, self._masks(timestep)), timestep

    def validate(self, actions: Any, action_mask: GroupDict | None = None) -> GroupDict:
        """Return ``actions`` as JAX arrays if valid; raise ``InvalidActionError`` otherwise.

        ``action_mask`` (``{group: [*batch, n, num_actions]}``) adds the mask check for the groups it
        covers. Traced values are checked at run time (see the class docstring).
        """
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
        checked = {group: self._check_layout(group, actions[group]) for group in self.groups}
        masks = {g: m for g, m in (action_mask or {}).items() if isinstance(self._spaces.get(g), Discrete)}
        concrete = _concrete((checked, masks))
        arrays = {group: jnp.asarray(value) for group, value in checked.items()}
        if concrete is None:
            self._check_at_run_time(arrays, masks)
        elif (message := self._describe_invalid(*concrete)) is not None:
            raise InvalidActionError(message)
        return arrays

    def select(self, pick_first: Array, first: CheckedState, second: CheckedState) -> CheckedState:
        """Per env, ``first`` where ``pick_first`` else ``second``, masks included (for ``AutoReset``)."""
        masks = jax.tree.map(
            lambda a, b: jnp.where(broadcast_to_leaf(pick_first, a), a, b),
            first.action_mask,
            second.action_mask,
        )
        return CheckedState(self.env.select(pick_first, first.env_state, second.env_state), masks)

    def render(self, state: CheckedState, params: EnvParams | None = None, **kwargs: Any) -> Array:
        """Render the wrapped env's state."""
        return self.env.render(state.env_state, params, **kwargs)

    def env_state(self, state: CheckedState, index: int) -> State:
        """One env's state from a batch (needs a ``VecEnv`` inside)."""
        return self.env.env_state(state.env_state, index)  # pyright: ignore[reportAttributeAccessIssue]

    def _masks(self, timestep: TimeStep) -> GroupDict:
        return {g: m for g, m in timestep.action_mask.items() if isinstance(self._spaces.get(g), Discrete)}

    def _check_layout(self, group: str, value: Any) -> Any:
        """Shape and dtype, known while tracing; returns a ``jax.Array`` or a NumPy array."""
        space = self._spaces[group]
        batch = () if self.num_envs is None else (self.num_envs,)
        expected_shape = (*batch, self.group_size(group), *space.shape)
        array = value if isinstance(value, jax.Array) else np.asarray(value)
        where = f"group {group!r} (action space {space}, expected shape {expected_shape}"
        if tuple(array.shape) != expected_shape:
            raise InvalidActionError(f"{where}): got shape {tuple(array.shape)}")
        if not _dtype_fits(space, array.dtype):
            integer = isinstance(space, Discrete | MultiDiscrete) or np.issubdtype(space.dtype, np.integer)
            want = "an integer dtype" if integer else "a float dtype"
            raise InvalidActionError(f"{where}, {want}): got dtype {array.dtype}")
        return array

    def _check_at_run_time(self, actions: GroupDict, masks: GroupDict) -> None:
        """On the device: any bad action calls back to the host, which raises the eager message."""
        flags = [jnp.any(self._invalid(jnp, g, actions[g], masks.get(g))) for g in self.groups]
        any_invalid = jnp.any(jnp.stack(flags))

        def report(host_actions: GroupDict, host_masks: GroupDict) -> None:
            message = self._describe_invalid(
                jax.tree.map(np.asarray, host_actions), jax.tree.map(np.asarray, host_masks)
            )
            if message is not None:
                raise InvalidActionError(message)

        jax.lax.cond(any_invalid, lambda: jax.debug.callback(report, actions, masks), lambda: None)

    def _invalid(self, xp: ModuleType, group: str, actions: Any, mask: Any) -> Any:
        """``[*batch, n]`` bool, True where an agent's action is bad. ``xp`` is ``numpy`` or
        ``jax.numpy``, so the host and the device apply the very same rule."""
        space = self._spaces[group]
        action_axes = tuple(range(-len(space.shape), 0))
        if isinstance(space, Box):
            finite = xp.isfinite(actions)
            inside = (actions >= space.low) & (actions <= space.high)
            return ~xp.all(finite & inside, axis=action_axes) if action_axes else ~(finite & inside)
        if isinstance(space, MultiDiscrete):
            inside = (actions >= 0) & (actions < xp.asarray(space.nvec))
            return ~xp.all(inside, axis=-1)
        if not isinstance(space, Discrete):  # a user's own kind of space: its layout was checked
            return xp.zeros(actions.shape[: actions.ndim - len(space.shape)], bool)
        bad = (actions < 0) | (actions >= space.n)
        if mask is not None:
            index = xp.clip(actions, 0, mask.shape[-1] - 1)[..., None]
            bad = bad | ~xp.take_along_axis(mask, index, axis=-1)[..., 0]
        return bad

    def _describe_invalid(self, actions: dict[str, np.ndarray], masks: dict[str, np.ndarray]) -> str | None:
        """The message for the first bad action (groups in order, then envs, then agents), or None."""
        first, count = None, 0
        for group in self.groups:
            bad = np.asarray(self._invalid(np, group, actions[group], masks.get(group)))
            count += int(bad.sum())
            if first is None and bad.any():
                first = (group, tuple(int(i) for i in np.argwhere(bad)[0]))
        if first is None:
            return None
        group, index = first
        space, action, mask = self._spaces[group], actions[group][index], masks.get(group)
        agent = self.groups[group][index[-1]]
        if len(index) == 2:
            who = f"group {group!r}, agent {agent!r} in env {index[0]}"
        elif len(index) > 2:
            who = f"group {group!r}, agent {agent!r} at batch index {index[:-1]}"
        else:
            who = f"group {group!r}, agent {agent!r}"
        shown = np.array2string(np.asarray(action), separator=", ")
        if isinstance(space, Box) and not np.isfinite(action).all():
            kind = "NaN" if np.isnan(action).any() else "inf"
            problem = f"action {shown} contains {kind} (action space {space})"
        elif self._invalid(np, group, actions[group], None)[index]:
            problem = f"action {shown} is outside the action space {space}"
        else:
            assert mask is not None  # only the mask is left to have rejected it
            legal = np.flatnonzero(mask[index]).tolist()
            problem = f"action {shown} is masked out by the last TimeStep's action_mask (legal: {legal})"
        more = ""
        if count > 1:
            more = f" ({count - 1} more invalid action{'s' if count > 2 else ''} in this step)"
        return f"{who}: {problem}{more}"


def _concrete(tree: Any) -> Any:
    """``tree`` with every leaf as a NumPy array, or None if any leaf is traced."""
    try:
        return jax.tree.map(np.asarray, tree)
    except jax.errors.TracerArrayConversionError:
        return None


def _dtype_fits(space: Space, dtype: Any) -> bool:
    if isinstance(space, Discrete | MultiDiscrete):
        return bool(np.issubdtype(dtype, np.integer))
    kind = np.integer if np.issubdtype(space.dtype, np.integer) else np.floating
    return bool(np.issubdtype(dtype, kind))
