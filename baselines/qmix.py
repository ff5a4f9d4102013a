"""QMIX: monotonic value mixing for every agent group of any env with discrete actions, in one file.

The team's value is a mixing network of every agent's value (of every group), whose weights a hypernetwork
computes from the env's world state and keeps non-negative, so the team's greedy action is every agent's
greedy action (Rashid et al., 2018). One TD error is taken on it with the team reward (the mean over the
agents alive at the step, ``q.team_reward``) and the env's termination. The replay loop (epsilon-greedy
rollouts, a flashbax buffer of training sequences, double-Q targets from ``info["final_obs"]``, target
networks, for the mixer too) is the kit's ``replay.make_replay_trainer``, shared with IQL and VDN. The
value network is the kit's ``q.QNetwork``.

Run: ``python baselines/qmix.py --env SMAX_3m --seeds 4`` or ``jaxmarl-suite train qmix ...``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import struct

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.errors import check_positive_ints, check_range
from jaxmarl_suite.training.kit import networks, q, replay
from jaxmarl_suite.training.kit.baseline import Policy, Trainer

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class Config(replay.ReplayConfig):
    """QMIX's static settings: the replay learner's (``jaxmarl_suite.training.kit.replay.ReplayConfig``)
    and the mixer's sizes; every field is a ``--dashed-flag``."""

    mixer_embedding: int = 32
    """Width of the mixing network's hidden layer."""
    mixer_hypernet_hidden: int = 128
    """Width of the hypernetworks' hidden layer."""
    mixer_init_scale: float = 0.001
    """Scale of the hypernetworks' initial weights (small: the first team values start near the sum)."""

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        super().validate()
        check_positive_ints(self, ["mixer_embedding", "mixer_hypernet_hidden"])
        check_range(self, "mixer_init_scale", 0.0, 10.0, open_low=True)


@struct.dataclass
class HParams(replay.ReplayHParams):
    """QMIX's traceable hyperparameters (``ReplayHParams``): vmapped for sweeps, so a grid compiles once."""


# ------------------------------------------------------------------------------------------------- mixer
class MonotonicMixer(nn.Module):
    """``(q [..., N], world_state [..., S]) -> [...]``: ``elu(q W1 + b1) W2 + V``, with ``W1``, ``b1``,
    ``W2`` and ``V`` functions of the world state and ``|W1|``, ``|W2|`` keeping the mix monotonic in
    every agent's value."""

    embedding: int
    hypernet_hidden: int
    init_scale: float

    @nn.compact
    def __call__(self, q_values: Array, world_state: Array) -> Array:
        """Mix every agent's value into the team's."""
        num_agents = q_values.shape[-1]
        init = networks.orthogonal(self.init_scale)

        def hypernet(width: int, name: str) -> Array:
            hidden = nn.relu(networks.Dense(self.hypernet_hidden, kernel_init=init, name=f"{name}_hidden")(
                world_state))
            return networks.Dense(width, kernel_init=init, name=name)(hidden)

        w1 = jnp.abs(hypernet(num_agents * self.embedding, "w1")).reshape(*q_values.shape, self.embedding)
        b1 = networks.Dense(self.embedding, kernel_init=init, name="b1")(world_state)
        w2 = jnp.abs(hypernet(self.embedding, "w2"))
        value = hypernet(1, "value")[..., 0]
        hidden = nn.elu(jnp.einsum("...n,...ne->...e", q_values, w1) + b1)
        return jnp.sum(hidden * w2, axis=-1) + value


def make_mixer(config: Config) -> replay.Mixer:
    """QMIX's mixer for the replay learner: a ``MonotonicMixer`` reading the world state."""
    module = MonotonicMixer(config.mixer_embedding, config.mixer_hypernet_hidden, config.mixer_init_scale)

    def init(key: Array, num_agents: int, state_dim: int) -> Any:
        return module.init(key, jnp.zeros((1, num_agents)), jnp.zeros((1, state_dim)))

    return replay.Mixer(init=init, apply=module.apply, needs_state=True)


def make_env(config: Config, num_envs: int | None = None, auto_reset: bool = True) -> MultiAgentEnv:
    """The env stack QMIX trains on (and evaluation renders), with ``info["world_state"]``: ``num_envs``
    envs, default ``config.num_envs``."""
    return replay.make_replay_env(config, make_mixer(config), num_envs, auto_reset)


def make_trainer(config: Config, env: MultiAgentEnv) -> Trainer:
    """The pure ``init`` and ``update`` of one run on ``env`` (``make_env(config)``)."""
    return replay.make_replay_trainer(config, env, make_mixer(config))


def make_policy(config: Config, env: MultiAgentEnv) -> Policy:
    """The greedy policy of the trained action values on ``env`` (any ``make_env(config, n)``); the mixer
    only trains."""
    return q.greedy_policy(env, q.q_networks(config, env), config.gru_size if config.recurrent else 1)


def policy_params(runner: replay.ReplayRunnerState) -> dict[str, Any]:
    """The parameters ``make_policy``'s ``act`` takes: every group's action-value network."""
    return runner.params["agents"]


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: parse flags, train every seed and grid point, write the run folder."""
    from jaxmarl_suite.pipeline import run_from_command_line

    return run_from_command_line(sys.modules[__name__], "qmix", argv)


if __name__ == "__main__":
    sys.exit(main())
