"""IPPO: independent PPO for every agent group of any registered env, in one file.

Reads top to bottom: the config, the actor-critic network, the env (``make_env``), the rollout,
bootstrap values, the loss's forward pass, the update (GAE and the optimizer step), the policy and
``main``. What the PPO family shares (the clipped loss, sequences and minibatches, the optimizer, acting)
is in ``jaxmarl_suite.training.kit.ppo``; the contract with the runner is ``kit.baseline.Baseline``.
Train in Python with ``make_train(module, config)`` from ``jaxmarl_suite.training.kit``.

- Each group has its own actor-critic; its agents share it (``--param-sharing group``), or each agent
  has its own (``agent``), or every agent shares one net on padded observations (``all``).
- Feed-forward or GRU (``--recurrent``): a feed-forward net is a recurrent one with sequences of one step.
- Discrete actions respect ``action_mask``; Box actions use a Gaussian clipped at the env boundary.
- GAE bootstraps from ``info["final_obs"]`` on truncation and never past termination.

Run: ``python baselines/ippo.py --env MPE_simple_spread_v3 --seeds 4`` or ``jaxmarl-suite train ippo ...``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.errors import require
from jaxmarl_suite.training.kit import envs, loops, networks, ppo
from jaxmarl_suite.training.kit.baseline import Policy, Trainer
from jaxmarl_suite.training.kit.gae import gae

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class Config(ppo.PPOConfig):
    """IPPO's static settings: changing one recompiles. Besides the fields and checks shared with the
    other PPO baselines (``jaxmarl_suite.training.kit.ppo.PPOConfig``), the torso and reward shaping;
    every field is a ``--dashed-flag``."""

    torso: str = "mlp"
    """How observations become features: mlp (flattened) or cnn (image observations, e.g. Overcooked)."""
    shaped_reward_steps: int = 0
    """Add the env's info["shaped_reward"] (Overcooked) to the reward, weighted 1 falling linearly to 0
    over this many env steps; 0 trains on the reward alone."""

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        super().validate()
        require(self.torso in networks.TORSOS, "torso", f"must be one of {list(networks.TORSOS)}, "
                f"got {self.torso!r}")
        require(isinstance(self.shaped_reward_steps, int) and self.shaped_reward_steps >= 0,
                "shaped_reward_steps", f"must be an integer >= 0, got {self.shaped_reward_steps!r}")


@struct.dataclass
class HParams(ppo.PPOHParams):
    """IPPO's traceable hyperparameters (``PPOHParams``): vmapped for sweeps, so a grid compiles once."""


# ----------------------------------------------------------------------------------------------- network
class ActorCritic(nn.Module):
    """Separate actor and critic MLPs, behind the observation torso (flattening, or a CNN shared by both)
    and an optional shared GRU.

    ``(hidden [M, n, H], obs [L, M, n, *obs_shape], starts [L, M, n])`` ->
    ``(hidden, policy head [L, M, n, A], log_std [L, M, n, A], value [L, M, n, 1])``.
    """

    action_width: int
    hidden_sizes: Sequence[int]
    activation: str
    recurrent: bool
    gru_size: int
    torso: str = "mlp"

    @nn.compact
    def __call__(self, hidden: Array, obs: Array, starts: Array) -> tuple[Array, Array, Array, Array]:
        """Evaluate the policy head and the value along ``L`` steps."""
        x = networks.ObsEncoder(self.torso, self.activation)(obs)
        if self.recurrent:
            x = networks.MLP((self.gru_size,), self.activation)(x)
            hidden, x = networks.ResetGRU(self.gru_size)(hidden, x, starts)
        actor = (networks.MLP(self.hidden_sizes, self.activation),
                 networks.Dense(self.action_width, kernel_init=networks.orthogonal(0.01)))
        critic = (networks.MLP(self.hidden_sizes, self.activation),
                  networks.Dense(1, kernel_init=networks.orthogonal(1.0)))
        head, value = networks.two_towers(x, actor, critic)
        log_std = self.param("log_std", nn.initializers.zeros, (self.action_width,))
        return hidden, head, jnp.broadcast_to(log_std, head.shape), value


class Transition(NamedTuple):
    """One rollout step, every field ``{group: [B, n, ...]}``."""

    obs: dict[str, Array]
    action_mask: dict[str, Array]
    starts: dict[str, Array]
    hidden: dict[str, Array]
    action: dict[str, Array]
    log_prob: dict[str, Array]
    value: dict[str, Array]
    reward: dict[str, Array]
    terminated: dict[str, Array]
    episode_end: dict[str, Array]
    alive: dict[str, Array]
    final_obs: dict[str, Array]
    next_hidden: dict[str, Array]


