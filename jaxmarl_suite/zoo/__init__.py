"""The model zoo: trained policies shipped with the package, with scores that are checked, not claimed.

An entry is a folder ``jaxmarl_suite/zoo/entries/NAME/`` holding what trained it and what it scores:

- ``config.yaml``: the run folder's (algorithm, preset, config, the grid point), so the policy rebuilds as
  the run built it;
- ``params.msgpack``: the final policy parameters of the run's first seed (flax's msgpack, never pickle);
- ``summary.json``: the run's own summary;
- ``zoo.yaml``: the entry's card: name, algorithm, env, env steps, the command that trained it (or the
  commands, in order, where training takes more than one: FCP trains against a population that
  ``jaxmarl-suite population ... --run-dir NAME`` makes first and ``--partners NAME`` names), and its
  evaluation score, the mean per-agent return over ``episodes`` episodes (``evaluate_policy``, key
  ``eval_seed``) with its Student-t 95% interval.

``names()`` lists the entries, ``card(name)`` reads one's card, ``load(name)`` returns its policy and
parameters, ``add(run_dir, name, command)`` makes an entry from a finished run, and ``verify(name)``
retrains it from its command and checks the new score against the stored interval. The command line has
``jaxmarl-suite zoo list|add|verify``, and ``eval``, ``render``, ``collect`` and ``xplay`` take
``zoo:NAME`` where they take a run folder.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np
import yaml

from jaxmarl_suite.errors import ConfigError, closest

ENTRIES = Path(__file__).parent / "entries"
"""Where the shipped entries live."""

PREFIX = "zoo:"
"""How a command names an entry where it takes a run folder (``eval zoo:NAME``)."""

SIZE_LIMIT = 30 * 1024 * 1024
"""The whole zoo stays under 30 MiB (its files' sizes)."""


@dataclass(frozen=True)
class Card:
    """An entry's ``zoo.yaml``."""

    name: str
    algorithm: str
    env_id: str
    env_steps: int
    command: str | list[str]
    """What trained the entry: one ``jaxmarl-suite train`` command, or several run in order (``verify``)."""
    score: float
    ci_low: float
    ci_high: float
    episodes: int
    eval_seed: int
    preset: str | None = None
    cpu_cores: int | None = None
    """The CPU cores the training process could use, where it trained on a CPU and this is known. XLA's
    CPU thread pool has one thread per core, and how a matrix product splits its sums among the threads
    changes the last bits of its result, which a training run then grows into another policy. ``verify``
    retrains on as many cores, so that the retraining reproduces the entry."""

    @property
    def commands(self) -> list[str]:
        """``command`` as a list, one command per step."""
        if self.command is None:
            return []
        return [self.command] if isinstance(self.command, str) else list(self.command)

    def line(self) -> str:
        """One row of ``zoo list``."""
        return (f"{self.name:<40} {self.env_id:<28} {self.algorithm:<6} {self.env_steps:>11,} "
                f"{self.score:9.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}]")


def names(root: Path = ENTRIES) -> list[str]:
    """The entries, sorted."""
    return sorted(p.name for p in root.iterdir() if (p / "zoo.yaml").is_file()) if root.is_dir() else []


def entry_folder(name: str, root: Path = ENTRIES) -> Path:
    """Entry ``name``'s folder (``zoo:`` prefix allowed); an unknown name raises ``ConfigError`` with the
    closest names."""
    name = name.removeprefix(PREFIX)
    folder = root / name
    if not (folder / "zoo.yaml").is_file():
        close = closest(name, names(root), n=3, cutoff=0.4)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ConfigError(f"no zoo entry {name!r}{hint} (jaxmarl-suite zoo list shows them)")
    return folder


def card(name: str, root: Path = ENTRIES) -> Card:
    """The card of entry ``name`` (``zoo:`` prefix allowed)."""
    return Card(**yaml.safe_load((entry_folder(name, root) / "zoo.yaml").read_text()))


def _template(module: Any, experiment: Any) -> Any:
    """The shapes of one run's policy parameters, from the entry's config (nothing is trained)."""
    from jaxmarl_suite.training.runner.experiment import build_trainer, run_hparams

    config = experiment.config
    if getattr(config, "partners", ""):  # FCP's population shapes nothing of the ego's policy and
        config = dataclasses.replace(config, partners="")  # does not ship with the entry
    trainer = build_trainer(module, config)
    hparams = jax.tree.map(lambda x: x[0], run_hparams(experiment.grid[:1], 1))
    return module.policy_params(jax.eval_shape(trainer.init, jax.random.PRNGKey(0), hparams))


def load(name: str, root: Path = ENTRIES, env_kwargs: Mapping[str, Any] | None = None) -> Any:
    """Entry ``name``'s policy: a ``LoadedPolicy`` (the baseline module, the experiment its config
    describes, the parameters ``make_policy(...).act`` takes, and the card's fields as the dict ``meta``;
    ``card(name)`` gives the ``Card``).

    ``env_kwargs`` are merged over those of the entry's env, keys left out keeping their stored values (the
    policy's parameters do not depend on them where the observation and action spaces stay the same):
    ``{"physics": "mjx", "host_threads": None}`` loads an MA-MuJoCo entry trained on MuJoCo's C engine,
    which runs on the CPU only, for an accelerator."""
    from flax import serialization

    from jaxmarl_suite.training.runner.config import baseline_module, experiment_from_run_dir
    from jaxmarl_suite.training.runner.experiment import LoadedPolicy

    folder = entry_folder(name, root)
    experiment = experiment_from_run_dir(folder)
    if env_kwargs is not None:
        if not isinstance(env_kwargs, Mapping):
            raise ConfigError(f"env_kwargs: must be a dict of the env's keyword arguments, got "
                              f"{env_kwargs!r}")
        config = dataclasses.replace(experiment.config,
                                     env_kwargs={**experiment.config.env_kwargs, **env_kwargs})
        experiment = dataclasses.replace(experiment, config=config)
    module = baseline_module(experiment.algorithm)
    try:
        template = _template(module, experiment)
    except (ValueError, TypeError) as error:
        if env_kwargs is None:
            raise
        raise ConfigError(f"zoo entry {name!r} with env_kwargs {dict(env_kwargs)}: {error}") from None
    try:
        params = serialization.from_bytes(template, (folder / "params.msgpack").read_bytes())
    except (ValueError, KeyError) as error:
        raise ConfigError(f"{folder}/params.msgpack does not fit its config.yaml: {error}") from None
    # from_bytes fills the template's structure but not its shapes: check them leaf by leaf
    expected = jax.tree.map(lambda x: (tuple(x.shape), str(x.dtype)), template)
    found = jax.tree.map(lambda x: (tuple(np.shape(x)), str(np.asarray(x).dtype)), params)
    if found != expected:
        raise ConfigError(f"{folder}/params.msgpack does not fit its config.yaml: its parameters' shapes "
                          f"differ from the policy's")
    return LoadedPolicy(module, experiment, params, {"update": None, **card(name, root).__dict__})


def evaluate(loaded: Any, episodes: int, seed: int) -> tuple[float, float, float]:
    """``(mean, low, high)`` of the policy's mean per-agent return over ``episodes`` episodes."""
    from jaxmarl_suite.evaluation.policy import evaluate_policy

    report = evaluate_policy(loaded.module, loaded.experiment.config, loaded.params, episodes,
                             jax.random.PRNGKey(seed))
    return report.mean, report.ci_low, report.ci_high


def add(run_dir: str | Path, name: str, command: str | list[str], *, episodes: int = 500,
        eval_seed: int = 0, root: Path = ENTRIES, overwrite: bool = False,
        cpu_cores: int | None = None) -> Path:
    """Make entry ``name`` from the finished run in ``run_dir`` (its first grid point and seed), which
    ``command`` trained (a list: the commands in order, the run's last; ``parse_commands`` says what they
    may be, and is checked first): copy its config and summary, store the final policy parameters, and score
    them (``evaluate``). The config names the population as the commands do (``--partners NAME``), not by
    where it lay here. ``cpu_cores``: the CPU cores the training had, where it trained on a CPU (the card's
    ``cpu_cores``). Returns the entry's folder."""
    from flax import serialization

    from jaxmarl_suite.training.runner.experiment import load_policy
    from jaxmarl_suite.training.runner.run_folder import read_run_config

    if not isinstance(command, str):
        command = command[0] if len(command) == 1 else list(command)
    final = parse_commands(name, [command] if isinstance(command, str) else command)[-1].flags
    if cpu_cores is not None and (isinstance(cpu_cores, bool) or not isinstance(cpu_cores, int)
                                  or cpu_cores < 1):
        raise ConfigError(f"cpu_cores: must be a whole number of cores of at least 1, got {cpu_cores!r}")
    run_dir = Path(run_dir)
    if not (run_dir / "summary.json").is_file():
        raise ConfigError(f"{run_dir} holds no finished run (no summary.json)")
    folder = root / name
    if folder.exists() and not overwrite:
        raise ConfigError(f"zoo entry {name!r} exists; pass overwrite to replace it")
    loaded = load_policy(run_dir)
    mean, low, high = evaluate(loaded, episodes, eval_seed)  # before touching the old entry
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    saved = read_run_config(run_dir)
    saved.update(num_seeds=1, grid=saved["grid"][:1])
    if saved["config"].get("partners") and _values(final, "--partners"):
        saved["config"]["partners"] = _values(final, "--partners")[-1]
    (folder / "config.yaml").write_text(yaml.safe_dump(saved, sort_keys=False))
    shutil.copy(run_dir / "summary.json", folder / "summary.json")
    (folder / "params.msgpack").write_bytes(serialization.to_bytes(jax.device_get(loaded.params)))
    config = loaded.experiment.config
    entry = Card(name, loaded.experiment.algorithm, config.env_id,
                 int(config.num_updates * config.batch_size), command, float(mean), float(low), float(high),
                 episodes, eval_seed, saved.get("preset"), cpu_cores)
    (folder / "zoo.yaml").write_text(yaml.safe_dump(entry.__dict__, sort_keys=False))
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    if size > SIZE_LIMIT:
        shutil.rmtree(folder)
        raise ConfigError(f"the zoo would be {size / 2**20:.1f} MiB with {name!r}, over its 30 MiB")
    return folder


@dataclass
class Verification:
    """What ``verify`` found: the stored card and the retrained policy's score."""

    card: Card
    score: float
    low: float
    high: float

    @property
    def passed(self) -> bool:
        """The retrained score lies within the stored score's 95% interval, or the stored score within
        the retrained one's (the two runs' intervals overlap at either point)."""
        return (self.card.ci_low <= self.score <= self.card.ci_high
                or self.low <= self.card.score <= self.high)

    def line(self) -> str:
        """What ``zoo verify`` prints."""
        verdict = "verified" if self.passed else "NOT verified"
        return (f"{self.card.name}: {verdict}: retrained {self.score:.3f} [{self.low:.3f}, {self.high:.3f}], "
                f"stored {self.card.score:.3f} [{self.card.ci_low:.3f}, {self.card.ci_high:.3f}] "
                f"({self.card.episodes} episodes each, seed {self.card.eval_seed})")


class Step(NamedTuple):
    """One command of a card: ``jaxmarl-suite KIND ALGORITHM FLAGS``."""

    kind: str
    """``train``, or ``population`` (a step before the last)."""
    algorithm: str
    """The baseline it trains (``ippo``, ``fcp``)."""
    flags: list[str]
    """Its flags as argparse reads them, ``--flag=value`` split into two words."""
    run_dir: str | None
    """The folder a step before the last writes (its ``--run-dir``, one plain name); None for the last."""


FOLDER_FLAGS = ("--run-dir", "--partners")
"""The flags whose values ``verify`` places in its scratch folder: a step's own ``--run-dir NAME``, and a
later step's ``--partners NAME``."""


def _words(name: str, where: str, command: Any) -> list[str]:
    """``command`` split as a shell does, each ``--flag=value`` as two words (as argparse reads it)."""
    if not isinstance(command, str):
        raise ConfigError(f"zoo entry {name!r}: {where} must be a string, got {command!r}")
    try:
        words = shlex.split(command)
    except ValueError as error:
        raise ConfigError(f"zoo entry {name!r}: {where} does not split into words ({error}): "
                          f"{command!r}") from None
    split: list[str] = []
    for word in words:
        split += word.split("=", 1) if word.startswith("--") and "=" in word else [word]
    return split


def _values(flags: list[str], flag: str) -> list[str]:
    """The values given to ``flag``, in order (argparse keeps the last)."""
    return [flags[j + 1] for j, word in enumerate(flags[:-1]) if word == flag]


def parse_commands(name: str, commands: list[str]) -> list[Step]:
    """A card's commands as steps, checked before anything runs.

    Every step before the last is ``jaxmarl-suite train|population ALGO ... --run-dir NAME``, NAME a plain
    folder name of its own; a later step may name it with ``--partners NAME`` and names no other folder
    (a card cannot depend on folders of the machine that made it). The last step is the entry's run,
    ``jaxmarl-suite train ALGO ...`` without ``--run-dir``. No step resumes."""
    steps: list[Step] = []
    names: list[str] = []
    for i, command in enumerate(commands):
        last = i == len(commands) - 1
        where = "its command" if len(commands) == 1 else f"its command {i + 1} of {len(commands)}"
        words = _words(name, where, command)
        kinds = ("train",) if last else ("train", "population")
        if (words[:1] != ["jaxmarl-suite"] or len(words) < 3 or words[1] not in kinds
                or words[2].startswith("-") or "--resume" in words):
            shape = ("`jaxmarl-suite train ALGO ...` without --run-dir or --resume" if last else
                     "`jaxmarl-suite train|population ALGO ... --run-dir NAME` without --resume")
            raise ConfigError(f"zoo entry {name!r}: {where} must be {shape}, got {command!r}")
        flags = words[3:]
        run_dirs = _values(flags, "--run-dir")
        if flags[-1:] == ["--run-dir"] or flags[-1:] == ["--partners"]:
            raise ConfigError(f"zoo entry {name!r}: {where} ends with {flags[-1]} and no folder: {command!r}")
        if last and run_dirs:
            raise ConfigError(f"zoo entry {name!r}: {where} (the entry's run) must not give --run-dir: "
                              f"verify picks its folder, got {command!r}")
        if not last:
            folder = run_dirs[0] if len(run_dirs) == 1 else ""
            if not folder or Path(folder).name != folder or folder in (".", "..") or folder in names:
                raise ConfigError(f"zoo entry {name!r}: {where} must write one --run-dir, a plain folder "
                                  f"name of its own that later commands name (--partners NAME), got "
                                  f"{command!r}")
        for partners in _values(flags, "--partners"):
            if partners not in names:
                raise ConfigError(f"zoo entry {name!r}: {where} gives --partners {partners!r}, which no "
                                  f"earlier command writes: a card's population is trained by a command "
                                  f"before it (... --run-dir {partners}), never read from this machine's "
                                  f"folders")
        steps.append(Step(words[1], words[2], flags, None if last else run_dirs[0]))
        names += [] if last else run_dirs
    if not steps:
        raise ConfigError(f"zoo entry {name!r}: it records no command")
    return steps


def _placed(flags: list[str], folders: dict[str, str]) -> list[str]:
    """``flags`` with each ``FOLDER_FLAGS`` value that names a step's folder put in its scratch place."""
    placed = list(flags)
    for j in range(len(placed) - 1):
        if placed[j] in FOLDER_FLAGS and placed[j + 1] in folders:
            placed[j + 1] = folders[placed[j + 1]]
    return placed


def usable_cores() -> list[int]:
    """The CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def _run_pinned(algorithm: str, flags: list[str], cores: list[int]) -> int:
    """Train ``algorithm`` with ``flags`` in a child process that holds itself to ``cores`` before JAX
    starts, so that XLA sizes its CPU thread pool as the entry's training did (this process's pool is
    fixed once JAX has started). A card's ``cpu_cores`` says that it trained on a CPU, so the child trains
    on the CPU even where an accelerator is present."""
    program = ("import os, sys; os.sched_setaffinity(0, [int(c) for c in sys.argv[1].split(',')]); "
               "from jaxmarl_suite.training.runner.config import baseline_module; "
               "sys.exit(baseline_module(sys.argv[2]).main(sys.argv[3:]))")
    pinned = ",".join(map(str, cores))
    return subprocess.run([sys.executable, "-c", program, pinned, algorithm, *flags], check=False,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"}).returncode


def verify(name: str, root: Path = ENTRIES, workdir: str | Path | None = None) -> Verification:
    """Retrain entry ``name`` from its recorded commands, in order, in a fresh scratch folder (each earlier
    step's ``--run-dir NAME``, and a later ``--partners NAME``, become a folder inside it), and score the new
    policy as the entry was scored. Where the card records the CPU cores its training had, each command runs
    in a child process held to as many cores; a machine with fewer raises ``ConfigError``."""
    from jaxmarl_suite.training.runner.config import baseline_module, population_flags
    from jaxmarl_suite.training.runner.experiment import load_policy

    entry = card(name, root)
    steps = parse_commands(name, entry.commands)
    cores = usable_cores()[:entry.cpu_cores] if entry.cpu_cores is not None else []
    if entry.cpu_cores is not None and (not hasattr(os, "sched_setaffinity") or len(cores) < entry.cpu_cores):
        raise ConfigError(f"zoo entry {name!r} trained on {entry.cpu_cores} CPU core(s), and this process "
                          f"may use {len(cores)} (or cannot choose its cores): its retraining would split "
                          f"its sums otherwise and not reproduce the entry")
    with tempfile.TemporaryDirectory(dir=workdir) as scratch:
        folders: dict[str, str] = {}
        run_dir = Path(scratch) / "run"
        for i, step in enumerate(steps):
            if step.run_dir is not None:
                folders[step.run_dir] = str(Path(scratch) / f"step{i}_{step.run_dir}")
            flags = _placed(step.flags, folders)
            if step.run_dir is None:
                flags += ["--run-dir", str(run_dir)]
            if step.kind == "population":
                flags = population_flags(flags)
            flags += ["--no-progress", "--artifacts", "none"]
            code = (_run_pinned(step.algorithm, flags, cores) if cores
                    else baseline_module(step.algorithm).main(flags))
            if code != 0:
                raise ConfigError(f"zoo entry {name!r}: its command {entry.commands[i]!r} failed with exit "
                                  f"status {code}")
        mean, low, high = evaluate(load_policy(run_dir), entry.episodes, entry.eval_seed)
    return Verification(entry, mean, low, high)


def load_run(name: str, grid_index: int = 0, seed_index: int = 0, root: Path = ENTRIES) -> Any:
    """``load`` for callers that take a run folder's ``grid_index`` and ``seed_index``: an entry holds one
    run, so an index other than 0 is a ``ConfigError`` rather than silently the same policy."""
    if grid_index != 0 or seed_index != 0:
        raise ConfigError(f"zoo entry {name!r} holds one run (grid point 0, seed 0); got --grid-index "
                          f"{grid_index} and --seed-index {seed_index}")
    return load(name, root)


def load_stacked(name: str, root: Path = ENTRIES, env_kwargs: Mapping[str, Any] | None = None) -> Any:
    """``load`` with the parameters on a leading run axis of one, as ``load_policies`` gives a run
    folder's (for ``eval``)."""
    loaded = load(name, root, env_kwargs)
    return loaded._replace(params=jax.tree.map(lambda x: x[None], loaded.params))


def resolve(path: str) -> str | None:
    """The entry name of a ``zoo:NAME`` argument, else None (a run folder)."""
    return path.removeprefix(PREFIX) if path.startswith(PREFIX) else None


def summary(name: str, root: Path = ENTRIES) -> dict[str, Any]:
    """The entry's ``summary.json`` (the run's own)."""
    return json.loads((entry_folder(name, root) / "summary.json").read_text())


