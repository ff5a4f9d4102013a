"""MAT: the Multi-Agent Transformer (Wen et al., NeurIPS 2022), PPO on the agents as a sequence, in one file.

Reads top to bottom: the config, the transformer (attention, the encoder and decoder blocks, the network
with its per-group embeddings and heads), acting agent by agent and evaluating actions teacher-forced, the
clipped PPO loss, minibatch epochs, the env (``make_env``), the rollout, bootstrap values, the update (GAE
and the optimizer step), the policy and ``main``: the whole algorithm. From the kit it takes plumbing and
tested numerics only (the env stack, GAE, network layers, action distributions, the optimizer built from
the config); the contract with the runner is ``kit.baseline.Baseline``. Copy this file to change the
algorithm: nothing else changes with it.
Train in Python with ``make_train(module, config)`` from ``jaxmarl_suite.training.kit``.

- **Agents are a sequence.** Every agent of every group is one token, groups in the env's order and agents
  in index order within a group (a fixed order, as MAT's code acts; the paper's theory holds for any).
- **The encoder** embeds each agent's observation with its group's embedding (LayerNorm, a dense layer,
  the activation: MAT's observation encoder), so groups of different observation sizes (MaMuJoCo's
  bodies, simple_tag's adversaries and runners) are embedded apart, never padded, and all agents' tokens
  are concatenated along the agent axis. ``num_blocks`` blocks of self-attention over all agents (no
  mask) and a feed-forward net, each with a residual and a LayerNorm after it, give each agent's
  representation; a value head per group (MAT has one; here per group, as MAPPO's critics, since groups
  may earn opposite rewards) reads the agent's value from its representation. There is no
  positional (agent-index) encoding, as in MAT: within a group the encoder is permutation-equivariant.
- **The decoder** acts agent by agent: agent ``i`` reads the tokens of the actions of agents ``0 .. i - 1``
  through a sequence shifted by one (a learned start token, then each action embedded by its group's
  action embedding: a one-hot through a dense layer for ``Discrete``, the vector for ``Box``). Each of its
  ``num_blocks`` blocks has a causally masked self-attention over that sequence, then MAT's second
  attention: agent ``i``'s encoder representation queries the action stream at positions ``<= i``
  (causally masked too; the residual is on the representation, as in MAT's code), then a feed-forward
  net. Each group's action head maps the output to logits (masked by ``action_mask``) or a Gaussian's
  mean with a learned state-independent ``log_std`` (clipped at the env's boundary when sent, as MAPPO).
- **Acting** (``act``) is autoregressive inside the jitted rollout: per group, a ``lax.scan`` over the
  group's agents decodes the agent's own position only (``DecoderBlock.step``), from a cache of the
  earlier positions' attention inputs, samples its action and hands the action's token to the next
  position. The causal masks make the decoder's output at position ``i`` depend on the tokens ``<= i``
  only, so the cache's unwritten positions may hold any finite values; a step feeds forward each agent's
  token once, not once per acting agent (the rollout took 1.7x as long that way on SMAX 2s3z); only the
  attention scores still span all ``N`` positions.
- **Attention** applies its four projections in an equivalent order (``Attention``): queries through
  ``Wq Wk^T``, the weighted tokens through ``Wv Wp``, so keys and values are never projected. Same
  parameters, same function; at one head it does half the projections' arithmetic.
- **Training** (``evaluate``) is teacher-forced: the rollout's actions, shifted by one, go through the
  decoder in one pass with the same masks, giving every agent's probability of its action given the
  actions before it. The joint policy's ratio factorises into these per-agent ratios; as MAT does, the
  clipped PPO objective is taken per agent with the agent's own ratio and advantage (``ppo_loss``), plus
  MAPPO's clipped value loss on the encoder's values and an entropy bonus, all agent-steps weighted by
  ``alive``. One network, one optimizer (MAT trains encoder and decoder together on the summed loss).
- Minibatches draw whole env steps (every agent of a step together: the decoder reads them all).
- GAE from the kit on each agent's value, bootstrapping from ``info["final_obs"]`` on truncation and
  never past termination; with ``team_returns`` one GAE per group on its return, as MAPPO on SMAC.
  Advantages are normalised per group per minibatch over live agent-steps, as in MAPPO's loss.
- Differences from MAT's code: no ValueNorm and a squared (not Huber) clipped value loss, as MAPPO here;
  advantages normalised per minibatch (MAT: once over the rollout); the Gaussian's ``log_std`` as
  MAPPO's (MAT squashes its std through a sigmoid); the decoder's start token is a learned vector rather
  than a one-hot slot, since the action embedding is per group; no ``dec_actor`` variant.
- Feed-forward only (MAT has no recurrence): ``--recurrent`` is refused. One transformer serves every
  agent, so ``--param-sharing agent`` is refused; ``all`` flattens the groups into one first (padded
  observations, a group id), ``group`` (the default) embeds each group apart. Groups may mix ``Discrete``
  and ``Box`` actions: each group has its own action embedding, head and loop over its agents (no
  registered env mixes them; ``tests/baselines/test_mat.py`` checks a toy network that does).
  ``hidden_sizes`` and ``activation`` are the widths and activation of the feed-forward nets in the
  blocks and of the heads (MAT: one layer as wide as the embedding, GELU).

Run: ``python baselines/mat.py --env MPE_simple_spread_v3 --seeds 4`` or ``jaxmarl-suite train mat ...``.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.core.spaces import Discrete, Space
from jaxmarl_suite.errors import check_positive_ints, require
from jaxmarl_suite.training.kit import envs, loops, networks, ppo
from jaxmarl_suite.training.kit.baseline import Policy, Trainer
from jaxmarl_suite.training.kit.gae import final_obs_rows, final_values, gae, team_gae

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class Config(ppo.PPOConfig):
    """MAT's static settings: changing one recompiles. Besides the fields and checks shared with the other
    PPO baselines (``jaxmarl_suite.training.kit.ppo.PPOConfig``), the transformer's sizes and
    ``team_returns``; every field is a ``--dashed-flag``."""

    hidden_sizes: tuple[int, ...] = (64,)
    """Widths of the feed-forward nets in the blocks and of the heads' hidden layers, as JSON (MAT: [64])."""
    activation: str = "gelu"
    """Activation of the embeddings, feed-forward nets and heads: tanh, relu or gelu (MAT: gelu)."""
    embed_dim: int = 64
    """Width of every token: the observation and action embeddings, attention and the blocks' outputs."""
    num_blocks: int = 1
    """Encoder blocks, and as many decoder blocks."""
    num_heads: int = 1
    """Attention heads; must divide embed_dim. Beyond two, attention's projections cost more than the
    textbook order's (``Attention``: ``H D^2`` per token against ``2 D^2``)."""
    team_returns: bool = False
    """Credit each agent with its group's return until the whole group is done, not its own until it
    is: the per-step mean reward of the group's agents still playing, one GAE per group (MAPPO on SMAC).
    Without it an agent that dies (SMAX) stops counting the rewards its team earns after its death."""

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        super().validate()
        check_positive_ints(self, ["embed_dim", "num_blocks", "num_heads"])
        require(self.embed_dim % self.num_heads == 0, "num_heads",
                f"must divide embed_dim = {self.embed_dim}, got {self.num_heads}")
        require(not self.recurrent, "recurrent",
                "MAT is feed-forward (its transformer attends over agents, not time): drop --recurrent")
        require(self.param_sharing != "agent", "param_sharing",
                "MAT is one transformer for every agent: use group (per-group embeddings and heads) or all")


