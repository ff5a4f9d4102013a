"""The one registry of environments. Importing it imports no JAX and no env family.

Entries carry metadata (family, reference implementation, aliases); ``make`` imports the env's module
only when asked for it. Built-in entries are declared in ``jaxmarl_suite.environments``.
"""

from __future__ import annotations

import collections.abc
import importlib
import inspect
import numbers
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from jaxmarl_suite.errors import closest


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
    requires: tuple[str, ...] = ()
    """Modules the env needs beyond the suite's own dependencies (an optional extra, e.g. ``mujoco``); the
    test suites skip the env, with a reason, where one is missing."""

    def factory(self) -> Callable[..., Any]:
        """The callable that builds the env, importing its module if needed."""
        if callable(self.entry_point):
            return self.entry_point
        module_name, _, attr = self.entry_point.partition(":")
        return getattr(importlib.import_module(module_name), attr)


_SPECS: dict[str, EnvSpec] = {}
_ALIASES: dict[str, str] = {}
_SCHEMES: list[tuple[re.Pattern[str], str, str | Callable[[re.Match[str]], dict[str, Any]]]] = []


def register_id_scheme(
    pattern: str, env_id: str, kwargs_from: str | Callable[[re.Match[str]], dict[str, Any]]
) -> None:
    """Accept every id that fully matches the regular expression ``pattern`` as a configuration of the
    registered ``env_id``: ``make(id)`` builds ``env_id``'s env with the arguments ``kwargs_from(match)``
    returns. ``kwargs_from`` is a callable or a ``"module:function"`` imported when an id first matches.

    For reference packages that name each configuration (lbforaging's 1,920 ``Foraging-...-v3`` ids):
    they resolve without becoming 1,920 entries that every registry-wide suite would build."""
    if env_id not in _SPECS:
        raise ValueError(f"register {env_id!r} before an id scheme that points to it")
    _SCHEMES.append((re.compile(pattern), env_id, kwargs_from))


def _from_scheme(env_id: str) -> EnvSpec | None:
    """The spec an id scheme gives ``env_id`` (its base spec with the parsed arguments), or None."""
    for pattern, base_id, kwargs_from in _SCHEMES:
        match = pattern.fullmatch(env_id)
        if match is None:
            continue
        parse: Any = kwargs_from
        if isinstance(parse, str):
            module_name, _, attr = parse.partition(":")
            parse = getattr(importlib.import_module(module_name), attr)
        parsed: dict[str, Any] = parse(match)
        base = _SPECS[base_id]
        return replace(base, env_id=env_id, aliases=(), variants=(),
                       kwargs={**base.kwargs, **parsed})
    return None


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
    requires: tuple[str, ...] = (),
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
        tuple(requires),
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
    """The spec for ``env_id`` or any alias. Unknown ids raise ValueError naming the closest matches;
    an id that is not a string raises TypeError naming its type."""
    if not isinstance(env_id, str):
        if isinstance(env_id, type):
            given = (
                f"the class {env_id.__name__}; register it first with "
                f"register('My_env', {env_id.__name__}), or instantiate it directly"
            )
        else:
            given = f"{type(env_id).__name__} {env_id!r}"
        raise TypeError(f"env_id must be a string such as 'MPE_simple_spread_v3', got {given}")
    _ensure_builtins()
    canonical = _ALIASES.get(env_id, env_id)
    if canonical in _SPECS:
        return _SPECS[canonical]
    schemed = _from_scheme(env_id)
    if schemed is not None:
        return schemed
    close = closest(env_id, [*_SPECS, *_ALIASES], n=5, cutoff=0.5)
    hint = ", ".join(repr(c) for c in close) or "none"
    raise ValueError(
        f"Unknown env id {env_id!r}. Closest registered ids: {hint}. "
        "See jaxmarl_suite.registered_envs() or `jaxmarl-suite list`."
    )


def make(env_id: str, num_envs: int | None = None, **kwargs: Any) -> Any:
    """Build a registered env, with no wrapper. ``jaxmarl_suite.make`` adds the ``checked`` option.

    Args:
        env_id: a canonical id or alias (JaxMARL's ids such as ``MPE_simple_spread_v3`` work).
        num_envs: if given, return a ``VecEnv`` of that many envs (batch-leading arrays).
        **kwargs: constructor arguments of the env, overriding the registered defaults. Each is checked
            against the type the constructor declares (a ``bool`` parameter takes only a bool).

    Raises:
        TypeError: ``env_id`` is not a string, or a keyword is unknown or of the wrong type.
        ValueError: the id is unknown (naming the closest ids) or ``num_envs`` is not a positive int.
    """
    spec = env_spec(env_id)
    if num_envs is not None and (not isinstance(num_envs, int) or isinstance(num_envs, bool) or num_envs < 1):
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    factory = spec.factory()
    merged = {**spec.kwargs, **kwargs}
    _check_kwargs(spec, factory, merged)
    env = factory(**merged)
    if num_envs is not None:
        from jaxmarl_suite.core.vec import VecEnv

        env = VecEnv(env, num_envs)
    return env


