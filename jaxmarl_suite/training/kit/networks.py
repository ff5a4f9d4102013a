"""Network building blocks shared by baselines: MLP torso, a GRU that resets at episode starts,
action distributions for every action space, and per-group parameter handling.

Inputs follow one layout: ``[L, M, n, features]`` (sequence length, sequences, agents of the group).
A feed-forward net is the ``L = 1`` case with a one-unit dummy hidden state, so one baseline file
covers feed-forward and recurrent policies without forking its control flow.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, cast

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.accelerated import barrier_off_cpu, fork
from jaxmarl_suite.core.spaces import Box, Discrete, Space
from jaxmarl_suite.errors import IncompatibleEnvError
from jaxmarl_suite.training.kit import loops

Array = jax.Array

ACTIVATIONS: dict[str, Callable[[Array], Array]] = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu}
"""Activations selectable by name in configs."""

MASKED_LOGIT = -1e9
"""Logit given to illegal actions: their probability underflows to exactly zero."""


def orthogonal(scale: float) -> Callable[..., Array]:
    """``nn.initializers.orthogonal(scale)`` whose QR runs one matrix at a time under ``vmap``.

    Same values as flax's initializer. Why: on jax 0.10.2's CPU backend, ``jax.vmap`` of an init over
    8 or more seeds turns every orthogonal init into a batched LAPACK QR, which splits its batch over
    XLA's intra-op thread pool. Two such QRs running side by side each held a pool thread while waiting
    for sub-tasks queued behind the other, so about half of all 8-seed inits on a 2-core machine hung
    forever. ``sequential_vmap`` turns the batch into a loop of single-matrix QRs, which never wait.
    """
    base = nn.initializers.orthogonal(scale)

    def init(key: Array, shape: Sequence[int], dtype: Any = jnp.float32) -> Array:
        shape = tuple(shape)

        @jax.custom_batching.sequential_vmap
        def one(key: Array) -> Array:
            return base(key, shape, dtype)

        return one(key)

    return init


class Dense(nn.Dense):
    """``nn.Dense`` applied to the inputs flattened to ``[rows, features]``, then reshaped back.

    Same parameters (and parameter names) as ``nn.Dense``. Why: on XLA's CPU backend the forward and
    backward matmuls of a rank-4 ``[L, M, n, d]`` input ran 1.6x slower than the same rows as one 2-D
    matrix (PPO loss gradient on simple_spread minibatches: 1.89 vs 1.24 ms, see docs/benchmarks.md).
    """

    @nn.compact
    def __call__(self, inputs: Array) -> Array:
        """``[..., in] -> [..., features]``."""
        rows = super().__call__(inputs.reshape(-1, inputs.shape[-1]))
        return rows.reshape(*inputs.shape[:-1], self.features)


class MLP(nn.Module):
    """Dense layers with orthogonal init (scale sqrt 2), as in PPO implementations that learn reliably."""

    hidden_sizes: Sequence[int]
    activation: str = "tanh"

    @nn.compact
    def __call__(self, x: Array) -> Array:
        """``[..., in] -> [..., hidden_sizes[-1]]``."""
        act = ACTIVATIONS[self.activation]
        for size in self.hidden_sizes:
            x = act(Dense(size, kernel_init=orthogonal(np.sqrt(2)))(x))
        return x


Tower = tuple[MLP, Dense]
"""An MLP and the dense head after it, both built (not yet called) in the caller's ``nn.compact`` method."""


def two_towers(x: Array, first: Tower, second: Tower) -> tuple[Array, Array]:
    """``(head(mlp(x)) for each tower)``: two MLPs on the same input, as an actor and a critic are. Towers
    whose hidden sizes or activations differ, that have no hidden layer or a head without a bias, always run
    apart.

    Inside an ``nn.compact`` method, with the towers' modules built there, so the parameters keep their
    names and values. On the CPU each tower runs as it is. Elsewhere both run as one network: the first
    layers' kernels side by side in one product, each deeper layer one batched product over the two
    towers, so an IPPO step launches one product a layer instead of two (IPPO's update on MPE spread at
    1,024 envs, compiled for an H200: 4 x 291 -> 4 x 255 kernels in its epochs). The sums are the same;
    only their order may differ.
    """
    (mlp_a, head_a), (mlp_b, head_b) = first, second
    # At init the parameters do not exist yet: calling the modules creates them, under their usual names.
    alike = (tuple(mlp_a.hidden_sizes) == tuple(mlp_b.hidden_sizes) and mlp_a.activation == mlp_b.activation
             and head_a.use_bias and head_b.use_bias)
    if mlp_a.is_initializing() or not mlp_a.hidden_sizes or not alike:
        return head_a(mlp_a(x)), head_b(mlp_b(x))
    params = [m.variables["params"] for m in (mlp_a, head_a, mlp_b, head_b)]

    def apart(x: Array, *params: Any) -> tuple[Array, Array]:
        return head_a(mlp_a(x)), head_b(mlp_b(x))

    together = functools.partial(towers_side_by_side, ACTIVATIONS[mlp_a.activation])
    return fork(x, *params, cpu=apart, accelerator=together)


