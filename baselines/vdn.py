"""VDN: value decomposition networks for every agent group of any env with discrete actions, in one file.

The team's value is the sum of every agent's value (of every group), and one TD error is taken on it with
the team reward (the mean over the agents alive at the step, ``q.team_reward``) and the env's
termination. The replay loop (epsilon-greedy rollouts, a flashbax buffer of training sequences, double-Q
targets from ``info["final_obs"]``, target networks) is the kit's ``replay.make_replay_trainer``, shared
with IQL and QMIX; VDN is that loop with the sum as its mixer. The value network is the kit's ``q.QNetwork``.

- Parameters shared within a group by default (``--param-sharing``), with a one-hot agent id appended
  where agents share a net (``--agent-ids``).
- Feed-forward or GRU (``--recurrent``); action masks rule acting and the target's max.
- Greedy episodes, played on a second set of envs alongside, are logged as ``greedy_return_mean``.

Run: ``python baselines/vdn.py --env MPE_simple_spread_v3 --seeds 4`` or ``jaxmarl-suite train vdn ...``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from typing import Any

from flax import struct

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.training.kit import q, replay
from jaxmarl_suite.training.kit.baseline import Policy, Trainer


@dataclasses.dataclass(frozen=True)
class Config(replay.ReplayConfig):
    """VDN's static settings (``jaxmarl_suite.training.kit.replay.ReplayConfig``); every field is a
    ``--dashed-flag``."""


@struct.dataclass
class HParams(replay.ReplayHParams):
    """VDN's traceable hyperparameters (``ReplayHParams``): vmapped for sweeps, so a grid compiles once."""


MIXER = replay.Mixer(init=lambda key, num_agents, state_dim: {},
                     apply=lambda params, q_values, world_state: q_values.sum(-1), needs_state=False)
"""The sum of the values every agent took: no parameters, no world state."""


def make_env(config: Config, num_envs: int | None = None, auto_reset: bool = True) -> MultiAgentEnv:
    """The env stack VDN trains on (and evaluation renders): ``num_envs`` envs, default
    ``config.num_envs``."""
    return replay.make_replay_env(config, MIXER, num_envs, auto_reset)


def make_trainer(config: Config, env: MultiAgentEnv) -> Trainer:
    """The pure ``init`` and ``update`` of one run on ``env`` (``make_env(config)``)."""
    return replay.make_replay_trainer(config, env, MIXER)


def make_policy(config: Config, env: MultiAgentEnv) -> Policy:
    """The greedy policy of the trained action values on ``env`` (any ``make_env(config, n)``)."""
    return q.greedy_policy(env, q.q_networks(config, env), config.gru_size if config.recurrent else 1)


def policy_params(runner: replay.ReplayRunnerState) -> dict[str, Any]:
    """The parameters ``make_policy``'s ``act`` takes: every group's action-value network."""
    return runner.params["agents"]


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: parse flags, train every seed and grid point, write the run folder."""
    from jaxmarl_suite.pipeline import run_from_command_line

    return run_from_command_line(sys.modules[__name__], "vdn", argv)


if __name__ == "__main__":
    sys.exit(main())