def _check_kwargs(spec: EnvSpec, factory: Callable[..., Any], kwargs: dict[str, Any]) -> None:
    """Reject unknown keywords and values whose type the factory's signature rules out."""
    signature = _signature(factory)
    if signature is None:
        return
    params = signature.parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        accepted = [p.name for p in params.values() if p.kind is not inspect.Parameter.VAR_POSITIONAL]
        unknown = sorted(set(kwargs) - set(accepted))
        if unknown:
            # Checked mode is a wrapper, which the core cannot import; point to the make that applies it.
            hint = ""
            if "checked" in unknown:
                hint = "; checked mode needs jaxmarl_suite.make(..., checked=True)"
            raise TypeError(
                f"{spec.env_id} got unknown argument(s) {unknown}; it accepts {accepted or 'no arguments'}"
                + hint
            )
    for name, value in kwargs.items():
        param = params.get(name)
        if param is None:
            continue
        expected = _declared_type(param, factory)
        if expected is None:
            continue
        verdict = _matches(value, expected)
        if verdict is False:
            raise TypeError(
                f"{spec.env_id}: keyword {name!r} expects {_describe(expected)}, "
                f"got {type(value).__name__} {value!r}"
            )


def _signature(factory: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(factory)
    except (TypeError, ValueError):
        return None


def _declared_type(param: inspect.Parameter, factory: Callable[..., Any]) -> Any:
    """The parameter's annotation, evaluated if it is a string (``from __future__ import annotations``),
    else the type of a bool, int, float or str default. None when there is nothing to check against."""
    annotation = param.annotation
    if annotation is inspect.Parameter.empty:
        default = param.default
        return type(default) if type(default) in (bool, int, float, str) else None
    if isinstance(annotation, str):
        target = factory.__init__ if isinstance(factory, type) else factory
        namespace = getattr(inspect.unwrap(target), "__globals__", None)
        if namespace is None:
            return None
        try:
            annotation = eval(annotation, dict(namespace))  # what typing.get_type_hints does
        except Exception:
            return None  # a name only imported under TYPE_CHECKING, say: nothing we can check
    return annotation


_SCALAR_KINDS = {bool: "b", int: "iu", float: "iuf", str: "U"}


def _matches(value: Any, expected: Any) -> bool | None:
    """Whether ``value`` fits ``expected``: True, False, or None where the annotation cannot be read.

    Only plain scalars (bool, int, float, str, None), ``Literal`` (by the type of its values), callables
    and unions of these are judged; anything else (a class of the env's own, ``Any``) is not.
    """
    if expected is None or expected is type(None):
        return value is None
    if expected in _SCALAR_KINDS:
        return _scalar_matches(value, expected)
    origin = typing.get_origin(expected)
    if origin is typing.Union or origin is types.UnionType:
        return _any_fits([_matches(value, member) for member in typing.get_args(expected)])
    if origin is typing.Literal:
        kinds = {type(literal) for literal in typing.get_args(expected)}
        return _any_fits([_matches(value, kind) for kind in kinds])
    if expected is collections.abc.Callable or origin is collections.abc.Callable:
        return callable(value)
    return None


def _any_fits(verdicts: list[bool | None]) -> bool | None:
    """A union fits if one member does; it fails only if every member was judged and failed."""
    if any(verdicts):
        return True
    return None if None in verdicts else False


def _scalar_matches(value: Any, expected: type) -> bool:
    if isinstance(value, str):
        return expected is str
    if isinstance(value, bool):
        return expected is bool  # True is an int to Python, but never a count or a scale here
    if isinstance(value, numbers.Integral):
        return expected in (int, float)
    if isinstance(value, numbers.Real):
        return expected is float
    # NumPy's bool and 0-d NumPy or JAX arrays stand for a scalar of their dtype.
    dtype, shape = getattr(value, "dtype", None), getattr(value, "shape", None)
    return shape == () and getattr(dtype, "kind", None) in tuple(_SCALAR_KINDS[expected])


def _describe(expected: Any) -> str:
    if expected is None or expected is type(None):
        return "None"
    if expected is float:
        return "float (or int)"
    if isinstance(expected, type):
        return expected.__name__
    origin = typing.get_origin(expected)
    if origin is typing.Union or origin is types.UnionType:
        return " or ".join(_describe(member) for member in typing.get_args(expected))
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(literal) for literal in typing.get_args(expected))
    if expected is collections.abc.Callable or origin is collections.abc.Callable:
        return "a callable"
    return str(expected)


_BUILTINS_LOADED = False


def _ensure_builtins() -> None:
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True
        importlib.import_module("jaxmarl_suite.environments")