def towers_side_by_side(activation: Callable[[Array], Array], x: Array, layers_a: Any, head_a: Any,
                        layers_b: Any, head_b: Any) -> tuple[Array, Array]:
    """``two_towers`` off the CPU, on the towers' parameters: ``layers_*`` an ``MLP``'s (``Dense_0``,
    ``Dense_1``, ...), ``head_*`` a ``Dense``'s; ``x [..., d]`` -> ``([..., A], [..., B])``."""
    rows = x.reshape(-1, x.shape[-1])
    kernel = jnp.concatenate([layers_a["Dense_0"]["kernel"], layers_b["Dense_0"]["kernel"]], 1)
    bias = jnp.concatenate([layers_a["Dense_0"]["bias"], layers_b["Dense_0"]["bias"]])
    h = activation(rows.astype(jnp.result_type(rows, kernel)) @ kernel + bias).reshape(rows.shape[0], 2, -1)
    for i in range(1, len(layers_a)):
        kernel = jnp.stack([layers_a[f"Dense_{i}"]["kernel"], layers_b[f"Dense_{i}"]["kernel"]])
        bias = jnp.stack([layers_a[f"Dense_{i}"]["bias"], layers_b[f"Dense_{i}"]["bias"]])
        h = activation(jnp.einsum("rtk,tkj->rtj", h, kernel) + bias)
    out_a = h[:, 0] @ head_a["kernel"] + head_a["bias"]
    out_b = h[:, 1] @ head_b["kernel"] + head_b["bias"]
    return out_a.reshape(*x.shape[:-1], -1), out_b.reshape(*x.shape[:-1], -1)


TORSOS = ("mlp", "cnn")
"""How an observation becomes features: ``mlp`` flattens it; ``cnn`` convolves an image observation."""


class CNN(nn.Module):
    """Convolutions over ``[..., width, height, channels]`` images, then one dense layer: three 32-channel
    layers (5x5, 3x3, 3x3, same padding) and 64 units, the torso of JaxMARL's IPPO-CNN on Overcooked."""

    activation: str = "relu"
    features: Sequence[int] = (32, 32, 32)
    kernel_sizes: Sequence[int] = (5, 3, 3)
    dense_size: int = 64

    @nn.compact
    def __call__(self, x: Array) -> Array:
        """``[..., W, H, C] -> [..., dense_size]``."""
        act = ACTIVATIONS[self.activation]
        lead = x.shape[:-3]
        x = x.reshape(-1, *x.shape[-3:])
        for features, size in zip(self.features, self.kernel_sizes, strict=True):
            x = act(nn.Conv(features, (size, size), kernel_init=orthogonal(np.sqrt(2)))(x))
        x = act(Dense(self.dense_size, kernel_init=orthogonal(np.sqrt(2)))(x.reshape(x.shape[0], -1)))
        return x.reshape(*lead, self.dense_size)


class ObsEncoder(nn.Module):
    """Observations ``[L, M, n, *obs_shape]`` -> features ``[L, M, n, F]`` by ``torso`` (``TORSOS``)."""

    torso: str = "mlp"
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs: Array) -> Array:
        """Flatten (``mlp``: the MLP that follows does the work) or convolve (``cnn``)."""
        x = obs.astype(jnp.float32)
        if self.torso == "cnn":
            return CNN(self.activation)(x)
        return x.reshape(*x.shape[:3], -1)


def check_torso(torso: str, obs_shape: Sequence[int], group: str) -> None:
    """Raise ``IncompatibleEnvError`` when ``torso`` cannot read observations of ``obs_shape``."""
    if torso == "cnn" and len(obs_shape) != 3:
        raise IncompatibleEnvError(
            f"torso 'cnn' needs image observations [width, height, channels]; group {group!r} observes "
            f"shape {tuple(obs_shape)}: use --torso mlp"
        )


