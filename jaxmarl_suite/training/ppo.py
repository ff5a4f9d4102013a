"""Plumbing shared by the PPO-family baselines (``ippo.py``, ``mappo.py``): their ``Config`` and ``HParams``
fields and checks (the two algorithms take the same settings), the ``Trainer`` and ``Policy`` interfaces
the runner calls, the annealed optimizer, and the divisor hint for config errors.

The algorithm itself (rollout, GAE call, loss, update) stays in each baseline file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct
from jax.typing import ArrayLike

from jaxmarl_suite.training.config import check_positive_ints, check_range, require
from jaxmarl_suite.training.envs import PARAM_SHARING, check_env_id
from jaxmarl_suite.training.networks import ACTIVATIONS

Array = jax.Array


class Policy(NamedTuple):
    """Acting with trained parameters (used by rollouts, ``eval`` and ``render``)."""

    init_hidden: Callable[[int], dict[str, Array]]
    """``num_envs -> {group: [num_envs, n, H]}``."""
    act: Callable[..., tuple[dict[str, Array], dict[str, Array]]]
    """``(params, hidden, timestep, starts, key, deterministic) -> (hidden, env actions)``."""


class Trainer(NamedTuple):
    """``init(key, hparams) -> runner`` and ``update(runner, hparams) -> (runner, metrics)``, both pure.

    The runner state and ``HParams`` types are the baseline's own.
    """

    init: Callable[[Array, Any], Any]
    update: Callable[[Any, Any], tuple[Any, dict[str, Array]]]
    env: Any


def annealed_adam(
    lr: float | Array,
    max_grad_norm: float | Array,
    *,
    anneal_lr: bool,
    num_updates: int,
    steps_per_update: int,
) -> optax.GradientTransformation:
    """Global-norm clipping then Adam (eps 1e-5), the learning rate decaying linearly to zero over
    ``num_updates`` updates of ``steps_per_update`` optimizer steps each when ``anneal_lr``.

    The rate drops once per update, not per minibatch, so every minibatch of an update sees the same one.
    """

    def learning_rate(count: ArrayLike) -> Array:
        progress = (jnp.asarray(count) // steps_per_update) / num_updates
        return jnp.asarray(lr * (1.0 - progress) if anneal_lr else lr)

    return optax.chain(optax.clip_by_global_norm(max_grad_norm), optax.adam(learning_rate, eps=1e-5))


def divisors(n: int) -> list[int]:
    """The first 12 divisors of ``n``: the allowed values quoted when ``num_minibatches`` does not divide."""
    return [d for d in range(1, n + 1) if n % d == 0][:12]


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """Static settings of a PPO-family baseline: changing one recompiles."""

    env_id: str = "MPE_simple_spread_v3"
    """Registered env id (JaxMARL's ids work)."""
    env_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Env constructor arguments as JSON, e.g. '{"continuous_actions": true}'."""
    num_envs: int = 16
    """Envs stepped in parallel per run."""
    num_steps: int = 128
    """Steps per env in each rollout."""
    total_timesteps: int = 1_000_000
    """Env steps per run (one env step = every agent acting once)."""
    update_epochs: int = 4
    """Passes over each rollout."""
    num_minibatches: int = 4
    """Minibatches per epoch; must divide the number of sequences per rollout."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Widths of the actor's and the critic's hidden layers, as JSON, e.g. '[64, 64]'."""
    activation: str = "tanh"
    """Hidden activation: tanh, relu or gelu."""
    recurrent: bool = False
    """Put a GRU after the first layer; minibatches then hold whole rollout sequences."""
    gru_size: int = 64
    """GRU width (and its embedding) when recurrent."""
    param_sharing: str = "group"
    """group: one set of nets per group; agent: one per agent; all: one for every agent (padded, group id)."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to zero over the run."""
    log_every: int = 1
    """Write a metrics row every this many updates."""
    checkpoint_every: int = 0
    """Save a checkpoint every this many updates (0: only at the end)."""

    @property
    def batch_size(self) -> int:
        """Env steps per rollout."""
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        """Rollout-and-update iterations per run."""
        return self.total_timesteps // self.batch_size

    @property
    def sequence_length(self) -> int:
        """Steps per training sequence: the whole rollout for a GRU, one step otherwise."""
        return self.num_steps if self.recurrent else 1

    @property
    def num_sequences(self) -> int:
        """Sequences per rollout (each holds every agent of its env)."""
        return self.batch_size // self.sequence_length

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        check_positive_ints(self, ["num_envs", "num_steps", "total_timesteps", "update_epochs",
                                   "num_minibatches", "gru_size", "log_every"])
        require(isinstance(self.checkpoint_every, int) and self.checkpoint_every >= 0, "checkpoint_every",
                f"must be an integer >= 0, got {self.checkpoint_every!r}")
        require(self.activation in ACTIVATIONS, "activation",
                f"must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}")
        require(self.param_sharing in PARAM_SHARING, "param_sharing",
                f"must be one of {list(PARAM_SHARING)}, got {self.param_sharing!r}")
        require(len(self.hidden_sizes) >= 1 and min(self.hidden_sizes) >= 1, "hidden_sizes",
                f"must be one or more positive widths, got {self.hidden_sizes!r}")
        require(self.num_updates >= 1, "total_timesteps",
                f"must be at least num_envs * num_steps = {self.batch_size}, got {self.total_timesteps}")
        require(self.num_sequences % self.num_minibatches == 0, "num_minibatches",
                f"must divide the {self.num_sequences} sequences per rollout (num_envs * num_steps / "
                f"sequence_length); allowed values: {divisors(self.num_sequences)}")
        check_env_id(self.env_id, self.env_kwargs)


@struct.dataclass
class PPOHParams:
    """Traceable hyperparameters: vmapped over for sweeps, so a grid compiles once."""

    lr: float = 2.5e-4
    """Adam learning rate (the start value when annealed)."""
    gamma: float = 0.99
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_eps: float = 0.2
    """PPO ratio clip, also used to clip value updates."""
    ent_coef: float = 0.01
    """Entropy bonus coefficient."""
    vf_coef: float = 0.5
    """Value loss coefficient."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip."""

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        check_range(self, "lr", 0.0, 1.0, open_low=True)
        check_range(self, "gamma", 0.0, 1.0)
        check_range(self, "gae_lambda", 0.0, 1.0)
        check_range(self, "clip_eps", 0.0, 10.0, open_low=True)
        check_range(self, "ent_coef", 0.0, 10.0)
        check_range(self, "vf_coef", 0.0, 100.0)
        check_range(self, "max_grad_norm", 0.0, 1e6, open_low=True)
