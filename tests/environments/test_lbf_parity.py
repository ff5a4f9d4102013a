"""Level-Based Foraging against the live ``lbforaging`` 2.0.0, step for step.

The reference resets with its own NumPy draws; each episode's start is read into ours
(``state_from_lbforaging``) and both are stepped with the same joint actions to the episode's end, comparing
at every step every player's observation (exactly), the legal actions, the rewards, the end of the episode
and the whole state. A biased random policy (loading often, on crowded fields) makes pick-ups, failed
loads, collisions, swaps and the reference's overlap happen; the tests count them. Negative controls: envs
with a perturbed rule or observation must fail.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

lbforaging = pytest.importorskip("lbforaging")
gymnasium = pytest.importorskip("gymnasium")

from lbforaging.foraging import ForagingEnv  # noqa: E402

import jaxmarl_suite  # noqa: E402
from jaxmarl_suite.environments.lbf import LevelBasedForaging  # noqa: E402
from jaxmarl_suite.environments.lbf.lbf import NONE  # noqa: E402
from jaxmarl_suite.environments.lbf.parity import (  # noqa: E402
    env_from_lbforaging,
    lbforaging_state,
    legal_from_lbforaging,
    state_from_lbforaging,
)


def reference(players: int = 2, size: int = 8, foods: int = 2, sight: int | None = None, coop: bool = False,
              steps: int = 50, **extra: Any) -> Any:
    """A ``ForagingEnv`` with lbforaging's registered defaults, overridable."""
    kwargs = dict(players=players, min_player_level=1, max_player_level=2, field_size=(size, size),
                  min_food_level=1, max_food_level=None, max_num_food=foods,
                  sight=size if sight is None else sight, max_episode_steps=steps, force_coop=coop)
    kwargs.update(extra)
    return ForagingEnv(**kwargs)


def grid_reference(**kwargs: Any) -> Any:
    """A reference with the grid observation switched on after construction: lbforaging 2.0.0 builds that
    observation's Box with the wrong shape and cannot construct it (semitable/lb-foraging#34), so the test
    swaps in correct Boxes; the observation code that runs is the reference's own."""
    ref = reference(**kwargs)
    ref._grid_observation = True
    side = 2 * ref.sight + 1
    box = gymnasium.spaces.Box(0.0, np.inf, (3, side, side), np.float32)
    ref.observation_space = gymnasium.spaces.Tuple([box] * len(ref.players))
    return ref


class Follower:
    """Steps our env beside a reference, jitted once per env."""

    def __init__(self, env: LevelBasedForaging) -> None:
        self.env = env
        self.step = jax.jit(lambda s, a: env.step(jax.random.key(0), s, {"agents": a}))


def policy(rng: np.random.Generator, legal: np.ndarray, load_bias: float) -> np.ndarray:
    """Random actions, legal or not (illegal ones must become no-ops in both); loading where legal with
    probability ``load_bias``."""
    actions = rng.integers(0, 6, legal.shape[0])
    load = legal[:, 5] & (rng.random(legal.shape[0]) < load_bias)
    return np.where(load, 5, actions)


def events(before: dict, after: dict, actions: np.ndarray, legal: np.ndarray) -> Counter:
    """What a reference step did, for the coverage counts."""
    count: Counter = Counter()
    moved = np.any(before["player_pos"] != after["player_pos"], -1)
    effective = np.where(legal[np.arange(len(actions)), actions], actions, NONE)
    wants = (effective >= 1) & (effective <= 4)
    count["blocked_move"] += int(np.sum(wants & ~moved))
    count["illegal"] += int(np.sum(effective != actions))
    pos = [tuple(p) for p in after["player_pos"]]
    count["overlap"] += int(len(set(pos)) < len(pos))
    old = [tuple(p) for p in before["player_pos"]]
    for i in range(len(pos)):
        for j in range(len(pos)):
            if i < j and moved[i] and moved[j] and pos[i] == old[j] and pos[j] == old[i]:
                count["swap"] += 1
    count["eaten"] += int(len(before["food_level"]) - len(after["food_level"]))
    return count


