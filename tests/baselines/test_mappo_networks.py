"""MAPPO's actor and critic, without training: the parameters (names and initial values) of the networks
as they were built in one compact method, and the two GRUs' loops run as one off the CPU computing what
they compute apart. Nothing here compiles a training program, so the module takes seconds."""

from __future__ import annotations

import functools
import re
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
        x = x.reshape(*starts.shape, -1).astype(jnp.float32)
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
    actor, critic = _networks(recurrent)
    nets = {"actor": (actor, _CompactNetwork(5, recurrent, True)),
            "critic": (critic, _CompactNetwork(1, recurrent, False))}
    for name, (net, compact) in nets.items():
        example = _example(recurrent, 11, steps=6)
        params = net.init(jax.random.PRNGKey(3), *example)
        want = compact.init(jax.random.PRNGKey(3), *example)
        assert jax.tree.structure(params) == jax.tree.structure(want), name
        for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(want), strict=True):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(net.apply(params, *example), compact.apply(want, *example), strict=True):
            np.testing.assert_array_equal(a, b)


def _networks(recurrent: bool) -> tuple[mappo.Actor, mappo.Critic]:
    return (mappo.Actor((32, 16), "relu", recurrent, GRU, head_width=5),
            mappo.Critic((32, 16), "relu", recurrent, GRU))


