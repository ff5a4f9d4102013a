"""The settings every replay-based value learner (``iql.py``, ``vdn.py``, ``qmix.py``) takes, with their
checks: ``ReplayConfig`` (envs, rollout length, buffer, learning start, gradient steps, target interval,
network, exploration) and ``ReplayHParams`` (learning rate, gradient clip, target mix, and ``q.QHParams``).

No algorithm lives here: each baseline file writes out its own rollout, replay item, TD loss (with its
mixer, if any) and update schedule.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from flax import struct

from jaxmarl_suite.errors import check_positive_ints, check_range, require
from jaxmarl_suite.training.kit import networks, q
from jaxmarl_suite.training.kit.envs import PARAM_SHARING, check_env_id
from jaxmarl_suite.training.kit.schedule import Extension, check_extensions


@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    """Static settings of a replay-based value learner (IQL, VDN, QMIX): changing one recompiles."""

    env_id: str = "MPE_simple_spread_v3"
    """Registered env id (JaxMARL's ids work); every group must act discretely."""
    env_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Env constructor arguments as JSON, e.g. '{"num_agents": 4}'."""
    num_envs: int = 8
    """Envs stepped in parallel per run."""
    num_steps: int = 26
    """Steps per env in each rollout; each env's rollout is one replay item (a training sequence)."""
    total_timesteps: int = 1_000_000
    """Env steps per run (one env step = every agent acting once)."""
    buffer_size: int = 5000
    """Replay capacity in sequences (num_steps env steps each); checked against free memory first."""
    buffer_batch_size: int = 32
    """Sequences per gradient step."""
    learning_starts: int = 10_000
    """Env steps collected before the first gradient step."""
    gradient_steps: int = 1
    """Gradient steps per update, each on a fresh sample (JaxMARL's NUM_EPOCHS)."""
    target_update_interval: int = 200
    """Updates between target-network updates."""
    double_q: bool = True
    """Bootstrap from the target net's value of the online net's greedy action (double Q)."""
    hidden_sizes: tuple[int, ...] = (64,)
    """Widths of the dense layers after the torso (and GRU), as JSON, e.g. '[64, 64]'; '[]' after a GRU is
    JaxMARL's recurrent Q-network (dense, GRU, head)."""
    activation: str = "relu"
    """Hidden activation: tanh, relu or gelu."""
    recurrent: bool = False
    """Put a GRU after the first layer; sequences then carry memory."""
    gru_size: int = 64
    """GRU width (and its embedding) when recurrent."""
    torso: str = "mlp"
    """How observations become features: mlp (flattened) or cnn (image observations, e.g. Overcooked)."""
    param_sharing: str = "group"
    """group: one net per group; agent: one per agent; all: one for every agent (padded, group id)."""
    agent_ids: bool = True
    """Append a one-hot agent index to the features of agents that share a net."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to zero over the run."""
    optimizer: str = "adam"
    """adam (eps 1e-5) or radam (rectified Adam, what JaxMARL's value-based scripts use)."""
    shaped_reward_steps: int = 0
    """Add the env's info["shaped_reward"] (Overcooked), weighted 1 falling to 0 over this many env steps."""
    greedy_fraction: float = 0.125
    """Share of the envs that act greedily (epsilon 0), logged as greedy_*; their transitions train too."""
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
        return (["--anneal-lr"] if self.anneal_lr else []) + q.epsilon_schedule_flags(grid)

    @property
    def num_updates(self) -> int:
        """Rollout-and-learn iterations per run."""
        return self.total_timesteps // self.batch_size

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        check_positive_ints(self, ["num_envs", "num_steps", "total_timesteps", "buffer_size",
                                   "buffer_batch_size", "gradient_steps", "target_update_interval",
                                   "gru_size", "log_every"])
        for name in ("learning_starts", "checkpoint_every", "shaped_reward_steps"):
            value = getattr(self, name)
            require(isinstance(value, int) and not isinstance(value, bool) and value >= 0, name,
                    f"must be an integer >= 0, got {value!r}")
        require(self.activation in networks.ACTIVATIONS, "activation",
                f"must be one of {sorted(networks.ACTIVATIONS)}, got {self.activation!r}")
        require(self.torso in networks.TORSOS, "torso", f"must be one of {list(networks.TORSOS)}, "
                f"got {self.torso!r}")
        require(self.param_sharing in PARAM_SHARING, "param_sharing",
                f"must be one of {list(PARAM_SHARING)}, got {self.param_sharing!r}")
        require((len(self.hidden_sizes) >= 1 or self.recurrent) and min(self.hidden_sizes, default=1) >= 1,
                "hidden_sizes", f"must be one or more positive widths (or none after a GRU: --recurrent), "
                f"got {self.hidden_sizes!r}")
        require(self.num_updates >= 1, "total_timesteps",
                f"must be at least num_envs * num_steps = {self.batch_size}, got {self.total_timesteps}")
        require(self.buffer_size >= max(self.num_envs, self.buffer_batch_size), "buffer_size",
                f"must hold at least the {self.num_envs} sequences one update adds and the "
                f"{self.buffer_batch_size} one gradient step samples, got {self.buffer_size}")
        q.check_greedy_fraction(self)
        require(self.optimizer in q.OPTIMIZERS, "optimizer",
                f"must be one of {list(q.OPTIMIZERS)}, got {self.optimizer!r}")
        check_extensions(self)
        check_env_id(self.env_id)
        require(isinstance(self.env_kwargs, dict), "env_kwargs",
                f"must be a mapping, got {self.env_kwargs!r}")


@struct.dataclass
class ReplayHParams(q.QHParams):
    """Traceable hyperparameters of a replay-based value learner (``q.QHParams`` and the target mix):
    vmapped over for sweeps."""

    lr: float = 5e-3
    """Learning rate (the start value when annealed)."""
    max_grad_norm: float = 25.0
    """Global gradient-norm clip."""
    tau: float = 1.0
    """Target update mix: 1 copies the online net (a hard update)."""

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        super().validate()
        check_range(self, "tau", 0.0, 1.0, open_low=True)