@struct.dataclass
class HParams(ppo.PPOHParams):
    """MAT's traceable hyperparameters (``PPOHParams``): vmapped for sweeps, so a grid compiles once."""


# ------------------------------------------------------------------------------------------- transformer
ACTIVATIONS: dict[str, Callable[[Array], Array]] = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu}
"""The activations ``--activation`` names (those ``PPOConfig.validate`` accepts), applied after the
embeddings; the kit's ``MLP`` takes the name itself."""

MASKED_SCORE = -1e9
"""Attention score of a masked position: its weight underflows to exactly zero, so whatever finite values
the masked tokens hold add exactly nothing."""


class Projection(nn.Module):
    """The kernel ``[D, features]`` and bias ``[features]`` of a dense layer (``nn.Dense``'s parameter names
    and initialisation, orthogonal at 0.01 as MAT's attention projections), handed to ``Attention`` to
    combine before it applies them."""

    features: int

    @nn.compact
    def __call__(self, in_features: int) -> tuple[Array, Array]:
        """``(kernel, bias)``."""
        kernel = self.param("kernel", networks.orthogonal(0.01), (in_features, self.features))
        return kernel, self.param("bias", nn.initializers.zeros, (self.features,))


class Attention(nn.Module):
    """Multi-head attention of ``queries [M, Q, D]`` over ``tokens [M, N, D]``, optionally causal (the query
    at position ``i`` sees positions ``<= i``): ``[M, Q, D]``. Query, key, value and output projections
    as any transformer's (initialised small, as MAT's, so each block starts near the identity), applied
    in an equivalent order that does half their multiply-adds when there is one head (MAT's default):

    - scores: ``(x_q Wq + bq) . (x_k Wk + bk) = x_q (Wq Wk^T) . x_k + bq Wk^T . x_k`` plus terms that are
      the same for every key, which the softmax cancels exactly. So queries are projected once by the
      ``D x D`` product ``Wq Wk^T`` (one per head) and meet the raw tokens: keys are never projected.
    - output: the weights sum to one, so ``sum_k w_k (x_k Wv + bv) Wp + bp = (sum_k w_k x_k) (Wv Wp) +
      bv Wp + bp``: the weighted tokens go through ``Wv Wp`` (per head) once.

    The products are ``D x D`` per head, so a projection costs ``H D^2`` per token against the textbook
    order's ``2 D^2``: half at one head, equal at two, more beyond (``tests/baselines/test_mat.py`` checks
    both orders agree). On SMAX 2s3z minibatches this cut the training pass's gradient by a fifth on the
    CPU. Acting caches the raw tokens of the positions decoded so far, and ``attend`` reads them."""

    embed_dim: int
    num_heads: int
    causal: bool

    def setup(self) -> None:
        """The query, key, value and output projections' parameters."""
        d = self.embed_dim
        self.query, self.key, self.value, self.proj = (Projection(d), Projection(d), Projection(d),
                                                       Projection(d))

    def attend(self, queries: Array, tokens: Array, positions: Array) -> Array:
        """Scaled dot-product attention of ``queries [M, Q, D]`` (at sequence ``positions [Q]``) over
        ``tokens [M, N, D]``, heads side by side, then the output projection. Where causal, tokens after a
        query's position weigh exactly zero, whatever finite values they hold."""
        d, h = self.embed_dim, self.num_heads
        e = d // h
        (wq, bq), (wk, _), (wv, bv), (wp, bp) = (layer(d) for layer in
                                                  (self.query, self.key, self.value, self.proj))
        # The key bias adds the same score to every key of a query, which the softmax cancels.
        wk_heads = wk.reshape(d, h, e)
        query_kernel = jnp.einsum("dhe,fhe->dhf", wq.reshape(d, h, e), wk_heads).reshape(d, h * d)
        query_bias = jnp.einsum("he,fhe->hf", bq.reshape(h, e), wk_heads).reshape(h * d)
        rows = queries.reshape(-1, d)  # 2-D matmuls: see networks.Dense
        q = (rows @ query_kernel + query_bias).reshape(*queries.shape[:2], h, d)
        scores = jnp.einsum("mqhf,mkf->mhqk", q, tokens) / math.sqrt(e)
        if self.causal:
            visible = jnp.arange(tokens.shape[1])[None, :] <= positions[:, None]
            scores = jnp.where(visible, scores, MASKED_SCORE)
        weights = jax.nn.softmax(scores, axis=-1)
        mixed = jnp.einsum("mhqk,mkf->mqhf", weights, tokens).reshape(-1, h * d)
        out_kernel = jnp.einsum("dhe,hef->hdf", wv.reshape(d, h, e), wp.reshape(h, e, d)).reshape(h * d, d)
        return (mixed @ out_kernel + (bv @ wp + bp)).reshape(queries.shape)

    def __call__(self, queries: Array, tokens: Array) -> Array:
        """Every position of ``queries`` attends (``[M, N, D]`` twice -> ``[M, N, D]``)."""
        return self.attend(queries, tokens, jnp.arange(queries.shape[1]))


