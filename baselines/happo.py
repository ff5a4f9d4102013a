"""HAPPO: heterogeneous-agent PPO (Kuba et al., ICLR 2022), agents updated one after another, in one file.

Reads top to bottom: the config, the actor and critic networks (MAPPO's), the HAPPO objective and its
correction factor, the critic's value loss, training sequences and minibatch epochs, one agent's turn and
the sequential update over a random order, the env (``make_env``), the rollout, bootstrap values, the
update (GAE, the critic's epochs, then the actors' turns), the policy and ``main``: the whole algorithm.
From the kit it takes plumbing and tested numerics only (the env stack, GAE, network layers, action
distributions, the optimizer built from the config, acting); the contract with the runner is
``kit.baseline.Baseline``. Copy this file to change the algorithm: nothing else changes with it.
Train in Python with ``make_train(module, config)`` from ``jaxmarl_suite.training.kit``.

- **The sequential update.** Each update draws a fresh permutation ``i_1, ..., i_N`` of every agent (of
  every group, numbered group by group) from the training key, and the agents take turns in that order.
  Agent ``i_m`` runs ``update_epochs`` passes of ``num_minibatches`` minibatches over its own data with the
  clipped objective ``min(r A M, clip(r, 1 - eps, 1 + eps) A M)``, ``r`` its own ratio to the rollout's
  policy and ``M = prod_{j before i_m} pi_new_j(a_j | o_j) / pi_old_j(a_j | o_j)`` per env step, the
  product of the ratios of the agents already updated, measured after their turns and held constant
  (``stop_gradient``). ``M`` is kept as a running product: after each turn it is multiplied by the agent's
  ratio of its policy after the turn to its policy before it (``next_factor``), over the steps where the
  agent was alive (a dead agent's action changes nothing, so its ratio counts as 1). ``M`` is not clipped.
- **Inside the compiled program.** The turns are one ``lax.scan`` over the permutation. Every group's
  actors travel in the scan's carry; the body picks the agent's group with ``lax.switch`` (one branch per
  group, compiled once each, so groups with different observation or action sizes, such as simple_tag's
  adversaries and agents, take part) and, within the group, the agent's parameters by dynamic indexing of
  the stacked agent axis (``p[agent]``, written back with ``.at[agent].set``). So the order is uniformly
  random over all agents, groups interleaved, not a fixed order of groups. The cost: the runner vmaps
  every program over its runs, each run draws its own order, and a vmapped ``lax.switch`` whose index
  differs between runs computes every branch and selects, so with several groups each turn costs a
  turn of every group (twice the actors' training on simple_tag). One group (SMAX, simple_spread,
  ``--param-sharing all``) has no switch.
- **Parameters.** Every agent its own actor and critic by default (``--param-sharing agent``: HAPPO's
  premise, agents that may need different policies). With ``group`` (or ``all``) agents share their
  group's actor and still take turns, each turn stepping the shared parameters on that agent's data only,
  and ``M`` then holds the shared policy's ratios of the agents before, measured after each turn. Each
  agent (or shared actor) has its own optimizer state; a shared actor's learning-rate anneal counts the
  steps of all its agents' turns as one update.
- **The critic is MAPPO's**: it sees the global world state (``WorldState`` wrapper) followed by a one-hot
  of the agent's index within its group, one critic per group (per agent with ``agent``), trained with
  MAPPO's clipped value loss and its own optimizer, ``update_epochs`` x ``num_minibatches`` steps per
  update, before the actors' turns (the advantages are fixed by then, so the order does not matter).
  GAE bootstraps from the world state of ``info["final_obs"]`` on truncation, never past termination;
  ``team_returns`` as in MAPPO.
- **Advantages** are per agent (its own value, its own or its team's return) and normalised once per
  update, per group over the rollout's live agent-steps, before the turns (as HARL does, over the whole
  buffer), not per minibatch as in MAPPO; ``M`` then weights these fixed advantages.
- Feed-forward or GRU (``--recurrent``): actor and critic each get a GRU; a turn's minibatches then hold
  whole rollout sequences of one agent. Discrete actions respect ``action_mask``; Box actions use a
  Gaussian clipped at the env boundary.

Run: ``python baselines/happo.py --env MPE_simple_spread_v3 --seeds 4`` or ``jaxmarl-suite train happo ...``.
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
from jaxmarl_suite.training.kit import envs, loops, networks, ppo, schedule
from jaxmarl_suite.training.kit.baseline import Policy, Trainer
from jaxmarl_suite.training.kit.gae import final_obs_rows, final_values, gae, team_gae

Array = jax.Array

@dataclasses.dataclass(frozen=True)
class Config(ppo.PPOConfig):
    """HAPPO's static settings: changing one recompiles. Besides the fields and checks shared with the
    other PPO baselines (``jaxmarl_suite.training.kit.ppo.PPOConfig``), ``team_returns``, and every agent
    its own nets by default; every field is a ``--dashed-flag``."""

    param_sharing: str = "agent"
    """agent: one set of nets per agent (HAPPO's premise); group: one per group; all: one for every agent
    (padded, group id). Agents take turns in every case."""
    team_returns: bool = False
    """Credit each agent with its group's return until the whole group is done, not its own until it
    is: the per-step mean reward of the group's agents still playing, one GAE per group (MAPPO on SMAC).
    Without it an agent that dies (SMAX) stops counting the rewards its team earns after its death."""


@struct.dataclass
class HParams(ppo.PPOHParams):
    """HAPPO's traceable hyperparameters (``PPOHParams``): vmapped for sweeps, so a grid compiles once."""


# ---------------------------------------------------------------------------------------------- networks
class Network(nn.Module):
    """The actor's and the critic's layers (MAPPO's): with ``recurrent`` a dense layer and a GRU, then the
    MLP, then the head. Observations with more than one axis are flattened. A feed-forward net returns the
    dummy ``hidden`` untouched. Built in ``setup`` so that ``actor_and_critic`` can run the actor's and the
    critic's GRU loops as one (``networks.gru_pair``) in the rollout.
    """

    hidden_sizes: Sequence[int]
    activation: str
    recurrent: bool
    gru_size: int
    head_width: int = 1
    head_scale: float = 1.0
    """The orthogonal initialisation's scale of the head."""

    def setup(self) -> None:
        """The layers, named as flax names the layers of a compact method."""
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
    ``(hidden, critic hidden, policy head, log_std, value)``: both networks along the same steps (the
    rollout), their GRUs' loops run as one (``networks.gru_pair``)."""

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
    """``{"actor": {group: ...}, "critic": ...}``: one optimizer state per actor (stacked on the agent axis
    with ``param_sharing="agent"``) and one for all critics."""
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
    order: Array
    """``[num_agents]``: the order the last update's turns took (agents numbered group by group; the
    identity before the first update)."""


# ---------------------------------------------------------------------------------------------- loss
LOSS_PARTS = ("actor_loss", "value_loss", "entropy", "approx_kl", "clip_frac")
"""The loss terms logged beside ``total_loss``: the actors' averaged over turns, the critic's over groups."""


def happo_objective(ratio: Array, advantage: Array, factor: Array, clip_eps: float | Array) -> Array:
    """HAPPO's clipped surrogate per step, to maximise: ``min(r M A, clip(r, 1 - eps, 1 + eps) M A)``.

    ``ratio`` is ``r``, the agent's new over old probability of its action; ``factor`` is ``M``, the
    product of the ratios of the agents updated before it this update (``next_factor``), a constant here.
    """
    weighted = jax.lax.stop_gradient(factor) * advantage
    clipped_ratio = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    return jnp.minimum(ratio * weighted, clipped_ratio * weighted)


def next_factor(factor: Array, new_log_prob: Array, old_log_prob: Array, alive: Array) -> Array:
    """``M`` for the next agent in the order: ``factor`` times the ratio of the agent just updated, its
    policy after its turn over before it, per step; 1 where the agent was not alive (its action did not
    count)."""
    return factor * jnp.where(alive, jnp.exp(new_log_prob - old_log_prob), 1.0)


def actor_objective_loss(outputs: tuple[Array, Array], batch: dict[str, Array], hparams: HParams
                         ) -> tuple[Array, dict[str, Array]]:
    """One agent's loss in its turn: minus HAPPO's surrogate (``happo_objective``) minus the entropy bonus,
    each step weighted by ``alive``.

    ``outputs`` is ``(log_prob, entropy)`` of the minibatch's actions under the current parameters;
    ``batch`` holds the rollout's ``log_prob``, the (already normalised) ``advantage``, the ``factor``
    ``M`` and ``alive``. Returns the loss and ``actor_loss``, ``entropy``, ``approx_kl``, ``clip_frac``.
    """
    log_prob, entropy_per_step = outputs
    weight = batch["alive"].astype(jnp.float32)
    count = jnp.maximum(weight.sum(), 1.0)

    def mean(x: Array) -> Array:
        return jnp.sum(x * weight) / count

    log_ratio = log_prob - batch["log_prob"]
    ratio = jnp.exp(log_ratio)
    actor_loss = -mean(happo_objective(ratio, batch["advantage"], batch["factor"], hparams.clip_eps))
    entropy = mean(entropy_per_step)
    parts = {"actor_loss": actor_loss, "entropy": entropy, "approx_kl": mean((ratio - 1.0) - log_ratio),
             "clip_frac": mean((jnp.abs(ratio - 1.0) > hparams.clip_eps).astype(jnp.float32))}
    return actor_loss - hparams.ent_coef * entropy, parts


def critic_value_loss(values: dict[str, Array], batch: dict[str, dict[str, Array]], hparams: HParams
                      ) -> tuple[Array, dict[str, Array]]:
    """MAPPO's value loss summed over groups (times ``vf_coef``), each agent-step weighted by ``alive`` and
    clipped around the rollout's values (``clip_eps``). Returns the total and ``value_loss`` averaged over
    groups."""
    total, value_losses = jnp.float32(0.0), []
    for g, value in values.items():
        b = batch[g]
        weight = b["alive"].astype(jnp.float32)
        count = jnp.maximum(weight.sum(), 1.0)
        value_clipped = b["value"] + jnp.clip(value - b["value"], -hparams.clip_eps, hparams.clip_eps)
        squared = jnp.maximum((value - b["target"]) ** 2, (value_clipped - b["target"]) ** 2)
        value_loss = 0.5 * jnp.sum(squared * weight) / count
        total = total + hparams.vf_coef * value_loss
        value_losses.append(value_loss)
    return total, {"value_loss": jnp.mean(jnp.stack(value_losses))}


def normalized_advantage(advantage: Array, alive: Array) -> Array:
    """``advantage`` less its mean over the live agent-steps, over their standard deviation."""
    weight = alive.astype(jnp.float32)
    count = jnp.maximum(weight.sum(), 1.0)
    mean = jnp.sum(advantage * weight) / count
    std = jnp.sqrt(jnp.sum((advantage - mean) ** 2 * weight) / count)
    return (advantage - mean) / (std + 1e-8)


# ----------------------------------------------------------------------------------- sequences, epochs
def sequence_batch(config: Config, fields: dict[str, Array], start_states: dict[str, Array]
                   ) -> dict[str, Array]:
    """Training sequences of one group's rollout: each ``[T, B, ...]`` field becomes
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

    ``batch[k]`` holds ``sequence_batch``'s arrays; the ``start_states`` have no time axis, so their
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

        minibatches = {k: {name: split(name, v) for name, v in fields.items()} for k, fields in batch.items()}

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


# ------------------------------------------------------------------------------------ sequential turns
class TurnState(NamedTuple):
    """What one agent's turn hands to the next."""

    params: dict[str, Any]
    """The actors ``{group: ...}`` (stacked on the agent axis when each agent has its own)."""
    opt_state: dict[str, Any]
    """Their optimizer states, shaped alike."""
    factor: Array
    """``M`` per env step, in the training sequences' layout ``[L, S]``: 1 before the first turn."""
    key: Array


LogProbs = Callable[[Any, dict[str, Array]], Array]
"""``(actor params, one agent's batch) -> log_prob [L, S, 1]`` of its rollout actions."""
TrainAgent = Callable[[Any, Any, Array, dict[str, Array]], tuple[Any, Any, dict[str, Array]]]
"""``(actor params, optimizer state, key, one agent's batch) -> (params, optimizer state, losses)``."""


def agent_turn(state: TurnState, group: str, agent: Array, independent: bool, batch: dict[str, Array],
               start_states: tuple[str, ...], log_probs: LogProbs, train: TrainAgent
               ) -> tuple[TurnState, dict[str, Array]]:
    """Agent ``agent`` of ``group`` takes its turn: ``train`` on its own data with the current ``M`` as
    ``batch["factor"]``, then ``M`` times its ratio after over before the turn (``next_factor``).

    ``batch`` holds the group's training sequences (``[L, S, n, ...]``, the ``start_states`` ``[S, n,
    ...]``); the agent's slice keeps a unit agent axis, so the networks run unchanged. With
    ``independent`` parameters only the agent's row of the group's stacked actor and optimizer state is
    read and written; shared ones are read and written whole. Returns the new state and ``train``'s losses.
    """

    def own(tree: Any) -> Any:
        return jax.tree.map(lambda x: x[agent], tree) if independent else tree

    def write_back(tree: Any, new: Any) -> Any:
        return jax.tree.map(lambda x, y: x.at[agent].set(y), tree, new) if independent else new

    agent_batch = {name: jax.lax.dynamic_slice_in_dim(x, agent, 1, axis=1 if name in start_states else 2)
                   for name, x in batch.items()}
    agent_batch["factor"] = state.factor[..., None]
    key, train_key = jax.random.split(state.key)
    params, opt_state = own(state.params[group]), own(state.opt_state[group])
    # Before the turn rather than the rollout's log-probabilities: shared parameters moved in earlier turns.
    before = log_probs(params, agent_batch)
    params, opt_state, losses = train(params, opt_state, train_key, agent_batch)
    after = log_probs(params, agent_batch)
    factor = next_factor(state.factor, after[..., 0], before[..., 0], agent_batch["alive"][..., 0])
    return TurnState({**state.params, group: write_back(state.params[group], params)},
                     {**state.opt_state, group: write_back(state.opt_state[group], opt_state)},
                     factor, key), losses


def sequential_update(state: TurnState, order: Array, group_sizes: dict[str, int],
                      turn: Callable[[TurnState, str, Array], tuple[TurnState, dict[str, Array]]]
                      ) -> tuple[TurnState, dict[str, Array]]:
    """Every agent's ``turn(state, group, agent index in its group)``, one after another in ``order`` (a
    permutation of the agents numbered group by group), as one ``lax.scan``: the body switches to the
    agent's group, so each group's turn compiles once. Returns the last state and each turn's outputs,
    stacked in turn order."""
    groups = list(group_sizes)
    group_of = jnp.array([i for i, g in enumerate(groups) for _ in range(group_sizes[g])], jnp.int32)
    index_in_group = jnp.array([k for g in groups for k in range(group_sizes[g])], jnp.int32)
    branches = [lambda state, agent, g=g: turn(state, g, agent) for g in groups]

    def body(state: TurnState, agent: Array) -> tuple[TurnState, dict[str, Array]]:
        return jax.lax.switch(group_of[agent], branches, state, index_in_group[agent])

    return jax.lax.scan(body, state, order)


def make_env(config: Config, num_envs: int | None = None, auto_reset: bool = True) -> MultiAgentEnv:
    """The env stack HAPPO trains on (and evaluation renders): ``num_envs`` envs, default
    ``config.num_envs``, with the world state the critic reads."""
    return envs.make_training_env(config.env_id, config.num_envs if num_envs is None else num_envs,
                             config.env_kwargs, config.param_sharing, world_state=True, auto_reset=auto_reset)


def make_trainer(config: Config, env: MultiAgentEnv) -> Trainer:
    """Build the pure ``init`` and ``update`` functions for ``config`` on ``env`` (``make_env(config)``)."""
    config.validate()
    groups = list(env.groups)
    spaces = {g: env.action_space(g) for g in groups}
    sizes = {g: env.group_size(g) for g in groups}
    num_agents = sum(sizes.values())
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

    def actor_optimizer(g: str, hparams: HParams) -> optax.GradientTransformation:
        """Adam for one actor; a shared one steps in each of its agents' turns, and all of those make one
        update of the learning-rate anneal."""
        turns = 1 if independent else sizes[g]
        return ppo.annealed_adam(hparams.lr, hparams.max_grad_norm, anneal_lr=config.anneal_lr,
                                 num_updates=config.num_updates,
                                 steps_per_update=config.update_epochs * config.num_minibatches * turns,
                                 knots=schedule.schedule_knots(config))

    def zero_hidden(num: int) -> dict[str, Array]:
        return {g: jnp.zeros((num, sizes[g], hidden_width)) for g in groups}

    def init(key: Array, hparams: HParams) -> RunnerState:
        key, env_key, *net_keys = jax.random.split(key, 2 + 2 * len(groups))
        env_state, timestep = env.reset(env_key)
        params: dict[str, Any] = {"actor": {}, "critic": {}}
        actor_opt_state = {}
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
            actor_init = actor_optimizer(g, hparams).init
            # Stacked per agent, step counts included, so a turn indexes an agent's state like its params.
            actor_opt_state[g] = (jax.vmap(actor_init) if independent else actor_init)(params["actor"][g])
        critic_opt_state = ppo.optimizer(config, hparams).init(params["critic"])
        opt_state = {"actor": actor_opt_state, "critic": critic_opt_state}
        starts = jnp.ones((config.num_envs,), bool)
        alive = {g: jnp.ones((config.num_envs, sizes[g]), bool) for g in groups}
        return RunnerState(params, opt_state, env_state, envs.observation(env, timestep),
                           zero_hidden(config.num_envs), zero_hidden(config.num_envs), starts, alive, key,
                           jnp.int32(0), jnp.arange(num_agents, dtype=jnp.int32))

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

    # ------------------------------------------------------------------------------------------- losses
    def critic_loss_fn(params: dict[str, Any], batch: dict[str, Any], hparams: HParams) -> tuple[Array, Any]:
        values = {}
        for g in groups:
            b = batch[g]
            _, value = critics[g](params[g], b["critic_hidden"], critic_input(b["world_state"], sizes[g]),
                                  b["starts"])
            values[g] = value[..., 0]
        return critic_value_loss(values, batch, hparams)

    def evaluate(g: str, params: Any, b: dict[str, Array]) -> tuple[Array, Array]:
        """One agent's ``(log_prob, entropy)`` of its rollout actions, ``[L, S, 1]`` each."""
        apply: Callable[..., Any] = actor_nets[g].apply  # typed loosely, as in ``actor_and_critic``
        _, head, log_std = apply(params, b["hidden"], b["obs"], b["starts"])
        dist = networks.action_distribution(spaces[g], head, log_std, b.get("action_mask"))
        return jnp.asarray(dist.log_prob(b["action"])), jnp.asarray(dist.entropy())

    # -------------------------------------------------------------------------------------------- update
    def update(runner: RunnerState, hparams: HParams) -> tuple[RunnerState, dict[str, Array]]:
        runner, trajectory, metrics = rollout(runner)
        next_values = bootstrap_values(runner.params["critic"], trajectory)
        actor_batch, critic_batch = {}, {}
        for g in groups:
            if config.team_returns:
                advantage, target = team_gae(trajectory.reward[g], trajectory.value[g], next_values[g],
                                             trajectory.terminated[g], trajectory.episode_end[g],
                                             trajectory.alive[g], hparams.gamma, hparams.gae_lambda)
            else:
                advantage, target = gae(trajectory.reward[g], trajectory.value[g], next_values[g],
                                        trajectory.terminated[g], trajectory.episode_end[g], hparams.gamma,
                                        hparams.gae_lambda)
            actor_fields = {name: getattr(trajectory, name)[g]
                            for name in ("obs", "starts", "action", "log_prob", "alive")}
            # Once, before any turn (as HARL does): every agent's turn then weights the same advantages.
            actor_fields["advantage"] = normalized_advantage(advantage, trajectory.alive[g])
            if g in trajectory.action_mask:  # discrete actions
                actor_fields["action_mask"] = trajectory.action_mask[g]
            critic_fields = {name: getattr(trajectory, name)[g] for name in ("starts", "value", "alive")}
            critic_fields.update(target=target, world_state=trajectory.world_state)
            actor_batch[g] = sequence_batch(config, actor_fields, {"hidden": trajectory.hidden[g]})
            critic_batch[g] = sequence_batch(config, critic_fields,
                                             {"critic_hidden": trajectory.critic_hidden[g]})
        key, order_key, critic_key, actor_key = jax.random.split(runner.key, 4)

        critic_tx = ppo.optimizer(config, hparams)

        def apply_critic_grads(grads: Any, opt_state: Any, params: Any) -> tuple[Any, Any]:
            updates, opt_state = critic_tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state

        critic_params, critic_opt_state, critic_losses = train_epochs(
            config, critic_loss_fn, apply_critic_grads, runner.params["critic"], runner.opt_state["critic"],
            critic_key, critic_batch, hparams, ("critic_hidden",))

        def train_agent(g: str, params: Any, opt_state: Any, key: Array, agent_batch: dict[str, Array]
                        ) -> tuple[Any, Any, dict[str, Array]]:
            tx = actor_optimizer(g, hparams)

            def loss_fn(params: Any, minibatch: dict[str, Any], hparams: HParams) -> tuple[Array, Any]:
                b = minibatch["agent"]
                return actor_objective_loss(evaluate(g, params, b), b, hparams)

            def apply_grads(grads: Any, opt_state: Any, params: Any) -> tuple[Any, Any]:
                updates, opt_state = tx.update(grads, opt_state, params)
                return optax.apply_updates(params, updates), opt_state

            return train_epochs(config, loss_fn, apply_grads, params, opt_state, key, {"agent": agent_batch},
                                hparams, ("hidden",))

        def turn(state: TurnState, g: str, agent: Array) -> tuple[TurnState, dict[str, Array]]:
            return agent_turn(state, g, agent, independent, actor_batch[g], ("hidden",),
                              lambda params, b: evaluate(g, params, b)[0],
                              lambda *args: train_agent(g, *args))

        order = jax.random.permutation(order_key, num_agents)
        first = TurnState(runner.params["actor"], runner.opt_state["actor"],
                          jnp.ones((config.sequence_length, config.num_sequences)), actor_key)
        last, turn_losses = sequential_update(first, order, sizes, turn)
        losses = {name: jnp.mean(turn_losses[name]) for name in ("actor_loss", "entropy", "approx_kl",
                                                                 "clip_frac")}
        losses["value_loss"] = critic_losses["value_loss"]
        # MAPPO's total from the logged parts, comparable across the two files; nothing steps on it here.
        losses["total_loss"] = (losses["actor_loss"] + hparams.vf_coef * losses["value_loss"]
                                - hparams.ent_coef * losses["entropy"])
        runner = runner.replace(params={"actor": last.params, "critic": critic_params},
                                opt_state={"actor": last.opt_state, "critic": critic_opt_state}, key=key,
                                update=runner.update + 1, order=order)
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

    return run_from_command_line(sys.modules[__name__], "happo", argv)


if __name__ == "__main__":
    sys.exit(main())