def mismatches(env: LevelBasedForaging, ref: Any, seed: int, episodes: int, load_bias: float = 0.5,
               follower: Follower | None = None, counts: Counter | None = None) -> list[str]:
    """Plays ``episodes`` reference episodes with our env beside it; every difference found (empty when
    they agree)."""
    follower = follower or Follower(env)
    rng = np.random.default_rng(seed)
    problems: list[str] = []
    ref.reset(seed=seed)
    for episode in range(episodes):
        if episode:
            ref.reset()
        state, timestep = state_from_lbforaging(ref, env)
        obs = ref._make_gym_obs()
        done, t = False, 0
        while not done:
            where = f"seed {seed} episode {episode} step {t}"
            ours = np.asarray(timestep.obs["agents"])
            if not np.array_equal(ours, np.stack(obs)):
                problems.append(f"{where}: observations differ\nours {ours}\nref  {np.stack(obs)}")
            legal = legal_from_lbforaging(ref)
            if not np.array_equal(np.asarray(timestep.action_mask["agents"]), legal):
                problems.append(f"{where}: legal actions differ")
            if problems:
                return problems
            actions = policy(rng, legal, load_bias)
            before = lbforaging_state(ref)
            obs, rewards, done, truncated, info = ref.step(actions.tolist())
            after = lbforaging_state(ref)
            state, timestep = follower.step(state, jnp.asarray(actions, jnp.int32))
            t += 1
            if counts is not None:
                counts.update(events(before, after, actions, legal))
                counts["steps"] += 1
                counts["penalised"] += int(np.sum(np.asarray(rewards) < 0))
            ours_state = jax.device_get(state)
            present = ours_state.food_level > 0
            for name, value in after.items():
                mine = getattr(ours_state, name)
                if name in ("food_pos", "food_level"):
                    mine = mine[present]
                if not np.array_equal(np.asarray(mine), value):
                    problems.append(f"{where}: state {name} differs: ours {mine}, ref {value}")
            if not np.allclose(np.asarray(timestep.reward["agents"]), np.asarray(rewards, np.float64),
                               rtol=1e-6, atol=1e-7):
                problems.append(f"{where}: rewards differ: ours {timestep.reward['agents']}, ref {rewards}")
            ended = bool(np.all(timestep.terminated["agents"] | timestep.truncated["agents"]))
            if ended != done or truncated:
                problems.append(f"{where}: end differs: ours {ended}, ref {done} (truncated {truncated})")
            if problems:
                return problems
        if not np.array_equal(np.asarray(timestep.obs["agents"]), np.stack(obs)):
            problems.append(f"seed {seed} episode {episode}: last observations differ")
    return problems


CONFIGS = {
    # lbforaging's registered ids (built by gymnasium.make, as users build them)
    "Foraging-8x8-2p-2f-coop-v3": dict(id="Foraging-8x8-2p-2f-coop-v3"),
    "Foraging-2s-8x8-2p-2f-coop-v3": dict(id="Foraging-2s-8x8-2p-2f-coop-v3"),
    "Foraging-10x10-3p-3f-v3": dict(id="Foraging-10x10-3p-3f-v3"),
    "Foraging-2s-5x5-4p-2f-v3": dict(id="Foraging-2s-5x5-4p-2f-v3"),
    # arguments no id reaches: penalty, no normalization, hidden levels, per-player and per-food levels
    "penalty_unnormalized": dict(players=3, size=6, foods=3, penalty=0.25, normalize_reward=False),
    "no_levels_sight1": dict(players=4, size=6, foods=2, sight=1, observe_agent_levels=False),
    "level_lists": dict(players=3, size=7, foods=3, min_player_level=[1, 2, 1],
                        max_player_level=[3, 2, 2], min_food_level=[1, 2, 3], max_food_level=[3, 4, 5]),
    "rect_15x9": dict(players=5, foods=4, field_size=(15, 9), sight=3, size=15),
}


