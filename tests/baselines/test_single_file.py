"""Every baseline file holds its algorithm; the kit holds plumbing and tested numerics only.

- **The import boundary**: what a file under ``baselines/`` may take from ``jaxmarl_suite.training.kit`` is
  listed below, name by name, by what it is (the env stack and episode metrics, GAE and Q(lambda), action
  distributions and masked sampling, network layers, the optimizer built from config, the flashbax buffer
  and its memory check, settings and their checks, the contract and ``make_train``). A new import from the
  kit fails here until it is argued into ``ALLOWED``; an algorithm's loss, update schedule, exploration loop
  or target update never belongs there.
- **The kit defines no loss or update schedule**: no kit function is named for a loss or an epoch or
  gradient step, and none takes a gradient (``jax.grad``, ``value_and_grad``).
- **A copy is a fork**: copying ``ippo.py`` or ``qmix.py`` to a new file and changing the copy's loss
  changes the copy's training only; the original still reproduces its pinned ``metrics.csv``.

The first two read the source with ``ast``; nothing is imported to check them.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import jax
import pytest

# tests/ is on sys.path (its conftest): the pinned cases and their comparison are shared, not repeated
from training.test_pinned_metrics import CASES, PINNED, differing, read_rows

from jaxmarl_suite.training.runner.config import baseline_module, build_experiment
from jaxmarl_suite.training.runner.experiment import run_experiment

ROOT = Path(__file__).resolve().parents[2]
BASELINES = sorted(p for p in (ROOT / "baselines").glob("*.py") if p.name != "__init__.py")
KIT = ROOT / "jaxmarl_suite" / "training" / "kit"
KIT_PACKAGE = "jaxmarl_suite.training.kit"

ALLOWED: dict[str, set[str]] = {
    # the contract with the runner and the one composition of init and scanned updates
    "": {"Baseline", "Policy", "Trainer", "TrainOutput", "make_train", "scan_updates"},
    "baseline": {"Baseline", "Policy", "Trainer", "TrainOutput", "make_train", "scan_updates"},
    # the env stack and the episode metrics read from it
    "envs": {"make_training_env", "observation", "action_masks", "agent_done", "world_state",
             "training_reward", "shaped_reward_weight", "completed_episode_stats", "episode_metrics",
             "check_env_id"},  # the settings check of env_id, for a Config not built on PPOConfig (BC)
    # tested numerics: GAE, and the bootstrap values of final observations it and Q-learning need
    "gae": {"gae", "team_gae", "final_obs_rows", "final_values"},
    # network layers, action distributions and masked sampling, per-group parameter handling
    "networks": {"MLP", "Dense", "orthogonal", "ObsEncoder", "ResetGRU", "GRUInputs", "gru_scan", "gru_pair",
                 "two_towers", "group_apply", "group_map", "init_group_params", "policy_width", "check_torso",
                 "TORSOS", "ACTIVATIONS", "action_distribution", "sample_action", "to_env_action"},
    # the scan over time (rolled on a CPU; issue 41's accelerator module will own the fork)
    "loops": {"scan"},
    # settings and their checks, the optimizer built from them, acting with a trained actor
    "ppo": {"PPOConfig", "PPOHParams", "optimizer", "annealed_adam", "actor_policy"},
    "replay": {"ReplayConfig", "ReplayHParams"},
    # an extended run's progress through its length-dependent schedules (plumbing of --resume --extend)
    "schedule": {"schedule_env_steps", "schedule_knots"},
    # value-based numerics: the Q-network, masked epsilon-greedy and maxima, double-Q bootstraps,
    # Q(lambda), the team reward, greedy measuring envs, the flashbax buffer and its memory check, settings
    "q": {"QNetwork", "q_networks", "init_q_params", "discrete_actions", "full_masks", "next_masks",
          "epsilon_greedy", "linear_epsilon", "env_epsilons", "greedy_env_count", "split_episode_stats",
          "greedy_policy", "final_obs_rows", "next_q_values", "chosen_q", "max_q", "bootstrap_q",
          "q_lambda_returns", "team_reward", "all_agents", "make_replay", "QHParams", "OPTIMIZERS",
          "check_greedy_fraction", "epsilon_schedule_flags"},
}
"""``kit module -> names a baseline may use`` (``""`` is the package itself)."""

FORBIDDEN_NAME_PARTS = ("loss", "epoch", "gradient_step", "minibatch", "explore", "soft_update")
"""A kit function whose name holds one of these is an algorithm's choice and belongs in its file."""


