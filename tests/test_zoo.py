"""The model zoo: one entry per baseline preset; every shipped entry loads and scores as its card says;
``add`` and ``load`` on a tiny entry made here, and ``verify`` on a tiny two-command one (FCP's population,
then the ego), which retrains the same policy (a negative control: a card whose score was tampered with
fails the verdict); ``zoo:NAME`` where commands take a run folder. Retraining shipped entries is ``slow``."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
import yaml
from flax import serialization

from jaxmarl_suite import zoo
from jaxmarl_suite.cli import main
from jaxmarl_suite.evaluation.policy import evaluate_policy
from jaxmarl_suite.training.runner.config import ConfigError, available_presets
from jaxmarl_suite.training.runner.experiment import load_policy

TINY = ("jaxmarl-suite train ippo --env MPE_simple_spread_v3 --num-envs 4 --num-steps 8 --total-timesteps 64 "
        "--hidden-sizes [16] --seeds 2")


def test_the_zoo_ships_entries_under_its_size_limit() -> None:
    assert zoo.names(), "the zoo has no entries"
    size = sum(p.stat().st_size for p in zoo.ENTRIES.rglob("*") if p.is_file())
    assert size < zoo.SIZE_LIMIT
    for name in zoo.names():
        files = sorted(p.name for p in (zoo.ENTRIES / name).iterdir())
        assert files == ["config.yaml", "params.msgpack", "summary.json", "zoo.yaml"], (name, files)


def test_every_preset_has_an_entry_its_preset_trained() -> None:
    """The zoo's promise: one entry per baseline preset, named after it, whose card's last command trains
    that preset (a new preset comes with its entry)."""
    missing = sorted(set(available_presets()) - set(zoo.names()))
    assert not missing, f"presets without a zoo entry: {missing}"
    for name in available_presets():
        card = zoo.card(name)
        words = shlex.split(card.commands[-1])
        assert card.preset == name and words[words.index("--preset") + 1] == name, (name, card.commands)


def scored_by_default() -> list:
    """Every entry; past the first entry of each env family, ``slow`` (each score check compiles an
    evaluation, and the zoo grows with every preset; loading every entry stays in the default suite).
    MA-MuJoCo's and Hanabi's entries are all ``slow``: compiling an evaluation of either took 18-20 s of
    the default suite's budget (2026-11-30), and both families' conformance and parity run by default."""
    from jaxmarl_suite.core.registry import env_spec

    seen: set[str] = set()
    params = []
    for name in zoo.names():
        family = env_spec(zoo.card(name).env_id).family
        slow = family in seen or family in ("mamujoco", "hanabi")
        params.append(pytest.param(name, marks=[pytest.mark.slow] if slow else []))
        seen.add(family)
    return params


@pytest.mark.parametrize("name", zoo.names())
def test_every_entry_loads(name: str) -> None:
    """Its parameters deserialise into the shapes its config's policy takes (nothing compiles)."""
    card = zoo.card(name)
    loaded = zoo.load(name)
    assert (loaded.experiment.algorithm, loaded.experiment.config.env_id) == (card.algorithm, card.env_id)
    assert loaded.experiment.preset == card.preset
    assert card.ci_low <= card.score <= card.ci_high  # equal where every episode scored the same


@pytest.mark.parametrize("name", scored_by_default())
def test_an_entry_scores_as_its_card_says(name: str) -> None:
    """64 episodes on the card's evaluation seed: their mean lies within the card's 95% interval widened
    by three standard errors of a 64-episode mean. The spread is the larger of the 64 episodes' and the
    one the card's interval implies (64 episodes that all score the same have none of their own)."""
    card = zoo.card(name)
    loaded = zoo.load(name)
    report = evaluate_policy(loaded.module, loaded.experiment.config, loaded.params, 64,
                             jax.random.PRNGKey(card.eval_seed))
    card_std = (card.ci_high - card.ci_low) / 2 / 1.96 * np.sqrt(card.episodes)
    slack = 3 * max(float(np.std(report.returns, ddof=1)), card_std) / np.sqrt(64)
    assert card.ci_low - slack <= report.mean <= card.ci_high + slack, (report.mean, card)


TINY_FCP = [
    "jaxmarl-suite population ippo --env MatrixGame --num-envs 4 --num-steps 8 --total-timesteps 64 "
    "--hidden-sizes [8] --seeds 2 --run-dir pop",
    "jaxmarl-suite train fcp --env MatrixGame --num-envs 6 --num-steps 8 --total-timesteps 96 "
    "--hidden-sizes [8] --partners pop",
]


