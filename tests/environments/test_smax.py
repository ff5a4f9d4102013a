"""SMAX rules, scenarios, opponents, observations, invariants and rendering.

Expected values come from the documented rules (environments/smax/README.md) and the unit table, worked
out here by hand, never from the env's own outputs.
"""

from __future__ import annotations

import dataclasses
import functools
import re

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from compile_options import AS_USERS_COMPILE

import jaxmarl_suite
from jaxmarl_suite import accelerated
from jaxmarl_suite.core.vec import VecEnv
from jaxmarl_suite.environments import SMAX_SCENARIOS
from jaxmarl_suite.environments.smax import (
    SCENARIOS,
    SMAX,
    UNIT_TYPES,
    Scenario,
    game,
    heuristic_actions,
    register_scenario,
    team,
)
from jaxmarl_suite.environments.smax.game import geometry
from jaxmarl_suite.training.kit.envs import completed_episode_stats, episode_metrics
from jaxmarl_suite.wrappers import AutoReset, EpisodeStats, WorldState

UNITS = {u.name: u for u in UNIT_TYPES}
DT = 1.0 / 16.0
STOP, NORTH, SOUTH, EAST, WEST, ATTACK_0 = 1, 2, 3, 4, 5, 6


@functools.lru_cache
def duel(allies: str, enemies: str, max_steps: int = 50) -> SMAX:
    """A small custom scenario, both teams controlled by the test (cached, so compiled steps are shared)."""
    return SMAX(Scenario(team(allies), team(enemies), max_steps=max_steps), enemy="agents")


@functools.lru_cache
def stepper(env: SMAX):
    """One jitted ``step_batch`` per env, compiled once for every test that uses it."""
    return jax.jit(env.step_batch)


@functools.lru_cache
def resetter(env: SMAX):
    """One jitted ``reset_batch`` per env, as ``stepper`` (op by op a reset compiles each of its ops)."""
    return jax.jit(env.reset_batch)


def place(env: SMAX, pos, health=None, shield=None, cooldown=None):
    """A one-env state (batch of 1, batch axis last) with units at ``pos`` ``[N, 2]``."""
    state, _ = resetter(env)(jax.random.split(jax.random.PRNGKey(0), 1), env.default_params)
    changes = {
        "pos": jnp.asarray(pos, jnp.float32)[:, :, None],
    }
    for name, value in (("health", health), ("shield", shield), ("cooldown", cooldown)):
        if value is not None:
            changes[name] = jnp.asarray(value, jnp.float32)[:, None]
    return dataclasses.replace(state, **changes)


def act(env: SMAX, state, allies, enemies, seed: int = 0):
    """One agent step of a one-env batch with the given per-unit actions."""
    actions = {
        "allies": jnp.asarray(allies, jnp.int32)[:, None],
        "enemies": jnp.asarray(enemies, jnp.int32)[:, None],
    }
    keys = jax.random.split(jax.random.PRNGKey(seed), 1)
    return stepper(env)(keys, state, actions, env.default_params)


# ------------------------------------------------------------------------------------------------
# Registry and scenarios


def test_every_scenario_is_registered() -> None:
    assert set(SMAX_SCENARIOS) == set(SCENARIOS) - {
        n for n in SCENARIOS if n not in SMAX_SCENARIOS and n.startswith("test_")
    }
    for name in SMAX_SCENARIOS:
        env = jaxmarl_suite.make(f"SMAX_{name}")
        assert env.num_allies == SCENARIOS[name].num_allies and env.num_enemies == SCENARIOS[name].num_enemies
    env = jaxmarl_suite.make("SMAX", scenario="2s3z")
    assert env.scenario is SCENARIOS["2s3z"]
    assert jaxmarl_suite.make("HeuristicEnemySMAX").scenario is SCENARIOS["3m"]


