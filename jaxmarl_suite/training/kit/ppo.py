"""Plumbing of the on-policy baselines (``ippo.py``, ``mappo.py``, ``pqn.py``): the settings they all take
(``PPOConfig``, ``PPOHParams``, with their checks), the optimizer built from those settings (Adam or RAdam,
the gradient-norm clip, the learning-rate anneal) and acting with a trained actor (masked sampling).

No algorithm lives here: each baseline file writes out its own loss, training sequences, minibatch epochs
and update, so ``diff baselines/ippo.py baselines/mappo.py`` shows the algorithmic difference and editing
one file's objective changes that algorithm only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct
from jax.typing import ArrayLike

from jaxmarl_suite.accelerated import clip_by_global_norm
from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.errors import check_positive_ints, check_range, require
from jaxmarl_suite.training.kit.baseline import Policy
from jaxmarl_suite.training.kit.envs import PARAM_SHARING, check_env_id
from jaxmarl_suite.training.kit.networks import ACTIVATIONS, action_distribution, sample_action, to_env_action
from jaxmarl_suite.training.kit.schedule import Extension, check_extensions, schedule_knots, schedule_progress

Array = jax.Array


def annealed_adam(
    lr: float | Array,
    max_grad_norm: float | Array,
    *,
    anneal_lr: bool,
    num_updates: int,
    steps_per_update: int,
    rectified: bool = False,
    knots: tuple[tuple[float, float], ...] = (),
) -> optax.GradientTransformation:
    """Global-norm clipping then Adam (eps 1e-5), or RAdam (``rectified``, optax's defaults: JaxMARL's
    value-based scripts use it), the learning rate decaying linearly to zero over ``num_updates`` updates of
    ``steps_per_update`` optimizer steps each when ``anneal_lr``. An extended run passes its
    ``schedule.schedule_knots``: the rate is then ``lr`` times one minus the run's progress through them.

    The rate drops once per update, not per minibatch, so every minibatch of an update sees the same one.
    """

    def learning_rate(count: ArrayLike) -> Array:
        update = jnp.asarray(count) // steps_per_update
        progress = schedule_progress(update, knots) if knots else update / num_updates
        return jnp.asarray(lr * (1.0 - progress) if anneal_lr else lr)

    step = optax.radam(learning_rate) if rectified else optax.adam(learning_rate, eps=1e-5)
    return optax.chain(clip_by_global_norm(max_grad_norm), step)


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
    extensions: tuple[Extension, ...] = dataclasses.field(default=(), metadata={"flag": False})
    """Where a resumed run raised total_timesteps: [update, total_timesteps before, hold|restart] each
    (written by train --resume --extend; kit.schedule)."""

    @property
    def batch_size(self) -> int:
        """Env steps per rollout."""
        return self.num_envs * self.num_steps

    def schedules_tied_to_length(self, grid: Sequence[Any]) -> list[str]:
        """The schedules that depend on ``total_timesteps`` (a raised total changes them), by flag."""
        return ["--anneal-lr"] if self.anneal_lr else []

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
        check_extensions(self)
        check_env_id(self.env_id)
        require(isinstance(self.env_kwargs, dict), "env_kwargs",
                f"must be a mapping, got {self.env_kwargs!r}")


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


def optimizer(config: PPOConfig, hparams: PPOHParams) -> optax.GradientTransformation:
    """``annealed_adam`` with the run's settings: one rate per update of
    ``update_epochs * num_minibatches`` steps, decayed over ``num_updates`` when ``anneal_lr``."""
    return annealed_adam(hparams.lr, hparams.max_grad_norm, anneal_lr=config.anneal_lr,
                         num_updates=config.num_updates,
                         steps_per_update=config.update_epochs * config.num_minibatches,
                         knots=schedule_knots(config))


# ----------------------------------------------------------------------------------------------- acting
ActorApply = Callable[[Any, Array, Array, Array], tuple[Array, Array, Array]]
"""``(params, hidden [M, n, H], obs [L, M, n, d], starts [L, M, n]) -> (hidden, head, log_std)``."""


def actor_policy(config: PPOConfig, env: MultiAgentEnv, actors: Mapping[str, ActorApply]) -> Policy:
    """Acting with each group's actor: sample (or take the mode of) its action distribution, masked by
    ``action_mask``. ``params`` is ``{group: actor parameters}``."""
    groups = list(env.groups)
    spaces = {g: env.action_space(g) for g in groups}
    hidden_width = config.gru_size if config.recurrent else 0

    def init_hidden(num_envs: int) -> dict[str, Array]:
        return {g: jnp.zeros((num_envs, env.group_size(g), hidden_width)) for g in groups}

    def act(params: dict[str, Any], hidden: dict[str, Array], timestep: Any, starts: Array, key: Array,
            deterministic: bool = False) -> tuple[dict[str, Array], dict[str, Array]]:
        new_hidden, actions = {}, {}
        for g, group_key in zip(groups, jax.random.split(key, len(groups)), strict=True):
            group_starts = jnp.broadcast_to(starts[:, None], timestep.obs[g].shape[:2])
            h, head, log_std = actors[g](params[g], hidden[g], timestep.obs[g][None], group_starts[None])
            mask = timestep.action_mask.get(g)
            if deterministic:
                action = action_distribution(spaces[g], head[0], log_std[0], mask).mode()
            else:
                action, _ = sample_action(spaces[g], head[0], log_std[0], mask, group_key)
            new_hidden[g], actions[g] = h, to_env_action(spaces[g], action)
        return new_hidden, actions

    return Policy(init_hidden, act)
