"""MAPPO: PPO with a centralised critic, for every agent group of any registered env, in one file.

Reads top to bottom: the config, the actor and critic networks, the clipped PPO loss, training
sequences and minibatch epochs, the env (``make_env``), the rollout, bootstrap values, the update (GAE
and the optimizer step), the policy and ``main``: the whole algorithm. From the kit it takes plumbing
and tested numerics only (the env stack, GAE, network layers, action distributions, the optimizer built
from the config, acting); the contract with the runner is ``kit.baseline.Baseline``. Copy this file to
change the algorithm: nothing else changes with it.
Train in Python with ``make_train(module, config)`` from ``jaxmarl_suite.training.kit``.

- The actor sees only its agent's observation, so the trained policy acts decentralised.
- The critic sees the global world state (``WorldState`` wrapper: every agent's observation,
  concatenated) followed by a one-hot of the agent's index within its group (among every agent with
  ``all``), a minimal "agent-specific global state" (Yu et al., 2022): one critic per group, yet agents
  whose rewards differ (simple_spread's collision penalties) get their own values.
- Each group has its own actor and critic, since groups can earn opposite rewards (simple_tag). Their
  agents share them (``--param-sharing group``), or each agent has its own (``agent``), or every agent
  shares one pair on padded observations (``all``).
- Feed-forward or GRU (``--recurrent``): the actor and the critic each get a GRU, because a world state
  built from partial observations is no more Markov than they are. A feed-forward net is a recurrent one
  with sequences of one step.
- Discrete actions respect ``action_mask``; Box actions use a Gaussian clipped at the env boundary.
- GAE bootstraps from the world state of ``info["final_obs"]`` (``envs.world_state(..., final=True)``)
  on truncation and never past termination. With ``team_returns`` it runs once per group on the group's
  return, so an agent that dies mid-episode (SMAX) still counts what its team earns after it.
- Actor and critic have separate optimizers, as in the MAPPO paper and JaxMARL, so the critic's larger
  gradients never shrink the actor's step through a shared gradient-norm clip.
- No value normalisation (the paper's ValueNorm), as in JaxMARL: value clipping uses raw returns.

Run: ``python baselines/mappo.py --env MPE_simple_spread_v3 --seeds 4`` or ``jaxmarl-suite train mappo ...``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.training.kit import envs, loops, networks, ppo
from jaxmarl_suite.training.kit.baseline import Policy, Trainer
from jaxmarl_suite.training.kit.gae import final_obs_rows, final_values, gae, team_gae

Array = jax.Array

PARTS = ("actor", "critic")
"""The two parameter sets, each with its own optimizer."""


@dataclasses.dataclass(frozen=True)
class Config(ppo.PPOConfig):
    """MAPPO's static settings: changing one recompiles. Besides the fields and checks shared with the
    other PPO baselines (``jaxmarl_suite.training.kit.ppo.PPOConfig``), ``team_returns``; every field is a
    ``--dashed-flag``."""

    team_returns: bool = False
    """Credit each agent with its group's return until the whole group is done, not its own until it
    is: the per-step mean reward of the group's agents still playing, one GAE per group (MAPPO on SMAC).
    Without it an agent that dies (SMAX) stops counting the rewards its team earns after its death."""


@struct.dataclass
class HParams(ppo.PPOHParams):
    """MAPPO's traceable hyperparameters (``PPOHParams``): vmapped for sweeps, so a grid compiles once."""


