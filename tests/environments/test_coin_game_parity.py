"""Live comparison of our Coin Game with JaxMARL 0.2.0's ``coin_game``, key for key.

Both envs run from the same keys with the same random joint actions, each with its own auto-reset
(JaxMARL's ``step``; ``AutoReset`` over ours, which splits keys the same way), so every random draw (start
positions, coin respawns, the positions redrawn at each inner boundary and at the outer reset) must
come out the same for the trajectories to agree; nothing of JaxMARL's state is injected. At every step we
compare exactly:

- both agents' observations after the auto-reset, and the pre-reset observation (JaxMARL's ``step_env``
  with the key its ``step`` passes it) against our ``info["final_obs"]``;
- both rewards; JaxMARL's ``done`` of each agent and ``__all__`` against our ``truncated`` (we never
  terminate); ``info["inner_episode_done"]``;
- the state: both players' and both coins' positions, the inner step and the inner-episode index
  (JaxMARL's ``step`` and ``outer_t``; ours ``inner_t`` and ``time // num_inner_steps``);
- our per-step pick-up counts against the growth of JaxMARL's own statistics in ``step_env``'s state
  (``red_coop``/``blue_coop``: own coin, ``red_defect``/``blue_defect``: the other's).

The default suite runs the default game for 8 seeds x 110 steps (one whole 100-step episode and the
start of the next); the ``slow`` cases run every option JaxMARL has (egocentric, cnn, shared rewards,
an asymmetric float payoff matrix, other inner and outer lengths, down to one-step inner episodes) for
three episodes each. Negative controls: a perturbed payoff, a perturbed key use and the wrong
observation view must each make the comparison fail.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmarl_suite
from jaxmarl_suite.environments.coin_game import CoinGame, CoinGameParams
from jaxmarl_suite.wrappers import AutoReset

jaxmarl = pytest.importorskip("jaxmarl", reason="JaxMARL's coin_game is the reference")

FIELDS = ("agent_pos", "coin_pos", "inner_t", "outer_t", "obs", "final_obs", "reward", "done", "inner",
          "own", "others")
"""What is compared at every step (see the module docstring), the state first."""


def actions_for(seeds: int, steps: int, seed: int = 0) -> np.ndarray:
    """``int32[seeds, steps, 2]`` uniformly random joint actions."""
    return np.random.default_rng(seed).integers(0, 5, (seeds, steps, 2)).astype(np.int32)


@functools.cache
def reference_rollout(kwargs: tuple[tuple[str, Any], ...], seeds: int, steps: int) -> dict[str, np.ndarray]:
    """JaxMARL's trajectories ``[seeds, steps, ...]`` from seeds ``0..seeds-1`` (see ``FIELDS``)."""
    ref = jaxmarl.make("coin_game", **dict(kwargs))

    def one(seed_key: jax.Array, actions: jax.Array) -> dict[str, jax.Array]:
        reset_key, run_key = jax.random.split(seed_key)
        _, state = ref.reset(reset_key)

        def body(state: Any, xs: tuple[jax.Array, jax.Array]) -> tuple[Any, dict[str, jax.Array]]:
            key, action = xs
            joint = {"0": action[0], "1": action[1]}
            # JaxMARL's step hands step_env the first half of its key; the raw transition gives the
            # pre-reset observation and the statistics the auto-reset would wipe.
            raw_obs, raw, _, _, _ = ref.step_env(jax.random.split(key)[0], state, joint)
            obs, state_next, reward, dones, info = ref.step(key, state, joint)

            def grew(field: str) -> jax.Array:
                return (getattr(raw, field).sum() - getattr(state, field).sum()).astype(jnp.float32)

            record = {
                "obs": jnp.stack([obs["0"], obs["1"]]),
                "final_obs": jnp.stack([raw_obs["0"], raw_obs["1"]]),
                "reward": jnp.stack([reward["0"], reward["1"]]).astype(jnp.float32),
                "done": jnp.stack([dones["0"], dones["1"], dones["__all__"]]),
                "inner": info["inner_episode_done"],
                "agent_pos": jnp.stack([state_next.red_pos, state_next.blue_pos]),
                "coin_pos": jnp.stack([state_next.red_coin_pos, state_next.blue_coin_pos]),
                "inner_t": state_next.step,
                "outer_t": state_next.outer_t,
                "own": jnp.stack([grew("red_coop"), grew("blue_coop")]),
                "others": jnp.stack([grew("red_defect"), grew("blue_defect")]),
            }
            return state_next, record

        keys = jax.random.split(run_key, actions.shape[0])
        return jax.lax.scan(body, state, (keys, actions))[1]

    run = jax.jit(jax.vmap(one))
    seed_keys = jnp.stack([jax.random.PRNGKey(s) for s in range(seeds)])
    return jax.tree.map(np.asarray, run(seed_keys, jnp.asarray(actions_for(seeds, steps))))


