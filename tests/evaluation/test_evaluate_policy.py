"""``evaluate_policy`` and ``first_episodes``: per-episode returns and, for envs with a winner, wins with a
Wilson interval."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from jaxmarl_suite.baselines import mappo
from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.core.spaces import Box, Discrete
from jaxmarl_suite.core.types import EnvParams, TimeStep
from jaxmarl_suite.core.vec import VecEnv
from jaxmarl_suite.evaluation.policy import EvalReport, evaluate_policy, first_episodes
from jaxmarl_suite.wrappers import AutoReset, EpisodeStats


@struct.dataclass
class DuelParams(EnvParams):
    max_steps: int = 5


class Duel(MultiAgentEnv):
    """Two agents. A game lasts 3 or 4 steps (drawn at reset). On its last step each agent scores its action
    (0 or 1), and the game is won when both played 1."""

    def __init__(self) -> None:
        self.groups = {"team": ("a", "b")}

    @property
    def default_params(self) -> DuelParams:
        return DuelParams()

    def observation_space(self, group):
        return Box(0.0, 10.0, (2,))

    def action_space(self, group):
        return Discrete(2)

    def _timestep(self, state, actions):
        ended = state[1] >= state[0]
        played = actions.astype(jnp.float32)
        return TimeStep(obs={"team": jnp.broadcast_to(state, (2, 2))}, reward={"team": played * ended},
                        terminated={"team": jnp.broadcast_to(ended, (2,))},
                        truncated={"team": jnp.zeros((2,), bool)},
                        action_mask={"team": jnp.ones((2, 2), bool)},
                        info={"won": ended & jnp.all(actions == 1)})

    def reset(self, key, params=None):
        state = jnp.array([3.0 + jax.random.bernoulli(key), 0.0])  # [length, steps taken]
        return state, self._timestep(state, jnp.zeros((2,), jnp.int32))

    def step(self, key, state, actions, params=None):
        state = state.at[1].add(1.0)
        return state, self._timestep(state, actions["team"])


def test_first_episodes_records_each_envs_first_episode_only():
    """Even envs play 1 in their first game and 0 after it; odd envs the other way round. So only the first
    game of each env decides the expected result: even envs win it (return 1 per agent), odd envs lose
    it (0), whatever their later games and however long each game lasts."""
    num = 8
    env = EpisodeStats(AutoReset(VecEnv(Duel(), num)))
    even = jnp.arange(num) % 2 == 0

    def act(games, timestep, starts, key):
        games = games + starts  # games begun so far, per env
        play = jnp.where((games == 1) == even, 1, 0)
        return games, {"team": jnp.broadcast_to(play[:, None], (num, 2)).astype(jnp.int32)}

    returns, wins = first_episodes(env, act, jnp.zeros((num,), jnp.int32), num, jax.random.PRNGKey(0))
    np.testing.assert_array_equal(returns, np.where(np.arange(num) % 2 == 0, 1.0, 0.0))
    np.testing.assert_array_equal(wins, np.arange(num) % 2 == 0)


@pytest.mark.slow  # SMAX compiles for seconds; first_episodes' win bookkeeping is tested on Duel above
def test_smax_evaluation_reports_wins_with_an_interval():
    config = mappo.Config(env_id="SMAX_3m", num_envs=2, num_steps=4, total_timesteps=8)
    trainer = mappo.make_trainer(config, mappo.make_env(config))
    params = mappo.policy_params(jax.jit(trainer.init)(jax.random.PRNGKey(0), mappo.HParams()))
    report = evaluate_policy(mappo, config, params, 16, jax.random.PRNGKey(1))
    assert report.returns.shape == (16,) and report.wins is not None and report.wins.shape == (16,)
    assert report.wins.dtype == bool
    wins = report.win_rate
    assert wins is not None and wins.point == pytest.approx(report.wins.mean())
    assert 0.0 <= wins.low <= wins.point <= wins.high <= 1.0 and wins.high - wins.low > 0.0
    assert f"win rate {wins.point:.3f} (95% CI {wins.low:.3f} .. {wins.high:.3f}, Wilson)" in str(report)


def test_envs_without_a_winner_report_no_win_rate():
    report = EvalReport(np.array([-20.0, -22.0]), -21.0, -33.7, -8.3)
    assert report.win_rate is None
    assert str(report) == "2 episodes: mean per-agent return -21.000 (95% CI -33.700 .. -8.300, Student t)"
