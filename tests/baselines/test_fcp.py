"""FCP (``baselines/fcp.py``): every env's partner acts with its own member's parameters for the whole
episode, in the seat the ego leaves free; both are drawn afresh when an episode starts, the balanced
assignment dealing the envs evenly over the members and acting as the per-env one would for the same
assignment; the ego learns the best response to its partners; populations that do not fit the ego's env
are refused.

The iterated matrix games show each player the last joint action from its own side, so the partner's
action can be read off its observation. Members are made to play one fixed action (their actor head's
bias at +-50, its kernel zeroed), so which member acted is visible in what it played.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.baselines import fcp, ippo
from jaxmarl_suite.cli import main as cli_main
from jaxmarl_suite.errors import ConfigError
from jaxmarl_suite.training.runner.experiment import load_population

GAME = {"game": "stag_hunt", "max_steps": 4}
"""Stag hunt: (stag, stag) pays 4 each, stag alone 0, hare 3 against stag and 2 against hare."""
STAG, HARE = 0, 1


@pytest.fixture(scope="module")
def population_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real population folder (2 IPPO seeds x 3 snapshots) on the stag hunt."""
    run_dir = tmp_path_factory.mktemp("fcp") / "population"
    code = cli_main(["population", "ippo", "--env", "MatrixGame", "--env-kwargs", '{"game": "stag_hunt", '
                     '"max_steps": 4}', "--seeds", "2", "--num-envs", "4", "--num-steps", "8",
                     "--num-minibatches", "2", "--update-epochs", "1", "--total-timesteps", "128",
                     "--artifacts", "none", "--no-progress", "--run-dir", str(run_dir)])
    assert code == 0
    return run_dir


def fixed_actions(population_dir: Path, actions: list[int]) -> fcp.Partners:
    """The population's members, member ``m`` made to play ``actions[m % len(actions)]`` always."""
    loaded = load_population(population_dir)
    size = len(loaded.members)
    bias = np.full((size, 2), -50.0, np.float32)
    bias[np.arange(size), [actions[m % len(actions)] for m in range(size)]] = 50.0
    head = loaded.params["agents"]["params"]["Dense_0"]
    params = jax.tree.map(lambda x: x, loaded.params)
    params["agents"]["params"]["Dense_0"] = {"bias": jnp.asarray(bias),
                                             "kernel": jnp.zeros_like(head["kernel"])}
    env = ippo.make_env(loaded.experiment.config, 16)
    policy = ippo.make_policy(loaded.experiment.config, env)
    return fcp.Partners(size, params, policy.act, policy.init_hidden)


def fcp_config(population_dir: Path, **overrides: Any) -> fcp.Config:
    values: dict[str, Any] = dict(env_id="MatrixGame", env_kwargs=dict(GAME), num_envs=16, num_steps=1,
                                  num_minibatches=1, update_epochs=1, hidden_sizes=(16,),
                                  total_timesteps=16 * 64, partners=str(population_dir))
    values.update(overrides)
    return fcp.Config(**values)