def test_smac_unit_compositions() -> None:
    assert SCENARIOS["3s5z_vs_3s6z"].enemies == ("stalker",) * 3 + ("zealot",) * 6
    assert (
        SCENARIOS["6h_vs_8z"].allies == ("hydralisk",) * 6
        and SCENARIOS["6h_vs_8z"].enemies == ("zealot",) * 8
    )
    assert sorted(SCENARIOS["MMM"].allies).count("marine") == 7 and "medivac" in SCENARIOS["MMM"].allies
    # SMAC's MMM2: the MMM team against one more marauder and one more marine, 180 steps
    assert sorted(SCENARIOS["MMM2"].enemies) == ["marauder"] * 3 + ["marine"] * 8 + ["medivac"]
    assert SCENARIOS["MMM2"].allies == SCENARIOS["MMM"].allies and SCENARIOS["MMM2"].max_steps == 180
    assert SCENARIOS["27m_vs_30m"].num_enemies == 30


def test_bad_scenarios_fail_clearly() -> None:
    with pytest.raises(ValueError, match="unknown SMAX scenario 'nope'.*3m"):
        jaxmarl_suite.make("SMAX", scenario="nope")
    with pytest.raises(ValueError, match="unknown unit type"):
        Scenario(("marine", "tank"), ("marine",))
    with pytest.raises(ValueError, match="cannot parse team"):
        team("3 marines")
    with pytest.raises(ValueError, match="enemy must be"):
        SMAX("3m", enemy="random")
    with pytest.raises(TypeError, match="map name"):
        SMAX(scenario=object())  # neither a name nor a Scenario (ours or JaxMARL's)
    with pytest.raises(ValueError, match="needs enemy_params"):
        SMAX("3m", enemy=lambda p, o, m, k: m.argmax(-1))


def test_register_scenario_in_one_call() -> None:
    env_id = register_scenario("test_4m_vs_3z", Scenario(team("4m"), team("3z"), max_steps=30))
    assert env_id == "SMAX_test_4m_vs_3z"
    env = jaxmarl_suite.make(env_id)
    assert env.groups["allies"] == ("ally_0", "ally_1", "ally_2", "ally_3")
    assert env.action_space("allies").n == 6 + 3
    assert jaxmarl_suite.make("SMAX", scenario="test_4m_vs_3z").num_enemies == 3
    with pytest.raises(ValueError, match="exists"):
        register_scenario("test_4m_vs_3z", Scenario(team("1m"), team("1m")))


def test_procedural_draws_follow_the_race_pool() -> None:
    env = SMAX(dataclasses.replace(SCENARIOS["smacv2_10_units"], race="protoss"))
    vec = VecEnv(env, 64)
    state, _ = jax.jit(vec.reset)(jax.random.PRNGKey(3))
    types = np.asarray(state.unit_type)  # [N, B]
    allowed = {i for i, u in enumerate(UNIT_TYPES) if u.name in ("stalker", "zealot")}
    assert set(np.unique(types)) == allowed
    np.testing.assert_array_equal(types[:10], types[10:])  # enemies mirror the allies
    health = np.asarray(state.health)
    expected = np.array([u.health for u in UNIT_TYPES], np.float32)[types]
    np.testing.assert_array_equal(health, expected)
    # Both layouts occur: "surrounded" puts one team's units at the centre, "reflected" mirrors x.
    pos = np.asarray(state.pos)
    mirrored = np.all(np.abs(pos[:10, 0] + pos[10:, 0] - 32.0) < 1.0, axis=0)
    assert 0 < mirrored.sum() < 64


# ------------------------------------------------------------------------------------------------
# Rules


def test_damage_and_cooldown_arithmetic() -> None:
    env = duel("1m", "1m")
    state = place(env, [[10.0, 10.0], [14.0, 10.0]])  # 4 apart, marine range 5
    marine = UNITS["marine"]
    state, ts = act(env, state, [ATTACK_0], [STOP])
    # The weapon is ready: one shot at the first sub-step; the cooldown then exceeds the 7 remaining
    # sub-steps (0.61 s > 7/16 s), so exactly one shot lands in this agent step.
    assert float(state.health[1, 0]) == marine.health - marine.damage
    low, high = marine.cooldown - DT - 7 * DT, marine.cooldown + 2 * DT - 7 * DT
    assert low - 1e-5 <= float(state.cooldown[0, 0]) <= high + 1e-5
    state, _ = act(env, state, [ATTACK_0], [STOP], seed=1)
    assert float(state.health[1, 0]) == marine.health - 2 * marine.damage
    assert float(state.health[0, 0]) == marine.health  # the enemy only stopped