class _GRUWeight(nn.Module):
    """One of flax ``GRUCell``'s six transforms as bare parameters, under its name and with its
    initialiser, so ``ResetGRU`` holds (and initialises) exactly what a ``GRUCell`` would."""

    features: int
    kernel_init: Callable[..., Any]
    use_bias: bool

    @nn.compact
    def __call__(self, in_features: int) -> tuple[Array, Array]:
        """``(kernel [in, features], bias [features])``, a zero bias when the transform has none."""
        kernel = self.param("kernel", self.kernel_init, (in_features, self.features), jnp.float32)
        if not self.use_bias:
            return kernel, jnp.zeros((self.features,), jnp.float32)
        return kernel, self.param("bias", nn.initializers.zeros_init(), (self.features,), jnp.float32)


class _GRUCellWeights(nn.Module):
    """The parameters of a flax ``GRUCell``: ``(kernel, bias)`` of ``ir iz in`` (on the input) and of
    ``hr hz hn`` (on the state; only ``hn`` has a bias, the others a zero one)."""

    features: int

    @nn.compact
    def __call__(self, in_features: int) -> list[tuple[Array, Array]]:
        """The six transforms for inputs of ``in_features``, in the order above."""
        h = self.features
        return ([_GRUWeight(h, nn.initializers.lecun_normal(), True, name=n)(in_features)
                 for n in ("ir", "iz", "in")]
                + [_GRUWeight(h, nn.initializers.orthogonal(), n == "hn", name=n)(h)
                   for n in ("hr", "hz", "hn")])


@functools.partial(jax.custom_vjp, nondiff_argnums=(5,))
def gru_scan(state_kernel: Array, c_n: Array, hidden: Array, inputs: tuple[Array, Array, Array],
             resets: Array, unroll: int | None = None) -> tuple[Array, Array]:
    """A GRU over the leading axis from ``hidden [..., H]``, zeroing the state where ``resets [L, ...]``
    holds: ``(last state, states [L, ..., H])``.

    ``inputs`` are the input products of gates r, z and n, biases included, each ``[L, ..., H]``;
    ``state_kernel [H, 3H]`` is ``u_r | u_z | u_n`` and ``c_n`` the bias of ``u_n``. The loop runs through
    ``loops.scan`` (rolled on the CPU, unrolled elsewhere, or ``unroll`` steps).

    The gradient is written out (``_gru_scan_bwd``) rather than left to ``scan``'s autodiff, which adds
    every step's weight gradients inside the loop as small products. Here the backward loop carries only
    the state's gradient, with one ``[rows, 3H] x [3H, H]`` product a step, and the weight gradients are one
    large product over all steps after it: a 64-step forward and backward pass over 192 rows took 56 ms
    instead of 91 ms on 2 CPU cores, and a recurrent MAPPO update launched 26% fewer kernels (its epochs
    43% fewer). Gradients come back in the dtypes of their inputs. Reverse mode only: ``jax.jvp`` of it
    raises, as of any ``custom_vjp``.
    """
    return _gru_forward(state_kernel, c_n, hidden, inputs, resets, unroll)[0]


def _gru_cell(carry: Array, x_r: Array, x_z: Array, x_n: Array, reset: Array, state_kernel: Array,
              c_n: Array) -> tuple[Array, tuple[Array, ...]]:
    """One GRU step: the new state and what its gradient needs (the state, gates ``r``, ``z``, candidate
    ``n``, and ``g = c @ u_n + c_n``, the state's candidate term that ``r`` scales)."""
    size = carry.shape[-1]
    carry = jnp.where(reset[..., None], jnp.zeros_like(carry), carry)
    # Off the CPU the reset state is an array of its own: XLA's GPU compiler (jax 0.10.2) fused the reset
    # into the product below and then failed to tile it for a few rows ("Couldn't find output tile
    # sizes": 6 rows of 16 or 8 units, as small test configs make). The CPU program stays as it was.
    carry = barrier_off_cpu(carry)
    # One product for the three gates; the inputs stay three arrays, as slicing one packed input every
    # step ran the forward pass twice as slowly on the CPU.
    state = carry @ state_kernel
    r = nn.sigmoid(x_r + state[..., :size])
    z = nn.sigmoid(x_z + state[..., size:2 * size])
    g = state[..., 2 * size:] + c_n
    n = jnp.tanh(x_n + r * g)
    new = (1.0 - z) * n + z * carry
    return new, (new, r, z, n, g)


