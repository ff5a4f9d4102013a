"""Wrapper semantics: auto-reset, episode statistics, group flattening, world state (checked mode:
test_checked.py)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from compile_options import AS_USERS_COMPILE
from toy_envs import TwoTeams

import jaxmarl_suite
from jaxmarl_suite.core.spaces import Box, Discrete
from jaxmarl_suite.core.vec import VecEnv
from jaxmarl_suite.wrappers import AutoReset, EpisodeStats, FlattenGroups, WorldState


def _run(env, key, num_steps, compiler_options=None):
    """Python-loop rollout returning the list of TimeSteps (host arrays); ``compiler_options`` go to XLA
    with each program."""
    jit = functools.partial(jax.jit, compiler_options=compiler_options)
    state, timestep = jit(env.reset)(key)  # jitted: op by op, a batched reset compiles for seconds
    step, sample = jit(env.step), jit(env.sample_actions)
    out = []
    for t in range(num_steps):
        action_key, step_key = jax.random.split(jax.random.fold_in(key, t))
        state, timestep = step(step_key, state, sample(action_key, timestep.action_mask))
        out.append(jax.tree.map(np.asarray, timestep))
    return out


def test_episode_stats_report_the_summed_rewards_of_finished_episodes() -> None:
    env = EpisodeStats(AutoReset(jaxmarl_suite.make("MPE_simple_spread_v3", num_envs=4)))
    steps = _run(env, jax.random.PRNGKey(3), 50)
    rewards = np.stack([ts.reward["agents"] for ts in steps])  # [T, B, n]
    done = np.stack([ts.info["episode_done"] for ts in steps])  # [T, B]
    assert done[24].all() and done[49].all() and done.sum() == 8
    for end, start in ((24, 0), (49, 25)):
        expected = rewards[start : end + 1].sum(axis=0)
        np.testing.assert_allclose(steps[end].info["episode_return"]["agents"], expected, rtol=1e-5)
        np.testing.assert_allclose(
            steps[end].info["episode_group_return"]["agents"], expected.sum(-1), rtol=1e-5
        )
        assert (steps[end].info["episode_length"] == 25).all()
    # Between episode ends the reported statistics hold the last finished episode.
    np.testing.assert_array_equal(
        steps[30].info["episode_return"]["agents"], steps[24].info["episode_return"]["agents"]
    )


def test_partial_termination_does_not_reset() -> None:
    """Red agents may terminate early; the episode (and so the reset) waits for every agent."""
    env = AutoReset(TwoTeams())
    steps = _run(env, jax.random.PRNGKey(0), 7)
    red_done_early = [ts.terminated["red"].all() for ts in steps[:-1]]
    assert any(red_done_early), "toy env should terminate red before the time limit"
    for ts in steps[:-1]:
        np.testing.assert_array_equal(ts.obs["red"], ts.info["final_obs"]["red"])
    assert steps[-1].truncated["blue"].all()
    assert not np.array_equal(steps[-1].obs["blue"], steps[-1].info["final_obs"]["blue"])


def test_flatten_groups_pads_observations_and_masks_and_routes_actions() -> None:
    inner = TwoTeams()
    flat = FlattenGroups(inner)
    assert flat.groups == {"agents": ("red_0", "red_1", "blue_0")}
    assert flat.observation_space("agents").shape == (5 + 2,)
    assert flat.action_space("agents") == Discrete(4)
    key = jax.random.PRNGKey(1)
    inner_state, inner_ts = inner.reset(key)
    flat_state, flat_ts = flat.reset(key)
    obs = np.asarray(flat_ts.obs["agents"])
    np.testing.assert_array_equal(obs[:2, :3], inner_ts.obs["red"])
    np.testing.assert_array_equal(obs[:2, 3:5], 0.0)
    np.testing.assert_array_equal(obs[2, :5], inner_ts.obs["blue"][0])
    np.testing.assert_array_equal(obs[:, 5:], [[1, 0], [1, 0], [0, 1]])
    mask = np.asarray(flat_ts.action_mask["agents"])
    np.testing.assert_array_equal(mask[:2], [[True, True, True, False]] * 2)
    actions = {"agents": jnp.array([2, 0, 3])}
    _, flat_next = flat.step(key, flat_state, actions)
    _, inner_next = inner.step(key, inner_state, {"red": jnp.array([2, 0]), "blue": jnp.array([3])})
    np.testing.assert_array_equal(
        flat_next.reward["agents"], np.concatenate([inner_next.reward["red"], inner_next.reward["blue"]])
    )
    vec = FlattenGroups(AutoReset(VecEnv(inner, 5)))
    _, vec_ts = vec.reset(key)
    assert vec_ts.obs["agents"].shape == (5, 3, 7)
    assert vec_ts.info["final_obs"]["agents"].shape == (5, 3, 7)


class MixedKinds(TwoTeams):
    def action_space(self, group):
        return Box(0, 1, (2,)) if group == "blue" else Discrete(3)


def test_flatten_groups_refuses_mixed_action_kinds() -> None:
    with pytest.raises(TypeError, match="one kind of action space"):
        FlattenGroups(MixedKinds())


def test_world_state_concatenates_observations_including_final() -> None:
    env = WorldState(AutoReset(jaxmarl_suite.make("MPE_simple_spread_v3", num_envs=2)))
    assert env.world_state_space().shape == (54,)
    steps = _run(env, jax.random.PRNGKey(0), 25)
    last = steps[-1]
    np.testing.assert_array_equal(last.info["world_state"], last.obs["agents"].reshape(2, -1))
    np.testing.assert_array_equal(
        last.info["final_world_state"], last.info["final_obs"]["agents"].reshape(2, -1)
    )
    assert not np.array_equal(last.info["world_state"], last.info["final_world_state"])


def test_auto_reset_restarts_a_world_state_built_below_it_as_one_built_above() -> None:
    """``WorldState`` declares the world state it builds as observation info, so an ``AutoReset`` stacked
    above it restarts it with the observations, as it restarts SMAX's own."""
    above = WorldState(AutoReset(jaxmarl_suite.make("MPE_simple_spread_v3", num_envs=2)))
    below = AutoReset(WorldState(jaxmarl_suite.make("MPE_simple_spread_v3", num_envs=2)))
    assert below.observation_info == ("world_state",)
    key = jax.random.PRNGKey(3)
    for a, b in zip(_run(above, key, 30), _run(below, key, 30), strict=True):
        for name in ("world_state", "final_world_state"):
            np.testing.assert_array_equal(a.info[name], b.info[name])


