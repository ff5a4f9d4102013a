"""BC: behaviour cloning from an offline dataset (an OG-MARL vault), scored online, in one file.

Reads top to bottom: the config, the dataset (a vault read and split into the env's groups), the policy
network, the loss (the negative log-likelihood of the dataset's actions, illegal actions masked out), the
update (gradient steps on minibatches drawn from the dataset, then an online rollout that scores the
policy on the env), acting and ``main``. From the kit it takes plumbing only (the env stack and its
episode metrics, network layers, action distributions, the optimizer); the contract with the runner is
``kit.baseline.Baseline``. Copy this file to change the algorithm.

- The dataset is a vault folder (``.../ENV_ID.vlt/QUALITY``) that ``jaxmarl-suite collect`` wrote, or one
  of OG-MARL's in the same layout, for ``env_id``'s env; it is read once, into the compiled program.
- Each group has its own policy net; its agents share it (``--param-sharing group``) or each agent has its
  own (``agent``). Feed-forward: every dataset step is one training example.
- Discrete actions: a categorical over the legal actions (``infos.legals``). Box actions: a Gaussian with a
  learned, state-independent log standard deviation.
- The online rollout only measures: ``env_steps`` count the scoring rollouts' steps, and the policy acts
  by sampling, as the other baselines' training policies do.

Run: ``jaxmarl-suite collect RUN --out vaults`` then
``jaxmarl-suite train bc --env ENV_ID --dataset vaults/jaxmarl_suite/FAMILY/ENV_ID.vlt/Good``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.core.spaces import Discrete
from jaxmarl_suite.errors import ConfigError, check_positive_ints, check_range, require
from jaxmarl_suite.training.kit import envs, loops, networks, ppo
from jaxmarl_suite.training.kit.baseline import Policy, Trainer

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class Config:
    """BC's static settings: changing one recompiles. Every field is a ``--dashed-flag``."""

    env_id: str = "MPE_simple_spread_v3"
    """Registered env id: the dataset's env, on which the policy is scored."""
    env_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Env constructor arguments as JSON (the dataset's, e.g. '{"continuous_actions": true}')."""
    dataset: str = ""
    """The vault folder to clone (.../ENV_ID.vlt/QUALITY, as jaxmarl-suite collect writes it); required."""
    num_envs: int = 16
    """Envs that score the policy online, in parallel, per run."""
    num_steps: int = 128
    """Online steps per env in each update's scoring rollout."""
    total_timesteps: int = 204_800
    """Online env steps per run (the scoring rollouts'): updates = total / (num_envs * num_steps)."""
    grad_steps: int = 50
    """Gradient steps on the dataset per update."""
    minibatch_size: int = 256
    """Dataset steps (every agent's action at that step) per gradient step, drawn with replacement."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Widths of the policy's hidden layers, as JSON, e.g. '[64, 64]'."""
    activation: str = "relu"
    """Hidden activation: tanh, relu or gelu."""
    param_sharing: str = "group"
    """group: one policy per group, shared by its agents; agent: one per agent."""
    anneal_lr: bool = False
    """Decay the learning rate linearly to zero over the run."""
    log_every: int = 1
    """Write a metrics row every this many updates."""
    checkpoint_every: int = 0
    """Save a checkpoint every this many updates (0: only at the end)."""

    def __post_init__(self) -> None:
        # the run folder records where the vault is, wherever eval or a resume is later run from
        if isinstance(self.dataset, str) and self.dataset:
            object.__setattr__(self, "dataset", str(Path(self.dataset).expanduser().resolve()))

    @property
    def batch_size(self) -> int:
        """Online env steps per update."""
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        """Updates (gradient steps, then a scoring rollout) per run."""
        return self.total_timesteps // self.batch_size

    def schedules_tied_to_length(self, grid: Sequence[Any]) -> list[str]:
        """The schedules that depend on ``total_timesteps`` (a raised total changes them), by flag."""
        return ["--anneal-lr"] if self.anneal_lr else []

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        check_positive_ints(self, ["num_envs", "num_steps", "total_timesteps", "grad_steps", "minibatch_size",
                                   "log_every"])
        require(isinstance(self.checkpoint_every, int) and self.checkpoint_every >= 0, "checkpoint_every",
                f"must be an integer >= 0, got {self.checkpoint_every!r}")
        require(self.activation in networks.ACTIVATIONS, "activation",
                f"must be one of {sorted(networks.ACTIVATIONS)}, got {self.activation!r}")
        require(self.param_sharing in ("group", "agent"), "param_sharing",
                f"must be group or agent, got {self.param_sharing!r}")
        require(len(self.hidden_sizes) >= 1 and min(self.hidden_sizes) >= 1, "hidden_sizes",
                f"must be one or more positive widths, got {self.hidden_sizes!r}")
        require(self.num_updates >= 1, "total_timesteps",
                f"must be at least num_envs * num_steps = {self.batch_size}, got {self.total_timesteps}")
        require(isinstance(self.dataset, str) and bool(self.dataset), "dataset",
                "BC trains from a dataset: pass --dataset VAULT_FOLDER (jaxmarl-suite collect writes one)")
        envs.check_env_id(self.env_id)
        require(isinstance(self.env_kwargs, dict), "env_kwargs",
                f"must be a mapping, got {self.env_kwargs!r}")


@struct.dataclass
class HParams:
    """BC's traceable hyperparameters: vmapped for sweeps, so a grid compiles once."""

    lr: float = 1e-3
    """Adam learning rate (the start value when annealed)."""
    max_grad_norm: float = 1.0
    """Global gradient-norm clip."""

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        check_range(self, "lr", 0.0, 1.0, open_low=True)
        check_range(self, "max_grad_norm", 0.0, 1e6, open_low=True)


# ------------------------------------------------------------------------------------------------ dataset
def load_dataset(config: Config, env: MultiAgentEnv) -> dict[str, dict[str, np.ndarray]]:
    """The vault's steps per group: ``{group: {"obs": [T, n, d], "action": [T, n(, A)], "legal":
    [T, n, A]}}`` (``legal`` for discrete groups). Raises ``ConfigError`` when the vault is of another env or
    its shapes do not fit ``env``'s spaces."""
    from jaxmarl_suite.core.registry import env_spec
    from jaxmarl_suite.evaluation.datasets import read_vault

    data = read_vault(config.dataset)
    recorded = data.metadata.get("env_id")
    if recorded is not None and env_spec(recorded).env_id != env_spec(config.env_id).env_id:
        raise ConfigError(f"dataset: {config.dataset} holds {recorded} experience, but env_id is "
                          f"{config.env_id}; pass --env {recorded}")
    if recorded is not None and data.metadata.get("env_kwargs", {}) != dict(config.env_kwargs):
        raise ConfigError(f"dataset: {config.dataset} was collected with env_kwargs "
                          f"{data.metadata.get('env_kwargs')}, but env_kwargs is {dict(config.env_kwargs)}")
    experience = data.experience
    groups, start = {}, 0
    for g in env.groups:
        n = env.group_size(g)
        obs = experience["observations"][:, start:start + n]
        expected = (n, *env.observation_space(g).shape)
        if obs.shape[1:] != expected:
            per_step = experience["observations"].shape[1:]
            raise ConfigError(f"dataset: {config.dataset} has observations {per_step} per step, which do not "
                              f"fit {config.env_id}'s group {g} ({expected} at agents "
                              f"{start}..{start + n - 1})")
        part = {"obs": obs.astype(np.float32), "action": experience["actions"][:, start:start + n]}
        if isinstance(env.action_space(g), Discrete):
            part["legal"] = experience["infos"]["legals"][:, start:start + n] > 0
        groups[g] = part
        start += n
    if start != experience["observations"].shape[1]:
        raise ConfigError(f"dataset: {config.dataset} has {experience['observations'].shape[1]} agents, "
                          f"{config.env_id} has {start}")
    return groups


# ------------------------------------------------------------------------------------------------ network
class PolicyNet(nn.Module):
    """``obs [M, n, *obs_shape] -> (head [M, n, A], log_std [M, n, A])``: an MLP on the flattened
    observation to logits or a Gaussian mean."""

    action_width: int
    hidden_sizes: Sequence[int]
    activation: str

    @nn.compact
    def __call__(self, obs: Array) -> tuple[Array, Array]:
        """Evaluate the policy head."""
        x = networks.MLP(self.hidden_sizes, self.activation)(obs.reshape(*obs.shape[:2], -1))
        head = networks.Dense(self.action_width, kernel_init=networks.orthogonal(0.01))(x)
        log_std = self.param("log_std", nn.initializers.zeros, (self.action_width,))
        return head, jnp.broadcast_to(log_std, head.shape)


class RunnerState(struct.PyTreeNode):
    """Everything that carries from one update to the next (checkpointed as is)."""

    params: dict[str, Any]
    opt_state: Any
    env_state: Any
    timestep: Any
    key: Array
    update: Array


# --------------------------------------------------------------------------------------------------- loss
def bc_loss(log_probs: dict[str, Array]) -> tuple[Array, dict[str, Array]]:
    """The negative log-likelihood of the dataset's actions, averaged over each group's agent-steps and
    summed over groups; also each group's accuracy-free part, ``nll_<group>``."""
    parts = {f"nll_{g}": -jnp.mean(lp) for g, lp in log_probs.items()}
    return sum(parts.values(), jnp.float32(0.0)), parts


def make_env(config: Config, num_envs: int | None = None, auto_reset: bool = True) -> MultiAgentEnv:
    """The env stack BC is scored on (and evaluation renders): ``num_envs`` envs, default
    ``config.num_envs``."""
    return envs.make_training_env(config.env_id, config.num_envs if num_envs is None else num_envs,
                                  config.env_kwargs, "group", auto_reset=auto_reset)


def policy_nets(config: Config, env: MultiAgentEnv) -> dict[str, Any]:
    """Each group's ``apply(params, obs [M, n, ...]) -> (head, log_std)``, per agent or shared."""
    independent = config.param_sharing == "agent"
    return {g: networks.group_apply(PolicyNet(networks.policy_width(env.action_space(g)), config.hidden_sizes,
                                              config.activation), independent, (1,))
            for g in env.groups}


def make_trainer(config: Config, env: MultiAgentEnv) -> Trainer:
    """Build the pure ``init`` and ``update`` functions for ``config`` on ``env`` (``make_env(config)``)."""
    config.validate()
    groups = list(env.groups)
    spaces = {g: env.action_space(g) for g in groups}
    independent = config.param_sharing == "agent"
    dataset = jax.tree.map(jnp.asarray, load_dataset(config, env))
    num_examples = next(iter(dataset.values()))["obs"].shape[0]
    applies = policy_nets(config, env)

    def optimizer(hparams: HParams) -> optax.GradientTransformation:
        return ppo.annealed_adam(hparams.lr, hparams.max_grad_norm, anneal_lr=config.anneal_lr,
                                 num_updates=config.num_updates, steps_per_update=config.grad_steps)

    def init(key: Array, hparams: HParams) -> RunnerState:
        key, env_key, *net_keys = jax.random.split(key, 2 + len(groups))
        env_state, timestep = env.reset(env_key)
        params = {}
        for g, net_key in zip(groups, net_keys, strict=True):
            n = env.group_size(g)
            example = jnp.zeros((1, 1 if independent else n, *env.observation_space(g).shape))
            net = PolicyNet(networks.policy_width(spaces[g]), config.hidden_sizes, config.activation)
            params[g] = networks.init_group_params(net, net_key, n, independent, example)
        return RunnerState(params, optimizer(hparams).init(params), env_state,
                           envs.observation(env, timestep), key, jnp.int32(0))

    def loss_fn(params: dict[str, Any], batch: dict[str, dict[str, Array]]) -> tuple[Array, Any]:
        log_probs = {}
        for g in groups:
            head, log_std = applies[g](params[g], batch[g]["obs"])
            dist = networks.action_distribution(spaces[g], head, log_std, batch[g].get("legal"))
            log_probs[g] = dist.log_prob(batch[g]["action"])
        return bc_loss(log_probs)

    def act(params: dict[str, Any], obs: dict[str, Array], masks: dict[str, Array], key: Array
            ) -> dict[str, Array]:
        actions = {}
        for g, group_key in zip(groups, jax.random.split(key, len(groups)), strict=True):
            head, log_std = applies[g](params[g], obs[g])
            action, _ = networks.sample_action(spaces[g], head, log_std, masks.get(g), group_key)
            actions[g] = networks.to_env_action(spaces[g], action)
        return actions

    def update(runner: RunnerState, hparams: HParams) -> tuple[RunnerState, dict[str, Array]]:
        tx = optimizer(hparams)
        key, sample_key, rollout_key = jax.random.split(runner.key, 3)

        def gradient_step(carry: tuple[Any, Any], step_key: Array) -> tuple[tuple[Any, Any], Any]:
            params, opt_state = carry
            index = jax.random.randint(step_key, (config.minibatch_size,), 0, num_examples)
            batch = jax.tree.map(lambda x: x[index], dataset)
            (loss, parts), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, batch)
            updates, opt_state = tx.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), {"total_loss": loss, **parts}

        (params, opt_state), losses = loops.scan(gradient_step, (runner.params, runner.opt_state),
                                                 jax.random.split(sample_key, config.grad_steps), unroll=1)

        def score_step(carry: tuple[Any, Any], step_key: Array) -> tuple[tuple[Any, Any], Any]:
            env_state, timestep = carry
            act_key, env_key = jax.random.split(step_key)
            actions = act(params, timestep.obs, envs.action_masks(env, timestep), act_key)
            env_state, next_timestep = env.step(env_key, env_state, actions)
            stats = envs.completed_episode_stats(next_timestep)
            return (env_state, envs.observation(env, next_timestep)), stats

        (env_state, timestep), stats = loops.scan(score_step, (runner.env_state, runner.timestep),
                                                  jax.random.split(rollout_key, config.num_steps), unroll=1)
        runner = runner.replace(params=params, opt_state=opt_state, env_state=env_state, timestep=timestep,
                                key=key, update=runner.update + 1)
        return runner, {**envs.episode_metrics(stats), **jax.tree.map(jnp.mean, losses)}

    return Trainer(init, update, env)