def test_shields_absorb_damage_first() -> None:
    env = duel("1s", "1z")
    stalker, zealot = UNITS["stalker"], UNITS["zealot"]
    state = place(env, [[10.0, 10.0], [15.0, 10.0]], shield=[stalker.shield, 10.0])
    state, _ = act(env, state, [ATTACK_0], [STOP])
    # 13 damage against 10 shield: the shield empties and 3 comes off health.
    assert float(state.shield[1, 0]) == 0.0
    assert float(state.health[1, 0]) == zealot.health - (stalker.damage - 10.0)


def test_range_check_in_mask_and_in_resolution() -> None:
    env = duel("1m", "1m")
    rng = UNITS["marine"].attack_range
    for gap, in_range in ((rng - 0.1, True), (rng + 0.1, False)):
        state = place(env, [[10.0, 10.0], [10.0 + gap, 10.0]])
        _, ts0 = stepper(env)(
            jax.random.split(jax.random.PRNGKey(0), 1),
            state,
            {"allies": jnp.full((1, 1), STOP), "enemies": jnp.full((1, 1), STOP)},
            env.default_params,
        )
        # the mask after standing still describes the same positions
        assert bool(ts0.action_mask["allies"][0, ATTACK_0, 0]) == in_range
        after, _ = act(env, state, [ATTACK_0], [STOP])
        hit = float(after.health[1, 0]) < UNITS["marine"].health
        assert hit == in_range


def test_dead_units_only_noop_and_never_act() -> None:
    env = duel("2m", "1m")
    state = place(env, [[10.0, 10.0], [10.0, 12.0], [13.0, 10.0]], health=[0.0, 45.0, 45.0])
    state2, ts = act(env, state, [ATTACK_0, STOP], [STOP])  # the dead ally "attacks" and should not
    assert float(state2.health[2, 0]) == UNITS["marine"].health
    mask = np.asarray(ts.action_mask["allies"][:, :, 0])
    assert mask[0].tolist() == [True] + [False] * (mask.shape[1] - 1)
    assert not mask[1, 0] and mask[1, STOP]
    assert bool(ts.terminated["allies"][0, 0]) and not bool(ts.terminated["allies"][1, 0])
    assert float(ts.reward["allies"][0, 0]) == 0.0
    moved, _ = act(env, state, [NORTH, STOP], [STOP])
    np.testing.assert_array_equal(np.asarray(moved.pos[0]), np.asarray(state.pos[0]))
    assert int(moved.last_target[0, 0]) == -1


def test_walls_and_boundaries() -> None:
    env = duel("1m", "1m")
    travel = UNITS["marine"].speed * DT * env.substeps  # one agent step of movement
    state = place(env, [[32.0 - travel / 2, 16.0], [5.0, 5.0]])
    _, ts = act(env, state, [STOP], [STOP])
    mask = np.asarray(ts.action_mask["allies"][0, :, 0])
    assert not mask[EAST] and mask[WEST] and mask[NORTH] and mask[SOUTH]
    forced, _ = act(env, state, [EAST], [STOP])  # an illegal move is clamped at the wall
    assert float(forced.pos[0, 0, 0]) == 32.0
    inside, _ = act(env, place(env, [[10.0, 10.0], [5.0, 5.0]]), [EAST], [STOP])
    np.testing.assert_allclose(float(inside.pos[0, 0, 0]), 10.0 + travel, rtol=1e-5)