def _gru_forward(state_kernel: Array, c_n: Array, hidden: Array, inputs: tuple[Array, Array, Array],
                 resets: Array, unroll: int | None) -> tuple[tuple[Array, Array], tuple[Any, ...]]:
    def step(carry: Array, xs: tuple[Array, Array, Array, Array]) -> tuple[Array, tuple[Array, ...]]:
        x_r, x_z, x_n, reset = xs
        return _gru_cell(carry, x_r, x_z, x_n, reset, state_kernel, c_n)

    last, (states, r, z, n, g) = loops.scan(step, hidden, (*inputs, resets), unroll=unroll)
    # Zero-size arrays carry the inputs' dtypes to the backward pass, which returns gradients in them.
    dtypes = tuple(jnp.zeros((0,), x.dtype) for x in (c_n, *inputs))
    return (last, states), (state_kernel, hidden, resets, states, r, z, n, g, dtypes)


def _gru_scan_bwd(unroll: int | None, residuals: tuple[Any, ...], cotangents: tuple[Array, Array]
                  ) -> tuple[Array, Array, Array, tuple[Array, Array, Array], None]:
    state_kernel, hidden, resets, states, r, z, n, g, dtypes = residuals
    d_last, d_states = cotangents
    # The state each step started from, after its reset: what the forward pass multiplied by u.
    previous = jnp.concatenate([hidden[None], states[:-1]])
    previous = jnp.where(resets[..., None], jnp.zeros_like(previous), previous)
    kernel_t = state_kernel.T

    def step(d_carry: Array, xs: tuple[Array, ...]) -> tuple[Array, tuple[Array, Array]]:
        d_state, c, r, z, n, g, reset = xs
        d_h = d_carry + d_state
        d_a_n = d_h * (1.0 - z) * (1.0 - n * n)
        # The gradient of the state's products c @ [u_r | u_z | u_n] (g is the last of them, plus c_n).
        d_product = jnp.concatenate([d_a_n * g * r * (1.0 - r), d_h * (c - n) * z * (1.0 - z), d_a_n * r], -1)
        d_c = d_h * z + d_product @ kernel_t
        return jnp.where(reset[..., None], jnp.zeros_like(d_c), d_c), (d_product, d_a_n)

    d_hidden, (d_product, d_a_n) = loops.scan(
        step, d_last, (d_states, previous, r, z, n, g, resets), reverse=True, unroll=unroll)
    size = hidden.shape[-1]
    rows = d_product.reshape(-1, 3 * size)
    d_kernel = previous.reshape(-1, size).T @ rows
    d_inputs = (d_product[..., :size], d_product[..., size:2 * size], d_a_n)
    c_n_dtype, *input_dtypes = (d.dtype for d in dtypes)
    return (d_kernel.astype(state_kernel.dtype), rows[:, 2 * size:].sum(0).astype(c_n_dtype),
            d_hidden.astype(hidden.dtype),
            tuple(d.astype(t) for d, t in zip(d_inputs, input_dtypes, strict=True)), None)


gru_scan.defvjp(_gru_forward, _gru_scan_bwd)


class GRUInputs(NamedTuple):
    """What ``gru_scan`` takes besides the state and the resets: ``ResetGRU.loop_inputs``."""

    state_kernel: Array
    """``[H, 3H]``: ``u_r | u_z | u_n``."""
    c_n: Array
    """``[H]``: the bias of ``u_n``."""
    projected: tuple[Array, Array, Array]
    """The input products of gates r, z and n, biases included, each ``[L, ..., H]``."""