@pytest.fixture(scope="module")
def tiny_fcp(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """A two-command entry, FCP's shape: a population trained first, then the ego against it, added to a
    zoo of its own; the population and the ego's run are deleted once the entry is made. ``(zoo root, the
    ego's parameters as trained)``."""
    base = tmp_path_factory.mktemp("tiny_fcp")
    population, ego = base / "pop", base / "ego"
    assert main([*TINY_FCP[0].split()[1:-2], "--run-dir", str(population), "--no-progress"]) == 0
    ego_flags = TINY_FCP[1].replace("--partners pop", f"--partners {population}").split()[1:]
    assert main([*ego_flags, "--run-dir", str(ego), "--no-progress", "--no-gif"]) == 0
    zoo.add(ego, "tiny_fcp", TINY_FCP, episodes=16, root=base / "zoo")
    trained = load_policy(ego).params
    shutil.rmtree(population)
    shutil.rmtree(ego)
    return base / "zoo", trained


def test_add_and_load_an_entry_of_two_commands(tiny_fcp: tuple[Path, Any]) -> None:
    """The card keeps both commands; the entry keeps the ego's parameters bit for bit and names its
    population as the commands do, not by where it lay here; it loads without the population, which shapes
    nothing of the ego's policy. A second entry of the name is refused, and the verdict fails a card that
    claims a score its policy does not reach (negative control)."""
    root, trained = tiny_fcp
    card = zoo.card("tiny_fcp", root)
    assert card.commands == TINY_FCP
    assert (card.algorithm, card.env_id, card.env_steps, card.episodes) == ("fcp", "MatrixGame", 96, 16)
    saved = yaml.safe_load((root / "tiny_fcp" / "config.yaml").read_text())
    assert saved["config"]["partners"] == "pop" and saved["num_seeds"] == 1
    stored = zoo.load("zoo:tiny_fcp", root)
    for a, b in zip(jax.tree.leaves(trained), jax.tree.leaves(stored.params), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ConfigError, match="zoo entry 'tiny_fcp' exists"):
        zoo.add(root / "tiny_fcp", "tiny_fcp", TINY_FCP, root=root)
    claimed = zoo.Card(**{**card.__dict__, "score": card.score + 5.0, "ci_low": card.score + 4.0,
                          "ci_high": card.score + 6.0})
    assert zoo.Verification(card, card.score, card.ci_low, card.ci_high).passed
    assert not zoo.Verification(claimed, card.score, card.ci_low, card.ci_high).passed
    assert "tiny_fcp: NOT verified: retrained" in zoo.Verification(claimed, card.score, card.ci_low,
                                                                   card.ci_high).line()


@pytest.mark.slow
def test_verify_retrains_an_entry_of_two_commands_to_its_score(tiny_fcp: tuple[Path, Any],
                                                              tmp_path: Path) -> None:
    """``verify`` trains the population, then the ego against it, in a scratch folder (the originals are
    gone, so the ego can only have found the population verify trained), reaches the same score on this
    backend, and leaves nothing behind."""
    root, _ = tiny_fcp
    result = zoo.verify("tiny_fcp", root, workdir=tmp_path)
    assert result.passed and result.score == pytest.approx(zoo.card("tiny_fcp", root).score, abs=1e-5)
    assert not list(tmp_path.iterdir())


def test_verify_runs_each_command_in_order_with_its_folders_in_scratch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without training (each baseline's ``main`` records its flags): the population step writes a folder
    in verify's scratch space and gets the population's snapshots; the ego names that folder with
    ``--partners`` and writes the entry's run beside it; every other word is the card's, in order."""
    from jaxmarl_suite.training.runner import config as runner_config
    from jaxmarl_suite.training.runner import experiment

    calls: list[tuple[str, list[str]]] = []

    class Recorder:
        def __init__(self, algorithm: str) -> None:
            self.algorithm = algorithm

        def main(self, flags: list[str]) -> int:
            calls.append((self.algorithm, list(flags)))
            return 0

    monkeypatch.setattr(runner_config, "baseline_module", Recorder)
    monkeypatch.setattr(experiment, "load_policy", lambda run_dir: run_dir)
    monkeypatch.setattr(zoo, "evaluate", lambda loaded, episodes, seed: (1.0, 0.5, 1.5))
    root = tmp_path / "zoo"
    (root / "x").mkdir(parents=True)
    card = {"name": "x", "algorithm": "fcp", "env_id": "MatrixGame", "env_steps": 96, "command": TINY_FCP,
            "score": 1.0, "ci_low": 0.5, "ci_high": 1.5, "episodes": 16, "eval_seed": 0}
    (root / "x" / "zoo.yaml").write_text(yaml.safe_dump(card))
    assert zoo.verify("x", root, workdir=tmp_path).passed
    (first, population_flags), (second, ego_flags) = calls
    assert (first, second) == ("ippo", "fcp")
    population = population_flags[population_flags.index("--run-dir") + 1]
    assert Path(population).parent.parent == tmp_path and Path(population).name.endswith("pop")
    assert population_flags[population_flags.index("--snapshots") + 1] == "0,0.5,1"
    assert ego_flags[ego_flags.index("--partners") + 1] == population
    assert Path(ego_flags[ego_flags.index("--run-dir") + 1]).parent == Path(population).parent
    for flags, command in ((population_flags, TINY_FCP[0]), (ego_flags, TINY_FCP[1])):
        words = [w for w in command.split()[3:] if w != "pop"]
        assert [w for w in flags if w in words] == words, (flags, words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["zoo"], "verify left its scratch folder behind"


def test_verify_retrains_a_cpu_entry_on_the_cpu_in_a_child_held_to_its_cores(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A card's ``cpu_cores`` says it trained on a CPU with that many cores: the retraining runs in a child
    process that holds itself to them and trains on the CPU even where an accelerator is present (the
    child is recorded here, not run)."""
    from jaxmarl_suite.training.runner import experiment

    children: list[tuple[list[str], dict[str, str]]] = []

    def child(argv: list[str], check: bool, env: dict[str, str]) -> subprocess.CompletedProcess:
        children.append((argv, env))
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(zoo.subprocess, "run", child)
    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    monkeypatch.setattr(experiment, "load_policy", lambda run_dir: run_dir)
    monkeypatch.setattr(zoo, "evaluate", lambda loaded, episodes, seed: (1.0, 0.5, 1.5))
    root = tmp_path / "zoo"
    (root / "x").mkdir(parents=True)
    card = {"name": "x", "algorithm": "ippo", "env_id": "MPE_simple_spread_v3", "env_steps": 64,
            "command": TINY, "score": 1.0, "ci_low": 0.5, "ci_high": 1.5, "episodes": 16, "eval_seed": 0,
            "cpu_cores": 1}
    (root / "x" / "zoo.yaml").write_text(yaml.safe_dump(card))
    assert zoo.verify("x", root, workdir=tmp_path).passed
    ((argv, env),) = children
    assert env["JAX_PLATFORMS"] == "cpu"
    assert argv[3:5] == [str(zoo.usable_cores()[0]), "ippo"] and "sched_setaffinity" in argv[2]
    assert argv[5:5 + len(TINY.split()) - 3] == TINY.split()[3:]


POP = "jaxmarl-suite population ippo --env MatrixGame --run-dir pop"


@pytest.mark.parametrize("commands, message", [
    (["jaxmarl-suite population ippo --env MatrixGame", TINY], "command 1 of 2 must write one --run-dir"),
    (["jaxmarl-suite population ippo --run-dir a/b", TINY], "a plain folder name"),
    (["jaxmarl-suite population ippo --run-dir ''", TINY], "a plain folder name"),
    ([POP + " --run-dir other", TINY], "must write one --run-dir"),
    ([POP, POP, TINY], "command 2 of 3 must write one --run-dir, a plain folder name of its own"),
    ([TINY + " --run-dir here"], "must not give --run-dir"),
    ([TINY + " --run-dir=here"], "must not give --run-dir"),
    (["jaxmarl-suite train fcp --partners elsewhere"], "gives --partners 'elsewhere', which no earlier"),
    ([POP, "jaxmarl-suite train fcp --partners=pop_typo"], "gives --partners 'pop_typo'"),
    ([POP, "jaxmarl-suite train fcp --partners"], "ends with --partners and no folder"),
    (["jaxmarl-suite population ippo --env MatrixGame"], "must be `jaxmarl-suite train ALGO ...`"),
    (["jaxmarl-suite train ippo --resume r"], "without --run-dir or --resume"),
    (["jaxmarl-suite train --env MatrixGame ippo"], "must be `jaxmarl-suite train ALGO ...`"),
    (["python train.py --run-dir p", TINY], "command 1 of 2 must be `jaxmarl-suite train|population"),
    (["jaxmarl-suite train ippo --description 'unbalanced"], "does not split into words"),
    ([None], "its command must be a string"),
    ([], "records no command"),
])
def test_commands_a_card_cannot_hold_are_refused_before_anything_runs(commands: list, message: str) -> None:
    """Folders are named only between a card's own commands, so a card never reads the folders of the
    machine that made it."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        zoo.parse_commands("x", commands)
    if commands and commands != [None]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            zoo.add("no-such-run", "x", commands)  # checked before the run folder is read


def test_verify_needs_the_cores_the_entry_trained_on(tmp_path: Path) -> None:
    """A card records the CPU cores its training had (XLA's CPU thread pool splits a matrix product's sums
    by them, and training grows the last bits into another policy); ``verify`` retrains in a child process
    held to as many cores (the slow retraining test runs it), and refuses, before training, on a machine
    with fewer. ``add`` refuses a count that is not one."""
    name = "mappo_MaMuJoCo_Reacher_2x1"
    assert zoo.card(name).cpu_cores == 1  # trained under taskset -c 1
    root = tmp_path / "zoo"
    shutil.copytree(zoo.ENTRIES / name, root / name)
    card = yaml.safe_load((root / name / "zoo.yaml").read_text())
    (root / name / "zoo.yaml").write_text(yaml.safe_dump({**card, "cpu_cores": 10_000}))
    with pytest.raises(ConfigError, match=f"zoo entry '{name}' trained on 10000 CPU core"):
        zoo.verify(name, root, workdir=tmp_path)
    for bad in (0, 1.5, True):
        with pytest.raises(ConfigError, match="cpu_cores: must be a whole number of cores"):
            zoo.add("no-such-run", "x", TINY, cpu_cores=bad)  # type: ignore[arg-type]


def test_an_entry_trained_on_the_c_engine_loads_for_mjx() -> None:
    """``env_kwargs`` are merged over the entry's env arguments: an MA-MuJoCo entry trained on MuJoCo's C
    engine (CPU only) loads for MJX, its parameters fitting MJX's policy; bad arguments name the entry."""
    name = "mappo_MaMuJoCo_HalfCheetah_2x3"
    stored = zoo.load(name)
    assert stored.experiment.config.env_kwargs == {"physics": "c", "host_threads": 1}
    moved = zoo.load(name, env_kwargs={"physics": "mjx", "host_threads": None})
    assert moved.experiment.config.env_kwargs == {"physics": "mjx", "host_threads": None}
    assert jax.tree.structure(moved.params) == jax.tree.structure(stored.params)
    with pytest.raises(ConfigError, match="host_threads applies to physics='c' only"):
        zoo.load(name, env_kwargs={"physics": "mjx"})  # the C engine's thread count stays unless cleared
    with pytest.raises(ConfigError, match=rf"zoo entry '{name}' with env_kwargs .*physics must be one of"):
        zoo.load(name, env_kwargs={"physics": "brax"})
    with pytest.raises(ConfigError, match="env_kwargs: must be a dict"):
        zoo.load(name, env_kwargs=[("physics", "c")])  # type: ignore[arg-type]


def test_bad_names_and_parameters_are_clear_errors(tmp_path: Path) -> None:
    first = zoo.names()[0]
    with pytest.raises(ConfigError, match=rf"no zoo entry '{first[:-2]}'; did you mean {first}[,?]"):
        zoo.card(first[:-2])
    root = tmp_path / "zoo"
    (root / first).mkdir(parents=True)
    for file in ("config.yaml", "zoo.yaml", "summary.json"):
        (root / first / file).write_bytes((zoo.ENTRIES / first / file).read_bytes())
    (root / first / "params.msgpack").write_bytes(serialization.msgpack_serialize({"nothing": np.zeros(1)}))
    with pytest.raises(ConfigError, match="params.msgpack does not fit its config.yaml"):
        zoo.load(first, root)
    # the right keys with a wrong shape
    good = serialization.msgpack_restore((zoo.ENTRIES / first / "params.msgpack").read_bytes())
    leaves, tree = jax.tree.flatten(good)
    wrong = jax.tree.unflatten(tree, [np.zeros((*np.shape(leaves[0]), 2)), *leaves[1:]])
    (root / first / "params.msgpack").write_bytes(serialization.msgpack_serialize(wrong))
    with pytest.raises(ConfigError, match="its parameters' shapes differ from the policy's"):
        zoo.load(first, root)


def test_commands_take_zoo_names_where_they_take_run_folders(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    name = "ippo_MPE_simple_spread_v3_fast"
    assert main(["eval", f"zoo:{name}", "--episodes", "8"]) == 0
    out = capsys.readouterr().out
    assert f"zoo entry {name}: 1 of 1 run(s)" in out and "8 episodes: mean per-agent return" in out
    assert main(["zoo", "list"]) == 0
    assert zoo.card(name).line() in capsys.readouterr().out
    assert main(["zoo", "list", "--markdown"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| `")]
    assert len(rows) == len(zoo.names())
    card = zoo.card(name)
    assert f"| `{name}` | {card.env_id} | ippo | {card.env_steps:,} | {card.score:.2f} [" in "\n".join(rows)
    assert main(["collect", f"zoo:{name}", "--episodes", "4", "--out", str(tmp_path)]) == 0
    assert "wrote " in capsys.readouterr().out
    # an entry is one run: another run's index is refused, not silently answered with the same policy
    for command in (["render", f"zoo:{name}", "--seed-index", "1"],
                    ["collect", f"zoo:{name}", "--grid-index", "1", "--out", str(tmp_path / "other")]):
        assert main(command) == 2
        assert f"zoo entry '{name}' holds one run" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(zoo.names(), key=lambda n: zoo.card(n).env_steps)[:2])
def test_a_shipped_entry_is_verified_by_retraining(name: str, tmp_path: Path) -> None:
    """The two entries of the fewest env steps, retrained from their commands."""
    result = zoo.verify(name, workdir=tmp_path)
    assert result.passed, result.line()


def test_xplay_takes_zoo_entries_as_seeds_and_as_partners(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture) -> None:
    """``xplay zoo:A zoo:B``: each entry is one seed, a self-play entry equals what ``eval`` scores for that
    entry with the same seed and episodes, and the files go to the working directory, not the package.
    ``--partners zoo:B``: the held-out score of A with B in each seat is the matching cross-play entry."""
    ego, partner = "ippo_MatrixGame", "mappo_MatrixGame"
    monkeypatch.chdir(tmp_path)
    assert main(["xplay", f"zoo:{ego}", f"zoo:{partner}", "--episodes", "16"]) == 0
    assert "[0] zoo:ippo_MatrixGame" in capsys.readouterr().out
    data = json.loads((tmp_path / "xplay" / "xplay.json").read_text())
    matrix = np.array(data["matrix"])
    for index, name in enumerate((ego, partner)):
        loaded = zoo.load(name)
        report = evaluate_policy(loaded.module, loaded.experiment.config, loaded.params, 16,
                                 jax.random.PRNGKey(0))
        np.testing.assert_allclose(matrix[index, index], report.mean, rtol=1e-5)
    assert [seed["zoo"] for seed in data["seeds"]] == [ego, partner]

    assert main(["xplay", f"zoo:{ego}", "--partners", f"zoo:{partner}", "--episodes", "16"]) == 0
    held_out = json.loads((tmp_path / f"xplay_{ego}" / "xplay.json").read_text())["held_out"]
    seats = np.array(held_out["episode_returns"])[0, 0].mean(-1)  # [ego as agent 0, ego as agent 1]
    np.testing.assert_allclose(seats, [matrix[0, 1], matrix[1, 0]], rtol=1e-5)
    assert held_out["partners_dir"] == f"zoo:{partner}"
    assert not list(zoo.ENTRIES.parent.rglob("xplay*")), "xplay wrote into the package"


def test_xplay_refuses_zoo_entries_it_cannot_pair(capsys: pytest.CaptureFixture) -> None:
    """An unknown entry, an entry of a three-agent env, and partners trained on another env: one line each."""
    for argv, message in (
            (["xplay", "zoo:ippo_MatrixGam", "zoo:mappo_MatrixGame"], "did you mean ippo_MatrixGame"),
            (["xplay", "zoo:ippo_MPE_simple_spread_v3_fast", "zoo:ippo_MatrixGame"],
             "trained on different envs"),
            (["xplay", "zoo:ippo_MPE_simple_spread_v3_fast", "zoo:ippo_MPE_simple_spread_v3_fast"],
             "exactly two agents"),
            (["xplay", "zoo:ippo_MatrixGame", "--partners", "zoo:ippo_MPE_simple_spread_v3_fast"],
             "held-out play needs one env")):
        assert main(argv) == 2, argv
        assert message in capsys.readouterr().err, argv