# ---------------------------------------------------------------------------------------------- networks
class Network(nn.Module):
    """The actor's and the critic's layers: with ``recurrent`` a dense layer and a GRU, then the MLP, then
    the head. Observations with more than one axis (Overcooked's grids) are flattened: MAPPO's torso is
    an MLP. A feed-forward net returns the dummy ``hidden`` untouched.

    Built in ``setup`` so that its parts can be called apart: ``actor_and_critic`` runs the actor's and
    the critic's GRU loops as one (``networks.gru_pair``) between them.
    """

    hidden_sizes: Sequence[int]
    activation: str
    recurrent: bool
    gru_size: int
    head_width: int = 1
    head_scale: float = 1.0
    """The orthogonal initialisation's scale of the head."""

    def setup(self) -> None:
        """The layers, named as flax names the layers of a compact method, so the parameters, their
        initial values and checkpoints are those of the networks built in one before."""
        if self.recurrent:
            self.MLP_0 = networks.MLP((self.gru_size,), self.activation)
            self.ResetGRU_0 = networks.ResetGRU(self.gru_size)
            self.MLP_1 = networks.MLP(self.hidden_sizes, self.activation)
        else:
            self.MLP_0 = networks.MLP(self.hidden_sizes, self.activation)
        self.Dense_0 = networks.Dense(self.head_width, kernel_init=networks.orthogonal(self.head_scale))

    def gru_inputs(self, inputs: Array) -> networks.GRUInputs:
        """``inputs [L, M, n, ...]`` -> what the GRU's loop takes (``recurrent`` only)."""
        x = self.MLP_0(inputs.reshape(*inputs.shape[:3], -1).astype(jnp.float32))
        return self.ResetGRU_0.loop_inputs(x)

    def features(self, hidden: Array, inputs: Array, starts: Array) -> tuple[Array, Array]:
        """``(hidden [M, n, H], inputs [L, M, n, ...], starts [L, M, n])`` -> ``(hidden, x [L, M, n, F])``,
        ``x`` the GRU's states, or the inputs flattened when feed-forward."""
        if not self.recurrent:
            return hidden, inputs.reshape(*starts.shape, -1).astype(jnp.float32)
        loop = self.gru_inputs(inputs)
        return networks.gru_scan(loop.state_kernel, loop.c_n, hidden.astype(jnp.float32), loop.projected,
                                 starts)

    def mlp_and_head(self, x: Array) -> Array:
        """``x [L, M, n, F]`` (``features``) -> ``[L, M, n, head_width]``."""
        mlp = self.MLP_1 if self.recurrent else self.MLP_0
        return self.Dense_0(mlp(x))


class Actor(Network):
    """``(hidden [M, n, H], obs [L, M, n, d], starts [L, M, n])`` -> ``(hidden, policy head [L, M, n, A])``;
    ``head_width`` is ``A``, and ``log_std`` the Gaussian's ``[A]`` log standard deviations (unused for
    discrete actions)."""

    head_scale: float = 0.01

    def setup(self) -> None:
        """The layers, then ``log_std``."""
        super().setup()
        self.log_std = self.param("log_std", nn.initializers.zeros, (self.head_width,))

    def policy(self, x: Array) -> tuple[Array, Array]:
        """``x`` (``features``) -> the policy head and the log standard deviations, broadcast to its shape."""
        head = self.mlp_and_head(x)
        return head, jnp.broadcast_to(self.log_std, head.shape)

    def __call__(self, hidden: Array, obs: Array, starts: Array) -> tuple[Array, Array, Array]:
        """Evaluate the policy head along ``L`` steps: ``(hidden, head, log_std)``."""
        hidden, x = self.features(hidden, obs, starts)
        return hidden, *self.policy(x)


class Critic(Network):
    """``(hidden [M, n, H], critic input [L, M, n, state_dim + n], starts [L, M, n])`` ->
    ``(hidden, value [L, M, n, 1])``, ``head_width`` 1."""

    def __call__(self, hidden: Array, inputs: Array, starts: Array) -> tuple[Array, Array]:
        """Evaluate the value along ``L`` steps: ``(hidden, value)``."""
        hidden, x = self.features(hidden, inputs, starts)
        return hidden, self.mlp_and_head(x)