class ResetGRU(nn.Module):
    """A GRU over the leading (time) axis whose hidden state is zeroed where ``resets`` is True.

    The cell is flax's ``GRUCell``: the same parameters under the same names, initialised the same way, and
    equal outputs up to float reassociation. The input transforms of all steps are computed before the
    loop, as three large products instead of three small ones per step (a fifth off a 26-step
    forward-and-backward pass on CPU), and the loop is ``gru_scan``, whose gradient is written out.
    """

    hidden_size: int

    @nn.compact
    def loop_inputs(self, inputs: Array) -> GRUInputs:
        """``inputs [L, M, n, F]`` -> what the loop takes (``gru_pair`` runs two GRUs' loops as one)."""
        cell = _GRUCellWeights(self.hidden_size, name="GRUCell_0")
        (w_r, b_r), (w_z, b_z), (w_n, b_n), (u_r, _), (u_z, _), (u_n, c_n) = cell(inputs.shape[-1])
        x = inputs.astype(jnp.float32)
        rows = x.reshape(-1, x.shape[-1])

        def project(w: Array, b: Array) -> Array:
            return (rows @ w + b).reshape(*x.shape[:-1], self.hidden_size)

        projected = (project(w_r, b_r), project(w_z, b_z), project(w_n, b_n))
        return GRUInputs(jnp.concatenate([u_r, u_z, u_n], 1), c_n, projected)

    def __call__(self, hidden: Array, inputs: Array, resets: Array) -> tuple[Array, Array]:
        """``hidden [M, n, H]``, ``inputs [L, M, n, F]``, ``resets [L, M, n]``
        -> ``(hidden, [L, M, n, H])``."""
        kernel, c_n, projected = self.loop_inputs(inputs)
        return gru_scan(kernel, c_n, hidden.astype(jnp.float32), projected, resets)


def gru_pair(first: GRUInputs, second: GRUInputs, hidden: tuple[Array, Array], resets: Array
             ) -> tuple[tuple[Array, Array], tuple[Array, Array]]:
    """Two GRUs over the same steps and resets, as an actor's and a critic's are: ``gru_scan`` of each,
    ``((last, states), (last, states))``. Their inputs (``ResetGRU.loop_inputs``) and states must have the
    same shapes.

    On the CPU the two loops run one after the other, as apart. Elsewhere they run as one loop over both,
    each step one batched product for the two states: a GPU launches a step's kernels once for both GRUs
    (MAPPO's recurrent update on SMAX 3m, compiled for an H200: 18,041 -> 12,541 kernels).
    """
    hidden = (hidden[0].astype(jnp.float32), hidden[1].astype(jnp.float32))

    def apart(first: GRUInputs, second: GRUInputs, hidden: tuple[Array, Array], resets: Array
              ) -> tuple[tuple[Array, Array], tuple[Array, Array]]:
        return (gru_scan(first.state_kernel, first.c_n, hidden[0], first.projected, resets),
                gru_scan(second.state_kernel, second.c_n, hidden[1], second.projected, resets))

    def together(first: GRUInputs, second: GRUInputs, hidden: tuple[Array, Array], resets: Array
                 ) -> tuple[tuple[Array, Array], tuple[Array, Array]]:
        # The pair's axis leads the parameters and states and follows time in the inputs, which the loop
        # runs over.
        projected = tuple(jnp.stack(pair, 1) for pair in zip(first.projected, second.projected, strict=True))
        pair_scan = jax.vmap(gru_scan, in_axes=(0, 0, 0, 1, None))
        last, states = cast(tuple[Array, Array], pair_scan(
            jnp.stack([first.state_kernel, second.state_kernel]), jnp.stack([first.c_n, second.c_n]),
            jnp.stack(hidden), projected, resets))
        # Each GRU's states as an array of its own: XLA's GPU compiler (jax 0.10.2) failed to tile a
        # product whose operand was a slice of the pair's stacked states fused into it.
        first_states, second_states = jax.lax.optimization_barrier((states[0], states[1]))
        return (last[0], first_states), (last[1], second_states)

    return fork(first, second, hidden, resets, cpu=apart, accelerator=together)


def policy_width(space: Space) -> int:
    """Outputs the actor head needs: logits for ``Discrete``, the mean for ``Box``."""
    if isinstance(space, Discrete):
        return space.n
    if isinstance(space, Box) and len(space.shape) == 1:
        return space.shape[0]
    raise IncompatibleEnvError(f"baselines support Discrete and 1-D Box action spaces, got {space}")


def action_distribution(
    space: Space, head: Array, log_std: Array | None, mask: Array | None
) -> distrax.Distribution:
    """The policy for one action space.

    - ``Discrete``: a categorical over ``head`` (logits); illegal actions (``mask`` False) get zero
      probability.
    - ``Box``: a diagonal Gaussian with mean ``head`` and state-independent ``log_std``. Samples are
      clipped to the box only when sent to the env (``to_env_action``), so log-probabilities stay exact
      for the sampled value (the "clipped Gaussian" of PPO implementations).
    """
    if isinstance(space, Discrete):
        logits = head if mask is None else jnp.where(mask, head, MASKED_LOGIT)
        return distrax.Categorical(logits=logits)
    if log_std is None:
        raise ValueError("a Box action space needs log_std")
    return distrax.MultivariateNormalDiag(head, jnp.broadcast_to(jnp.exp(log_std), head.shape))