def test_vmap_over_seeds_keeps_each_seed_equal_to_its_own_run() -> None:
    env = AutoReset(jaxmarl_suite.make("MPE_simple_spread_v3", num_envs=8))

    def rollout(key):
        state, timestep = env.reset(key)

        def body(carry, t):
            state, timestep = carry
            action_key, step_key = jax.random.split(jax.random.fold_in(key, t))
            state, timestep = env.step(step_key, state, env.sample_actions(action_key))
            return (state, timestep), timestep.reward["agents"]

        return jax.lax.scan(body, (state, timestep), jnp.arange(30))[1]

    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    together = jax.jit(jax.vmap(rollout))(keys)
    one_by_one = jnp.stack([jax.jit(rollout)(k) for k in keys])
    np.testing.assert_allclose(together, one_by_one, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("env_id, batch, modes", [
    ("SMAX_3m", 16, ("cond", "select")),
    ("MPE_simple_spread_v3", 4, ("cond", "select")),
    ("Foraging-5x5-2p-1f-v3", 16, ("cond", "select", "sparse")),
])
def test_auto_reset_modes_give_the_same_trajectory(env_id: str, batch: int, modes: tuple[str, ...]) -> None:
    """``cond`` resets only on steps where an env ended, ``select`` every step, ``sparse`` only the ended
    envs while they are few (here at most 2 of 16) and the whole batch otherwise; the trajectories agree
    bit for bit, with SMAX and LBF episodes ending on different steps across the batch."""
    runs = {
        mode: _run(EpisodeStats(AutoReset(jaxmarl_suite.make(env_id, num_envs=batch), mode, 1 / 8)),
                   jax.random.PRNGKey(5), 60, AS_USERS_COMPILE)  # different programs, compared bit for bit
        for mode in modes
    }
    ends = np.stack([ts.info["episode_done"] for ts in runs["cond"]])
    assert ends.any(), "the rollout should cross episode ends"
    if not env_id.startswith("MPE"):
        assert len({int(t) for t in np.argwhere(ends)[:, 0]}) > 1, "ends should be staggered"
    if "sparse" in modes:
        per_step = ends.sum(axis=1)
        assert ((per_step >= 1) & (per_step <= 2)).any(), "some steps should start only the ended envs"
        assert (per_step > 2).any(), "some step should fall back to the full reset"
    for mode in modes[1:]:
        for first, other in zip(runs[modes[0]], runs[mode], strict=True):
            jax.tree.map(np.testing.assert_array_equal, first, other)


def test_vec_env_starts_part_of_a_batch_as_its_full_reset_would() -> None:
    """``VecEnv.reset_at`` starts env ``i`` as ``reset`` does, on both paths, and ``put`` writes the part
    back, skipping the padding indices past the batch."""
    key = jax.random.PRNGKey(11)
    index = jnp.asarray([6, 1, 8], jnp.int32)  # 8 is padding for a batch of 8
    for use_vmap in (False, True):
        vec = VecEnv(jaxmarl_suite.make("Foraging-8x8-2p-2f-v3"), 8, use_vmap=use_vmap)
        full_state, full = jax.jit(vec.reset)(key)  # jitted: op by op, a reset dispatches for seconds
        part_state, part = jax.jit(vec.reset_at)(key, index)
        for i, k in ((6, 0), (1, 1)):
            jax.tree.map(np.testing.assert_array_equal, vec.env_state(full_state, i),
                         vec.env_state(part_state, k))
            np.testing.assert_array_equal(full.obs["agents"][i], part.obs["agents"][k])
        other_state, _ = jax.jit(vec.reset)(jax.random.PRNGKey(12))
        merged = jax.jit(vec.put)(other_state, index, part_state)
        for i in range(8):
            expected = full_state if i in (6, 1) else other_state
            jax.tree.map(np.testing.assert_array_equal, vec.env_state(merged, i), vec.env_state(expected, i))


def test_auto_reset_mode_follows_the_env_hint_and_rejects_unknown_modes() -> None:
    assert AutoReset(jaxmarl_suite.make("MPE_simple_spread_v3", num_envs=2)).mode == "cond_on_cpu"
    assert AutoReset(jaxmarl_suite.make("SMAX_3m", num_envs=2)).mode == "select"
    assert AutoReset(jaxmarl_suite.make("SMAX_3m", num_envs=2), "cond").mode == "cond"
    early = jaxmarl_suite.make("MPE_simple_formation_v1", num_envs=2, terminate_on_success=True)
    assert AutoReset(early).mode == "select"
    # Overcooked V2's fixed starts are as cheap as a step (cheap_reset); its random starts are not
    cheap = jaxmarl_suite.make("OvercookedV2_cramped_room", num_envs=2)
    assert cheap.episodes_end_together and cheap.cheap_reset and AutoReset(cheap).mode == "select"
    drawn = jaxmarl_suite.make("OvercookedV2_cramped_room", num_envs=2, random_reset=True)
    assert not drawn.cheap_reset and AutoReset(drawn).mode == "cond_on_cpu"
    assert AutoReset(jaxmarl_suite.make("Foraging-8x8-2p-2f-v3", num_envs=2)).mode == "sparse_on_cpu"
    assert AutoReset(jaxmarl_suite.make("Foraging-8x8-2p-2f-v3")).mode == "select"  # one env: no part
    assert AutoReset(jaxmarl_suite.make("Foraging-8x8-2p-2f-v3", num_envs=2), vmapped=True).mode == "select"
    with pytest.raises(ValueError, match="cond"):
        AutoReset(jaxmarl_suite.make("SMAX_3m", num_envs=2), "sometimes")
    with pytest.raises(ValueError, match="VecEnv"):
        AutoReset(jaxmarl_suite.make("Foraging-8x8-2p-2f-v3"), "sparse")
    with pytest.raises(ValueError, match="sparse_fraction"):
        AutoReset(jaxmarl_suite.make("SMAX_3m", num_envs=2), "sparse", 0.0)


def _auto_reset_branches(mode: str, gpu: bool = False) -> int:
    """How many ``conditional`` ops the compiled step of an auto-reset MPE batch holds (for the CPU, or for
    an H200 through XLA's GPU compiler)."""
    from jaxmarl_suite import bench

    env = AutoReset(jaxmarl_suite.make("MPE_simple_spread_v3", num_envs=4), mode)
    state, _ = env.reset(jax.random.PRNGKey(0))
    args = (jax.random.PRNGKey(2), state, env.sample_actions(jax.random.PRNGKey(1)))
    compiled = bench.compile_for_gpu(env.step, *args) if gpu else jax.jit(env.step).lower(*args).compile()
    return compiled.as_text().count(" conditional(")


def test_auto_reset_cond_on_cpu_branches_on_the_cpu() -> None:
    """``cond_on_cpu`` (MPE's default) compiles to ``cond``'s branch for the CPU (the modes give the same
    trajectories: ``test_auto_reset_modes_give_the_same_trajectory``)."""
    assert AutoReset(jaxmarl_suite.make("MPE_simple_spread_v3", num_envs=4)).mode == "cond_on_cpu"
    assert _auto_reset_branches("cond") == _auto_reset_branches("cond_on_cpu") == 1
    assert _auto_reset_branches("select") == 0


def test_auto_reset_cond_on_cpu_is_branch_free_for_an_h200(gpu_target: object) -> None:
    """For an H200 ``cond_on_cpu`` compiles to ``select``'s branch-free program, where a branch would wait
    for its predicate on the host every step."""
    assert _auto_reset_branches("cond", gpu=True) == 1
    assert _auto_reset_branches("cond_on_cpu", gpu=True) == _auto_reset_branches("select", gpu=True) == 0


def test_flattening_groups_of_different_action_counts_masks_actions() -> None:
    """``all_actions_legal`` passes through wrappers, except where ``FlattenGroups`` pads a smaller group's
    ``Discrete`` actions and masks the padding (speaker_listener: 3 and 5 actions), so a trainer that skips
    masks for such envs keeps them for this one."""
    from jaxmarl_suite.training.kit.envs import action_masks, make_training_env

    spread = make_training_env("MPE_simple_spread_v3", 2, {}, "all")
    assert spread.all_actions_legal and action_masks(spread, spread.reset(jax.random.PRNGKey(0))[1]) == {}
    mixed = make_training_env("MPE_simple_speaker_listener_v4", 2, {}, "all")
    _, timestep = mixed.reset(jax.random.PRNGKey(0))
    assert not mixed.all_actions_legal
    assert not np.all(timestep.action_mask["agents"]), "the padded actions are masked"
    np.testing.assert_array_equal(action_masks(mixed, timestep)["agents"], timestep.action_mask["agents"])
    assert make_training_env("MPE_simple_speaker_listener_v4", 2, {}, "group").all_actions_legal
