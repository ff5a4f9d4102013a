"""``jaxmarl-suite xplay``: cross-play of two-agent runs.

Tiny IPPO runs on two cooperative MPE envs with two agents, one per group (simple_speaker_listener: a
speaker and a listener) and both in one group (simple_reference), are checked against policies
assembled here by hand: a seed paired with itself must give what ``evaluate_policy`` (``eval``) gives,
and a pair of seeds what a joint policy built in this file gives. Constant policies on a toy env whose
reward tells the seats apart pin exact values, with negative controls for swapped and ignored seats.
"""

from __future__ import annotations

import csv
import functools
import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from flax import struct

from jaxmarl_suite.baselines import ippo
from jaxmarl_suite.cli import main
from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.core.spaces import Box, Discrete
from jaxmarl_suite.core.types import EnvParams, TimeStep
from jaxmarl_suite.core.vec import VecEnv
from jaxmarl_suite.errors import ConfigError
from jaxmarl_suite.evaluation import xplay
from jaxmarl_suite.evaluation.policy import evaluate_policy, first_episodes, mean_ci
from jaxmarl_suite.training.kit.baseline import Policy
from jaxmarl_suite.training.runner.config import parse_experiment
from jaxmarl_suite.training.runner.experiment import LoadedPolicy, load_policy, run_experiment
from jaxmarl_suite.wrappers import AutoReset, EpisodeStats

TINY = ["--num-envs", "4", "--num-steps", "16", "--num-minibatches", "1", "--update-epochs", "1",
        "--hidden-sizes", "[16]", "--total-timesteps", "128", "--wandb", "disabled", "--no-progress"]
"""Two updates of 64 env steps: the seeds differ, which is all cross-play needs."""

EPISODES, SEED = 8, 3


def train(run_dir: Path, env_id: str, *flags: str) -> Path:
    run_experiment(ippo, parse_experiment("ippo", ippo.Config, ippo.HParams,
                                          [*TINY, "--env", env_id, "--run-dir", str(run_dir), *flags]))
    return run_dir


@pytest.fixture(scope="module")
def speaker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """simple_speaker_listener, two groups of one agent: a 2-point lr grid x 2 seeds = 4 seeds in one
    folder."""
    return train(tmp_path_factory.mktemp("runs") / "speaker", "MPE_simple_speaker_listener_v4",
                 "--seeds", "2", "--lr", "0.01", "0.03")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """simple_reference, one group of two agents sharing parameters: 2 seeds."""
    return train(tmp_path_factory.mktemp("runs") / "reference", "MPE_simple_reference_v3", "--seeds", "2")


@functools.cache
def loaded(run: Path, grid_index: int, seed_index: int) -> LoadedPolicy:
    return load_policy(run, grid_index, seed_index)


def eval_returns(run: Path, grid_index: int, seed_index: int) -> np.ndarray:
    """What ``jaxmarl-suite eval RUN --grid-index G --seed-index S --episodes 8 --seed 3`` plays."""
    module, experiment, params, _ = loaded(run, grid_index, seed_index)
    return evaluate_policy(module, experiment.config, params, EPISODES, jax.random.PRNGKey(SEED)).returns


def joint_returns(run: Path, seat_0: tuple[int, int], seat_1: tuple[int, int], pick: Any) -> np.ndarray:
    """Per-episode returns of a joint policy assembled here: ``pick(actions_0, actions_1)`` merges the
    env actions of the seed at ``seat_0`` (grid index, seed index) and the one at ``seat_1``. Both draw
    with the step's key, the seeding ``eval`` uses."""
    module, experiment, params_0, _ = loaded(run, *seat_0)
    params_1 = loaded(run, *seat_1).params
    env = module.make_env(experiment.config, EPISODES)
    policy = module.make_policy(experiment.config, env)

    def act(carry: Any, timestep: Any, starts: jax.Array, key: jax.Array) -> tuple[Any, Any]:
        hidden_0, actions_0 = policy.act(params_0, carry[0], timestep, starts, key, False)
        hidden_1, actions_1 = policy.act(params_1, carry[1], timestep, starts, key, False)
        return (hidden_0, hidden_1), pick(actions_0, actions_1)

    carry = (policy.init_hidden(EPISODES), policy.init_hidden(EPISODES))
    returns, _ = first_episodes(env, act, carry, EPISODES, jax.random.PRNGKey(SEED))
    return returns


