"""The one registry of environments. Importing it imports no JAX and no env family.

Entries carry metadata (family, reference implementation, aliases); ``make`` imports the env's module
only when asked for it. Built-in entries are declared in ``jaxmarl_suite.environments``.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EnvSpec:
    """Registry metadata for one env id."""

    env_id: str
    """Canonical id, e.g. ``MPE_simple_spread_v3``."""
    entry_point: str | Callable[..., Any]
    """``"module:attr"`` (imported lazily) or a callable returning a ``MultiAgentEnv``."""
    family: str = "user"
    """Env family, e.g. ``mpe``."""
    reference: str | None = None
    """Reference implementation this env matches (e.g. ``mpe2.simple_spread_v3``), if any."""
    aliases: tuple[str, ...] = ()
    """Other ids accepted by ``make`` (JaxMARL's and the reference's names)."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Default constructor arguments; ``make``'s keyword arguments override them."""
    description: str = ""
    """One line for ``jaxmarl-suite list``."""
    variants: tuple[dict[str, Any], ...] = ()
    """Extra constructor-argument sets that the conformance suite also tests (e.g. continuous actions)."""

    def factory(self) -> Callable[..., Any]:
        """The callable that builds the env, importing its module if needed."""
        if callable(self.entry_point):
            return self.entry_point
        module_name, _, attr = self.entry_point.partition(":")
        return getattr(importlib.import_module(module_name), attr)


_SPECS: dict[str, EnvSpec] = {}
_ALIASES: dict[str, str] = {}


def register(
    env_id: str,
    entry_point: str | Callable[..., Any],
    *,
    family: str = "user",
    reference: str | None = None,
    aliases: tuple[str, ...] = (),
    kwargs: dict[str, Any] | None = None,
    description: str = "",
    variants: tuple[dict[str, Any], ...] = (),
    overwrite: bool = False,
) -> EnvSpec:
    """Register an env under ``env_id`` (and ``aliases``). Raises ValueError if an id is already taken."""
    if not isinstance(env_id, str) or not env_id:
        raise ValueError(f"env_id must be a non-empty string, got {env_id!r}")
    if not (callable(entry_point) or (isinstance(entry_point, str) and ":" in entry_point)):
        raise ValueError(f"entry_point must be a callable or 'module:attr', got {entry_point!r}")
    for name in (env_id, *aliases):
        taken = name in _SPECS or name in _ALIASES
        if taken and not overwrite:
            raise ValueError(f"env id {name!r} is already registered; pass overwrite=True to replace it")
    spec = EnvSpec(
        env_id,
        entry_point,
        family,
        reference,
        tuple(aliases),
        dict(kwargs or {}),
        description,
        tuple(variants),
    )
    _SPECS[env_id] = spec
    for alias in aliases:
        _ALIASES[alias] = env_id
    return spec


def registered_envs(family: str | None = None) -> list[str]:
    """Canonical ids of every registered env (optionally one family), in registration order."""
    _ensure_builtins()
    return [env_id for env_id, spec in _SPECS.items() if family is None or spec.family == family]


def env_spec(env_id: str) -> EnvSpec:
    """The spec for ``env_id`` or any alias. Unknown ids raise ValueError naming the closest matches."""
    _ensure_builtins()
    canonical = _ALIASES.get(env_id, env_id)
    if canonical in _SPECS:
        return _SPECS[canonical]
    known = list(_SPECS) + list(_ALIASES)
    lowered = {name.lower(): name for name in known}
    close = difflib.get_close_matches(env_id.lower(), list(lowered), n=5, cutoff=0.5)
    hint = ", ".join(repr(lowered[c]) for c in close) or "none"
    raise ValueError(
        f"Unknown env id {env_id!r}. Closest registered ids: {hint}. "
        "See jaxmarl_suite.registered_envs() or `jaxmarl-suite list`."
    )


def make(env_id: str, num_envs: int | None = None, checked: bool = False, **kwargs: Any) -> Any:
    """Build a registered env.

    Args:
        env_id: a canonical id or alias (JaxMARL's ids such as ``MPE_simple_spread_v3`` work).
        num_envs: if given, return a ``VecEnv`` of that many envs (batch-leading arrays).
        checked: wrap in ``Checked``, which validates actions at the boundary.
        **kwargs: constructor arguments of the env, overriding the registered defaults.
    """
    spec = env_spec(env_id)
    factory = spec.factory()
    merged = {**spec.kwargs, **kwargs}
    _check_kwargs(spec, factory, merged)
    env = factory(**merged)
    if num_envs is not None:
        from jaxmarl_suite.core.vec import VecEnv

        if not isinstance(num_envs, int) or isinstance(num_envs, bool) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        env = VecEnv(env, num_envs)
    if checked:
        from jaxmarl_suite.wrappers.checked import Checked

        env = Checked(env)
    return env


def _check_kwargs(spec: EnvSpec, factory: Callable[..., Any], kwargs: dict[str, Any]) -> None:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return
    params = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    accepted = [p.name for p in params if p.kind is not inspect.Parameter.VAR_POSITIONAL]
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise TypeError(
            f"{spec.env_id} got unknown argument(s) {unknown}; it accepts {accepted or 'no arguments'}"
        )


_BUILTINS_LOADED = False


def _ensure_builtins() -> None:
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True
        importlib.import_module("jaxmarl_suite.environments")