def actor_and_critic(actor: Actor, critic: Critic) -> Callable[..., tuple[Array, ...]]:
    """``apply((actor params, critic params), hidden, critic hidden, obs, critic inputs, starts)`` ->
    ``(hidden, critic hidden, policy head, log_std, value)``: both networks along the same steps, their
    GRUs' loops run as one (``networks.gru_pair``: one loop on a GPU, two on the CPU)."""

    if (actor.recurrent, actor.gru_size) != (critic.recurrent, critic.gru_size):
        raise ValueError("actor_and_critic pairs an actor and a critic with the same recurrent and gru_size, "
                         f"got {(actor.recurrent, actor.gru_size)} and {(critic.recurrent, critic.gru_size)}")
    # Typed loosely: flax's ``apply`` may also return mutated variables, which these calls have none of.
    apply_actor: Callable[..., Any] = actor.apply
    apply_critic: Callable[..., Any] = critic.apply

    def apply(params: tuple[Any, Any], hidden: Array, critic_hidden: Array, obs: Array, inputs: Array,
              starts: Array) -> tuple[Array, ...]:
        actor_params, critic_params = params
        if not actor.recurrent:
            hidden, head, log_std = apply_actor(actor_params, hidden, obs, starts)
            critic_hidden, value = apply_critic(critic_params, critic_hidden, inputs, starts)
            return hidden, critic_hidden, head, log_std, value
        loops = (apply_actor(actor_params, obs, method=Actor.gru_inputs),
                 apply_critic(critic_params, inputs, method=Critic.gru_inputs))
        (hidden, states), (critic_hidden, critic_states) = networks.gru_pair(*loops, (hidden, critic_hidden),
                                                                             starts)
        head, log_std = apply_actor(actor_params, states, method=Actor.policy)
        value = apply_critic(critic_params, critic_states, method=Critic.mlp_and_head)
        return hidden, critic_hidden, head, log_std, value

    return apply


def critic_input(world_state: Array, num_agents: int) -> Array:
    """``[..., state_dim] -> [..., num_agents, state_dim + num_agents]``: the world state as each agent of
    a group sees it, followed by the agent's one-hot index."""
    lead = world_state.shape[:-1]
    states = jnp.broadcast_to(world_state[..., None, :], (*lead, num_agents, world_state.shape[-1]))
    agent_ids = jnp.broadcast_to(jnp.eye(num_agents), (*lead, num_agents, num_agents))
    return jnp.concatenate([states, agent_ids], axis=-1)


AGENT_AXES = (1, 2, 2)
"""The agent axis of each network input ``(hidden [M, n, H], inputs [L, M, n, d], starts [L, M, n])``."""

BOTH_AGENT_AXES = (1, 1, 2, 2, 2)
"""The agent axis of each input of ``actor_and_critic``'s ``apply``, after the parameters."""


# ------------------------------------------------------------------------------------------------ state
class Transition(NamedTuple):
    """One rollout step, every field ``{group: [B, n, ...]}`` except the ``[B, state_dim]`` world states."""

    obs: dict[str, Array]
    action_mask: dict[str, Array]
    starts: dict[str, Array]
    hidden: dict[str, Array]
    critic_hidden: dict[str, Array]
    world_state: Array
    action: dict[str, Array]
    log_prob: dict[str, Array]
    value: dict[str, Array]
    reward: dict[str, Array]
    terminated: dict[str, Array]
    episode_end: dict[str, Array]
    alive: dict[str, Array]
    final_world_state: Array
    next_critic_hidden: dict[str, Array]
    truncated: Array
    """``[B]``: the env's episode ended this step, and not because every agent's terminated."""


class RunnerState(struct.PyTreeNode):
    """Everything that carries from one update to the next (checkpointed as is)."""

    params: dict[str, Any]
    """``{"actor": {group: ...}, "critic": {group: ...}}``."""
    opt_state: dict[str, Any]
    """One optimizer state per entry of ``params``."""
    env_state: Any
    timestep: Any
    """What the next step acts on of the last ``TimeStep`` (``envs.observation``), not all of it."""
    hidden: dict[str, Array]
    """The actors' GRU states ``{group: [B, n, H]}`` (``H = 0`` when feed-forward: no state)."""
    critic_hidden: dict[str, Array]
    """The critics' GRU states, shaped like ``hidden``."""
    starts: Array
    alive: dict[str, Array]
    key: Array
    update: Array


# ---------------------------------------------------------------------------------------------- loss
LOSS_PARTS = ("actor_loss", "value_loss", "entropy", "approx_kl", "clip_frac")
"""The loss terms logged beside ``total_loss`` (each averaged over groups)."""


