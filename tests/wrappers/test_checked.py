"""Checked mode: what it rejects, eagerly and under ``jit``, and that unchecked mode costs nothing."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from toy_envs import TwoTeams

import jaxmarl_suite
from jaxmarl_suite.core.vec import VecEnv
from jaxmarl_suite.wrappers import (
    AutoReset,
    Checked,
    InvalidActionError,
    checked_errors,
    invalid_action_message,
)
from jaxmarl_suite.wrappers.checked import CheckedState

KEY = jax.random.PRNGKey(0)


def _same_error_eager_and_jitted(env, state, actions, jitted_step, *fragments: str) -> None:
    """The eager step raises ``InvalidActionError`` containing every fragment; the jitted step fails at
    run time with XLA's error holding that message word for word, after XLA's own first line; within
    ``checked_errors()`` it is an ``InvalidActionError`` whose text is the eager message alone."""
    with pytest.raises(InvalidActionError) as eager:
        env.step(KEY, state, actions)
    for fragment in fragments:
        assert fragment in str(eager.value)
    with pytest.raises(jax.errors.JaxRuntimeError) as jitted:
        jax.block_until_ready(jitted_step(KEY, state, actions))
    assert str(eager.value) in str(jitted.value)
    assert str(jitted.value).splitlines()[0] != str(eager.value)  # the limit checked_errors is for
    _assert_message_first(lambda: jitted_step(KEY, state, actions), str(eager.value))


def _assert_message_first(run, message: str) -> None:
    """``run()``'s result, awaited inside ``checked_errors()``, raises ``InvalidActionError`` whose first
    line is ``message``, caused by XLA's error."""
    with pytest.raises(InvalidActionError) as caught, checked_errors():
        jax.block_until_ready(run())
    assert str(caught.value).splitlines()[0] == message
    assert isinstance(caught.value.__cause__, jax.errors.JaxRuntimeError)


def test_checked_shape_errors_surface_at_trace_time_under_jit() -> None:
    env = Checked(jaxmarl_suite.make("MPE_simple_spread_v3", num_envs=2))
    state, _ = env.reset(jax.random.PRNGKey(0))
    step = jax.jit(env.step)
    with pytest.raises(InvalidActionError, match="expected shape \\(2, 3\\)"):
        step(jax.random.PRNGKey(1), state, {"agents": jnp.zeros((3,), jnp.int32)})
    _, timestep = step(jax.random.PRNGKey(1), state, {"agents": jnp.zeros((2, 3), jnp.int32)})
    assert timestep.reward["agents"].shape == (2, 3)


@pytest.mark.parametrize("num_envs", [None, 2])
@pytest.mark.parametrize("continuous", [False, True])
def test_mpe_bad_values_fail_eagerly_and_under_jit(continuous: bool, num_envs: int | None) -> None:
    env = jaxmarl_suite.make(
        "MPE_simple_spread_v3", num_envs=num_envs, checked=True, continuous_actions=continuous
    )
    state, timestep = jax.jit(env.reset)(KEY)
    step = jax.jit(env.step)
    good = np.asarray(env.sample_actions(KEY, timestep.action_mask)["agents"])
    jax.block_until_ready(step(KEY, state, {"agents": good}))
    where = (1, 2) if num_envs else (2,)  # env 1, agent_2
    in_env = " in env 1" if num_envs else ""
    cases = [(np.nan, "contains NaN"), (np.inf, "contains inf")] if continuous else [
        (5, "is outside the action space Discrete(5)"),
        (-1, "is outside the action space Discrete(5)"),
    ]
    for value, problem in cases:
        bad = good.copy()
        bad[where] = value
        _same_error_eager_and_jitted(
            env, state, {"agents": bad}, step, f"group 'agents', agent 'agent_2'{in_env}: action ", problem
        )


def test_smax_masked_attack_fails_eagerly_and_under_jit_naming_agent_and_env() -> None:
    env = jaxmarl_suite.make("SMAX_3m", num_envs=2, checked=True)
    state, timestep = jax.jit(env.reset)(KEY)
    mask = np.asarray(timestep.action_mask["allies"])  # [env, agent, action]
    good = np.asarray(env.sample_actions(KEY, timestep.action_mask)["allies"])
    step = jax.jit(env.step)
    jax.block_until_ready(step(KEY, state, {"allies": good}))  # legal actions pass

    # Attacks are actions 6 + enemy slot; at the start the enemies are out of range, so masked.
    attack = 6 + 2
    assert not mask[1, 2, attack]
    bad = good.copy()
    bad[1, 2] = attack
    legal = np.flatnonzero(mask[1, 2]).tolist()
    name = env.groups["allies"][2]
    _same_error_eager_and_jitted(
        env,
        state,
        {"allies": bad},
        step,
        f"agent {name!r} in env 1: action {attack} is masked out",
        f"(legal: {legal})",
    )

    # A single env is checked the same way. Its state is env 1 of the batch, and validate() is the
    # check step() runs, so jitting it alone spares compiling SMAX's step a second time.
    single = jaxmarl_suite.make("SMAX_3m", checked=True)
    one_state = CheckedState(env.env_state(state, 1), {"allies": timestep.action_mask["allies"][1]})
    with pytest.raises(InvalidActionError) as eager:
        single.step(KEY, one_state, {"allies": bad[1]})
    assert f"agent {name!r}: action {attack} is masked out" in str(eager.value)
    single_validate = jax.jit(single.validate)
    _assert_message_first(lambda: single_validate({"allies": bad[1]}, one_state.action_mask),
                          str(eager.value))