def test_win_loss_draw_and_time_limit() -> None:
    env = duel("1m", "1m", max_steps=3)
    marine = UNITS["marine"]
    # A marine at 9 health dies to one shot: the allies win; reward = 20 * (9 + 10 + 200) / (45 + 10 + 200).
    state = place(env, [[10.0, 10.0], [14.0, 10.0]], health=[45.0, 9.0])
    _, ts = act(env, state, [ATTACK_0], [STOP])
    assert bool(ts.info["won"][0]) and not bool(ts.info["lost"][0])
    assert bool(ts.terminated["allies"].all()) and bool(ts.terminated["enemies"].all())
    assert not bool(ts.truncated["allies"].any())
    np.testing.assert_allclose(
        float(ts.reward["allies"][0, 0]), 20.0 * (9 + 10 + 200) / (marine.health + 10 + 200), rtol=1e-6
    )
    # Mutual kill in the same sub-step: a draw, no win bonus for anyone.
    state = place(env, [[10.0, 10.0], [14.0, 10.0]], health=[9.0, 9.0])
    _, ts = act(env, state, [ATTACK_0], [ATTACK_0])
    assert not bool(ts.info["won"][0]) and not bool(ts.info["lost"][0])
    assert bool(ts.terminated["allies"].all())
    np.testing.assert_allclose(
        float(ts.reward["allies"][0, 0]), 20.0 * (9 + 10) / (marine.health + 10 + 200), rtol=1e-6
    )
    # Out of time: the living are truncated, not terminated; nobody won.
    state = place(env, [[5.0, 5.0], [27.0, 27.0]])
    for step in range(3):
        state, ts = act(env, state, [STOP], [STOP], seed=step)
    assert bool(ts.truncated["allies"].all()) and not bool(ts.terminated["allies"].any())
    assert not bool(ts.info["won"][0]) and not bool(ts.info["lost"][0])


def test_medivac_heals_hurt_allies_in_range() -> None:
    env = SMAX(Scenario(("medivac", "marine"), ("marine",), max_steps=10), enemy="agents")
    assert env.action_space("allies").n == 6 + 2  # healers widen the slots to the own team's size
    state = place(env, [[10.0, 10.0], [12.0, 10.0], [30.0, 30.0]], health=[150.0, 20.0, 45.0])
    state, ts = act(env, state, [ATTACK_0 + 1, STOP], [STOP])
    heal = UNITS["medivac"].heal_rate * DT * env.substeps
    np.testing.assert_allclose(float(state.health[1, 0]), 20.0 + heal, rtol=1e-5)
    mask = np.asarray(ts.action_mask["allies"][0, :, 0])
    assert not mask[ATTACK_0]  # not itself
    assert mask[ATTACK_0 + 1]  # the hurt marine


# ------------------------------------------------------------------------------------------------
# Observations and world state


def test_observation_layout() -> None:
    env = duel("2m", "1m")
    sight = UNITS["marine"].sight_range
    state = place(env, [[10.0, 10.0], [11.0, 10.0], [13.0, 12.0]], health=[45.0, 45.0, 22.5])
    _, ts = act(env, state, [STOP, STOP], [STOP])
    pos = np.asarray(ts.obs["allies"][:, :, 0])
    names = env.unit_feature_names
    f = len(names)
    enemy = dict(zip(names, pos[0, f : 2 * f], strict=True))  # ally 0: ally 1 first, then the enemy
    assert enemy["visible"] == 1.0 and enemy["actionable"] == 1.0
    np.testing.assert_allclose(
        [enemy["relative_x"], enemy["relative_y"]], [3.0 / sight, 2.0 / sight], rtol=1e-5
    )
    np.testing.assert_allclose(enemy["distance"], np.sqrt(13.0) / sight, rtol=1e-5)
    assert enemy["health"] == 0.5 and enemy["type_marine"] == 1.0 and enemy["shield"] == 0.0
    own = pos[0, 2 * f :]
    np.testing.assert_allclose(own[:4], [1.0, 0.0, 10.0 / 32, 10.0 / 32], rtol=1e-6)
    far = place(env, [[2.0, 2.0], [3.0, 2.0], [30.0, 30.0]])
    _, ts = act(env, far, [STOP, STOP], [STOP])
    assert np.all(np.asarray(ts.obs["allies"][0, f : 2 * f, 0]) == 0.0)  # out of sight: all zero
    assert ts.obs["allies"].shape[1] == env.observation_space("allies").shape[0]