def ppo_loss(outputs: dict[str, tuple[Array, Array, Array]], batch: dict[str, dict[str, Array]],
             hparams: HParams) -> tuple[Array, dict[str, Array]]:
    """The clipped PPO objective summed over groups, each agent-step weighted by ``alive``.

    ``outputs[g]`` is ``(log_prob, entropy, value)`` of the minibatch's actions under the current
    parameters; ``batch[g]`` holds the rollout's ``log_prob``, ``value``, ``advantage``, ``target`` and
    ``alive``. Advantages are normalised per group over the live agent-steps; the value loss is clipped
    around the rollout's values (``clip_eps``). Returns the total and the ``LOSS_PARTS`` averaged over
    groups.
    """
    total = jnp.float32(0.0)
    parts = {name: jnp.float32(0.0) for name in LOSS_PARTS}
    for g, (log_prob, entropy_per_step, value) in outputs.items():
        b = batch[g]
        weight = b["alive"].astype(jnp.float32)
        count = jnp.maximum(weight.sum(), 1.0)

        def mean(x: Array, weight: Array = weight, count: Array = count) -> Array:
            return jnp.sum(x * weight) / count

        advantage = b["advantage"]
        advantage_mean = mean(advantage)
        advantage_std = jnp.sqrt(mean((advantage - advantage_mean) ** 2))
        advantage = (advantage - advantage_mean) / (advantage_std + 1e-8)
        log_ratio = log_prob - b["log_prob"]
        ratio = jnp.exp(log_ratio)
        clipped_ratio = jnp.clip(ratio, 1.0 - hparams.clip_eps, 1.0 + hparams.clip_eps)
        actor_loss = -mean(jnp.minimum(ratio * advantage, clipped_ratio * advantage))
        value_clipped = b["value"] + jnp.clip(value - b["value"], -hparams.clip_eps, hparams.clip_eps)
        value_loss = 0.5 * mean(jnp.maximum((value - b["target"]) ** 2, (value_clipped - b["target"]) ** 2))
        entropy = mean(entropy_per_step)
        total = total + actor_loss + hparams.vf_coef * value_loss - hparams.ent_coef * entropy
        parts["actor_loss"] += actor_loss
        parts["value_loss"] += value_loss
        parts["entropy"] += entropy
        parts["approx_kl"] += mean((ratio - 1.0) - log_ratio)
        parts["clip_frac"] += mean((jnp.abs(ratio - 1.0) > hparams.clip_eps).astype(jnp.float32))
    return total, {name: value / len(outputs) for name, value in parts.items()}