@functools.cache
def our_runner(env: CoinGame) -> Any:
    """Our trajectories, jitted once per env (params are an argument, so perturbing them reuses it)."""
    auto = AutoReset(env)

    def one(seed_key: jax.Array, actions: jax.Array, params: CoinGameParams, key_tweak: jax.Array
            ) -> dict[str, jax.Array]:
        reset_key, run_key = jax.random.split(seed_key)
        state, _ = auto.reset(reset_key, params)

        def body(state: Any, xs: tuple[jax.Array, jax.Array]) -> tuple[Any, dict[str, jax.Array]]:
            key, action = xs
            state, ts = auto.step(key ^ key_tweak, state, {"agents": action}, params)
            truncated = ts.truncated["agents"]
            record = {
                "obs": ts.obs["agents"],
                "final_obs": ts.info["final_obs"]["agents"],
                "reward": ts.reward["agents"],
                # JaxMARL's done of each agent and __all__; ours must never terminate, so a termination
                # shows up as a mismatch here.
                "done": jnp.concatenate([truncated | ts.terminated["agents"], truncated.all()[None]]),
                "inner": ts.info["inner_episode_done"],
                "agent_pos": state.agent_pos,
                "coin_pos": state.coin_pos,
                "inner_t": state.inner_t,
                "outer_t": state.time // params.num_inner_steps,
                "own": ts.info["cooperative_pickups"],
                "others": ts.info["defecting_pickups"],
            }
            return state, record

        keys = jax.random.split(run_key, actions.shape[0])
        return jax.lax.scan(body, state, (keys, actions))[1]

    return jax.jit(jax.vmap(one, in_axes=(0, 0, None, None)))


def our_rollout(env: CoinGame, seeds: int, steps: int, params: CoinGameParams | None = None,
                key_tweak: int = 0) -> dict[str, np.ndarray]:
    """Our trajectories ``[seeds, steps, ...]`` from the same keys and actions as ``reference_rollout``
    (``key_tweak``, for the negative control, is XORed into every step's key)."""
    params = env.default_params if params is None else params
    seed_keys = jnp.stack([jax.random.PRNGKey(s) for s in range(seeds)])
    tweak = jnp.asarray(key_tweak, jnp.uint32)
    out = our_runner(env)(seed_keys, jnp.asarray(actions_for(seeds, steps)), params, tweak)
    return jax.tree.map(np.asarray, out)


def compare(ref: dict[str, np.ndarray], ours: dict[str, np.ndarray]) -> dict[str, int]:
    """Raise AssertionError at the first step where any field differs; return what the run exercised."""
    seeds, steps = ref["reward"].shape[:2]
    bad = {}
    for field in FIELDS:
        want, got = ref[field], ours[field]
        assert want.shape == got.shape, f"{field}: shape {got.shape} != JaxMARL's {want.shape}"
        bad[field] = (want != got).reshape(seeds, steps, -1).any(-1)
    anywhere = np.stack(list(bad.values())).any(0)
    if anywhere.any():
        seed, t = (int(i) for i in np.argwhere(anywhere)[0])  # the first seed's first bad step
        field = next(f for f in FIELDS if bad[f][seed, t])
        raise AssertionError(f"seed {seed} step {t + 1}: {field} differs"
                             f"\nJaxMARL: {ref[field][seed, t].tolist()}"
                             f"\nours:    {ours[field][seed, t].tolist()}")
    inner, own, others = ref["inner"], ref["own"], ref["others"]
    return {
        "own_pickups": int(own.sum()),
        "other_pickups": int(others.sum()),
        # a coin taken by both players at once: its owner's own pick-up and the other's defecting one
        "both_took_one_coin": int(((own[..., 0] + others[..., 1] > 1)
                                   | (own[..., 1] + others[..., 0] > 1)).sum()),
        "pickups_on_inner_ends": int(((own + others).sum(-1) * inner).sum()),
        "inner_ends": int(inner.sum()),
        "episode_ends": int(ref["done"][..., 2].sum()),
    }