def test_world_state_restarts_with_auto_reset() -> None:
    env = WorldState(AutoReset(jaxmarl_suite.make("SMAX_3m", num_envs=8)))
    state, ts = jax.jit(env.reset)(jax.random.PRNGKey(0))
    assert ts.info["world_state"].shape == (8, env.world_state_space().shape[0])
    step, sample = jax.jit(env.step), jax.jit(env.sample_actions)
    key = jax.random.PRNGKey(1)
    for _ in range(200):
        key, action_key, step_key = jax.random.split(key, 3)
        previous = ts
        state, ts = step(step_key, state, sample(action_key, ts.action_mask))
        ended = np.asarray(ts.terminated["allies"].all(-1) | ts.truncated["allies"].any(-1))
        if ended.any():
            break
    assert ended.any()
    world, final = np.asarray(ts.info["world_state"]), np.asarray(ts.info["final_world_state"])
    assert not np.allclose(world[ended], final[ended])  # a fresh episode's state vs the last one's
    assert np.all(world[ended][:, -1] == 0.0) and np.all(final[ended][:, -1] > 0.0)  # time feature
    np.testing.assert_array_equal(world[~ended], final[~ended])
    del previous


# ------------------------------------------------------------------------------------------------
# Opponents


def test_learned_enemy_policy_and_swappable_params() -> None:
    def policy(params, obs, mask, keys):
        # "stop" or "move east" depending on a traced parameter: proves the params reach the policy.
        del obs, keys
        return jnp.where(params["move"], EAST, STOP) * jnp.ones(mask.shape[:2], jnp.int32)

    env = SMAX("3m", enemy=policy, enemy_params={"move": jnp.array(False)})
    vec = VecEnv(env, 4)
    params = env.default_params
    step = jax.jit(chex.assert_max_traces(vec.step, n=1))
    state, _ = jax.jit(vec.reset)(jax.random.PRNGKey(0))
    still, _ = step(jax.random.PRNGKey(1), state, {"allies": jnp.full((4, 3), STOP)}, params)
    moving, _ = step(
        jax.random.PRNGKey(1),
        state,
        {"allies": jnp.full((4, 3), STOP)},
        params.replace(enemy_params={"move": jnp.array(True)}),
    )
    enemy_x = lambda s: np.asarray(s.pos[3:, 0])  # noqa: E731
    travel = UNITS["marine"].speed * DT * env.substeps
    np.testing.assert_allclose(enemy_x(moving) - enemy_x(still), travel, atol=0.3)
    assert np.all(np.asarray(still.last_target[3:]) == -1)


def heuristic_choices(env: SMAX, state, seeds: int = 64) -> np.ndarray:
    """``[seeds, n]`` the enemy team's heuristic actions for one placed state, under ``seeds`` keys."""
    stats = env.unit_stats(state.unit_type)
    geo = geometry(state.pos)
    mask = env.action_mask(state, stats, 1, env.default_params)

    def choose(key):
        return heuristic_actions(env, state, stats, 1, mask, geo, key[None])[:, 0]

    return np.asarray(jax.vmap(choose)(jax.random.split(jax.random.PRNGKey(0), seeds)))