def test_a_jitted_vmapped_auto_reset_loop_stops_with_the_same_message() -> None:
    """Checked inside AutoReset (its select carries the mask across resets), vmapped over seeds and
    scanned past an episode end: legal actions run through; a NaN at step 27 stops the program."""
    checked = jaxmarl_suite.make("MPE_simple_spread_v3", num_envs=2, checked=True, continuous_actions=True)
    env = AutoReset(checked)

    def rollout(key, bad_step):
        state, _ = env.reset(key)

        def body(state, t):
            actions = env.sample_actions(jax.random.fold_in(key, t))
            actions = {"agents": actions["agents"].at[0, 1, 2].set(jnp.where(t == bad_step, jnp.nan, 0.5))}
            state, timestep = env.step(jax.random.fold_in(key, -t), state, actions)
            return state, timestep.reward["agents"]

        return jax.lax.scan(body, state, jnp.arange(30))[1]

    run = jax.jit(jax.vmap(rollout, in_axes=(0, None)))
    keys = jax.random.split(KEY, 2)
    assert np.isfinite(np.asarray(run(keys, 100))).all()
    with pytest.raises(InvalidActionError) as caught, checked_errors():
        jax.block_until_ready(run(keys, 27))
    first = str(caught.value).splitlines()[0]
    assert first.startswith("group 'agents', agent 'agent_1' in env 0: action ") and "contains NaN" in first


def test_inside_auto_reset_the_mask_after_a_reset_is_the_new_episodes() -> None:
    """TwoTeams forbids blue's action 3 on odd steps and truncates at step 7, so action 3 is illegal
    right after step 7 unless ``Checked.select`` takes the mask from the fresh episode too."""
    env = AutoReset(Checked(VecEnv(TwoTeams(), 2)))
    step = jax.jit(env.step)
    state, _ = env.reset(KEY)

    def actions(blue):
        return {"red": jnp.zeros((2, 2), jnp.int32), "blue": jnp.full((2, 1), blue, jnp.int32)}

    state, _ = step(KEY, state, actions(0))
    masked = "^group 'blue', agent 'blue_0' in env 0: action 3 is masked out"
    with pytest.raises(InvalidActionError, match=masked), checked_errors():
        jax.block_until_ready(step(KEY, state, actions(3)))
    for _ in range(6):
        state, timestep = step(KEY, state, actions(0))
    assert np.asarray(timestep.truncated["blue"]).all()
    jax.block_until_ready(step(KEY, state, actions(3)))


def test_unchecked_make_adds_no_wrapper_and_no_callback() -> None:
    plain = jaxmarl_suite.make("MPE_simple_spread_v3", num_envs=2)
    checked = jaxmarl_suite.make("MPE_simple_spread_v3", num_envs=2, checked=True)
    assert not isinstance(plain, Checked) and isinstance(checked, Checked)
    programs = []
    for env in (plain, checked):
        state, timestep = jax.eval_shape(env.reset, KEY)  # shapes suffice to trace
        actions = jax.eval_shape(lambda mask, env=env: env.sample_actions(KEY, mask), timestep.action_mask)
        jaxpr = str(jax.make_jaxpr(env.step)(KEY, state, actions))
        hlo = jax.jit(env.step).lower(KEY, state, actions).as_text()
        programs.append((jaxpr, hlo))
    (plain_jaxpr, plain_hlo), (checked_jaxpr, checked_hlo) = programs
    assert "callback" in checked_jaxpr and "callback" in checked_hlo  # the search finds a check
    assert "callback" not in plain_jaxpr and "callback" not in plain_hlo
    assert len(plain_jaxpr) < len(checked_jaxpr)


def test_a_state_without_the_mask_is_refused() -> None:
    env = Checked(TwoTeams())
    inner_state, _ = jax.eval_shape(env.env.reset, KEY)
    with pytest.raises(TypeError, match="needs the state returned by this env's reset or step"):
        env.step(KEY, inner_state, {})


def test_checked_errors_passes_other_errors_unchanged() -> None:
    """Only a checked-mode failure is rewritten: another callback's failure stays XLA's error, and errors
    that are not XLA's pass through untouched."""

    def fail(x):
        raise RuntimeError("not an action problem")

    boom = jax.jit(lambda x: jax.debug.callback(fail, x) or x)
    with pytest.raises(jax.errors.JaxRuntimeError) as caught, checked_errors():
        jax.block_until_ready(boom(jnp.ones(2)))
    assert "not an action problem" in str(caught.value) and invalid_action_message(caught.value) is None
    with pytest.raises(KeyError, match="mine"), checked_errors():
        raise KeyError("mine")
    assert invalid_action_message(ValueError("InvalidActionError: looks like one")) is None


def test_pettingzoo_step_on_a_checked_env_raises_the_message_first() -> None:
    """The PettingZoo adapter awaits its jitted step inside ``checked_errors()``: a masked action on a
    checked env is an ``InvalidActionError`` naming the agent, and the adapter's state is untouched."""
    from jaxmarl_suite.compat import to_pettingzoo

    adapter = to_pettingzoo(Checked(TwoTeams()), seed=0)
    adapter.reset(seed=0)
    legal = {"red_0": 0, "red_1": 0, "blue_0": 0}
    adapter.step(legal)  # step 1: blue's action 3 is masked out on odd steps
    with pytest.raises(InvalidActionError) as caught:
        adapter.step({**legal, "blue_0": 3})
    first = str(caught.value).splitlines()[0]
    assert first.startswith("group 'blue', agent 'blue_0': action 3 is masked out")
    adapter.step(legal)  # the failed step left the episode where it was