def own_action(obs: np.ndarray) -> np.ndarray:
    """The player's own last action from its observation (start, CC, CD, DC, DD from its side); -1 on an
    episode's first observation."""
    outcome = obs.argmax(-1)
    return np.where(outcome == 0, -1, (outcome - 1) // 2)


@pytest.mark.parametrize(("assignment", "num_envs"), [
    ("balanced", 12), ("per_env", 16), pytest.param("balanced", 16, marks=pytest.mark.slow)])
def test_each_env_plays_its_members_action_in_the_free_seat(
        population_dir: Path, monkeypatch: pytest.MonkeyPatch, assignment: str, num_envs: int) -> None:
    """12 envs deal evenly over the 6 members, 16 do not (3 slots a member, 2 left empty)."""
    partners = fixed_actions(population_dir, [STAG, HARE])
    monkeypatch.setattr(fcp, "load_partners", lambda config, env: partners)
    config = fcp_config(population_dir, num_envs=num_envs, total_timesteps=num_envs * 64,
                        partner_assignment=assignment)
    env = fcp.make_env(config)
    trainer = fcp.make_trainer(config, env)
    update = jax.jit(trainer.update)
    runner = trainer.init(jax.random.PRNGKey(0), fcp.HParams())
    index, seat, starts, matched, wrong, ego_differs = [], [], [], 0, 0, 0
    envs = np.arange(num_envs)
    for _ in range(40):
        before_starts = np.asarray(runner.starts)
        runner, _ = update(runner, fcp.HParams())
        b_index, b_seat = np.asarray(runner.partner_index), np.asarray(runner.ego_seat)
        counts = np.bincount(b_index, minlength=partners.size)
        if assignment == "balanced":  # at most ceil(B / M) envs a member, exactly B / M when it divides
            assert counts.max() <= -(-num_envs // partners.size)
            if num_envs % partners.size == 0:
                assert (counts == num_envs // partners.size).all()
        obs = np.asarray(runner.timestep.obs["agents"])  # [B, 2, 5]
        partner_played = own_action(obs[envs, 1 - b_seat])
        seen = partner_played >= 0  # not an episode's first observation (the step ended the episode)
        expected = np.array([STAG, HARE])[b_index % 2]
        matched += int((partner_played[seen] == expected[seen]).sum())
        wrong += int((partner_played[seen] == 1 - expected[seen]).sum())
        ego_differs += int((own_action(obs[envs, b_seat])[seen] != expected[seen]).sum())
        if index:  # a partner and seat only change when the step starts an episode
            held = ~before_starts
            assert (b_index[held] == index[-1][held]).all() and (b_seat[held] == seat[-1][held]).all()
        index.append(b_index)
        seat.append(b_seat)
        starts.append(before_starts)
    # 3 of an episode's 4 steps show the partner's action
    assert matched == 40 * num_envs * 3 // 4 and wrong == 0
    drawn = np.stack(index)[np.stack(starts)]  # the members drawn at episode starts
    assert set(np.unique(drawn)) == set(range(partners.size))
    assert set(np.unique(np.stack(seat))) == {0, 1}
    # negative control of the check: the ego's seat, read the same way, often differs from the member's
    # action (the untrained ego plays both), so a partner acting in the wrong seat would be caught
    assert ego_differs > 5 * num_envs


@pytest.mark.parametrize(("num_envs", "size"), [(12, 6), (16, 6), (4, 6), (64, 12)])
def test_balanced_draws_deal_the_envs_evenly_over_the_members(num_envs: int, size: int) -> None:
    per_member = -(-num_envs // size)
    draws = jax.jit(jax.vmap(lambda key: fcp.draw_members(key, num_envs, size, balanced=True)))(
        jax.random.split(jax.random.PRNGKey(0), 200))
    for index in np.asarray(draws):
        counts = np.bincount(index, minlength=size)
        assert counts.max() <= per_member and counts.sum() == num_envs
        if num_envs % size == 0:
            assert (counts == num_envs // size).all()
        slot, env_of_slot = (np.asarray(x) for x in fcp.member_table(jnp.asarray(index), size, per_member))
        assert len(set(slot)) == num_envs and (slot // per_member == index).all()
        assert (env_of_slot[slot] == np.arange(num_envs)).all()
        assert (env_of_slot == num_envs).sum() == size * per_member - num_envs
    # which envs a member gets, and how many when the division leaves a remainder, is random
    assert len({tuple(index) for index in np.asarray(draws)}) > 100
    per_env = np.asarray(fcp.draw_members(jax.random.PRNGKey(0), 6000, size, balanced=False))
    assert np.bincount(per_env, minlength=size).min() > 6000 / size * 0.9


@pytest.mark.parametrize("num_envs", [16, pytest.param(12, marks=pytest.mark.slow)])
def test_acting_by_member_equals_acting_per_env(population_dir: Path, num_envs: int) -> None:
    """For the same assignment and keys the member table changes nothing but the cost: real (barely
    trained) members sample the same actions, and fixed-action members play their own action."""
    loaded = load_population(population_dir)
    config = loaded.experiment.config
    env = ippo.make_env(config, num_envs)
    policy = ippo.make_policy(config, env)
    size, per_member = len(loaded.members), -(-num_envs // len(loaded.members))
    by_member = jax.jit(lambda *a: fcp.act_by_member(policy.act, *a, per_member=per_member))
    per_env = jax.jit(lambda *a: fcp.act_per_env(policy.act, *a))
    fixed = fixed_actions(population_dir, [STAG, HARE])
    _, timestep = env.reset(jax.random.PRNGKey(0))
    observation = fcp.envs.observation(env, timestep)
    starts = jnp.ones((num_envs,), bool)
    actions = []
    for seed in range(20):
        member_key, act_key = jax.random.split(jax.random.PRNGKey(seed))
        index = fcp.draw_members(member_key, num_envs, size, balanced=True)
        inputs = (index, policy.init_hidden(num_envs), observation, starts,
                  jax.random.split(act_key, num_envs))
        mine, theirs = by_member(loaded.params, *inputs), per_env(loaded.params, *inputs)
        jax.tree.map(np.testing.assert_array_equal, mine, theirs)
        actions.append(np.asarray(mine[1]["agents"]))
        _, played = by_member(fixed.params, *inputs)
        expected = np.array([STAG, HARE])[np.asarray(index) % 2]
        assert (np.asarray(played["agents"]) == expected[:, None]).all()
    assert len(np.unique(np.stack(actions))) == 2  # the comparison saw both actions


def test_the_same_seed_trains_the_same(population_dir: Path) -> None:
    config = fcp_config(population_dir, num_steps=4)
    trainer = fcp.make_trainer(config, fcp.make_env(config))
    run = jax.jit(lambda key: jax.lax.scan(lambda r, _: trainer.update(r, fcp.HParams()),
                                           trainer.init(key, fcp.HParams()), None, 3)[0])
    first, again, other = run(jax.random.PRNGKey(3)), run(jax.random.PRNGKey(3)), run(jax.random.PRNGKey(4))
    jax.tree.map(np.testing.assert_array_equal, first, again)
    assert (np.asarray(first.partner_index) != np.asarray(other.partner_index)).any()


def test_partner_assignment_is_checked_and_falls_back_where_episodes_do_not_end_together(
        population_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="partner_assignment: must be one of \\['balanced', 'per_env'\\]"):
        fcp_config(population_dir, partner_assignment="round_robin").validate()
    used = []

    def spy(name: str) -> Any:
        real = getattr(fcp, name)
        return lambda *args, **kwargs: used.append(name) or real(*args, **kwargs)

    for name in ("act_by_member", "act_per_env"):
        monkeypatch.setattr(fcp, name, spy(name))
    config = fcp_config(population_dir)
    for together, expected in [(True, "act_by_member"), (False, "act_per_env")]:
        env = fcp.make_env(config)
        monkeypatch.setattr(env, "episodes_end_together", together)
        trainer = fcp.make_trainer(config, env)
        used.clear()
        jax.eval_shape(trainer.update, trainer.init(jax.random.PRNGKey(0), fcp.HParams()), fcp.HParams())
        assert used == [expected]


@pytest.mark.slow
@pytest.mark.parametrize(("partner_action", "best"), [(HARE, HARE), (STAG, STAG)])
def test_the_ego_learns_the_best_response_to_its_partners(
        population_dir: Path, monkeypatch: pytest.MonkeyPatch, partner_action: int, best: int) -> None:
    """Against partners that always hunt hare the best response is hare (2 > 0); against stag hunters it is
    stag (4 > 3). After 16k env steps the ego's greedy first move is the best response in both seats, with
    probability above 0.9."""
    partners = fixed_actions(population_dir, [partner_action])
    monkeypatch.setattr(fcp, "load_partners", lambda config, env: partners)
    config = fcp_config(population_dir, num_steps=16, num_minibatches=4, update_epochs=4,
                        total_timesteps=16 * 16 * 64)
    env = fcp.make_env(config)
    trainer = fcp.make_trainer(config, env)
    hparams = fcp.HParams(lr=3e-3)
    runner = trainer.init(jax.random.PRNGKey(1), hparams)
    runner, _ = jax.lax.scan(lambda r, _: trainer.update(r, hparams), runner, None, config.num_updates)
    policy = fcp.make_policy(config, env)
    start = np.zeros((1, 2, 5), np.float32)
    start[..., 0] = 1.0
    timestep = runner.timestep._replace(obs={"agents": jnp.asarray(start)})
    picks = []
    for seed in range(64):
        _, actions = policy.act(runner.params, policy.init_hidden(1), timestep, jnp.ones(1, bool),
                                jax.random.PRNGKey(seed))
        picks.append(np.asarray(actions["agents"])[0])
    assert (np.stack(picks) == best).mean(0).min() > 0.9


def test_populations_that_do_not_fit_are_refused(population_dir: Path, tmp_path: Path) -> None:
    other_game = fcp_config(population_dir, env_kwargs={"game": "prisoners_dilemma", "max_steps": 4})
    with pytest.raises(ConfigError, match="partners: the population .* was trained on MatrixGame"):
        fcp.make_trainer(other_game, fcp.make_env(other_game))
    three = fcp_config(population_dir, env_id="MPE_simple_spread_v3", env_kwargs={})
    with pytest.raises(ConfigError, match="two-agent env"):
        fcp.make_trainer(three, fcp.make_env(three))
    with pytest.raises(ConfigError, match="not a run folder"):
        config = fcp_config(tmp_path)
        fcp.make_trainer(config, fcp.make_env(config))
