"""Adapters to other multi-agent APIs: ``to_jaxmarl`` (JaxMARL 0.2's dict-per-agent env) and
``to_pettingzoo`` (a PettingZoo ``ParallelEnv`` with Gymnasium spaces).

Importing this package imports nothing heavy: each adapter's module (and with it JAX, or PettingZoo and
Gymnasium) loads on first use of its names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jaxmarl_suite.compat.jaxmarl import JaxMARLEnv, JaxMARLState, to_jaxmarl
    from jaxmarl_suite.compat.pettingzoo import PettingZooEnv, make_pettingzoo, to_pettingzoo

_LAZY = {
    "JaxMARLEnv": "jaxmarl_suite.compat.jaxmarl",
    "JaxMARLState": "jaxmarl_suite.compat.jaxmarl",
    "to_jaxmarl": "jaxmarl_suite.compat.jaxmarl",
    "PettingZooEnv": "jaxmarl_suite.compat.pettingzoo",
    "to_pettingzoo": "jaxmarl_suite.compat.pettingzoo",
    "make_pettingzoo": "jaxmarl_suite.compat.pettingzoo",
}

__all__ = ["JaxMARLEnv", "JaxMARLState", "PettingZooEnv", "make_pettingzoo", "to_jaxmarl", "to_pettingzoo"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