class FeedForward(nn.Module):
    """A block's per-token MLP (``hidden_sizes``) back to ``embed_dim``, the last layer initialised small."""

    embed_dim: int
    hidden_sizes: Sequence[int]
    activation: str

    @nn.compact
    def __call__(self, x: Array) -> Array:
        """``[..., D] -> [..., D]``."""
        x = networks.MLP(self.hidden_sizes, self.activation)(x)
        return networks.Dense(self.embed_dim, kernel_init=networks.orthogonal(0.01))(x)


class EncoderBlock(nn.Module):
    """Self-attention over all agents (no mask), then the feed-forward net, each added to its input and
    layer-normalised after (MAT's post-norm blocks)."""

    embed_dim: int
    num_heads: int
    hidden_sizes: Sequence[int]
    activation: str

    @nn.compact
    def __call__(self, x: Array) -> Array:
        """``[M, N, D] -> [M, N, D]``."""
        x = nn.LayerNorm()(x + Attention(self.embed_dim, self.num_heads, False, name="self_attention")(x, x))
        return nn.LayerNorm()(x + FeedForward(self.embed_dim, self.hidden_sizes, self.activation)(x))


DecoderCache = tuple[Array, Array]
"""One decoder block's input tokens of its two attentions, ``[M, N, D]`` each, at the positions decoded so
far (acting fills it one position at a time; ``Attention`` projects no keys, so the tokens are the cache)."""


class DecoderBlock(nn.Module):
    """Causal self-attention over the shifted action tokens; then the encoder's representations query
    that stream, causally (MAT's second attention, its residual on the representations); then the
    feed-forward net. Output ``i`` depends on action tokens ``<= i`` only, so acting decodes one position
    at a time (``step``) from a cache of the earlier positions' tokens."""

    embed_dim: int
    num_heads: int
    hidden_sizes: Sequence[int]
    activation: str

    def setup(self) -> None:
        """The two causal attentions, the feed-forward net and a LayerNorm after each residual."""
        self.self_attention = Attention(self.embed_dim, self.num_heads, True)
        self.representation_attention = Attention(self.embed_dim, self.num_heads, True)
        self.feed_forward = FeedForward(self.embed_dim, self.hidden_sizes, self.activation)
        self.self_norm, self.representation_norm = nn.LayerNorm(), nn.LayerNorm()
        self.out_norm = nn.LayerNorm()

    def __call__(self, x: Array, representation: Array) -> Array:
        """``(tokens [M, N, D], encoder representations [M, N, D]) -> [M, N, D]``, every position at once."""
        x = self.self_norm(x + self.self_attention(x, x))
        x = self.representation_norm(representation + self.representation_attention(representation, x))
        return self.out_norm(x + self.feed_forward(x))

    def step(self, x: Array, representation: Array, cache: DecoderCache, position: Array
             ) -> tuple[Array, DecoderCache]:
        """The output at ``position`` only, given its input ``x [M, 1, D]`` and representation ``[M, 1, D]``
        and the earlier positions' ``cache``: ``([M, 1, D], cache with this position written)``. Equal to
        ``__call__``'s output there; only this position is fed forward (the attention scores span every
        cached position, masked past this one)."""
        def write(cached: Array, new: Array) -> Array:
            return jax.lax.dynamic_update_slice_in_dim(cached, new, position, axis=1)

        self_tokens, representation_tokens = cache
        at = position[None]
        self_tokens = write(self_tokens, x)
        x = self.self_norm(x + self.self_attention.attend(x, self_tokens, at))
        representation_tokens = write(representation_tokens, x)
        x = self.representation_norm(
            representation + self.representation_attention.attend(representation, representation_tokens, at))
        return self.out_norm(x + self.feed_forward(x)), (self_tokens, representation_tokens)


