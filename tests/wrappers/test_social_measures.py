"""The social-dilemma measures: collective return, equality (one minus Gini) and pick-up counts, from the env
through ``EpisodeStats`` and the kit's episode metrics to the returns plot and ``report``; checked against
hand-computed values on scripted matrix-game play, and absent for envs that do not opt in."""

import csv
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml

from jaxmarl_suite import make
from jaxmarl_suite.core.vec import VecEnv
from jaxmarl_suite.environments.matrix import IteratedMatrixGame
from jaxmarl_suite.evaluation.plots import returns_figure
from jaxmarl_suite.evaluation.report import write_report
from jaxmarl_suite.training.kit import envs as kit_envs
from jaxmarl_suite.wrappers import AutoReset, EpisodeStats
from jaxmarl_suite.wrappers.episode_stats import equality


@pytest.mark.parametrize(("returns", "expected"), [
    ([1.0, 1.0], 1.0),
    ([0.0, 2.0], 0.5),               # sum |Ri - Rj| = 4, 2 n sum R = 8
    ([1.0, 2.0, 3.0], 1 - 8 / 36),   # sum |Ri - Rj| = 2 (1 + 2 + 1) = 8, 2 n sum R = 36
    ([5.0, 0.0, 0.0, 0.0], 0.25),    # one takes all of n = 4: Gini (n - 1) / n
])
def test_equality_is_one_minus_the_gini_coefficient(returns, expected):
    assert float(equality(jnp.array(returns))) == pytest.approx(expected, abs=1e-6)


def test_equality_is_undefined_for_returns_that_sum_to_zero_or_less():
    assert np.isnan(np.asarray(equality(jnp.array([[0.0, 0.0], [-1.0, 0.5]])))).all()


class PickupMatrixGame(IteratedMatrixGame):
    """The Prisoner's Dilemma whose players "pick up" a cooperative coin when they cooperate and a
    defecting one when they defect: a stand-in with the grid games' per-step ``info`` counts."""

    def reset_batch(self, keys, params):
        state, timestep = super().reset_batch(keys, params)
        zeros = jnp.zeros((2, keys.shape[0]), jnp.float32)
        return state, timestep._replace(info={"cooperative_pickups": zeros, "defecting_pickups": zeros})

    def step_batch(self, keys, state, actions, params):
        state, timestep = super().step_batch(keys, state, actions, params)
        act = actions["agents"]
        return state, timestep._replace(info={"cooperative_pickups": (act == 0).astype(jnp.float32),
                                              "defecting_pickups": (act == 1).astype(jnp.float32)})


def play(env, actions_of_step, steps):
    """Step ``EpisodeStats(AutoReset(env))`` with scripted ``[B, 2]`` actions; the last TimeStep."""
    env = EpisodeStats(AutoReset(env))
    state, timestep = env.reset(jax.random.key(0))

    def body(carry, t):
        state, _ = carry
        state, timestep = env.step(jax.random.key(1), state, {"agents": actions_of_step(t)})
        return (state, timestep), None

    (state, timestep), _ = jax.lax.scan(body, (state, timestep), jnp.arange(steps))
    return timestep


def test_scripted_matrix_play_gives_the_hand_computed_measures():
    # env 0: both always cooperate (3 + 3 a round); env 1: player 0 always defects against a cooperator (5, 0)
    env = make("MatrixGame", num_envs=2, max_steps=10)
    assert env.social_measures
    fixed = jnp.array([[0, 0], [1, 0]])
    timestep = play(env, lambda t: fixed, 10)
    info = timestep.info
    assert info["episode_done"].tolist() == [True, True]
    np.testing.assert_allclose(info["episode_collective_return"], [60.0, 50.0])
    np.testing.assert_allclose(info["episode_equality"], [1.0, 0.5])  # 50 and 0: Gini 100 / (2 * 2 * 50)
    assert "episode_cooperative_pickups" not in info  # the plain matrix game counts no pick-ups

    stats = jax.tree.map(lambda x: x[None], kit_envs.completed_episode_stats(timestep))
    metrics = kit_envs.episode_metrics(stats)
    assert float(metrics["collective_return"]) == pytest.approx(55.0)
    assert float(metrics["equality"]) == pytest.approx(0.75)
    assert "cooperative_share" not in metrics


def test_pickups_are_summed_per_agent_over_each_episode_and_reset_with_it():
    env = PickupMatrixGame(max_steps=4)
    vec = VecEnv(env, 2)
    # player 0 defects on the first round of each episode only, player 1 always cooperates; env 1 mirrors
    def actions(t):
        first = (t % 4 == 0).astype(jnp.int32)
        return jnp.array([[first, 0], [0, first]])

    timestep = play(vec, actions, 8)  # two whole episodes: the counts are the second's, not both
    np.testing.assert_allclose(timestep.info["episode_cooperative_pickups"], [[3.0, 4.0], [4.0, 3.0]])
    np.testing.assert_allclose(timestep.info["episode_defecting_pickups"], [[1.0, 0.0], [0.0, 1.0]])
    stats = jax.tree.map(lambda x: x[None], kit_envs.completed_episode_stats(timestep))
    metrics = kit_envs.episode_metrics(stats)
    assert float(metrics["cooperative_pickups"]) == pytest.approx(3.5)  # per agent per episode
    assert float(metrics["defecting_pickups"]) == pytest.approx(0.5)
    assert float(metrics["cooperative_share"]) == pytest.approx(7 / 8)


def test_envs_that_do_not_opt_in_report_none_of_them():
    env = make("MPE_simple_spread_v3", num_envs=2)
    assert not env.social_measures
    timestep = play(env, lambda t: jnp.zeros((2, 3), jnp.int32), 3)
    assert not {k for k in timestep.info if "collective" in k or "equality" in k or "pickups" in k}
    assert set(kit_envs.episode_metrics(kit_envs.completed_episode_stats(timestep))) == {
        "return_mean", "episode_length", "episodes"}


def write_social_run(path, collective, equality_values, share):
    path.mkdir(parents=True)
    (path / "config.yaml").write_text(yaml.safe_dump(
        {"algorithm": "ippo", "seed": 0, "num_seeds": 1, "config": {"env_id": "MatrixGame"},
         "grid": [{"lr": 0.001}]}, sort_keys=False))
    with (path / "metrics.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["update", "env_steps", "seed", "grid_index", "return_mean", "collective_return",
                         "equality", "cooperative_share"])
        for update, (c, e, s) in enumerate(zip(collective, equality_values, share, strict=True)):
            writer.writerow([update + 1, (update + 1) * 100, 0, 0, c / 2, c, e, s])
    return path


def test_the_returns_plot_and_the_report_show_the_measures(tmp_path):
    run = write_social_run(tmp_path / "run", [400.0, 300.0, 200.0], [0.9, math.nan, 1.0], [0.5, 0.6, 0.7])
    figure = returns_figure(run)
    try:
        labels = [ax.get_ylabel() for ax in figure.axes]
        assert labels == ["mean episode return per agent", "collective return", "equality (1 - Gini)",
                          "cooperative share of pick-ups"]
        np.testing.assert_allclose(figure.axes[2].lines[0].get_ydata(), [0.9, 1.0])  # the NaN is skipped
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)

    report = write_report([run], tmp_path / "report")
    text = report.read_text()
    assert "## Social measures" in text
    # the final 10% of 3 updates is the last one
    assert "| MatrixGame | ippo | 200.000 | 1.000 | 0.700 |" in text
    assert (tmp_path / "report" / "social_measures.png").stat().st_size > 0
    assert "social_measures.png" in text
