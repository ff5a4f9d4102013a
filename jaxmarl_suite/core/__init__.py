"""Core API: spaces, the env base classes, TimeStep, EnvParams, VecEnv and the registry.

Names are resolved lazily so that ``import jaxmarl_suite`` stays free of JAX imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jaxmarl_suite.core.env import BatchNativeEnv, MultiAgentEnv
    from jaxmarl_suite.core.registry import EnvSpec, env_spec, make, register, registered_envs
    from jaxmarl_suite.core.spaces import Box, Discrete, MultiDiscrete, Space
    from jaxmarl_suite.core.types import EnvParams, TimeStep
    from jaxmarl_suite.core.vec import VecEnv

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

__all__ = [
    "BatchNativeEnv",
    "Box",
    "Discrete",
    "EnvParams",
    "EnvSpec",
    "MultiAgentEnv",
    "MultiDiscrete",
    "Space",
    "TimeStep",
    "VecEnv",
    "env_spec",
    "make",
    "register",
    "registered_envs",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'jaxmarl_suite.core' has no attribute {name!r}")