class Head(nn.Module):
    """MAT's heads: the MLP, a LayerNorm, then a dense layer of ``width`` (orthogonal, ``scale``)."""

    width: int
    hidden_sizes: Sequence[int]
    activation: str
    scale: float

    @nn.compact
    def __call__(self, x: Array) -> Array:
        """``[..., D] -> [..., width]``."""
        x = nn.LayerNorm()(networks.MLP(self.hidden_sizes, self.activation)(x))
        return networks.Dense(self.width, kernel_init=networks.orthogonal(self.scale))(x)


class MAT(nn.Module):
    """The encoder and decoder over every agent of every group, ``groups`` in order, ``group_sizes`` agents
    each, ``action_widths`` outputs (logits, or a Gaussian's mean where ``discrete`` is False) each.

    Inputs are ``{group: [M, n, ...]}``: one leading axis of ``M`` joint samples (envs, or rollout steps),
    then the group's agents. Built in ``setup`` so that acting can call its parts apart (``encode``,
    ``start``, ``empty_cache``, ``decode_step``, ``embed_action``) inside its loop over agents.
    """

    groups: tuple[str, ...]
    group_sizes: tuple[int, ...]
    action_widths: tuple[int, ...]
    discrete: tuple[bool, ...]
    embed_dim: int
    num_blocks: int
    num_heads: int
    hidden_sizes: tuple[int, ...]
    activation: str

    def setup(self) -> None:
        """Per group: an observation embedding, a value head, an action embedding, an action head and a
        ``log_std``; shared: the start token and the encoder's and decoder's blocks."""
        d, act = self.embed_dim, self.activation
        widths = dict(zip(self.groups, self.action_widths, strict=True))
        self.obs_embedding = {g: networks.Dense(d, kernel_init=networks.orthogonal(np.sqrt(2)))
                              for g in self.groups}
        self.obs_norm = {g: nn.LayerNorm() for g in self.groups}
        self.encoder_norm = nn.LayerNorm()
        self.encoder_blocks = [EncoderBlock(d, self.num_heads, self.hidden_sizes, act)
                               for _ in range(self.num_blocks)]
        self.value_head = {g: Head(1, self.hidden_sizes, act, 1.0) for g in self.groups}
        # A discrete action's one-hot through a dense layer without bias (MAT's), a Box action's vector.
        self.action_embedding = {
            g: networks.Dense(d, use_bias=not is_discrete, kernel_init=networks.orthogonal(np.sqrt(2)))
            for g, is_discrete in zip(self.groups, self.discrete, strict=True)}
        self.start_token = self.param("start_token", nn.initializers.normal(1.0), (d,))
        self.decoder_norm = nn.LayerNorm()
        self.decoder_blocks = [DecoderBlock(d, self.num_heads, self.hidden_sizes, act)
                               for _ in range(self.num_blocks)]
        self.action_head = {g: Head(widths[g], self.hidden_sizes, act, 0.01) for g in self.groups}
        self.log_std = {g: self.param(f"log_std_{g}", nn.initializers.zeros, (widths[g],))
                        for g in self.groups}

    def encode(self, obs: dict[str, Array]) -> tuple[Array, dict[str, Array]]:
        """``{group: [M, n, ...]}`` -> ``(representations [M, N, D], {group: values [M, n]})``."""
        act = ACTIVATIONS[self.activation]
        tokens = []
        for g in self.groups:
            x = obs[g].reshape(*obs[g].shape[:2], -1).astype(jnp.float32)
            tokens.append(act(self.obs_embedding[g](self.obs_norm[g](x))))
        x = self.encoder_norm(jnp.concatenate(tokens, axis=1))
        for block in self.encoder_blocks:
            x = block(x)
        values = {g: self.value_head[g](x[:, start:start + n])[..., 0] for g, start, n in self.spans()}
        return x, values

    def spans(self) -> list[tuple[str, int, int]]:
        """``(group, first position, agents)`` of each group in the agent sequence."""
        starts = np.cumsum((0, *self.group_sizes))[:-1]
        return [(g, int(s), n) for g, s, n in zip(self.groups, starts, self.group_sizes, strict=True)]

    def embed_action(self, group: str, action: Array) -> Array:
        """One group's actions (``[...]`` integers, or ``[..., A]`` for ``Box``) -> tokens ``[..., D]``."""
        width = self.action_widths[self.groups.index(group)]
        x = jax.nn.one_hot(action, width) if self.discrete[self.groups.index(group)] else action
        return ACTIVATIONS[self.activation](self.action_embedding[group](x.astype(jnp.float32)))

    def start(self) -> Array:
        """The start token ``[D]``, the decoder's first input (no agent has acted yet)."""
        return self.start_token

    def decode(self, tokens: Array, representation: Array) -> Array:
        """``(shifted action tokens [M, N, D], representations [M, N, D])`` -> ``[M, N, D]``; position ``i``
        depends on tokens ``0 .. i`` only."""
        x = self.decoder_norm(tokens)
        for block in self.decoder_blocks:
            x = block(x, representation)
        return x

    def policy_head(self, group: str, x: Array) -> tuple[Array, Array]:
        """Decoder outputs ``[..., D]`` of the group's agents -> ``(head [..., A], log_std [..., A])``."""
        head = self.action_head[group](x)
        return head, jnp.broadcast_to(self.log_std[group], head.shape)

    def empty_cache(self, rows: int) -> list[DecoderCache]:
        """Every decoder block's token cache for ``rows`` joint samples, zeros (``decode_step`` fills it;
        causal masks ignore the positions not yet written)."""
        zeros = jnp.zeros((rows, sum(self.group_sizes), self.embed_dim))
        return [(zeros, zeros) for _ in self.decoder_blocks]

    def decode_step(self, group: str, token: Array, representation: Array, caches: list[DecoderCache],
                    position: Array) -> tuple[Array, Array, list[DecoderCache]]:
        """One agent's turn in acting: the decoder at ``position`` (a traced index, an agent of ``group``)
        from its input ``token [M, D]`` (the start token or the previous agent's action) and the earlier
        positions' ``caches``. Returns the agent's policy head and ``log_std`` (``[M, A]`` each) and the
        caches with this position written."""
        x = self.decoder_norm(token)[:, None]
        here = jax.lax.dynamic_slice_in_dim(representation, position, 1, axis=1)
        new_caches = []
        for block, cache in zip(self.decoder_blocks, caches, strict=True):
            x, cache = block.step(x, here, cache, position)
            new_caches.append(cache)
        head, log_std = self.policy_head(group, x[:, 0])
        return head, log_std, new_caches

    def __call__(self, obs: dict[str, Array], actions: dict[str, Array]
                 ) -> tuple[dict[str, Array], dict[str, Array], dict[str, Array]]:
        """Teacher-forced: every agent's policy head given the actions of the agents before it, in one
        pass. ``(obs, actions {group: [M, n] or [M, n, A]})`` -> ``(heads, log_stds, values)`` per group."""
        representation, values = self.encode(obs)
        # Every agent's action is embedded, the last one's too, so init creates every group's embedding.
        embedded = jnp.concatenate([self.embed_action(g, actions[g]) for g in self.groups], axis=1)
        start = jnp.broadcast_to(self.start_token, (embedded.shape[0], 1, self.embed_dim))
        x = self.decode(jnp.concatenate([start, embedded[:, :-1]], axis=1), representation)
        heads, log_stds = {}, {}
        for g, start_position, n in self.spans():
            heads[g], log_stds[g] = self.policy_head(g, x[:, start_position:start_position + n])
        return heads, log_stds, values