class RunnerState(struct.PyTreeNode):
    """Everything that carries from one update to the next (checkpointed as is)."""

    params: dict[str, Any]
    opt_state: Any
    env_state: Any
    timestep: Any
    """What the next step acts on of the last ``TimeStep`` (``envs.observation``), not all of it."""
    hidden: dict[str, Array]
    starts: Array
    alive: dict[str, Array]
    key: Array
    update: Array


def make_env(config: Config, num_envs: int | None = None, auto_reset: bool = True) -> MultiAgentEnv:
    """The env stack IPPO trains on (and evaluation renders): ``num_envs`` envs, default
    ``config.num_envs``."""
    return envs.make_training_env(config.env_id, config.num_envs if num_envs is None else num_envs,
                             config.env_kwargs, config.param_sharing, auto_reset=auto_reset)


def make_trainer(config: Config, env: MultiAgentEnv) -> Trainer:
    """Build the pure ``init`` and ``update`` functions for ``config`` on ``env`` (``make_env(config)``)."""
    config.validate()
    groups = list(env.groups)
    spaces = {g: env.action_space(g) for g in groups}
    independent = config.param_sharing == "agent"
    hidden_width = config.gru_size if config.recurrent else 1
    for g in groups:
        networks.check_torso(config.torso, env.observation_space(g).shape, g)
    nets = {
        g: ActorCritic(networks.policy_width(spaces[g]), config.hidden_sizes, config.activation,
                       config.recurrent, config.gru_size, config.torso)
        for g in groups
    }
    # agent axes of (hidden [M, n, H], obs [L, M, n, d], starts [L, M, n])
    applies = {g: networks.group_apply(nets[g], independent, (1, 2, 2)) for g in groups}

    def zero_hidden(num: int) -> dict[str, Array]:
        return {g: jnp.zeros((num, env.group_size(g), hidden_width)) for g in groups}

    def init(key: Array, hparams: HParams) -> RunnerState:
        key, env_key, *net_keys = jax.random.split(key, 2 + len(groups))
        env_state, timestep = env.reset(env_key)
        params = {}
        for g, net_key in zip(groups, net_keys, strict=True):
            n = env.group_size(g)
            obs_shape = env.observation_space(g).shape
            per_agent = 1 if independent else n
            example = (jnp.zeros((1, per_agent, hidden_width)), jnp.zeros((1, 1, per_agent, *obs_shape)),
                       jnp.zeros((1, 1, per_agent), bool))
            params[g] = networks.init_group_params(nets[g], net_key, n, independent, *example)
        starts = jnp.ones((config.num_envs,), bool)
        alive = {g: jnp.ones((config.num_envs, env.group_size(g)), bool) for g in groups}
        return RunnerState(params, ppo.optimizer(config, hparams).init(params), env_state,
                           envs.observation(env, timestep),
                           zero_hidden(config.num_envs), starts, alive, key, jnp.int32(0))

    def policy_step(params: dict[str, Any], hidden: dict[str, Array], obs: dict[str, Array],
                    starts: dict[str, Array]) -> tuple[dict[str, Array], dict[str, Any]]:
        """One step for every group: ``obs[g]`` is ``[B, n, d]``."""
        new_hidden, outputs = {}, {}
        for g in groups:
            h, head, log_std, value = applies[g](params[g], hidden[g], obs[g][None], starts[g][None])
            new_hidden[g] = h
            outputs[g] = (head[0], log_std[0], value[0, ..., 0])
        return new_hidden, outputs

    def group_starts(starts: Array) -> dict[str, Array]:
        return {g: jnp.broadcast_to(starts[:, None], (config.num_envs, env.group_size(g))) for g in groups}

    # ------------------------------------------------------------------------------------------- rollout
    def rollout(runner: RunnerState) -> tuple[RunnerState, Transition, dict[str, Array]]:
        def step(runner: RunnerState, _: None) -> tuple[RunnerState, tuple[Transition, dict[str, Array]]]:
            key, *group_keys = jax.random.split(runner.key, 2 + len(groups))
            env_key = group_keys.pop()
            timestep = runner.timestep
            masks = envs.action_masks(env, timestep)
            starts = group_starts(runner.starts)
            hidden, outputs = policy_step(runner.params, runner.hidden, timestep.obs, starts)
            actions, log_probs, values = {}, {}, {}
            for g, group_key in zip(groups, group_keys, strict=True):
                head, log_std, values[g] = outputs[g]
                actions[g], log_probs[g] = networks.sample_action(spaces[g], head, log_std,
                                                                  masks.get(g), group_key)
            env_actions = {g: networks.to_env_action(spaces[g], actions[g]) for g in groups}
            env_state, next_timestep = env.step(env_key, runner.env_state, env_actions)
            ended = envs.agent_done(next_timestep)
            env_ended = next_timestep.info["episode_done"]
            weight = envs.shaped_reward_weight(runner.update * config.batch_size, config.shaped_reward_steps)
            transition = Transition(
                obs=timestep.obs, action_mask=masks, starts=starts, hidden=runner.hidden,
                action=actions, log_prob=log_probs, value=values,
                reward={g: envs.training_reward(next_timestep, g, weight) for g in groups},
                terminated=next_timestep.terminated, episode_end=ended, alive=runner.alive,
                final_obs=next_timestep.info["final_obs"], next_hidden=hidden,
            )
            # An agent whose episode ended stays out of the loss until its env starts a new episode.
            alive = {g: jnp.where(env_ended[:, None], True, runner.alive[g] & ~ended[g]) for g in groups}
            runner = runner.replace(env_state=env_state, timestep=envs.observation(env, next_timestep),
                                    hidden=hidden, starts=env_ended, alive=alive, key=key)
            return runner, (transition, envs.completed_episode_stats(next_timestep))

        runner, (trajectory, stats) = loops.scan(step, runner, None, length=config.num_steps, unroll=1)
        return runner, trajectory, envs.episode_metrics(stats)

    def bootstrap_values(params: dict[str, Any], trajectory: Transition) -> dict[str, Array]:
        """``V`` of the observation each transition led to (pre-reset), with the hidden state after it."""
        values = {}
        for g in groups:
            steps, batch = trajectory.final_obs[g].shape[:2]
            obs = trajectory.final_obs[g].reshape(1, steps * batch, *trajectory.final_obs[g].shape[2:])
            hidden = trajectory.next_hidden[g].reshape(steps * batch, *trajectory.next_hidden[g].shape[2:])
            no_reset = jnp.zeros(obs.shape[:3], bool)
            _, _, _, value = applies[g](params[g], hidden, obs, no_reset)
            values[g] = value[0, ..., 0].reshape(steps, batch, -1)
        return values

    # ---------------------------------------------------------------------------------------------- loss
    def loss_fn(params: dict[str, Any], batch: dict[str, Any], hparams: HParams) -> tuple[Array, Any]:
        outputs = {}
        for g in groups:
            b = batch[g]
            _, head, log_std, value = applies[g](params[g], b["hidden"], b["obs"], b["starts"])
            dist = networks.action_distribution(spaces[g], head, log_std, b.get("action_mask"))
            outputs[g] = (dist.log_prob(b["action"]), dist.entropy(), value[..., 0])
        return ppo.clipped_ppo_loss(outputs, batch, hparams)

    # -------------------------------------------------------------------------------------------- update
    def update(runner: RunnerState, hparams: HParams) -> tuple[RunnerState, dict[str, Array]]:
        runner, trajectory, metrics = rollout(runner)
        next_values = bootstrap_values(runner.params, trajectory)
        batch = {}
        for g in groups:
            advantage, target = gae(trajectory.reward[g], trajectory.value[g], next_values[g],
                                    trajectory.terminated[g], trajectory.episode_end[g], hparams.gamma,
                                    hparams.gae_lambda)
            fields = ppo.loss_fields(trajectory, g, advantage, target)
            batch[g] = ppo.sequence_batch(config, fields, {"hidden": trajectory.hidden[g]})
        tx = ppo.optimizer(config, hparams)

        def apply_grads(grads: Any, opt_state: Any, params: Any) -> tuple[Any, Any]:
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state

        key, epoch_key = jax.random.split(runner.key)
        params, opt_state, losses = ppo.train_epochs(config, loss_fn, apply_grads, runner.params,
                                                 runner.opt_state, epoch_key, batch, hparams)
        runner = runner.replace(params=params, opt_state=opt_state, key=key, update=runner.update + 1)
        return runner, {**metrics, **losses}

    return Trainer(init, update, env)


def make_policy(config: Config, env: MultiAgentEnv) -> Policy:
    """The trained policy on ``env`` (any ``make_env(config, n)``): each group's actor head of the
    actor-critic."""
    actor_critics = {
        g: networks.group_apply(ActorCritic(networks.policy_width(env.action_space(g)), config.hidden_sizes,
                                            config.activation, config.recurrent, config.gru_size,
                                            config.torso),
                                config.param_sharing == "agent", (1, 2, 2))
        for g in env.groups
    }

    def actor(g: str) -> Any:
        return lambda params, hidden, obs, starts: actor_critics[g](params, hidden, obs, starts)[:3]

    return ppo.actor_policy(config, env, {g: actor(g) for g in env.groups})


def policy_params(runner: RunnerState) -> dict[str, Any]:
    """The parameters ``make_policy``'s ``act`` takes."""
    return runner.params


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: parse flags, train every seed and grid point, write the run folder."""
    from jaxmarl_suite.pipeline import run_from_command_line

    return run_from_command_line(sys.modules[__name__], "ippo", argv)


if __name__ == "__main__":
    sys.exit(main())