def build_reference(name: str) -> Any:
    config = dict(CONFIGS[name])
    if "id" in config:
        return gymnasium.make(config["id"]).unwrapped
    return reference(**config)


DEFAULT = ["Foraging-2s-5x5-4p-2f-v3", "penalty_unnormalized"]


@pytest.mark.parametrize("name", DEFAULT)
def test_episodes_match_the_reference(name: str) -> None:
    ref = build_reference(name)
    env = env_from_lbforaging(ref)
    counts: Counter = Counter()
    follower = Follower(env)
    for seed in range(3):
        assert mismatches(env, ref, seed, episodes=3, follower=follower, counts=counts) == []
    # the rules were exercised, not only stepped through
    assert counts["eaten"] > 0 and counts["blocked_move"] > 0 and counts["illegal"] > 0, counts
    if name == "penalty_unnormalized":
        assert counts["penalised"] > 0, counts


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in CONFIGS if n not in DEFAULT])
def test_more_configurations_match_the_reference(name: str) -> None:
    ref = build_reference(name)
    env = env_from_lbforaging(ref)
    follower = Follower(env)
    for seed in range(6):
        assert mismatches(env, ref, seed, episodes=3, follower=follower) == []


def test_crowded_field_swaps_and_overlaps_match() -> None:
    """Four players on a 5x5 field with two foods: swaps and the reference's overlap (a player entering the
    cell of one whose move collided) happen and match."""
    ref = reference(players=4, size=5, foods=1, steps=80)
    env = env_from_lbforaging(ref)
    counts: Counter = Counter()
    follower = Follower(env)
    for seed in range(8):
        assert mismatches(env, ref, seed, episodes=2, load_bias=0.05, follower=follower, counts=counts) == []
    assert counts["swap"] > 0 and counts["overlap"] > 0, counts


def test_grid_observation_matches_the_reference() -> None:
    ref = grid_reference(players=3, size=7, foods=2, sight=2)
    env = env_from_lbforaging(ref, observation_type="grid")
    assert env.observation_space("agents").shape == (3, 5, 5)
    for seed in range(3):
        assert mismatches(env, ref, seed, episodes=2) == []


# ------------------------------------------------------------------------------ negative controls
class SwapsBlocked(LevelBasedForaging):
    """Perturbed: two players trading cells both stay."""

    def transition_one(self, state, action, params):  # type: ignore[no-untyped-def]
        new_state, reward = super().transition_one(state, action, params)
        old, new = state.player_pos, new_state.player_pos
        swapped = (jnp.all(new[:, None] == old[None], -1) & jnp.all(old[:, None] == new[None], -1)
                   & jnp.any(new != old, -1)[:, None]).any(1)
        return new_state.replace(player_pos=jnp.where(swapped[:, None], old, new)), reward


class OthersBeforeSelf(LevelBasedForaging):
    """Perturbed: the observation lists players in index order instead of self first."""

    def _vector_view(self, state, me):  # type: ignore[no-untyped-def]
        return super()._vector_view(state, jnp.zeros_like(me))


class CenteredCoordinates(LevelBasedForaging):
    """Perturbed: coordinates relative to the player (the reference's are relative to its clipped view)."""

    def _vector_view(self, state, me):  # type: ignore[no-untyped-def]
        view = super()._vector_view(state, me)
        shift = jnp.minimum(state.player_pos[me], self.sight) - self.sight
        coords = jnp.tile(jnp.array([1.0, 1.0, 0.0]), self.num_food + self.num_players)
        return jnp.where((view >= 0) & (coords > 0), view + jnp.tile(jnp.concatenate([shift, jnp.zeros(1)]),
                                                                     self.num_food + self.num_players), view)


class NormalizedPenalty(LevelBasedForaging):
    """Perturbed: the penalty is divided by the normalizer like a pick-up's reward."""

    def transition_one(self, state, action, params):  # type: ignore[no-untyped-def]
        new_state, reward = super().transition_one(state, action, params)
        return new_state, jnp.where(reward < 0, reward / state.food_spawned, reward)