def build_network(config: Config, env: MultiAgentEnv) -> tuple[MAT, dict[str, Space]]:
    """MAT for ``env``'s groups (``policy_width`` refuses action spaces other than ``Discrete`` and 1-D
    ``Box`` with ``IncompatibleEnvError``), and the groups' action spaces."""
    groups = tuple(env.groups)
    spaces = {g: env.action_space(g) for g in groups}
    net = MAT(groups, tuple(env.group_size(g) for g in groups),
              tuple(networks.policy_width(spaces[g]) for g in groups),
              tuple(isinstance(spaces[g], Discrete) for g in groups), config.embed_dim, config.num_blocks,
              config.num_heads, tuple(config.hidden_sizes), config.activation)
    return net, spaces


def discrete_masks(spaces: dict[str, Space], masks: dict[str, Array]) -> dict[str, Array]:
    """The action masks of the ``Discrete`` groups (a ``Box`` group's mask restricts nothing)."""
    return {g: m for g, m in masks.items() if isinstance(spaces[g], Discrete)}


def example_actions(net: MAT, spaces: dict[str, Space], rows: int = 1) -> dict[str, Array]:
    """Zero actions ``{group: [rows, n] or [rows, n, A]}`` (to initialise the network)."""
    return {g: jnp.zeros((rows, n), jnp.int32) if isinstance(spaces[g], Discrete) else jnp.zeros((rows, n, a))
            for g, n, a in zip(net.groups, net.group_sizes, net.action_widths, strict=True)}


