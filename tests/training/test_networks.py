"""The kit's networks.

- Action sampling: drawn over flattened leading axes (fast on the CPU), yet the same actions and
  log-probabilities as sampling the distribution over ``[envs, agents, actions]`` directly.
- The resetting GRU, whose gradient is written out: the same outputs and gradients as flax's ``GRUCell``.
- An actor and a critic tower side by side off the CPU: the same parameters and the same values.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite import bench
from jaxmarl_suite.core.spaces import Box, Discrete
from jaxmarl_suite.training.kit import networks
from jaxmarl_suite.training.kit.loops import ACCELERATOR_UNROLL
from jaxmarl_suite.training.kit.networks import (
    MLP,
    Dense,
    ResetGRU,
    action_distribution,
    gru_scan,
    orthogonal,
    sample_action,
    towers_side_by_side,
    two_towers,
)


@pytest.mark.parametrize("space", [Discrete(5), Box(-1.0, 1.0, (2,))], ids=["discrete", "box"])
def test_sample_action_equals_sampling_the_unflattened_distribution(space) -> None:
    key, head_key, mask_key = jax.random.split(jax.random.PRNGKey(0), 3)
    width = 5 if isinstance(space, Discrete) else 2
    head = jax.random.normal(head_key, (64, 3, width))
    log_std = jnp.full((width,), -0.5) if isinstance(space, Box) else None
    mask = None
    if isinstance(space, Discrete):
        mask = jax.random.uniform(mask_key, head.shape) < 0.6
        mask = mask.at[..., 0].set(True)
    action, log_prob = sample_action(space, head, log_std, mask, key)
    want_action, want_log_prob = action_distribution(space, head, log_std, mask).sample_and_log_prob(seed=key)
    assert action.shape == want_action.shape and log_prob.shape == (64, 3)
    np.testing.assert_array_equal(action, want_action)
    np.testing.assert_allclose(log_prob, want_log_prob, rtol=1e-6, atol=1e-6)
    if mask is not None:
        assert bool(jnp.take_along_axis(mask, action[..., None], -1).all()), "an illegal action was drawn"


def _draw_problem(masked: bool) -> tuple:
    """The written-out draw, distrax's ``Categorical`` draw on the same flattened logits, and their inputs:
    256 x 3 heads of five actions, masked (one row with a single legal action) or not."""
    space = Discrete(5)
    key, head_key, mask_key = jax.random.split(jax.random.PRNGKey(3), 3)
    head = 4.0 * jax.random.normal(head_key, (256, 3, 5))
    mask = None
    if masked:
        mask = (jax.random.uniform(mask_key, head.shape) < 0.5).at[..., 2].set(True)
        mask = mask.at[0, 0].set(jnp.arange(5) == 4)

    def distrax_draw(head: jax.Array, mask: jax.Array | None, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        flat_mask = None if mask is None else mask.reshape(-1, 5)
        distribution = action_distribution(space, head.reshape(-1, 5), None, flat_mask)
        action, log_prob = distribution.sample_and_log_prob(seed=key)
        return action.reshape(256, 3), log_prob.reshape(256, 3)

    def ours(head: jax.Array, mask: jax.Array | None, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        return sample_action(space, head, None, mask, key)

    return ours, distrax_draw, head, mask, key


@pytest.mark.parametrize("masked", [False, True])
def test_a_discrete_draw_is_distraxs_bit_for_bit(masked: bool) -> None:
    """The same actions and log-probabilities as distrax's exactly, with and without masks."""
    ours, distrax_draw, head, mask, key = _draw_problem(masked)
    for k in jax.random.split(key, 4):
        action, log_prob = jax.jit(ours)(head, mask, k)
        want_action, want_log_prob = jax.jit(distrax_draw)(head, mask, k)
        np.testing.assert_array_equal(action, want_action)
        np.testing.assert_array_equal(log_prob, want_log_prob)
        assert action.dtype == want_action.dtype and log_prob.dtype == want_log_prob.dtype
        if masked:
            assert int(action[0, 0]) == 4 and float(log_prob[0, 0]) == 0.0


@pytest.mark.parametrize("masked", [False, True])
def test_for_an_h200_the_discrete_draw_launches_fewer_kernels_than_distraxs(
    masked: bool, gpu_target: object
) -> None:
    """distrax's draw also computes every probability to check them."""
    ours, distrax_draw, head, mask, key = _draw_problem(masked)
    assert (bench.gpu_kernel_counts(ours, head, mask, key).per_call
            < bench.gpu_kernel_counts(distrax_draw, head, mask, key).per_call)