def test_heuristic_targets_and_movement() -> None:
    env = duel("2m", "1m")
    # Both allies in sight (sight 9), neither in range (5): the enemy walks toward one of them, drawn
    # afresh each step, so over many keys it goes both north (ally 0) and east (ally 1), never elsewhere.
    state = place(env, [[10.0, 17.0], [17.0, 10.0], [10.0, 10.0]])
    moves = heuristic_choices(env, state)[:, 0]
    assert set(moves.tolist()) == {NORTH, EAST}, moves
    # Out of sight: it hunts the closest living ally anywhere on the map (here ally 1, to the west).
    state = place(env, [[30.0, 30.0], [2.0, 10.0], [20.0, 10.0]])
    assert set(heuristic_choices(env, state)[:, 0].tolist()) == {WEST}
    # Both in range: it attacks the closer one (slot 1), and keeps a legal last target (slot 0).
    state = place(env, [[10.0, 14.0], [12.0, 10.0], [10.0, 10.0]])
    assert set(heuristic_choices(env, state)[:, 0].tolist()) == {ATTACK_0 + 1}
    state = dataclasses.replace(state, last_target=jnp.array([[-1], [-1], [0]], jnp.int32))
    assert set(heuristic_choices(env, state)[:, 0].tolist()) == {ATTACK_0}
    # Once that target is out of range, it switches to the closest legal one.
    state = place(env, [[10.0, 16.0], [12.0, 10.0], [10.0, 10.0]])
    state = dataclasses.replace(state, last_target=jnp.array([[-1], [-1], [0]], jnp.int32))
    assert set(heuristic_choices(env, state)[:, 0].tolist()) == {ATTACK_0 + 1}


def run_heuristics(env_id: str, episodes: int, seed: int = 0) -> tuple[float, float]:
    """Both teams played by the heuristic; (ally win rate, enemy win rate) over ``episodes`` episodes."""
    env = jaxmarl_suite.make(env_id, enemy="agents")
    params = env.default_params
    keys = jax.random.split(jax.random.PRNGKey(seed), episodes)

    @jax.jit
    def play(keys):
        state, ts = env.reset_batch(keys, params)

        def body(carry, step_keys):
            state, ts, done, won, lost = carry
            stats = env.unit_stats(state.unit_type)
            geo = geometry(state.pos)
            policy_keys = jax.vmap(lambda k: jax.random.split(k, 2))(step_keys)
            actions = {
                team: heuristic_actions(env, state, stats, i, ts.action_mask[team], geo, policy_keys[:, i])
                for i, team in enumerate(("allies", "enemies"))
            }
            legal = jnp.all(jnp.take_along_axis(ts.action_mask["allies"], actions["allies"][:, None], 1))
            state, ts = env.step_batch(step_keys, state, actions, params)
            ended = ts.terminated["allies"].all(0) | ts.truncated["allies"].any(0)
            won = jnp.where(done, won, ts.info["won"])
            lost = jnp.where(done, lost, ts.info["lost"])
            return (state, ts, done | ended, won, lost), legal

        no = jnp.zeros(keys.shape[0], bool)
        step_keys = jax.vmap(lambda k: jax.random.split(k, params.max_steps))(keys).swapaxes(0, 1)
        (_, _, done, won, lost), legal = jax.lax.scan(body, (state, ts, no, no, no), step_keys)
        return done, won, lost, jnp.all(legal)

    done, won, lost, legal = play(keys)
    assert bool(legal), "the heuristic chose an illegal action"
    assert bool(done.all())
    return float(won.mean()), float(lost.mean())


@pytest.mark.parametrize("env_id", ["SMAX_3m", pytest.param("SMAX_2s3z", marks=pytest.mark.slow)])
def test_heuristic_mirror_matches_are_roughly_even(env_id: str) -> None:
    ally, enemy = run_heuristics(env_id, 256)
    assert 0.25 <= ally <= 0.75 and 0.25 <= enemy <= 0.75, (ally, enemy)


@pytest.mark.parametrize(
    "env_id", ["SMAX_5m_vs_6m", pytest.param("SMAX_3s5z_vs_3s6z", marks=pytest.mark.slow)]
)
def test_heuristic_favours_the_larger_side(env_id: str) -> None:
    ally, enemy = run_heuristics(env_id, 256)
    assert enemy > ally + 0.3, (ally, enemy)


# ------------------------------------------------------------------------------------------------
# Invariants