# ----------------------------------------------------------------------------------- sequences, epochs
def sequence_batch(config: Config, fields: dict[str, Array], start_states: dict[str, Array]
                   ) -> dict[str, Array]:
    """A group's rollout as training sequences: every ``[T, B, ...]`` field becomes
    ``[L, (T / L) * B, ...]`` (``L = config.sequence_length``: the whole rollout for a GRU, one step
    otherwise), and each start state (a recurrent state) keeps only the value each sequence starts from,
    ``[(T / L) * B, ...]``."""
    length = config.sequence_length

    def to_sequences(x: Array) -> Array:
        x = x.reshape(config.num_steps // length, length, *x.shape[1:])
        x = jnp.swapaxes(x, 0, 1)
        return x.reshape(length, x.shape[1] * x.shape[2], *x.shape[3:])  # sizes, not -1: a state may be empty

    batch = {name: to_sequences(x) for name, x in fields.items()}
    batch.update({name: to_sequences(x)[0] for name, x in start_states.items()})
    return batch


def train_epochs(config: Config, loss_fn: Callable[..., tuple[Array, dict[str, Array]]],
                 apply_grads: Callable[[Any, Any, Any], tuple[Any, Any]], params: Any, opt_state: Any,
                 key: Array, batch: dict[str, dict[str, Array]], hparams: HParams,
                 start_states: tuple[str, ...]) -> tuple[Any, Any, dict[str, Array]]:
    """``update_epochs`` passes over a rollout's sequences: each pass shuffles the sequence axis, cuts it
    into ``num_minibatches`` and takes one gradient step (``apply_grads``) per minibatch.

    ``batch[g]`` holds ``sequence_batch``'s arrays; the ``start_states`` have no time axis, so their
    sequence axis is the first. Returns the new parameters and optimizer state and the mean of
    ``total_loss`` and every loss part over all minibatches.
    """

    def epoch(carry: tuple[Any, Any, Array], _: None) -> tuple[tuple[Any, Any, Array], Any]:
        params, opt_state, key = carry
        key, shuffle_key = jax.random.split(key)
        order = jax.random.permutation(shuffle_key, config.num_sequences)

        def split(name: str, x: Array) -> Array:
            """Shuffle the sequence axis and cut it into ``[num_minibatches, ...]``."""
            axis = 0 if name in start_states else 1
            x = jnp.moveaxis(jnp.take(x, order, axis=axis), axis, 0)
            x = x.reshape(config.num_minibatches, x.shape[0] // config.num_minibatches, *x.shape[1:])
            return jnp.moveaxis(x, 1, axis + 1)

        minibatches = {g: {k: split(k, v) for k, v in fields.items()} for g, fields in batch.items()}

        def minibatch_step(carry: tuple[Any, Any], minibatch: Any) -> tuple[tuple[Any, Any], Any]:
            params, opt_state = carry
            (loss, parts), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, minibatch, hparams)
            params, opt_state = apply_grads(grads, opt_state, params)
            return (params, opt_state), {"total_loss": loss, **parts}

        (params, opt_state), losses = loops.scan(minibatch_step, (params, opt_state), minibatches, unroll=1)
        return (params, opt_state, key), losses

    (params, opt_state, _), losses = loops.scan(epoch, (params, opt_state, key), None,
                                                length=config.update_epochs, unroll=1)
    return params, opt_state, jax.tree.map(jnp.mean, losses)


def make_env(config: Config, num_envs: int | None = None, auto_reset: bool = True) -> MultiAgentEnv:
    """The env stack MAPPO trains on (and evaluation renders): ``num_envs`` envs, default
    ``config.num_envs``, with the world state the critic reads."""
    return envs.make_training_env(config.env_id, config.num_envs if num_envs is None else num_envs,
                             config.env_kwargs, config.param_sharing, world_state=True, auto_reset=auto_reset)


def make_trainer(config: Config, env: MultiAgentEnv) -> Trainer:
    """Build the pure ``init`` and ``update`` functions for ``config`` on ``env`` (``make_env(config)``)."""
    config.validate()
    groups = list(env.groups)
    spaces = {g: env.action_space(g) for g in groups}
    sizes = {g: env.group_size(g) for g in groups}
    state_dim = env.world_state_space().shape[0]
    independent = config.param_sharing == "agent"
    hidden_width = config.gru_size if config.recurrent else 0
    final_rows = final_obs_rows(config.num_steps, env.default_params.max_steps)
    actor_nets = {g: Actor(config.hidden_sizes, config.activation, config.recurrent, config.gru_size,
                           head_width=networks.policy_width(spaces[g])) for g in groups}
    critic_net = Critic(config.hidden_sizes, config.activation, config.recurrent, config.gru_size)
    critics = {g: networks.group_apply(critic_net, independent, AGENT_AXES) for g in groups}
    both = {g: networks.group_map(actor_and_critic(actor_nets[g], critic_net), independent, BOTH_AGENT_AXES)
            for g in groups}

    def zero_hidden(num: int) -> dict[str, Array]:
        return {g: jnp.zeros((num, sizes[g], hidden_width)) for g in groups}

    def init(key: Array, hparams: HParams) -> RunnerState:
        key, env_key, *net_keys = jax.random.split(key, 2 + 2 * len(groups))
        env_state, timestep = env.reset(env_key)
        params: dict[str, Any] = {"actor": {}, "critic": {}}
        for g, actor_key, critic_key in zip(groups, net_keys[::2], net_keys[1::2], strict=True):
            per_agent = 1 if independent else sizes[g]
            hidden = jnp.zeros((1, per_agent, hidden_width))
            starts = jnp.zeros((1, 1, per_agent), bool)
            obs = jnp.zeros((1, 1, per_agent, *env.observation_space(g).shape))
            state = jnp.zeros((1, 1, per_agent, state_dim + sizes[g]))
            params["actor"][g] = networks.init_group_params(actor_nets[g], actor_key, sizes[g], independent,
                                                   hidden, obs, starts)
            params["critic"][g] = networks.init_group_params(critic_net, critic_key, sizes[g], independent,
                                                    hidden, state, starts)
        tx = ppo.optimizer(config, hparams)
        opt_state = {part: tx.init(params[part]) for part in PARTS}
        starts = jnp.ones((config.num_envs,), bool)
        alive = {g: jnp.ones((config.num_envs, sizes[g]), bool) for g in groups}
        return RunnerState(params, opt_state, env_state, envs.observation(env, timestep),
                           zero_hidden(config.num_envs), zero_hidden(config.num_envs), starts, alive, key,
                           jnp.int32(0))

    def group_starts(starts: Array) -> dict[str, Array]:
        return {g: jnp.broadcast_to(starts[:, None], (config.num_envs, sizes[g])) for g in groups}

    # ------------------------------------------------------------------------------------------- rollout
    def rollout(runner: RunnerState) -> tuple[RunnerState, Transition, dict[str, Array]]:
        def step(runner: RunnerState, _: None) -> tuple[RunnerState, tuple[Transition, dict[str, Array]]]:
            key, *group_keys = jax.random.split(runner.key, 2 + len(groups))
            env_key = group_keys.pop()
            timestep = runner.timestep
            world_state = envs.world_state(env, timestep)
            masks = envs.action_masks(env, timestep)
            starts = group_starts(runner.starts)
            hidden, critic_hidden, actions, log_probs, values = {}, {}, {}, {}, {}
            for g, group_key in zip(groups, group_keys, strict=True):
                group_state = critic_input(world_state, sizes[g])
                hidden[g], critic_hidden[g], head, log_std, value = both[g](
                    (runner.params["actor"][g], runner.params["critic"][g]), runner.hidden[g],
                    runner.critic_hidden[g], timestep.obs[g][None], group_state[None], starts[g][None])
                values[g] = value[0, ..., 0]
                actions[g], log_probs[g] = networks.sample_action(spaces[g], head[0], log_std[0],
                                                                  masks.get(g), group_key)
            env_actions = {g: networks.to_env_action(spaces[g], actions[g]) for g in groups}
            env_state, next_timestep = env.step(env_key, runner.env_state, env_actions)
            ended = envs.agent_done(next_timestep)
            env_ended = next_timestep.info["episode_done"]
            transition = Transition(
                obs=timestep.obs, action_mask=masks, starts=starts, hidden=runner.hidden,
                critic_hidden=runner.critic_hidden, world_state=world_state, action=actions,
                log_prob=log_probs, value=values, reward=next_timestep.reward,
                terminated=next_timestep.terminated, episode_end=ended, alive=runner.alive,
                final_world_state=envs.world_state(env, next_timestep, final=True),
                next_critic_hidden=critic_hidden,
                truncated=env_ended & ~jnp.concatenate(
                    [next_timestep.terminated[g] for g in groups], axis=-1).all(-1),
            )
            # An agent whose episode ended stays out of the loss until its env starts a new episode.
            alive = {g: jnp.where(env_ended[:, None], True, runner.alive[g] & ~ended[g]) for g in groups}
            runner = runner.replace(env_state=env_state, timestep=envs.observation(env, next_timestep),
                                    hidden=hidden, critic_hidden=critic_hidden, starts=env_ended, alive=alive,
                                    key=key)
            return runner, (transition, envs.completed_episode_stats(next_timestep))

        runner, (trajectory, stats) = loops.scan(step, runner, None, length=config.num_steps, unroll=1)
        return runner, trajectory, envs.episode_metrics(stats)

    def bootstrap_values(critic_params: dict[str, Any], trajectory: Transition) -> dict[str, Array]:
        """``V`` of the world state each transition led to (pre-reset): the next step's value where the
        episode went on, and a fresh pass of the critic on ``final_world_state`` from its hidden state
        after the step only where it was truncated or the rollout ends (``gae.final_values``)."""
        values = {}
        for g in groups:
            # The agents' inputs are built from the gathered rows only: built for every step first, they
            # were a [T, B, n, state_dim + n] array (345 MB on Hanabi) of which a step or two was read.
            def value_of(params: Any, hidden: Array, states: Array, starts: Array, g: str = g) -> Array:
                return critics[g](params, hidden, critic_input(states, sizes[g]), starts)[1][..., 0]

            values[g] = final_values(value_of, critic_params[g], trajectory.value[g],
                                     trajectory.next_critic_hidden[g], trajectory.final_world_state,
                                     trajectory.truncated, final_rows)
        return values

    # ---------------------------------------------------------------------------------------------- loss
    def loss_fn(params: dict[str, Any], batch: dict[str, Any], hparams: HParams) -> tuple[Array, Any]:
        outputs = {}
        for g in groups:
            b = batch[g]
            _, _, head, log_std, value = both[g]((params["actor"][g], params["critic"][g]), b["hidden"],
                                                 b["critic_hidden"], b["obs"],
                                                 critic_input(b["world_state"], sizes[g]), b["starts"])
            dist = networks.action_distribution(spaces[g], head, log_std, b.get("action_mask"))
            outputs[g] = (dist.log_prob(b["action"]), dist.entropy(), value[..., 0])
        return ppo_loss(outputs, batch, hparams)

    # -------------------------------------------------------------------------------------------- update
    def update(runner: RunnerState, hparams: HParams) -> tuple[RunnerState, dict[str, Array]]:
        runner, trajectory, metrics = rollout(runner)
        next_values = bootstrap_values(runner.params["critic"], trajectory)
        batch = {}
        for g in groups:
            if config.team_returns:
                advantage, target = team_gae(trajectory.reward[g], trajectory.value[g], next_values[g],
                                             trajectory.terminated[g], trajectory.episode_end[g],
                                             trajectory.alive[g], hparams.gamma, hparams.gae_lambda)
            else:
                advantage, target = gae(trajectory.reward[g], trajectory.value[g], next_values[g],
                                        trajectory.terminated[g], trajectory.episode_end[g], hparams.gamma,
                                        hparams.gae_lambda)
            fields = {name: getattr(trajectory, name)[g]
                      for name in ("obs", "starts", "action", "log_prob", "value", "alive")}
            fields.update(advantage=advantage, target=target)
            if g in trajectory.action_mask:  # discrete actions
                fields["action_mask"] = trajectory.action_mask[g]
            fields["world_state"] = trajectory.world_state
            batch[g] = sequence_batch(config, fields, {"hidden": trajectory.hidden[g],
                                                       "critic_hidden": trajectory.critic_hidden[g]})
        tx = ppo.optimizer(config, hparams)

        def apply_grads(grads: Any, opt_state: Any, params: Any) -> tuple[Any, Any]:
            """One Adam step per part, each with its own gradient-norm clip."""
            new_params, new_opt_state = {}, {}
            for part in PARTS:
                updates, new_opt_state[part] = tx.update(grads[part], opt_state[part], params[part])
                new_params[part] = optax.apply_updates(params[part], updates)
            return new_params, new_opt_state

        key, epoch_key = jax.random.split(runner.key)
        params, opt_state, losses = train_epochs(config, loss_fn, apply_grads, runner.params,
                                                 runner.opt_state, epoch_key, batch, hparams,
                                                 ("hidden", "critic_hidden"))
        runner = runner.replace(params=params, opt_state=opt_state, key=key, update=runner.update + 1)
        return runner, {**metrics, **losses}

    return Trainer(init, update, env)


def make_policy(config: Config, env: MultiAgentEnv) -> Policy:
    """The trained policy on ``env`` (any ``make_env(config, n)``): only the actors act, so it needs no
    world state."""
    actors = {
        g: networks.group_apply(Actor(config.hidden_sizes, config.activation, config.recurrent,
                                      config.gru_size, head_width=networks.policy_width(env.action_space(g))),
                                config.param_sharing == "agent", AGENT_AXES)
        for g in env.groups
    }
    return ppo.actor_policy(config, env, actors)


def policy_params(runner: RunnerState) -> dict[str, Any]:
    """The parameters ``make_policy``'s ``act`` takes: the actors' (the critic is for training only)."""
    return runner.params["actor"]


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: parse flags, train every seed and grid point, write the run folder."""
    from jaxmarl_suite.pipeline import run_from_command_line

    return run_from_command_line(sys.modules[__name__], "mappo", argv)


if __name__ == "__main__":
    sys.exit(main())