def _flax_gru_loop(cell_params, hidden, inputs, resets):
    """The reference: flax's own ``GRUCell``, one Python step at a time, zeroing the state at resets."""
    cell = nn.GRUCell(features=hidden.shape[-1])
    states = []
    for t in range(inputs.shape[0]):
        hidden = jnp.where(resets[t][..., None], 0.0, hidden)
        hidden, _ = cell.apply({"params": cell_params}, hidden, inputs[t])
        states.append(hidden)
    return hidden, jnp.stack(states)


def _gru_problem(steps: int = 12, size: int = 8):
    keys = jax.random.split(jax.random.PRNGKey(3), 7)
    inputs = jax.random.normal(keys[0], (steps, 4, 3, 5))
    resets = (jax.random.uniform(keys[1], (steps, 4, 3)) < 0.2).at[0, 0, 0].set(True)
    hidden = jax.random.normal(keys[2], (4, 3, size))
    gru = ResetGRU(size)
    params = gru.init(keys[3], hidden, inputs, resets)
    # Fresh biases are zero, which would hide a bias dropped from the forward or backward pass.
    leaves, tree = jax.tree.flatten(params)
    noise = jax.random.split(keys[4], len(leaves))
    params = jax.tree.unflatten(tree, [w + 0.3 * jax.random.normal(k, w.shape) for w, k in zip(leaves, noise,
                                                                                                strict=True)])
    # Weights on both outputs, so the last state's gradient and every step's are checked.
    last_weight = jax.random.normal(keys[5], hidden.shape)
    states_weight = jax.random.normal(keys[6], (steps, 4, 3, size))
    return gru, params, hidden, inputs, resets, last_weight, states_weight