@functools.cache
def our_env(kwargs: tuple[tuple[str, Any], ...] = ()) -> CoinGame:
    """One env per setting, so ``our_runner`` compiles once per setting."""
    env = jaxmarl_suite.make("CoinGame", **dict(kwargs))
    assert isinstance(env, CoinGame)
    return env


def check_pair(kwargs: dict[str, Any], seeds: int, steps: int) -> dict[str, int]:
    """Run JaxMARL's env and ours built with ``kwargs`` side by side and compare every step."""
    frozen = tuple(sorted((k, tuple(map(tuple, v)) if k == "payoff_matrix" else v)
                          for k, v in kwargs.items()))
    env = our_env(frozen)
    ref = reference_rollout(frozen, seeds, steps)
    return compare(ref, our_rollout(env, seeds, steps))


def test_default_game_matches_jaxmarl_key_for_key() -> None:
    seen = check_pair({}, seeds=8, steps=110)
    # The run must exercise what it claims to check: both kinds of pick-up, a coin taken by both players
    # at once, rewards zeroed on inner boundaries with pick-ups, and the auto-reset at the outer end.
    assert seen["own_pickups"] > 50 and seen["other_pickups"] > 50, seen
    assert seen["both_took_one_coin"] > 0 and seen["pickups_on_inner_ends"] > 0, seen
    assert seen["inner_ends"] == 8 * 11 and seen["episode_ends"] == 8, seen


@pytest.mark.slow
@pytest.mark.parametrize("kwargs", [
    {},
    {"egocentric": True},
    {"cnn": True},
    {"cnn": True, "egocentric": True},
    {"shared_rewards": True},
    {"payoff_matrix": [[0.5, 1.25, -3.0], [2.0, 0.75, -0.1]]},
    {"num_inner_steps": 7, "num_outer_steps": 3},
    {"num_inner_steps": 1, "num_outer_steps": 5},
    {"num_inner_steps": 16, "num_outer_steps": 4, "cnn": True},
], ids=str)
def test_every_option_matches_jaxmarl(kwargs: dict[str, Any]) -> None:
    inner, outer = kwargs.get("num_inner_steps", 10), kwargs.get("num_outer_steps", 10)
    seen = check_pair(kwargs, seeds=32, steps=3 * inner * outer)
    assert seen["episode_ends"] == 32 * 3 and seen["own_pickups"] > 0 and seen["other_pickups"] > 0, seen


def test_negative_controls_are_caught() -> None:
    """A milder penalty (other params), draws from other keys (every step key's low bit flipped) and one
    observation entry flipped on one step must each fail the comparison. All three reuse the compiled
    run of the main test."""
    ref = reference_rollout((), 8, 110)
    env = our_env()
    params = env.default_params
    milder_penalty = params.replace(payoffs=jnp.asarray(params.payoffs).at[0, 2].set(-1.0))
    with pytest.raises(AssertionError, match="reward differs"):
        compare(ref, our_rollout(env, 8, 110, milder_penalty))
    with pytest.raises(AssertionError, match="(coin_pos|agent_pos) differs"):
        compare(ref, our_rollout(env, 8, 110, key_tweak=1))
    tampered = our_rollout(env, 8, 110)
    tampered["obs"] = tampered["obs"].copy()
    tampered["obs"][5, 57, 1, 20] = 1 - tampered["obs"][5, 57, 1, 20]
    with pytest.raises(AssertionError, match="seed 5 step 58: obs differs"):
        compare(ref, tampered)