@pytest.mark.parametrize(("perturbed", "config"), [
    (SwapsBlocked, dict(players=4, size=5, foods=1, steps=80)),
    (OthersBeforeSelf, dict(players=3, size=6, foods=2)),
    (CenteredCoordinates, dict(players=3, size=8, foods=2, sight=2)),
    (NormalizedPenalty, dict(players=3, size=6, foods=3, penalty=0.25)),
])
def test_a_perturbed_env_fails(perturbed: type, config: dict) -> None:
    ref = reference(**config)
    base = env_from_lbforaging(ref)
    env = perturbed(**{
        "num_agents": base.num_players, "field_size": (base.rows, base.cols), "max_num_food": base.num_food,
        "sight": base.sight, "force_coop": base.force_coop, "max_steps": base.default_params.max_steps,
        "penalty": base.default_params.penalty})
    follower = Follower(env)
    found = [problem for seed in range(8)
             for problem in mismatches(env, ref, seed, episodes=2, load_bias=0.3, follower=follower)]
    assert found, f"{perturbed.__name__} matched the reference"


# --------------------------------------------------------------------------------------- ids
def test_every_lbforaging_id_builds_its_configuration() -> None:
    """Every id lbforaging registers with gymnasium makes our env with the same arguments."""
    ids = [name for name in gymnasium.registry if name.startswith("Foraging")]
    assert len(ids) == 1920
    for name in ids:
        kwargs = gymnasium.registry[name].kwargs
        ours = jaxmarl_suite.make(name)
        assert isinstance(ours, LevelBasedForaging)
        size = kwargs["field_size"]
        assert (ours.num_players, (ours.rows, ours.cols), ours.num_food, ours.sight) == (
            kwargs["players"], size, kwargs["max_num_food"], kwargs["sight"]), name
        assert ours.force_coop == kwargs["force_coop"] and ours.max_food_level is None, name
        assert (ours.min_player_level.tolist(), ours.max_player_level.tolist()) == (
            [1] * kwargs["players"], [2] * kwargs["players"]), name
        assert ours.default_params.max_steps == kwargs["max_episode_steps"] == 50, name
        assert ours.default_params.penalty == kwargs["penalty"], name
    assert jaxmarl_suite.make("lbforaging:Foraging-2s-8x8-2p-2f-coop-v3").sight == 2


def test_reset_draws_like_the_reference() -> None:
    """Our spawns are not the reference's draws (NumPy cannot be replayed) but follow the same distribution:
    over many resets, the frequency of every player level, food level and food count agree."""
    ref = gymnasium.make("Foraging-6x6-3p-3f-v3").unwrapped
    env = jaxmarl_suite.make("Foraging-6x6-3p-3f-v3")
    resets = 3000
    ref_counts: Counter = Counter()
    ref.reset(seed=0)
    for _ in range(resets):
        ref.reset()
        state = lbforaging_state(ref)
        ref_counts.update(f"player_level={v}" for v in state["player_level"])
        ref_counts.update(f"food_level={v}" for v in state["food_level"])
        ref_counts[f"foods={len(state['food_level'])}"] += 1
    states = jax.jit(jax.vmap(env.start_one))(jax.random.split(jax.random.key(0), resets))
    ours: Counter = Counter()
    for v in np.asarray(states.player_level).reshape(-1):
        ours[f"player_level={v}"] += 1
    levels = np.asarray(states.food_level)
    for v in levels[levels > 0]:
        ours[f"food_level={v}"] += 1
    for v in (levels > 0).sum(1):
        ours[f"foods={v}"] += 1
    for key in set(ref_counts) | set(ours):
        # frequencies per reset within 4 standard errors of a binomial at the pooled rate
        p = (ref_counts[key] + ours[key]) / (2 * resets)
        spread = 4 * np.sqrt(max(p, 1e-3) * 3 / resets) + 2 / resets
        assert abs(ref_counts[key] - ours[key]) / resets <= spread, (key, ref_counts[key], ours[key])
