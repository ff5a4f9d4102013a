"""The errors every layer raises at its boundary, and the ``require`` helpers that raise them.

A leaf module (it imports nothing from the project), so the training kit, the runner, evaluation and
the command line can all raise and catch the same classes without importing each other.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any


class ConfigError(ValueError):
    """A configuration value is invalid. Raised before compiling, naming the field."""


class IncompatibleEnvError(ConfigError, TypeError):
    """A baseline cannot train on an env: an action space it does not support, or groups that
    ``param_sharing=all`` cannot merge. Found when the env and the trainer are built, before compiling.
    A ``TypeError`` too, as the wrappers and space checks that detect it raised before."""


class CheckpointError(ValueError):
    """A checkpoint is missing, corrupt, or does not belong to the run asking for it."""


def closest(name: str, known: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The ``known`` names most like ``name``, best first, compared case-insensitively (``difflib``'s
    ratio, at least ``cutoff``): the one "did you mean" search of env ids, layouts, flags and fields."""
    lowered = {candidate.lower(): candidate for candidate in known}
    matches = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=cutoff)
    return [lowered[match] for match in matches]


def did_you_mean(matches: Sequence[str], quote: bool = True) -> str:
    """``"did you mean 'a'?"`` (or ``'a' or 'b'``) for a ``closest`` answer; empty when there is none."""
    shown = [repr(m) if quote else m for m in matches]
    if not shown:
        return ""
    listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]
    return f"did you mean {listed}?"


def require(condition: bool, field: str, message: str) -> None:
    """Raise ``ConfigError`` naming ``field`` unless ``condition`` holds."""
    if not condition:
        raise ConfigError(f"{field}: {message}")


def check_positive_ints(obj: Any, names: Sequence[str]) -> None:
    """Every named field of ``obj`` must be an int >= 1."""
    for name in names:
        value = getattr(obj, name)
        require(
            isinstance(value, int) and not isinstance(value, bool) and value >= 1,
            name,
            f"must be an integer >= 1, got {value!r}",
        )


def check_range(obj: Any, name: str, low: float, high: float, *, open_low: bool = False) -> None:
    """``low <= obj.name <= high`` (``low < ...`` when ``open_low``), with a message naming the range."""
    value = getattr(obj, name)
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok:
        ok = (value > low if open_low else value >= low) and value <= high
    bracket = "(" if open_low else "["
    require(ok, name, f"must be in {bracket}{low}, {high}], got {value!r}")