def sample_action(
    space: Space, head: Array, log_std: Array | None, mask: Array | None, key: Array
) -> tuple[Array, Array]:
    """An action drawn from ``action_distribution`` and its log-probability; ``head``'s leading axes
    (``[envs, agents]``) stay on both.

    The draw runs over the leading axes flattened into one. JAX's random bits depend only on the flat
    index, so the numbers are the same; but XLA's CPU backend generates bits for a shape with a small
    minor axis slowly: sampling ``[1024, 3, 5]`` logits for 128 steps took 41 ms, flattened 17 ms.

    A ``Discrete`` draw is distrax's ``Categorical.sample_and_log_prob`` written out, with the same key
    use, so the actions and log-probabilities are the same bit for bit, without its check that the
    probabilities are finite (it returns action -1 where they are not). That check cost a softmax and a
    reduction every rollout step, 2 of IPPO's 33 kernels a step on MPE spread compiled for an H200; the
    logits here are finite unless the parameters already are not.
    """
    lead, width = head.shape[:-1], head.shape[-1]

    def flat(x: Array | None) -> Array | None:
        return None if x is None else jnp.broadcast_to(x, head.shape).reshape(-1, width)

    if isinstance(space, Discrete):
        logits = head.reshape(-1, width)
        if mask is not None:
            logits = jnp.where(jnp.broadcast_to(mask, head.shape).reshape(-1, width), logits, MASKED_LOGIT)
        normalized = jax.nn.log_softmax(logits, axis=-1)
        action = jax.random.categorical(key, normalized, axis=-1, shape=(1, logits.shape[0]))[0]
        log_prob = jnp.take_along_axis(normalized, action[:, None], axis=-1)[:, 0]
        return action.reshape(lead), log_prob.reshape(lead)
    action, log_prob = action_distribution(space, head.reshape(-1, width), flat(log_std),
                                           flat(mask)).sample_and_log_prob(seed=key)
    action, log_prob = jnp.asarray(action), jnp.asarray(log_prob)
    return action.reshape(*lead, *action.shape[1:]), log_prob.reshape(lead)


def to_env_action(space: Space, action: Array) -> Array:
    """What the env receives: integer actions as they are, Gaussian samples clipped into the box."""
    if isinstance(space, Box):
        return jnp.clip(action, space.low, space.high)
    return action.astype(space.dtype)


def init_group_params(
    module: nn.Module, key: Array, num_agents: int, independent: bool, *example: Array
) -> Any:
    """Parameters for one group: one set shared by its agents, or (``independent``) one per agent,
    stacked on a leading axis of size ``num_agents``."""
    if not independent:
        return module.init(key, *example)
    return jax.vmap(lambda k: module.init(k, *example))(jax.random.split(key, num_agents))


def group_apply(module: nn.Module, independent: bool, agent_axes: Sequence[int | None]) -> Callable[..., Any]:
    """``apply(params, *inputs)`` for a group: ``group_map(module.apply, ...)``."""
    return group_map(module.apply, independent, agent_axes)


def group_map(apply: Callable[..., Any], independent: bool, agent_axes: Sequence[int | None]
              ) -> Callable[..., Any]:
    """``apply(params, *inputs)`` (a module's ``apply``, or a function of several modules' parameters) for a
    group.

    Shared parameters broadcast over the agent axis. With ``independent`` parameters agent ``i`` uses
    ``params[i]`` (every leaf's row ``i``): a vmap over each input's agent axis (``agent_axes``, None for
    inputs without one). ``apply`` must return outputs shaped ``[..., n, features]`` (a value head keeps a
    trailing 1), so the agent axis of every output is the second to last.
    """
    if not independent:
        return apply

    def per_agent(params: Any, *inputs: Array) -> Any:
        def one_agent(agent_params: Any, *agent_inputs: Array) -> Any:
            expanded = [
                x if axis is None else jnp.expand_dims(x, axis)
                for x, axis in zip(agent_inputs, agent_axes, strict=True)
            ]
            out = apply(agent_params, *expanded)
            return jax.tree.map(lambda y: jnp.squeeze(y, -2) if y.ndim >= 2 else y, out)

        return jax.vmap(one_agent, in_axes=(0, *agent_axes), out_axes=-2)(params, *inputs)

    return per_agent