# ------------------------------------------------------------------------------------- acting, evaluating
def act(net: MAT, spaces: dict[str, Space], params: Any, obs: dict[str, Array], masks: dict[str, Array],
        key: Array, deterministic: bool = False
        ) -> tuple[dict[str, Array], dict[str, Array], dict[str, Array]]:
    """Autoregressive acting: ``(actions, log_probs [M, n], values [M, n])`` per group.

    Agents act in sequence order; each decodes its own position from its input token (the start token,
    or the previous agent's action) and the token caches of the positions before it, which it then
    extends, so only the agents after it see its action (the decoder is causal). Within a group the
    agents are a ``lax.scan``; groups are a Python loop, so each group's head and action space compile
    once. ``deterministic`` takes each distribution's mode.
    """
    apply: Callable[..., Any] = net.apply  # typed loosely: flax's apply may also return mutated variables
    masks = discrete_masks(spaces, masks)
    representation, values = apply(params, obs, method=MAT.encode)
    rows = representation.shape[0]
    # The decoder's input at the next position (the start token, then each action's) and the token
    # caches of the positions decoded so far: each agent decodes its own position only.
    carry = (jnp.broadcast_to(apply(params, method=MAT.start), (rows, net.embed_dim)),
             apply(params, rows, method=MAT.empty_cache))
    actions, log_probs = {}, {}
    for (g, first, n), group_key in zip(net.spans(), jax.random.split(key, len(net.groups)), strict=True):
        mask = masks.get(g)

        def step(carry: tuple[Array, list[DecoderCache]], inputs: tuple[Array, Array, Array | None],
                 g: str = g, first: int = first) -> tuple[tuple[Array, Any], tuple[Array, Array]]:
            token, caches = carry
            index, agent_key, agent_mask = inputs
            head, log_std, caches = apply(params, g, token, representation, caches, first + index,
                                          method=MAT.decode_step)
            if deterministic:
                dist = networks.action_distribution(spaces[g], head, log_std, agent_mask)
                action = jnp.asarray(dist.mode())
                log_prob = jnp.asarray(dist.log_prob(action))
            else:
                action, log_prob = networks.sample_action(spaces[g], head, log_std, agent_mask, agent_key)
            return (apply(params, g, action, method=MAT.embed_action), caches), (action, log_prob)

        agent_masks = None if mask is None else jnp.swapaxes(mask, 0, 1)
        carry, (group_actions, group_log_probs) = jax.lax.scan(
            step, carry, (jnp.arange(n), jax.random.split(group_key, n), agent_masks))
        actions[g], log_probs[g] = jnp.swapaxes(group_actions, 0, 1), jnp.swapaxes(group_log_probs, 0, 1)
    return actions, log_probs, values


def evaluate(net: MAT, spaces: dict[str, Space], params: Any, obs: dict[str, Array],
             actions: dict[str, Array], masks: dict[str, Array]
             ) -> tuple[dict[str, Array], dict[str, Array], dict[str, Array]]:
    """Teacher-forced: ``(log_probs, entropies, values)``, each ``{group: [M, n]}``, of ``actions`` under
    ``params``, every agent conditioned on the actions of the agents before it, in one decoder pass."""
    apply: Callable[..., Any] = net.apply
    masks = discrete_masks(spaces, masks)
    heads, log_stds, values = apply(params, obs, actions)
    log_probs, entropies = {}, {}
    for g in net.groups:
        dist = networks.action_distribution(spaces[g], heads[g], log_stds[g], masks.get(g))
        log_probs[g], entropies[g] = jnp.asarray(dist.log_prob(actions[g])), jnp.asarray(dist.entropy())
    return log_probs, entropies, values


# ------------------------------------------------------------------------------------------------ state
class Transition(NamedTuple):
    """One rollout step, every field ``{group: [B, n, ...]}`` except ``truncated``."""

    obs: dict[str, Array]
    action_mask: dict[str, Array]
    action: dict[str, Array]
    log_prob: dict[str, Array]
    value: dict[str, Array]
    reward: dict[str, Array]
    terminated: dict[str, Array]
    episode_end: dict[str, Array]
    alive: dict[str, Array]
    final_obs: dict[str, Array]
    """The observation the step led to, before any reset (``info["final_obs"]``)."""
    truncated: Array
    """``[B]``: the env's episode ended this step, and not because every agent's terminated."""


class RunnerState(struct.PyTreeNode):
    """Everything that carries from one update to the next (checkpointed as is)."""

    params: Any
    """The transformer's parameters (encoder and decoder, every group's embeddings and heads)."""
    opt_state: Any
    env_state: Any
    timestep: Any
    """What the next step acts on of the last ``TimeStep`` (``envs.observation``), not all of it."""
    alive: dict[str, Array]
    key: Array
    update: Array


# ---------------------------------------------------------------------------------------------- loss
LOSS_PARTS = ("actor_loss", "value_loss", "entropy", "approx_kl", "clip_frac")
"""The loss terms logged beside ``total_loss`` (each averaged over groups)."""