def test_reset_gru_equals_flax_gru_cell_forward_and_gradient() -> None:
    """Outputs and gradients (parameters, inputs, initial state) of the GRU with its written-out gradient
    equal autodiff through flax's ``GRUCell`` stepped in Python, with resets mid-sequence and at step 0."""
    gru, params, hidden, inputs, resets, last_weight, states_weight = _gru_problem()

    def ours(params, hidden, inputs):
        last, states = gru.apply(params, hidden, inputs, resets)
        return jnp.sum(last * last_weight) + jnp.sum(states * states_weight), (last, states)

    def reference(params, hidden, inputs, resets=resets):
        last, states = _flax_gru_loop(params["params"]["GRUCell_0"], hidden, inputs, resets)
        return jnp.sum(last * last_weight) + jnp.sum(states * states_weight), (last, states)

    args = (params, hidden, inputs)
    (value, outputs), grads = jax.value_and_grad(ours, argnums=(0, 1, 2), has_aux=True)(*args)
    reference_grad = jax.value_and_grad(reference, argnums=(0, 1, 2), has_aux=True)
    (want_value, want_outputs), want_grads = reference_grad(*args)
    for got, want in zip(jax.tree.leaves((value, outputs)), jax.tree.leaves((want_value, want_outputs)),
                         strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert jax.tree.structure(grads) == jax.tree.structure(want_grads)
    for got, want in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

    # Negative control: the comparison tells a GRU that ignored the resets from one that honours them.
    _, wrong_grads = reference_grad(*args, jnp.zeros_like(resets))
    assert not all(np.allclose(g, w, rtol=1e-4, atol=1e-5)
                   for g, w in zip(jax.tree.leaves(grads), jax.tree.leaves(wrong_grads), strict=True))


def test_gru_scan_unrolled_as_on_an_accelerator_equals_rolled() -> None:
    """The unrolled loops an accelerator runs give the CPU's rolled results, values and gradients."""
    # A length that the unroll does not divide, so the loop's remainder steps run too.
    _, params, hidden, inputs, resets, last_weight, states_weight = _gru_problem(ACCELERATOR_UNROLL + 3)
    weights = params["params"]["GRUCell_0"]
    kernel = jnp.concatenate([weights[n]["kernel"] for n in ("hr", "hz", "hn")], 1)
    projected = tuple(inputs @ weights[n]["kernel"] + weights[n]["bias"] for n in ("ir", "iz", "in"))

    def loss(kernel, c_n, hidden, projected, unroll):
        last, states = gru_scan(kernel, c_n, hidden, projected, resets, unroll)
        return jnp.sum(last * last_weight) + jnp.sum(states * states_weight)

    args = (kernel, weights["hn"]["bias"], hidden, projected)
    grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2, 3)), static_argnums=4)
    rolled, unrolled = grad(*args, 1), grad(*args, ACCELERATOR_UNROLL)
    for got, want in zip(jax.tree.leaves(unrolled), jax.tree.leaves(rolled), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_gru_loops_roll_on_the_cpu_and_unroll_when_lowered_for_a_gpu() -> None:
    """The platform is chosen when the program is lowered: for the CPU the GRU's forward and backward loops
    stay loops; lowered for CUDA (no GPU needed to lower), a sequence of ``ACCELERATOR_UNROLL`` steps has no
    loop left."""
    gru, params, hidden, inputs, resets, last_weight, states_weight = _gru_problem(ACCELERATOR_UNROLL)

    def loss(params):
        last, states = gru.apply(params, hidden, inputs, resets)
        return jnp.sum(last * last_weight) + jnp.sum(states * states_weight)

    traced = jax.jit(jax.grad(loss)).trace(params)
    assert traced.lower(lowering_platforms=("cpu",)).as_text().count("stablehlo.while") == 2
    assert traced.lower(lowering_platforms=("cuda",)).as_text().count("stablehlo.while") == 0


def test_reset_gru_gradient_per_agent_parameters_under_vmap() -> None:
    """Per-agent parameters (``vmap`` over parameters and inputs, as ``group_apply`` does) get the gradients
    of the flax reference, in float32 even when the initial state comes in another dtype."""
    gru, params, hidden, inputs, resets, last_weight, states_weight = _gru_problem()
    both = jax.tree.map(lambda w: jnp.stack([w, 0.5 * w[::-1] if w.ndim else w]), params)

    def loss(params, hidden, inputs, apply):
        last, states = apply(params, hidden, inputs)
        return jnp.sum(last * last_weight[0]) + jnp.sum(states * states_weight[:, 0])

    def ours(params, hidden, inputs):
        return gru.apply(params, hidden.astype(jnp.bfloat16), inputs, resets[:, 0])

    def reference(params, hidden, inputs):
        rounded = hidden.astype(jnp.bfloat16).astype(jnp.float32)
        return _flax_gru_loop(params["params"]["GRUCell_0"], rounded, inputs, resets[:, 0])

    per_agent = (both, hidden[:2], inputs[:, :2].swapaxes(0, 1))
    got = jax.jit(jax.vmap(jax.grad(lambda *a: loss(*a, ours))))(*per_agent)
    want = jax.jit(jax.vmap(jax.grad(lambda *a: loss(*a, reference))))(*per_agent)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        assert g.dtype == jnp.float32
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


class _Towers(nn.Module):
    """An actor and a critic tower on one input, through ``two_towers`` or (``apart``) called one by one."""

    apart: bool = False
    critic_sizes: tuple[int, ...] = (32, 16)

    @nn.compact
    def __call__(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        actor = (MLP((32, 16), "tanh"), Dense(5, kernel_init=orthogonal(0.01)))
        critic = (MLP(self.critic_sizes, "tanh"), Dense(1, kernel_init=orthogonal(1.0)))
        if self.apart:
            return actor[1](actor[0](x)), critic[1](critic[0](x))
        return two_towers(x, actor, critic)


def test_two_towers_keep_their_parameters_and_side_by_side_computes_the_same() -> None:
    x = jax.random.normal(jax.random.PRNGKey(1), (4, 8, 3, 18))
    params = _Towers(apart=True).init(jax.random.PRNGKey(0), x)
    same = _Towers().init(jax.random.PRNGKey(0), x)
    assert jax.tree.structure(same) == jax.tree.structure(params)
    for a, b in zip(jax.tree.leaves(same), jax.tree.leaves(params), strict=True):
        np.testing.assert_array_equal(a, b)
    want = _Towers(apart=True).apply(params, x)
    for have, expected in zip(_Towers().apply(params, x), want, strict=True):  # the CPU runs them apart
        np.testing.assert_array_equal(have, expected)

    p = params["params"]

    def side_by_side(p: dict, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        return towers_side_by_side(nn.tanh, x, p["MLP_0"], p["Dense_0"], p["MLP_1"], p["Dense_1"])

    def apart(p: dict, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        return _Towers(apart=True).apply({"params": p}, x)

    for have, expected in zip(side_by_side(p, x), want, strict=True):
        assert have.shape == expected.shape
        np.testing.assert_allclose(have, expected, rtol=1e-5, atol=1e-6)

    grads, want_grads = (
        jax.jit(jax.grad(functools.partial(_towers_loss, f)))(p, x) for f in (side_by_side, apart)
    )
    for have, expected in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
        np.testing.assert_allclose(have, expected, rtol=1e-4, atol=1e-5)


def _towers_loss(forward: Callable, p: dict, x: jax.Array) -> jax.Array:
    head, value = forward(p, x)
    return jnp.sum(jnp.sin(head)) + jnp.sum(value**2)


def test_for_an_h200_the_towers_side_by_side_launch_fewer_kernels(gpu_target: object) -> None:
    """For an H200 ``_Towers`` runs its two towers side by side: fewer kernels for the forward and backward
    pass than the two apart."""
    x = jax.random.normal(jax.random.PRNGKey(1), (4, 8, 3, 18))
    p = _Towers(apart=True).init(jax.random.PRNGKey(0), x)["params"]

    def together(p: dict, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        return _Towers().apply({"params": p}, x)

    def apart(p: dict, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        return _Towers(apart=True).apply({"params": p}, x)

    side_by_side = bench.gpu_kernel_counts(jax.grad(functools.partial(_towers_loss, together)), p, x).per_call
    one_by_one = bench.gpu_kernel_counts(jax.grad(functools.partial(_towers_loss, apart)), p, x).per_call
    assert side_by_side < one_by_one, (side_by_side, one_by_one)


# shared parameters without a GRU: test_two_towers_keep_their_parameters_and_side_by_side_computes_the_same
@pytest.mark.parametrize(("independent", "recurrent"), [(True, False), (False, True)])
def test_ippo_off_the_cpu_equals_ippo_on_it(monkeypatch: pytest.MonkeyPatch, independent: bool,
                                            recurrent: bool) -> None:
    """IPPO's actor-critic with every ``platform_dependent`` taking its off-CPU branch, on the CPU: the
    towers side by side through ``group_apply`` (shared or per-agent parameters, after the GRU or not) give
    the CPU's values and gradients up to the order of the sums; towers of other sizes still run apart."""
    from jaxmarl_suite.baselines.ippo import ActorCritic

    net = ActorCritic(5, (32, 16), "tanh", recurrent, 8)
    apply = networks.group_apply(net, independent, (1, 2, 2))
    n, per_agent = 3, 1 if independent else 3
    key, obs_key = jax.random.split(jax.random.PRNGKey(0))
    example = (jnp.zeros((1, per_agent, 8)), jnp.zeros((1, 1, per_agent, 18)),
               jnp.zeros((1, 1, per_agent), bool))
    params = networks.init_group_params(net, key, n, independent, *example)
    hidden = jnp.zeros((4, n, 8))
    obs = jax.random.normal(obs_key, (6, 4, n, 18))
    starts = jnp.zeros((6, 4, n), bool).at[3, 1].set(True)

    def loss(params: dict) -> tuple[jax.Array, tuple[jax.Array, ...]]:
        out = apply(params, hidden, obs, starts)
        return jnp.sum(jnp.sin(out[1])) + jnp.sum(out[3] ** 2), out

    # jitted, as training runs it; each jit traces anew, so the patch below takes effect
    (want_loss, want), want_grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(params)
    calls = []

    def off_the_cpu(*args: object, cpu: Callable, default: Callable, **platforms: Callable) -> object:
        calls.append(default)
        return default(*args)

    monkeypatch.setattr(jax.lax, "platform_dependent", off_the_cpu)
    (have_loss, have), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(params)
    assert any(isinstance(c, functools.partial) and c.func is towers_side_by_side for c in calls)
    for a, b in zip([have_loss, *have], [want_loss, *want], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    calls.clear()
    uneven, even = _Towers(critic_sizes=(32,)), _Towers(critic_sizes=(32,), apart=True)
    x = obs.reshape(-1, 18)
    towers = uneven.init(key, x)
    for a, b in zip(uneven.apply(towers, x), even.apply(towers, x), strict=True):
        np.testing.assert_array_equal(a, b)
    assert not any(isinstance(c, functools.partial) and c.func is towers_side_by_side for c in calls)
