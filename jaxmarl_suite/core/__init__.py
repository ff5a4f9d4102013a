"""Core API: spaces, the env base classes, TimeStep, EnvParams, VecEnv and the registry.

Names are resolved lazily so that ``import jaxmarl_suite`` stays free of JAX imports.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "BatchNativeEnv": "jaxmarl_suite.core.env",
    "MultiAgentEnv": "jaxmarl_suite.core.env",
    "Box": "jaxmarl_suite.core.spaces",
    "Discrete": "jaxmarl_suite.core.spaces",
    "MultiDiscrete": "jaxmarl_suite.core.spaces",
    "Space": "jaxmarl_suite.core.spaces",
    "EnvParams": "jaxmarl_suite.core.types",
    "TimeStep": "jaxmarl_suite.core.types",
    "VecEnv": "jaxmarl_suite.core.vec",
    "EnvSpec": "jaxmarl_suite.core.registry",
    "env_spec": "jaxmarl_suite.core.registry",
    "make": "jaxmarl_suite.core.registry",
    "register": "jaxmarl_suite.core.registry",
    "registered_envs": "jaxmarl_suite.core.registry",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'jaxmarl_suite.core' has no attribute {name!r}")