def _pair_problem(independent: bool, recurrent: bool = True, obs_shape: tuple[int, ...] = (11,),
                  steps: int = 6, envs: int = 4) -> tuple[tuple, tuple]:
    """Parameters ``(actor, critic)`` of a 3-agent group and the inputs of ``actor_and_critic``'s apply."""
    actor, critic = _networks(recurrent)
    n, per_agent = 3, 1 if independent else 3
    key_a, key_c, obs_key, state_key = jax.random.split(jax.random.PRNGKey(0), 4)
    width = GRU if recurrent else 1

    def example(*features: int) -> tuple[jax.Array, ...]:
        return (jnp.zeros((1, per_agent, width)), jnp.zeros((1, 1, per_agent, *features)),
                jnp.zeros((1, 1, per_agent), bool))

    params = (networks.init_group_params(actor, key_a, n, independent, *example(*obs_shape)),
              networks.init_group_params(critic, key_c, n, independent, *example(20)))
    obs = jax.random.normal(obs_key, (steps, envs, n, *obs_shape))
    state = jax.random.normal(state_key, (steps, envs, n, 20))
    starts = jnp.zeros((steps, envs, n), bool).at[steps // 2, 1].set(True)
    hidden = jax.random.normal(key_a, (envs, n, width))
    return params, (hidden, hidden + 0.5, obs, state, starts)


def _apart(independent: bool, recurrent: bool) -> Callable[..., tuple[jax.Array, ...]]:
    """The actor and the critic called one by one, as MAPPO did before ``actor_and_critic``."""
    actor, critic = (networks.group_apply(net, independent, mappo.AGENT_AXES) for net in _networks(recurrent))

    def apply(params: tuple, hidden: jax.Array, critic_hidden: jax.Array, obs: jax.Array, state: jax.Array,
              starts: jax.Array) -> tuple[jax.Array, ...]:
        hidden, head, log_std = actor(params[0], hidden, obs, starts)
        critic_hidden, value = critic(params[1], critic_hidden, state, starts)
        return hidden, critic_hidden, head, log_std, value

    return apply


def _both(independent: bool, recurrent: bool) -> Callable[..., tuple[jax.Array, ...]]:
    return networks.group_map(mappo.actor_and_critic(*_networks(recurrent)), independent,
                              mappo.BOTH_AGENT_AXES)


def _loss(apply: Callable, params: tuple, *inputs: jax.Array) -> tuple[jax.Array, tuple[jax.Array, ...]]:
    out = apply(params, *inputs)
    return (jnp.sum(jnp.sin(out[2])) + jnp.sum(jnp.exp(out[3])) + jnp.sum(out[4] ** 2)
            + jnp.sum(out[0] * jnp.cos(out[1])), out)


@pytest.mark.parametrize(("independent", "recurrent", "obs_shape", "on_the_cpu"), [
    pytest.param(False, True, (11,), True, id="shared"),
    # per-agent parameters: the one-loop pair by default; on the CPU the pair is the shared case's two
    # loops under one more vmap, checked under slow
    pytest.param(True, True, (11,), False, id="per_agent"),
    pytest.param(True, True, (11,), True, id="per_agent_on_the_cpu", marks=pytest.mark.slow),
    # flattened as flat observations are (MAPPO traces on Overcooked by default: test_ppo_families.py)
    pytest.param(False, True, (4, 3, 2), True, id="image_obs", marks=pytest.mark.slow),
    pytest.param(True, False, (11,), True, id="feed_forward")])
def test_actor_and_critic_compute_what_the_two_networks_compute_one_by_one(
        monkeypatch: pytest.MonkeyPatch, independent: bool, recurrent: bool, obs_shape: tuple[int, ...],
        on_the_cpu: bool) -> None:
    """``actor_and_critic`` (through ``group_map``) against the actor and the critic called apart (through
    ``group_apply``), outputs and gradients: bit for bit on the CPU, where the two GRU loops run apart; and
    with ``platform_dependent`` taking its off-CPU branch, where one loop runs both GRUs, up to the order
    of the sums. (The forced branch also unrolls ``loops.scan`` as on a GPU, on both sides alike.)"""
    params, inputs = _pair_problem(independent, recurrent, obs_shape)

    def value_and_grad(apply: Callable) -> tuple:
        # A jit of its own each time: a trace under the patched platform_dependent is not reused.
        return jax.jit(jax.value_and_grad(functools.partial(_loss, apply), has_aux=True))(params, *inputs)

    if on_the_cpu:
        _check_on_the_cpu(value_and_grad, independent, recurrent)
    if not recurrent:
        return
    _check_off_the_cpu(value_and_grad, monkeypatch, independent, recurrent)


def _check_on_the_cpu(value_and_grad: Callable, independent: bool, recurrent: bool) -> None:
    (want_loss, want), want_grads = value_and_grad(_apart(independent, recurrent))
    (have_loss, have), grads = value_and_grad(_both(independent, recurrent))
    have_all = [have_loss, *have, *jax.tree.leaves(grads)]
    for a, b in zip(have_all, [want_loss, *want, *jax.tree.leaves(want_grads)], strict=True):
        np.testing.assert_array_equal(a, b)
    # the gradient reached every parameter of both networks
    assert all(np.any(np.asarray(g) != 0) for g in jax.tree.leaves(grads) if g.size > 1)


def _check_off_the_cpu(value_and_grad: Callable, monkeypatch: pytest.MonkeyPatch, independent: bool,
                       recurrent: bool) -> None:
    branches = []

    def off_the_cpu(*args: object, cpu: Callable, default: Callable, **platforms: Callable) -> object:
        branches.append(getattr(default, "__qualname__", ""))
        return default(*args)

    monkeypatch.setattr(jax.lax, "platform_dependent", off_the_cpu)
    (want_loss, want), want_grads = value_and_grad(_apart(independent, recurrent))
    assert "gru_pair.<locals>.together" not in branches
    (have_loss, have), grads = value_and_grad(_both(independent, recurrent))
    assert "gru_pair.<locals>.together" in branches
    for a, b in zip([have_loss, *have], [want_loss, *want], strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    # the gradient reached every parameter of both networks
    assert all(np.any(np.asarray(g) != 0) for g in jax.tree.leaves(grads) if g.size > 1)


def _gpu_program(apply: Callable, params: tuple, inputs: tuple) -> tuple[bench.KernelCounts, int]:
    """The kernels of the loss's forward and backward pass compiled for an H200, and its loops."""
    # The inputs are arguments, not constants XLA could fold into the program.
    grad = jax.grad(lambda params, *inputs: _loss(apply, params, *inputs)[0])
    text = bench.compile_for_gpu(grad, params, *inputs).as_text() or ""
    return bench.kernel_counts(text), len(re.findall(r" while\(", text))


def _skip_without_the_gpu_target() -> None:
    try:
        bench.gpu_target_device()
    except bench.GpuTargetUnavailableError:
        pytest.skip("needs JAX's CUDA plugin (the gpu-target extra) to compile for a GPU")


def test_small_groups_compile_for_a_gpu() -> None:
    """Compiled for an H200, 6 rows of 8 units through the pair and through each network's own GRU (as
    IPPO's): XLA's GPU compiler failed to tile the GRU's product at such sizes before ``_gru_cell``'s
    barrier (recurrent IPPO and MAPPO at their smoke tests' sizes did not compile for a GPU)."""
    _skip_without_the_gpu_target()
    params, inputs = _pair_problem(False, steps=4, envs=2)
    for apply in (_both(False, True), _apart(False, True)):
        assert _gpu_program(apply, params, inputs)[0].per_call > 0


@pytest.mark.slow  # two compiles of 32 steps for a GPU (about 20 s)
def test_for_a_gpu_the_two_grus_run_as_one_loop() -> None:
    """Compiled for an H200: over 32 steps the loss's forward and backward pass through both GRUs has one
    forward and one backward loop where the networks called one by one have two of each, and fewer
    kernels."""
    _skip_without_the_gpu_target()
    params, inputs = _pair_problem(False, steps=32)
    (paired, paired_loops), (one_by_one, loops_apart) = (_gpu_program(apply, params, inputs) for apply in
                                                         (_both(False, True), _apart(False, True)))
    assert (paired_loops, loops_apart) == (2, 4)
    assert paired.per_call < one_by_one.per_call, (paired, one_by_one)