@pytest.mark.parametrize(
    "env_id",
    [
        "SMAX_3m",
        pytest.param("SMAX_MMM", marks=pytest.mark.slow),
        pytest.param("SMAX_smacv2_5_units", marks=pytest.mark.slow),
    ],
)
def test_invariants_over_10k_random_steps(env_id: str) -> None:
    num_envs, steps = 100, 100  # 10,000 env steps of uniformly random legal actions
    base = jaxmarl_suite.make(env_id)
    env = EpisodeStats(AutoReset(VecEnv(base, num_envs)))
    params = base.default_params

    @jax.jit
    def run(key):
        state, ts = env.reset(key)

        def body(carry, key):
            state, ts = carry
            action_key, step_key = jax.random.split(key)
            actions = env.sample_actions(action_key, ts.action_mask)
            inner = state.env_state
            alive = inner.health > 0
            new_state, new_ts = env.step(step_key, state, actions)
            new_inner = new_state.env_state
            # dead units (and only they) are offered nothing but the no-op; they never move or act
            mask_ok = jnp.all(ts.action_mask["allies"][..., 0] == ~alive[: base.num_allies].T)
            stay = jnp.where(~alive[:, None], new_inner.pos == inner.pos, True)
            ended = new_ts.info["episode_done"]
            stay = jnp.all(jnp.where(ended[None, None], True, stay))
            quiet = jnp.all(jnp.where(~alive & ~ended[None], new_inner.last_target == -1, True))
            stats = base.unit_stats(new_inner.unit_type)
            return (new_state, new_ts), {
                "health_ok": jnp.all(new_inner.health <= stats.health + 1e-4),
                "shield_ok": jnp.all((new_inner.shield >= 0) & (new_inner.shield <= stats.shield + 1e-4)),
                "inside": jnp.all((new_inner.pos >= 0) & (new_inner.pos <= 32.0)),
                "mask_ok": mask_ok,
                "dead_still": stay & quiet,
                "reward_min": jnp.min(new_ts.reward["allies"]),
                "reward_max": jnp.max(new_ts.reward["allies"]),
                "episode_return_max": jnp.max(
                    jnp.where(ended[:, None], new_ts.info["episode_return"]["allies"], 0.0)
                ),
                "stats": completed_episode_stats(new_ts),
            }

        _, out = jax.lax.scan(body, (state, ts), jax.random.split(key, steps))
        return out

    out = run(jax.random.PRNGKey(0))
    for name in ("health_ok", "shield_ok", "inside", "mask_ok", "dead_still"):
        assert bool(np.all(out[name])), name
    assert float(out["reward_min"].min()) >= 0.0
    assert float(out["reward_max"].max()) <= params.reward_scale
    # Without heals or shield regeneration an episode's team reward never exceeds reward_scale (all
    # damage, all kills and the win); healed or regenerated points can be damaged again.
    if env_id == "SMAX_3m":
        assert float(out["episode_return_max"].max()) <= params.reward_scale + 1e-3
    metrics = episode_metrics(out["stats"])
    assert 0.0 <= float(metrics["win_rate"]) <= 1.0 and float(metrics["episodes"]) > 0


# ------------------------------------------------------------------------------------------------
# Rendering


def test_render_episode_in_one_call(tmp_path) -> None:
    from jaxmarl_suite.render import write_gif

    env = jaxmarl_suite.make("SMAX_3s5z")
    vec = VecEnv(env, 1)

    @jax.jit
    def episode(key):
        state, ts = vec.reset(key)

        def body(carry, key):
            state, ts = carry
            a, s = jax.random.split(key)
            state, ts = vec.step(s, state, vec.sample_actions(a, ts.action_mask))
            return (state, ts), vec.env_state(state, 0)

        _, states = jax.lax.scan(body, (state, ts), jax.random.split(key, 100))
        return jax.vmap(env.render)(states)

    frames = np.asarray(episode(jax.random.PRNGKey(0)))
    assert frames.shape == (100, 512, 512, 3) and frames.dtype == np.uint8
    assert not np.array_equal(frames[0], frames[-1])
    red = (frames[0, ..., 0] > 150) & (frames[0, ..., 2] < 80)
    blue = (frames[0, ..., 2] > 150) & (frames[0, ..., 0] < 80)
    assert red.sum() > 50 and blue.sum() > 50  # both teams drawn
    path = write_gif(tmp_path / "smax.gif", frames, fps=env.render_fps)
    assert path.stat().st_size > 1000