def make_policy(config: Config, env: MultiAgentEnv) -> Policy:
    """The cloned policy on ``env`` (any ``make_env(config, n)``)."""
    applies = policy_nets(config, env)
    spaces = {g: env.action_space(g) for g in env.groups}

    def init_hidden(num_envs: int) -> dict[str, Array]:
        return {g: jnp.zeros((num_envs, env.group_size(g), 0)) for g in env.groups}

    def act(params: dict[str, Any], hidden: dict[str, Array], timestep: Any, starts: Array, key: Array,
            deterministic: bool = False) -> tuple[dict[str, Array], dict[str, Array]]:
        actions = {}
        for g, group_key in zip(env.groups, jax.random.split(key, len(env.groups)), strict=True):
            head, log_std = applies[g](params[g], timestep.obs[g])
            mask = timestep.action_mask.get(g)
            if deterministic:
                action = networks.action_distribution(spaces[g], head, log_std, mask).mode()
            else:
                action, _ = networks.sample_action(spaces[g], head, log_std, mask, group_key)
            actions[g] = networks.to_env_action(spaces[g], action)
        return hidden, actions

    return Policy(init_hidden, act)


def policy_params(runner: RunnerState) -> dict[str, Any]:
    """The parameters ``make_policy``'s ``act`` takes."""
    return runner.params


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: parse flags, train every seed and grid point, write the run folder."""
    from jaxmarl_suite.pipeline import run_from_command_line

    return run_from_command_line(sys.modules[__name__], "bc", argv)


if __name__ == "__main__":
    sys.exit(main())