def test_cli_two_groups_matrix_files_and_entries(speaker: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = sorted(p.name for p in speaker.rglob("*"))
    assert main(["xplay", str(speaker), "--episodes", str(EPISODES), "--seed", str(SEED)]) == 0
    printed = capsys.readouterr().out
    out = speaker.parent / "xplay_speaker"  # beside the single run folder, never in it
    assert sorted(p.name for p in speaker.rglob("*")) == before
    for name in ("xplay.png", "xplay.json", "xplay.csv"):
        assert (out / name).stat().st_size > 0
    data = json.loads((out / "xplay.json").read_text())
    matrix, returns = np.array(data["matrix"]), np.array(data["episode_returns"])
    assert matrix.shape == (4, 4) and returns.shape == (4, 4, EPISODES)
    assert [(s["grid_index"], s["seed_index"]) for s in data["seeds"]] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert "rows: the seed playing agent 0 (speaker_0); columns: agent 1 (listener_0)" in printed
    assert "[3] speaker g1 s1 (update 2)" in printed

    # self-play of seed 3 (grid point 1, seed 1) is what eval plays
    np.testing.assert_allclose(returns[3, 3], eval_returns(speaker, 1, 1), rtol=1e-5, atol=1e-5)

    # cross-play: the speaker group from the row seed, the listener group from the column seed
    def pick(actions_0: Any, actions_1: Any) -> Any:
        return {"speaker": actions_0["speaker"], "listener": actions_1["listener"]}

    np.testing.assert_allclose(returns[3, 0], joint_returns(speaker, (1, 1), (0, 0), pick), rtol=1e-5,
                               atol=1e-5)
    assert not np.allclose(returns[3, 0], returns[3, 3])  # the partner matters
    assert not np.allclose(matrix, matrix.T)  # and so does the seat

    diagonal, off = np.diag(matrix), matrix[~np.eye(4, dtype=bool)]
    for name, values in (("self_play", diagonal), ("cross_play", off)):
        mean, low, high = mean_ci(values)
        assert data[name] == pytest.approx({"mean": mean, "ci_low": low, "ci_high": high,
                                            "pairs": values.size})
        assert f"mean {mean:.3f} (95% CI {low:.3f} .. {high:.3f}" in printed
    with (out / "xplay.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert len(rows) == 5 and rows[0][1:] == [s["label"] for s in data["seeds"]]
    np.testing.assert_allclose(np.array([row[1:] for row in rows[1:]], float), matrix, rtol=1e-5)


def test_one_group_slices_the_agent_axis(reference: Path, tmp_path: Path) -> None:
    output = xplay.run_cross_play([reference], tmp_path / "out", episodes=EPISODES, seed=SEED)
    returns = output.result.returns
    assert returns.shape == (2, 2, EPISODES) and output.result.seats == ("agent_0", "agent_1")

    def pick(actions_0: Any, actions_1: Any) -> Any:
        both = jnp.stack([actions_0["agents"][:, 0], actions_1["agents"][:, 1]], axis=1)
        return {"agents": both}

    np.testing.assert_allclose(returns[0, 1], joint_returns(reference, (0, 0), (0, 1), pick), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(returns[1, 1], eval_returns(reference, 0, 1), rtol=1e-5, atol=1e-5)
    assert not np.allclose(returns[0, 1], returns[1, 1])  # the partner matters


@pytest.mark.slow  # Overcooked's CNN compiles for a while; the MPE tests above cover the same code paths
def test_overcooked_one_group_of_two_chefs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = train(tmp_path / "kitchen", "Overcooked_cramped_room", "--seeds", "2", "--env-kwargs",
                '{"max_steps": 40}')
    assert main(["xplay", str(run), "--episodes", "4", "--deterministic"]) == 0
    assert "rows: the seed playing agent 0 (agent_0); columns: agent 1 (agent_1)" in capsys.readouterr().out
    data = json.loads((tmp_path / "xplay_kitchen" / "xplay.json").read_text())
    assert np.array(data["matrix"]).shape == (2, 2) and data["deterministic"] is True


# ---------------------------------------------------------------------------------------------------------
# Constant policies on a toy env: exact values, and negative controls for swapped and ignored seats.

@struct.dataclass
class SeatsParams(EnvParams):
    max_steps: int = 2


class Seats(MultiAgentEnv):
    """Two agents, ``Discrete(3)`` each, in one group or in two. Each step both get ``3 * a0 + a1`` (``a0``
    agent 0's action), so a return tells which action came from which seat. Episodes last 2 steps."""

    def __init__(self, one_group: bool) -> None:
        self.one_group = one_group
        self.groups = {"team": ("a0", "a1")} if one_group else {"left": ("a0",), "right": ("a1",)}

    @property
    def default_params(self) -> SeatsParams:
        return SeatsParams()

    def observation_space(self, group: str) -> Box:
        return Box(0.0, 10.0, (1,))

    def action_space(self, group: str) -> Discrete:
        return Discrete(3)

    def _timestep(self, step: jax.Array, reward: jax.Array) -> TimeStep:
        def per_group(value: Any) -> dict[str, Any]:
            return {g: jnp.broadcast_to(value, (len(names), *jnp.shape(value)))
                    for g, names in self.groups.items()}

        return TimeStep(obs=per_group(step[None].astype(jnp.float32)), reward=per_group(reward),
                        terminated=per_group(jnp.zeros((), bool)), truncated=per_group(step >= 2),
                        action_mask=per_group(jnp.ones((3,), bool)), info={})

    def reset(self, key: jax.Array, params: Any = None) -> tuple[jax.Array, TimeStep]:
        step = jnp.zeros((), jnp.int32)
        return step, self._timestep(step, jnp.zeros(()))

    def step(self, key: jax.Array, state: jax.Array, actions: dict[str, jax.Array],
             params: Any = None) -> tuple[jax.Array, TimeStep]:
        flat = actions["team"] if self.one_group else jnp.concatenate([actions["left"], actions["right"]])
        step = state + 1
        return step, self._timestep(step, (3 * flat[0] + flat[1]).astype(jnp.float32))


def toy_module(one_group: bool) -> Any:
    """A stand-in for a baseline module. A policy with parameter ``k`` plays ``k`` on an episode's first
    step and ``(k + 1) % 3`` on its second, counting steps in its hidden state."""

    def make_env(config: Any, num_envs: int | None = None, auto_reset: bool = True) -> Any:
        return EpisodeStats(AutoReset(VecEnv(Seats(one_group), num_envs or 1)))

    def make_policy(config: Any, env: Any) -> Policy:
        def init_hidden(num_envs: int) -> dict[str, jax.Array]:
            return {g: jnp.zeros((num_envs, len(names)), jnp.int32) for g, names in env.groups.items()}

        def act(params: Any, hidden: Any, timestep: Any, starts: jax.Array, key: jax.Array,
                deterministic: bool = False) -> tuple[Any, Any]:
            steps = {g: jnp.where(starts[:, None], 0, h) for g, h in hidden.items()}
            actions = {g: (params["k"] + s) % 3 for g, s in steps.items()}
            return {g: s + 1 for g, s in steps.items()}, actions

        return Policy(init_hidden, act)

    return SimpleNamespace(make_env=make_env, make_policy=make_policy)


KS = (0, 1, 2)


def expected_matrix() -> np.ndarray:
    """By the rule of ``Seats``: row seed ``i`` plays agent 0, column seed ``j`` agent 1."""
    def episode(k0: int, k1: int) -> float:
        return sum(3 * ((k0 + t) % 3) + (k1 + t) % 3 for t in range(2))

    return np.array([[episode(k0, k1) for k1 in KS] for k0 in KS], float)


def toy_players(one_group: bool) -> list[xplay.Player]:
    module = toy_module(one_group)
    return [xplay.Player(f"k{k}", module, "toy", {"k": jnp.int32(k)}, {}) for k in KS]


def check_seats(matrix: np.ndarray) -> None:
    np.testing.assert_array_equal(matrix, expected_matrix())


@pytest.mark.parametrize("one_group", [True, False], ids=["one-group", "two-groups"])
def test_each_seat_takes_its_own_seeds_action(one_group: bool) -> None:
    result = xplay.cross_play(toy_players(one_group), 4, jax.random.PRNGKey(0))
    assert result.returns.shape == (3, 3, 4) and result.seats == ("a0", "a1")
    check_seats(result.matrix)
    assert result.self_play.point == pytest.approx(np.mean(np.diag(expected_matrix())))


@pytest.mark.parametrize("one_group", [True, False], ids=["one-group", "two-groups"])
def test_negative_controls_swapped_or_ignored_seats_fail_the_check(one_group: bool,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The expected matrix is asymmetric with distinct rows and columns, so ``check_seats`` catches seats
    that are swapped (the transpose) or a seat whose policy is ignored (constant rows)."""
    swap = xplay.seat_slots
    monkeypatch.setattr(xplay, "seat_slots", lambda env: swap(env)[::-1])
    swapped = xplay.cross_play(toy_players(one_group), 2, jax.random.PRNGKey(0)).matrix
    np.testing.assert_array_equal(swapped, expected_matrix().T)
    with pytest.raises(AssertionError):
        check_seats(swapped)

    monkeypatch.undo()
    monkeypatch.setattr(xplay, "combine_seats", lambda actions_0, actions_1, slots: actions_0)
    ignored = xplay.cross_play(toy_players(one_group), 2, jax.random.PRNGKey(0)).matrix
    assert (ignored == ignored[:, :1]).all()  # agent 1's seed no longer matters
    with pytest.raises(AssertionError):
        check_seats(ignored)


def test_seeds_must_see_the_same_agent_groups() -> None:
    players = toy_players(True)
    players[2] = players[2]._replace(module=toy_module(False), config="other")
    with pytest.raises(ConfigError, match="different agent groups"):
        xplay.cross_play(players, 2, jax.random.PRNGKey(0))


# ---------------------------------------------------------------------------------------------------------
# Refusals: each is decided from config.yaml, before any checkpoint is loaded.

def edited_copy(run: Path, folder: Path, **changes: Any) -> Path:
    """``run``'s config.yaml alone in ``folder``, with ``changes`` to its ``config`` (or top-level
    ``num_seeds`` and ``grid``)."""
    folder.mkdir(parents=True)
    shutil.copy(run / "config.yaml", folder / "config.yaml")
    data = yaml.safe_load((folder / "config.yaml").read_text())
    for name, value in changes.items():
        (data if name in ("num_seeds", "grid") else data["config"])[name] = value
    (folder / "config.yaml").write_text(yaml.safe_dump(data))
    return folder


def refusal(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["xplay", *argv, "--episodes", "2"]) == 2
    return capsys.readouterr().err


def test_refusals(speaker: Path, reference: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    three = edited_copy(reference, tmp_path / "three", env_id="MPE_simple_spread_v3")
    assert "exactly two agents" in refusal([str(three)], capsys)
    assert "has 3: agent_0, agent_1, agent_2" in refusal([str(three)], capsys)

    err = refusal([str(speaker), str(reference)], capsys)
    assert "different envs" in err and "MPE_simple_speaker_listener_v4" in err and "simple_reference" in err
    shorter = edited_copy(reference, tmp_path / "shorter", env_kwargs={"max_cycles": 10})
    assert "different envs" in refusal([str(reference), str(shorter)], capsys)

    data = yaml.safe_load((reference / "config.yaml").read_text())
    single = edited_copy(reference, tmp_path / "single", num_seeds=1, grid=data["grid"][:1])
    assert "at least two seeds, found 1" in refusal([str(single)], capsys)
    assert "no config.yaml" in refusal([str(tmp_path)], capsys)
    assert main(["xplay", str(reference), "--episodes", "0"]) == 2
    assert "episodes must be >= 1, got 0" in capsys.readouterr().err


def test_the_default_output_folder_is_beside_the_runs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for name in ("a", "b"):
        (runs / name).mkdir(parents=True)
        (runs / name / "config.yaml").write_text("")
    assert xplay.default_out_dir([runs / "a", runs / "b"]) == runs / "xplay"
    assert xplay.default_out_dir([runs / "a"]) == runs / "xplay_a"
    (runs / "a" / "inner").mkdir()
    assert xplay.default_out_dir([runs / "a" / "inner"]) == runs / "xplay_a"


def test_env_identity_is_canonical() -> None:
    plain = xplay._env_identity({"env_id": "MPE_simple_push_v3", "env_kwargs": {}})
    assert plain == xplay._env_identity({"env_id": "MPE_simple_push_v3", "env_kwargs": {}})
    assert plain != xplay._env_identity({"env_id": "MPE_simple_push_v3", "env_kwargs": {"max_cycles": 10}})
    cramped = xplay._env_identity({"env_id": "Overcooked_cramped_room", "env_kwargs": {}})
    assert cramped == ("Overcooked_cramped_room", {"layout": "cramped_room"})