def kit_uses(source: str) -> set[tuple[str, str]]:
    """``(kit module, name)`` for every kit name the source uses: ``from kit.m import n``, and ``m.n``
    after ``from kit import m``."""
    tree = ast.parse(source)
    module_aliases: dict[str, str] = {}
    uses: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(KIT_PACKAGE):
            sub = node.module[len(KIT_PACKAGE):].lstrip(".")
            for alias in node.names:
                if not sub and (KIT / f"{alias.name}.py").exists():
                    module_aliases[alias.asname or alias.name] = alias.name
                else:
                    uses.add((sub, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                assert not alias.name.startswith(KIT_PACKAGE), "import the kit's names, not `import kit...`"
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in module_aliases):
            uses.add((module_aliases[node.value.id], node.attr))
    return uses


def outside_the_kit_list(source: str) -> list[str]:
    return sorted(f"kit.{m}.{n}" if m else f"kit.{n}" for m, n in kit_uses(source)
                  if n not in ALLOWED.get(m, set()))


@pytest.mark.parametrize("path", BASELINES, ids=lambda p: p.name)
def test_a_baseline_takes_only_plumbing_and_numerics_from_the_kit(path: Path) -> None:
    source = path.read_text()
    assert kit_uses(source), f"{path.name} uses nothing from the kit: is the parser still right?"
    assert not outside_the_kit_list(source), (
        f"{path.name} takes {outside_the_kit_list(source)} from the kit: an algorithm's own pieces belong in "
        "its file; plumbing or tested numerics go into ALLOWED with a reason")


def test_the_boundary_check_catches_a_hidden_algorithm() -> None:
    """Negative control: importing a loss from the kit, by either import form, is caught."""
    assert outside_the_kit_list("from jaxmarl_suite.training.kit import ppo\nppo.clipped_ppo_loss(1)\n") == [
        "kit.ppo.clipped_ppo_loss"]
    assert outside_the_kit_list("from jaxmarl_suite.training.kit.replay import make_replay_trainer\n") == [
        "kit.replay.make_replay_trainer"]
    assert outside_the_kit_list("from jaxmarl_suite.training.kit import q as qq\nqq.explore()\n") == [
        "kit.q.explore"]
    assert not outside_the_kit_list("from jaxmarl_suite.training.kit import gae\ngae.gae(1)\n")


def algorithm_definitions(source: str) -> list[str]:
    """Functions named for a loss or an update schedule, and every gradient taken, in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(part in node.name.lower() for part in FORBIDDEN_NAME_PARTS):
                found.append(f"def {node.name}")
        elif isinstance(node, ast.Attribute) and node.attr in ("grad", "value_and_grad"):
            found.append(f"line {node.lineno}: .{node.attr}")
    return found


@pytest.mark.parametrize("path", sorted(KIT.glob("*.py")), ids=lambda p: p.name)
def test_the_kit_defines_no_loss_and_no_update_schedule(path: Path) -> None:
    found = algorithm_definitions(path.read_text())
    assert not found, f"kit/{path.name} defines an algorithm's piece: {found}"


def test_the_kit_check_catches_a_loss() -> None:
    """Negative control: what the kit held before the single-file refactor is caught."""
    assert algorithm_definitions("def clipped_ppo_loss(x):\n    return x\n") == ["def clipped_ppo_loss"]
    assert algorithm_definitions("def train_epochs(f):\n    return jax.value_and_grad(f)\n") == [
        "def train_epochs", "line 2: .value_and_grad"]
    assert not algorithm_definitions("def gae(x):\n    return x\n")


# ------------------------------------------------------------------------------------------- the fork
def load_copy(original: str, tmp_path: Path, old: str, new: str) -> ModuleType:
    """``baselines/<original>.py`` copied to ``tmp_path/<original>_fork.py`` with ``old`` replaced by ``new``
    (exactly once), and imported under that name, as a user's forked file is."""
    source = (ROOT / "baselines" / f"{original}.py").read_text()
    assert source.count(old) == 1, f"{original}.py no longer holds {old!r} exactly once"
    name = f"{original}_fork"
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace(old, new))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve the file's annotations through sys.modules
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def pinned_rows_differing(module: ModuleType, algorithm: str, pinned: str, run_dir: Path) -> list[list[str]]:
    config, hparams = next((c, h) for a, c, h, p in CASES if a == algorithm and p == pinned)
    experiment = build_experiment(algorithm, module.Config, module.HParams, config=config, hparams=hparams,
                                  seeds=2, run_dir=run_dir, progress=False, default_preset=False)
    run_experiment(module, experiment)
    rows = zip(read_rows(PINNED / pinned), read_rows(run_dir / "metrics.csv"), strict=True)
    return [differing(want, have) for want, have in rows]


FORKS = [
    # IPPO with its value loss halved: a change to the objective only
    ("ippo", "ippo.csv", "value_loss = 0.5 * mean(", "value_loss = 0.25 * mean("),
    # QMIX with its TD target's discount halved: a change to the targets only (42 s on 2 cores: slow)
    pytest.param("qmix", "qmix.csv", "+ hparams.gamma * (1.0 - batch[\"env_terminated\"]",
                 "+ 0.5 * hparams.gamma * (1.0 - batch[\"env_terminated\"]", marks=pytest.mark.slow),
]


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="pinned on CPU")
@pytest.mark.parametrize(("algorithm", "pinned", "old", "new"), FORKS, ids=["ippo", "qmix"])
def test_a_copied_file_with_another_loss_changes_that_copy_only(algorithm: str, pinned: str, old: str,
                                                                new: str, tmp_path: Path) -> None:
    fork = load_copy(algorithm, tmp_path, old, new)
    try:
        forked = pinned_rows_differing(fork, algorithm, pinned, tmp_path / "fork")
    finally:
        del sys.modules[fork.__name__]
    original = pinned_rows_differing(baseline_module(algorithm), algorithm, pinned, tmp_path / "original")
    assert not any(original), f"the original {algorithm}.py moved: {[r for r in original if r]}"
    # the fork trains differently from its first learning update on (its losses and, later, its returns)
    assert any(forked), f"the fork of {algorithm}.py reproduced the original's rows: the edit did nothing"
    assert any(column.startswith(("value_loss", "total_loss", "td_loss")) for row in forked for column in row)