def test_shots_and_heals_add_up_at_their_targets() -> None:
    """``game.add_at_targets`` (a scatter-add on the CPU) and the sum over units a GPU gets instead both add
    up what every unit aims at each row, as ``np.add.at`` does."""
    units, envs = 6, 5
    values = jax.random.uniform(jax.random.PRNGKey(0), (units, envs), minval=0.5, maxval=9.0)
    index = jax.random.randint(jax.random.PRNGKey(1), (units, envs), 0, units)
    index = index.at[:, 0].set(2)  # in env 0 every unit aims at unit 2
    values, index = values.at[3, 1].set(0.0), index.at[3, 1].set(0)  # a unit with no target: 0 at row 0
    want = np.zeros((units, envs), np.float32)
    np.add.at(want, (np.asarray(index), np.arange(envs)[None, :]), np.asarray(values))
    assert want[2, 0] == pytest.approx(float(jnp.sum(values[:, 0])), rel=1e-6) and want[0, 0] == 0.0
    np.testing.assert_allclose(jax.jit(game.add_at_targets)(values, index), want, rtol=1e-6)
    with accelerated.forced("accelerator"):
        np.testing.assert_allclose(jax.jit(game.add_at_targets)(values, index), want, rtol=1e-6)


def _smax_rollout() -> tuple:
    """A three-step rollout of SMAX 3m at 4 envs (a new function each call: jit would reuse an earlier
    trace), its start state and the env's world sub-steps."""
    env = jaxmarl_suite.make("SMAX_3m", num_envs=4)
    state, _ = jax.jit(env.reset)(jax.random.PRNGKey(0))
    actions = jax.jit(env.sample_actions)(jax.random.PRNGKey(1))

    def rollout(state):
        def body(state, key):
            return env.step(key, state, actions)[0], None

        return jax.lax.scan(body, state, jax.random.split(jax.random.PRNGKey(2), 3))[0]

    return rollout, state, env.env.substeps  # the batch-native SMAX inside the VecEnv


def _float_scatters(hlo: str) -> int:
    """Scatters of floats (the heuristic enemy's target choice scatters ints)."""
    return len(re.findall(r"= f32\[[\d,]*\]\S* scatter\(", hlo))


def test_the_cpu_program_loops_over_substeps_and_scatters() -> None:
    """On the CPU the 8 world sub-steps of an agent step are a rolled loop and shots and heals reach their
    targets by scatter-adds: the program SMAX always compiled to."""
    from jaxmarl_suite import bench

    rollout, state, substeps = _smax_rollout()
    cpu = jax.jit(rollout, compiler_options=AS_USERS_COMPILE).lower(state).compile().as_text()
    assert substeps == 8 and any(trips == substeps for trips, _ in bench.kernel_counts(cpu).loops)
    assert _float_scatters(cpu) > 0


def test_an_h200_program_neither_loops_over_substeps_nor_scatters(monkeypatch, gpu_target: object) -> None:
    """For a GPU the sub-steps are unrolled (a loop trip launched 9 kernels; unrolled, sub-steps fuse across
    trips) and the scatters are sums over the units (``game.add_at_targets``; each scatter was a kernel and
    a copy of its buffer). SMAX 3m at 4,096 envs compiled for an H200: 135 kernels a step rolled, 102
    unrolled, 59 without the scatters. Checked against the same program with the scatters put back."""
    from jaxmarl_suite import bench

    rollout, state, substeps = _smax_rollout()
    gpu = bench.compile_for_gpu(rollout, state).as_text()
    counts = bench.kernel_counts(gpu)
    assert counts.per_iteration > 0 and not any(trips == substeps for trips, _ in counts.loops)
    monkeypatch.setattr(game, "add_at_targets", accelerated.scatter_add_at_rows)
    rollout, state, _ = _smax_rollout()
    scattered = bench.compile_for_gpu(rollout, state).as_text()
    assert _float_scatters(gpu) == 0 < _float_scatters(scattered)
    assert counts.per_iteration < bench.kernel_counts(scattered).per_iteration