def ppo_loss(outputs: dict[str, tuple[Array, Array, Array]], batch: dict[str, dict[str, Array]],
             hparams: HParams) -> tuple[Array, dict[str, Array]]:
    """MAT's clipped PPO objective summed over groups, each agent-step weighted by ``alive``.

    ``outputs[g]`` is ``(log_prob, entropy, value)`` of the minibatch's actions under the current
    parameters, teacher-forced, ``[M, n]`` each: agent ``i``'s log-probability is of its action given the
    actions of the agents before it, so the joint ratio is the product of the per-agent ratios, and each
    agent's term is clipped with its own ratio and advantage (as MAT does). ``batch[g]`` holds the
    rollout's ``log_prob``, ``value``, ``advantage``, ``target`` and ``alive``. Advantages are normalised
    per group over the live agent-steps; the value loss is clipped around the rollout's values
    (``clip_eps``). Returns the total and the ``LOSS_PARTS`` averaged over groups.
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


# -------------------------------------------------------------------------------------------- epochs
def train_epochs(config: Config, loss_fn: Callable[..., tuple[Array, dict[str, Array]]],
                 apply_grads: Callable[[Any, Any, Any], tuple[Any, Any]], params: Any, opt_state: Any,
                 key: Array, batch: Any, hparams: HParams) -> tuple[Any, Any, dict[str, Array]]:
    """``update_epochs`` passes over a rollout's ``batch_size`` joint steps (every leaf of ``batch`` has
    them as its leading axis, every agent of a step together, since the decoder reads them all): each
    pass shuffles the steps, cuts them into ``num_minibatches`` and takes one gradient step
    (``apply_grads``) per minibatch. Returns the new parameters and optimizer state and the mean of
    ``total_loss`` and every loss part over all minibatches.
    """
    rows = config.batch_size

    def epoch(carry: tuple[Any, Any, Array], _: None) -> tuple[tuple[Any, Any, Array], Any]:
        params, opt_state, key = carry
        key, shuffle_key = jax.random.split(key)
        order = jax.random.permutation(shuffle_key, rows)
        size = rows // config.num_minibatches
        minibatches = jax.tree.map(
            lambda x: jnp.take(x, order, axis=0).reshape(config.num_minibatches, size, *x.shape[1:]), batch)

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
    """The env stack MAT trains on (and evaluation renders): ``num_envs`` envs, default ``config.num_envs``.
    No world state: MAT's encoder reads every agent's observation."""
    return envs.make_training_env(config.env_id, config.num_envs if num_envs is None else num_envs,
                                  config.env_kwargs, config.param_sharing, auto_reset=auto_reset)


def make_trainer(config: Config, env: MultiAgentEnv) -> Trainer:
    """Build the pure ``init`` and ``update`` functions for ``config`` on ``env`` (``make_env(config)``)."""
    config.validate()
    net, spaces = build_network(config, env)
    groups = list(net.groups)
    sizes = {g: env.group_size(g) for g in groups}
    final_rows = final_obs_rows(config.num_steps, env.default_params.max_steps)
    apply: Callable[..., Any] = net.apply

    def init(key: Array, hparams: HParams) -> RunnerState:
        key, env_key, net_key = jax.random.split(key, 3)
        env_state, timestep = env.reset(env_key)
        obs = {g: jnp.zeros((1, sizes[g], *env.observation_space(g).shape)) for g in groups}
        params = net.init(net_key, obs, example_actions(net, spaces))
        opt_state = ppo.optimizer(config, hparams).init(params)
        alive = {g: jnp.ones((config.num_envs, sizes[g]), bool) for g in groups}
        return RunnerState(params, opt_state, env_state, envs.observation(env, timestep), alive, key,
                           jnp.int32(0))

    # ------------------------------------------------------------------------------------------- rollout
    def rollout(runner: RunnerState) -> tuple[RunnerState, Transition, dict[str, Array]]:
        def step(runner: RunnerState, _: None) -> tuple[RunnerState, tuple[Transition, dict[str, Array]]]:
            key, act_key, env_key = jax.random.split(runner.key, 3)
            timestep = runner.timestep
            masks = discrete_masks(spaces, envs.action_masks(env, timestep))
            actions, log_probs, values = act(net, spaces, runner.params, timestep.obs, masks, act_key)
            env_actions = {g: networks.to_env_action(spaces[g], actions[g]) for g in groups}
            env_state, next_timestep = env.step(env_key, runner.env_state, env_actions)
            ended = envs.agent_done(next_timestep)
            env_ended = next_timestep.info["episode_done"]
            transition = Transition(
                obs=timestep.obs, action_mask=masks, action=actions, log_prob=log_probs, value=values,
                reward=next_timestep.reward, terminated=next_timestep.terminated, episode_end=ended,
                alive=runner.alive, final_obs=next_timestep.info["final_obs"],
                truncated=env_ended & ~jnp.concatenate(
                    [next_timestep.terminated[g] for g in groups], axis=-1).all(-1),
            )
            # An agent whose episode ended stays out of the loss until its env starts a new episode.
            alive = {g: jnp.where(env_ended[:, None], True, runner.alive[g] & ~ended[g]) for g in groups}
            runner = runner.replace(env_state=env_state, timestep=envs.observation(env, next_timestep),
                                    alive=alive, key=key)
            return runner, (transition, envs.completed_episode_stats(next_timestep))

        runner, (trajectory, stats) = loops.scan(step, runner, None, length=config.num_steps, unroll=1)
        return runner, trajectory, envs.episode_metrics(stats)

    def bootstrap_values(params: Any, trajectory: Transition) -> dict[str, Array]:
        """``V`` of the observation each transition led to (pre-reset), per group: the next step's value
        where the episode went on, and a fresh pass of the encoder on ``final_obs`` only where it was
        truncated or the rollout ends (``gae.final_values``)."""
        steps, batch = trajectory.truncated.shape
        final_obs = {g: x.reshape(steps * batch, *x.shape[2:]) for g, x in trajectory.final_obs.items()}

        # ``final_values`` gathers the rows it needs from one array: hand it each step's row number, and
        # gather every group's final observations (of different shapes) by those numbers here.
        def value_of(params: Any, hidden: Array, rows: Array, starts: Array) -> Array:
            _, values = apply(params, {g: x[rows[0]] for g, x in final_obs.items()}, method=MAT.encode)
            return jnp.concatenate([values[g] for g in groups], axis=-1)[None]

        values = jnp.concatenate([trajectory.value[g] for g in groups], axis=-1)
        next_values = final_values(value_of, params, values, jnp.zeros((steps, batch, 0)),
                                   jnp.arange(steps * batch).reshape(steps, batch), trajectory.truncated,
                                   final_rows)
        return {g: next_values[..., first:first + n] for g, first, n in net.spans()}

    # ---------------------------------------------------------------------------------------------- loss
    def loss_fn(params: Any, batch: dict[str, Any], hparams: HParams) -> tuple[Array, Any]:
        obs = {g: batch[g]["obs"] for g in groups}
        actions = {g: batch[g]["action"] for g in groups}
        masks = {g: batch[g]["action_mask"] for g in groups if "action_mask" in batch[g]}
        log_probs, entropies, values = evaluate(net, spaces, params, obs, actions, masks)
        return ppo_loss({g: (log_probs[g], entropies[g], values[g]) for g in groups}, batch, hparams)

    # -------------------------------------------------------------------------------------------- update
    def update(runner: RunnerState, hparams: HParams) -> tuple[RunnerState, dict[str, Array]]:
        runner, trajectory, metrics = rollout(runner)
        next_values = bootstrap_values(runner.params, trajectory)
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
            fields = {name: getattr(trajectory, name)[g] for name in ("obs", "action", "log_prob", "value",
                                                                      "alive")}
            fields.update(advantage=advantage, target=target)
            if g in trajectory.action_mask:  # discrete actions
                fields["action_mask"] = trajectory.action_mask[g]
            # [T, B, ...] -> [T * B, ...]: the minibatches draw joint steps, every agent of a step together.
            batch[g] = {name: x.reshape(config.batch_size, *x.shape[2:]) for name, x in fields.items()}
        tx = ppo.optimizer(config, hparams)

        def apply_grads(grads: Any, opt_state: Any, params: Any) -> tuple[Any, Any]:
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state

        key, epoch_key = jax.random.split(runner.key)
        params, opt_state, losses = train_epochs(config, loss_fn, apply_grads, runner.params,
                                                 runner.opt_state, epoch_key, batch, hparams)
        runner = runner.replace(params=params, opt_state=opt_state, key=key, update=runner.update + 1)
        return runner, {**metrics, **losses}

    return Trainer(init, update, env)


def make_policy(config: Config, env: MultiAgentEnv) -> Policy:
    """The trained policy on ``env`` (any ``make_env(config, n)``): the whole transformer acts, agent by
    agent; it keeps no state between steps (``hidden`` is empty)."""
    net, spaces = build_network(config, env)

    def init_hidden(num_envs: int) -> dict[str, Array]:
        return {g: jnp.zeros((num_envs, env.group_size(g), 0)) for g in env.groups}

    def policy_act(params: Any, hidden: dict[str, Array], timestep: Any, starts: Array, key: Array,
                   deterministic: bool = False) -> tuple[dict[str, Array], dict[str, Array]]:
        actions, _, _ = act(net, spaces, params, timestep.obs, timestep.action_mask, key, deterministic)
        return hidden, {g: networks.to_env_action(spaces[g], a) for g, a in actions.items()}

    return Policy(init_hidden, policy_act)


def policy_params(runner: RunnerState) -> Any:
    """The parameters ``make_policy``'s ``act`` takes: the whole transformer (the decoder acts on the
    encoder's representations; the value heads are carried along unused)."""
    return runner.params


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: parse flags, train every seed and grid point, write the run folder."""
    from jaxmarl_suite.pipeline import run_from_command_line

    return run_from_command_line(sys.modules[__name__], "mat", argv)


if __name__ == "__main__":
    sys.exit(main())
