"""MAPPO's actor and critic, without training: the parameters (names and initial values) of the networks
as they were built in one compact method, and the two GRUs' loops run as one off the CPU computing what
they compute apart. Nothing here compiles a training program, so the module takes seconds."""

from __future__ import annotations

import functools
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite import bench
from jaxmarl_suite.baselines import mappo
from jaxmarl_suite.training.kit import networks

GRU = 8


class _CompactNetwork(nn.Module):
    """MAPPO's actor (``width`` > 1, with ``log_std``) or critic as its file built them until 2026-11-26,
    in one compact method: what checkpoints written then hold."""

    width: int
    recurrent: bool
    actor: bool

    @nn.compact
    def __call__(self, hidden: jax.Array, x: jax.Array, starts: jax.Array) -> tuple[jax.Array, ...]:
        x = x.reshape(*starts.shape, -1)
        if self.recurrent:
            x = networks.MLP((GRU,), "relu")(x)
            hidden, x = networks.ResetGRU(GRU)(hidden, x, starts)
        x = networks.MLP((32, 16), "relu")(x)
        head = networks.Dense(self.width, kernel_init=networks.orthogonal(0.01 if self.actor else 1.0))(x)
        if not self.actor:
            return hidden, head
        log_std = self.param("log_std", nn.initializers.zeros, (self.width,))
        return hidden, head, jnp.broadcast_to(log_std, head.shape)


def _example(recurrent: bool, features: int, steps: int = 1, n: int = 3) -> tuple[jax.Array, ...]:
    key = jax.random.PRNGKey(7)
    return (jnp.zeros((4, n, GRU if recurrent else 1)), jax.random.normal(key, (steps, 4, n, features)),
            jnp.zeros((steps, 4, n), bool).at[steps // 2, 1].set(True))


@pytest.mark.parametrize("recurrent", [False, True], ids=["feed_forward", "recurrent"])
def test_actor_and_critic_keep_the_parameters_of_the_compact_networks(recurrent: bool) -> None:
    nets = {"actor": (mappo.Actor((32, 16), "relu", recurrent, GRU, 5), _CompactNetwork(5, recurrent, True)),
            "critic": (mappo.Critic((32, 16), "relu", recurrent, GRU), _CompactNetwork(1, recurrent, False))}
    for name, (net, compact) in nets.items():
        example = _example(recurrent, 11, steps=6)
        params = net.init(jax.random.PRNGKey(3), *example)
        want = compact.init(jax.random.PRNGKey(3), *example)
        assert jax.tree.structure(params) == jax.tree.structure(want), name
        for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(want), strict=True):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(net.apply(params, *example), compact.apply(want, *example), strict=True):
            np.testing.assert_array_equal(a, b)


def _pair_problem(independent: bool) -> tuple[Callable, tuple, tuple]:
    actor = mappo.Actor((32, 16), "relu", True, GRU, 5)
    critic = mappo.Critic((32, 16), "relu", True, GRU)
    n, per_agent = 3, 1 if independent else 3
    key_a, key_c, obs_key, state_key = jax.random.split(jax.random.PRNGKey(0), 4)
    hidden, obs, starts = _example(True, 11, steps=6)
    state = jax.random.normal(state_key, (6, 4, n, 20))
    params = tuple(networks.init_group_params(net, k, n, independent, *_example(True, f, n=per_agent))
                   for net, k, f in ((actor, key_a, 11), (critic, key_c, 20)))
    both = networks.group_map(mappo.actor_and_critic(actor, critic), independent, mappo.BOTH_AGENT_AXES)
    inputs = (hidden, hidden + 0.5, obs, state, starts)
    return both, params, inputs


@pytest.mark.parametrize("independent", [False, True], ids=["shared", "per_agent"])
def test_the_gru_pair_off_the_cpu_computes_what_the_two_grus_compute_apart(
        monkeypatch: pytest.MonkeyPatch, independent: bool) -> None:
    """``actor_and_critic`` (through ``group_map``) with ``platform_dependent`` taking its off-CPU branch,
    on the CPU: one loop for both GRUs gives the outputs and gradients of the two loops apart, up to the
    order of the sums."""
    both, params, inputs = _pair_problem(independent)

    def loss(params: tuple) -> tuple[jax.Array, tuple[jax.Array, ...]]:
        out = both(params, *inputs)
        return (jnp.sum(jnp.sin(out[2])) + jnp.sum(jnp.exp(out[3])) + jnp.sum(out[4] ** 2)
                + jnp.sum(out[0] * out[1]), out)

    # A jit of its own each time: the second traces with the patched platform_dependent.
    (want_loss, want), want_grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(params)
    branches = []

    def off_the_cpu(*args: object, cpu: Callable, default: Callable, **platforms: Callable) -> object:
        branches.append(getattr(default, "__qualname__", ""))
        return default(*args)

    monkeypatch.setattr(jax.lax, "platform_dependent", off_the_cpu)
    (have_loss, have), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(params)
    assert "gru_pair.<locals>.together" in branches
    for a, b in zip([have_loss, *have], [want_loss, *want], strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    # the gradient reached every parameter of both networks
    assert all(np.any(np.asarray(g) != 0) for g in jax.tree.leaves(grads) if g.size > 1)


def test_for_a_gpu_the_two_grus_launch_one_loop() -> None:
    """Compiled for an H200, the loss's forward and backward pass through both GRUs has one forward and one
    backward loop, and fewer kernels than the two networks called one by one (the negative control)."""
    try:
        bench.gpu_target_device()
    except bench.GpuTargetUnavailableError:
        pytest.skip("needs JAX's CUDA plugin (the gpu-target extra) to compile for a GPU")
    both, params, inputs = _pair_problem(False)
    actor = mappo.Actor((32, 16), "relu", True, GRU, 5)
    critic = mappo.Critic((32, 16), "relu", True, GRU)

    def apart(params: tuple, hidden: jax.Array, critic_hidden: jax.Array, obs: jax.Array,
              state: jax.Array, starts: jax.Array) -> tuple[jax.Array, ...]:
        hidden, head, log_std = actor.apply(params[0], hidden, obs, starts)
        critic_hidden, value = critic.apply(params[1], critic_hidden, state, starts)
        return hidden, critic_hidden, head, log_std, value

    def loss(apply: Callable, params: tuple) -> jax.Array:
        out = apply(params, *inputs)
        return jnp.sum(jnp.sin(out[2])) + jnp.sum(out[4] ** 2)

    paired = bench.gpu_kernel_counts(jax.grad(functools.partial(loss, both)), params)
    one_by_one = bench.gpu_kernel_counts(jax.grad(functools.partial(loss, apart)), params)
    assert len(paired.loops) == 0 and paired.per_call < one_by_one.per_call, (paired, one_by_one)
