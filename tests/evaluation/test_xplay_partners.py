"""``xplay --partners``: every ego seed plays every member of a held-out population in both seats.

The returns are checked by hand on an iterated matrix game with policies that always play one action
(their actor head's bias at +-50): player 0 alone is paid, 1 per round, when it defects against a
cooperator, so which seat the ego took shows in the return.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.baselines import ippo
from jaxmarl_suite.cli import main as cli_main
from jaxmarl_suite.errors import ConfigError
from jaxmarl_suite.evaluation.xplay import Player, held_out_play, run_cross_play

ROUNDS = 4
PAYOFFS = [[[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]]
"""``[player][own action][other's action]``: only player 0 defecting (1) on a cooperator (0) is paid."""
COOPERATE, DEFECT = 0, 1


def always(config: ippo.Config, action: int, label: str) -> Player:
    env = ippo.make_env(config, 2)
    state = jax.eval_shape(ippo.make_trainer(config, env).init, jax.random.PRNGKey(0), ippo.HParams())
    params = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), ippo.policy_params(state))
    params["agents"]["params"]["Dense_0"]["bias"] = jnp.where(jnp.arange(2) == action, 50.0, -50.0)
    return Player(label, ippo, config, params, {"label": label})


def test_each_seat_and_partner_scores_as_computed_by_hand() -> None:
    config = ippo.Config(env_id="MatrixGame", env_kwargs={"payoffs": PAYOFFS, "max_steps": ROUNDS},
                         hidden_sizes=(8,))
    ego = always(config, COOPERATE, "ego")
    partners = [always(config, COOPERATE, "cooperator"), always(config, DEFECT, "defector")]
    result = held_out_play([ego], partners, 3, jax.random.PRNGKey(0))
    assert result.returns.shape == (1, 2, 2, 3)
    # the ego cooperates: nobody is paid with a cooperator; a defector is paid only as player 0 (seat 1 of
    # the ego), ROUNDS in all, so the mean per-agent return is ROUNDS / 2
    np.testing.assert_array_equal(result.returns[0, 0], 0.0)
    np.testing.assert_array_equal(result.returns[0, 1, 0], 0.0)
    np.testing.assert_array_equal(result.returns[0, 1, 1], ROUNDS / 2)
    assert [i.point for i in result.per_partner()] == [0.0, ROUNDS / 4]
    assert result.overall.point == ROUNDS / 8
    # a defecting ego is paid as player 0 against the cooperator only
    defector_ego = always(config, DEFECT, "defecting ego")
    flipped = held_out_play([defector_ego], partners, 3, jax.random.PRNGKey(0))
    np.testing.assert_array_equal(flipped.returns[0, 0, 0], ROUNDS / 2)
    np.testing.assert_array_equal(flipped.returns[0, 0, 1], 0.0)
    np.testing.assert_array_equal(flipped.returns[0, 1], 0.0)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A one-seed ego run, a held-out population (2 seeds x 3 snapshots) and a run on another game."""
    root = tmp_path_factory.mktemp("xplay_partners")
    tiny = ["--env", "MatrixGame", "--num-envs", "4", "--num-steps", "8", "--num-minibatches", "2",
            "--update-epochs", "1", "--hidden-sizes", "[8]", "--total-timesteps", "64", "--artifacts", "none",
            "--no-progress"]
    folders = {"ego": root / "ego", "population": root / "population", "other": root / "other"}
    assert cli_main(["train", "ippo", *tiny, "--run-dir", str(folders["ego"])]) == 0
    assert cli_main(["population", "ippo", *tiny, "--seeds", "2", "--seed", "7",
                     "--run-dir", str(folders["population"])]) == 0
    assert cli_main(["train", "ippo", *tiny, "--env-kwargs", '{"game": "chicken"}',
                     "--run-dir", str(folders["other"])]) == 0
    return folders


def test_cli_prints_and_writes_every_partner(runs: dict[str, Path], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert cli_main(["xplay", str(runs["ego"]), "--partners", str(runs["population"]), "--episodes", "4",
                     "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "self-play  (diagonal, 1 pairs)" in printed
    members = ["g0s0u0", "g0s0u1", "g0s0u2", "g0s1u0", "g0s1u1", "g0s1u2"]
    for name in members:
        assert f"population {name}" in printed
    assert "held-out (6 ego-partner pairs)" in printed
    data = json.loads((out / "xplay.json").read_text())["held_out"]
    assert [p["label"] for p in data["partners"]] == [f"population {name}" for name in members]
    returns = np.array(data["episode_returns"])
    assert returns.shape == (1, 6, 2, 4)
    np.testing.assert_allclose(data["overall"]["mean"], returns.mean(), rtol=1e-6)
    rows = (out / "held_out.csv").read_text().splitlines()
    assert rows[0] == "partner,mean_return,ci_low,ci_high" and len(rows) == 8
    assert rows[-1].startswith("overall,")


def test_partners_from_another_env_are_refused(runs: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="held-out play needs one env"):
        run_cross_play([runs["ego"]], tmp_path, episodes=2, partners=runs["other"])
    with pytest.raises(ConfigError, match="at least two seeds"):
        run_cross_play([runs["ego"]], tmp_path, episodes=2)  # without partners one seed is too few
