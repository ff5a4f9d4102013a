"""IPPO learning curves, ours beside JaxMARL's IPPO-FF, same process, same day: Overcooked, Hanabi or Switch
Riddle.

    python scripts/ippo_curves.py --env hanabi [--timesteps 1e8] [--points 1e7 2.5e7 5e7 1e8] \\
        [--half-window 1e6] [--ours-preset ippo_Hanabi] [--jaxmarl-num-envs 1024] [--seeds 1] \\
        [--sides ours jaxmarl] [--jaxmarl-ippo /tmp/JaxMARL/baselines/IPPO/ippo_ff_hanabi.py] \\
        [--markdown /tmp/hanabi_curves.md] [--json /tmp/hanabi_curves.json]
    python scripts/ippo_curves.py --env overcooked [--layouts cramped_room counter_circuit] ...
    python scripts/ippo_curves.py --from-json /tmp/hanabi_curves.json --points 5e7 1e8 --half-window 5e5

``--env overcooked`` is ``scripts/overcooked_curves.py`` (that script is this one with the family fixed; its
docstring says what is like for like on Overcooked). For every task of the family (Overcooked: its layouts;
Hanabi: the one game, ``Hanabi``) and seed it trains, one after the other in this process (the side that
goes first flips from task to task, so slow drift of a shared machine does not always favour one side):

- **ours**: ``baselines/ippo.py`` with the family's preset (Overcooked: ``ippo_Overcooked_<layout>``;
  Hanabi: ``ippo_Hanabi``, or ``--ours-preset NAME_OR_PATH``) on our env, ``total_timesteps`` set to
  ``--timesteps``;
- **jaxmarl**: JaxMARL's script (``baselines/IPPO/ippo_ff_<family>.py``) with its own YAML config
  (``config/ippo_ff_<family>.yaml``, read with OmegaConf, as hydra reads it), the family's ``ENV_KWARGS``
  (Overcooked: ``overcooked_layouts[name]``, as its ``main`` does; Hanabi: ``{}``, its config's),
  ``TOTAL_TIMESTEPS`` set to ``--timesteps`` and ``NUM_ENVS`` to ``--jaxmarl-num-envs`` (default: its
  config's), on JaxMARL's own env. The script is imported with ``hydra``, ``omegaconf`` and ``wandb``
  stubbed (its ``wandb.log`` does nothing); its ``make_train`` runs unchanged but for one added info
  entry (below). Its Hanabi config: 1024 envs x 128 steps, 4 epochs x 4 minibatches, lr 5e-4 not
  annealed, relu 512-wide layers, illegal moves masked (``TOTAL_TIMESTEPS`` 1e10 there).

Each run is one ``jax.jit(train)(key)`` with key ``PRNGKey(seed)``; its wall-clock includes building the
env and compiling. One env step is one step of one env, every agent acting once (in Hanabi every player
sends an action, the ones not on turn a no-op, on both sides).

**The metric, like for like**: mean episode return per agent over the episodes that finished. Both
families give every agent the team's reward, so a per-agent return is the team's: on Overcooked the sparse
return (20 per soup), on Hanabi the final score, 0 to 25 (the reward is the change in score, and losing
the last life takes back everything scored).

- ours: ``metrics["return_mean"]``, the mean per-agent return of the episodes finished in an update
  (NaN if none), weighted by ``metrics["episodes"]``.
- JaxMARL: its ``LogWrapper`` reports per agent ``returned_episode_returns``, the return of the *last
  finished* episode held at every step until the next one ends (0 before the first); its scripts log a
  mean of that (Overcooked's over steps, envs and agents; Hanabi's over the envs and agents of the
  rollout's last step): a lagged step-average, not a mean over finished episodes. So the wrapper here
  also puts ``finished_episode_returns = returned_episode_returns * returned_episode`` into ``info`` (no
  effect on training), and ``mean(finished_episode_returns) / mean(returned_episode)``, both averaged over
  an update's steps, envs and agents, is exactly the mean per-agent return of the episodes finished in
  that update. Episodes per update: ``mean(returned_episode) * NUM_ENVS * NUM_STEPS``. Overcooked's script
  returns those per-update means (``output["metrics"]``); Hanabi's returns none and hands each update's
  whole ``info`` to ``jax.experimental.io_callback``, so while it trains that function is wrapped to
  average the same entries on the host first (its own callback still runs). The mean of
  ``returned_episode_returns`` over steps, envs and agents is kept in ``--json`` as ``jaxmarl_logged``.

Table columns: the episode-weighted mean of those per-update returns over the updates ending within
+-``--half-window`` env steps of each of ``--points`` (clipped at the run's end, so the last point of a
run uses only the updates before it; ``-`` past the run); ``final``: over the last 10% of the updates that
finished episodes; wall-clock seconds, compile included. Defaults per family: Overcooked 3e6 steps, points
0.5e6 1e6 2e6 3e6, half-window 1e5; Hanabi 1e8 steps, points 1e7 2.5e7 5e7 1e8, half-window 1e6.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import math
import os
import sys
import time
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.experimental
import numpy as np

from jaxmarl_suite.baselines import ippo
from jaxmarl_suite.bench import machine_info
from jaxmarl_suite.compat.jaxmarl_scripts import import_jaxmarl_script, stdout_to_stderr
from jaxmarl_suite.training.kit import make_train
from jaxmarl_suite.training.runner.config import build, load_preset

Array = jax.Array

SIDES = ("ours", "jaxmarl")
FINAL_FRACTION = 0.1
"""``final``: the last this fraction of the updates that finished episodes."""
JAXMARL_IPPO = Path("/tmp/JaxMARL/baselines/IPPO")
"""Where the JaxMARL checkout's IPPO scripts are by default."""


def _overcooked_env_kwargs(jaxmarl_layout: str) -> dict[str, Any]:
    from jaxmarl.environments.overcooked import overcooked_layouts

    return {"layout": overcooked_layouts[jaxmarl_layout]}


def _no_env_kwargs(jaxmarl_task: str) -> dict[str, Any]:
    return {}


@dataclasses.dataclass(frozen=True)
class Family:
    """What differs between env families: names, defaults, and how each side is set up for a task."""

    name: str
    """The ``--env`` value, e.g. ``overcooked``."""
    title: str
    """For the report's heading, e.g. ``Overcooked``."""
    task_label: str
    """The table's first column: what a task is (``layout``, ``env``)."""
    tasks: Mapping[str, str]
    """Our task names -> JaxMARL's."""
    ours_preset: str
    """Our preset per task, a pattern with ``{task}``, e.g. ``ippo_Overcooked_{task}``."""
    jaxmarl_script: Path
    """JaxMARL's IPPO-FF script for the family (its config is ``config/<stem>.yaml`` beside it)."""
    jaxmarl_env_kwargs: Callable[[str], dict[str, Any]]
    """JaxMARL's task name -> what goes into its config's ``ENV_KWARGS``."""
    return_note: str
    """What a return is, for the report."""
    timesteps: float
    """Default ``--timesteps``."""
    points: tuple[int, ...]
    """Default ``--points``: env steps at which the table reports the windowed return."""
    half_window: int
    """Default ``--half-window``: updates ending within this many env steps of a point enter its mean."""
    jaxmarl_steps_per_env_step: int = 1
    """What one env step counts as in the JaxMARL script's ``TOTAL_TIMESTEPS``: 1, or the number of agents
    where it divides by ``NUM_ACTORS`` (agents x envs), as its Switch Riddle script does."""


OVERCOOKED = Family(
    name="overcooked", title="Overcooked", task_label="layout",
    tasks={"cramped_room": "cramped_room", "asymmetric_advantages": "asymm_advantages",
           "coordination_ring": "coord_ring", "forced_coordination": "forced_coord",
           "counter_circuit": "counter_circuit"},
    ours_preset="ippo_Overcooked_{task}", jaxmarl_script=JAXMARL_IPPO / "ippo_ff_overcooked.py",
    jaxmarl_env_kwargs=_overcooked_env_kwargs,
    return_note="Mean sparse episode return per agent (20 per soup, the team's)",
    timesteps=3e6, points=(500_000, 1_000_000, 2_000_000, 3_000_000), half_window=100_000,
)
HANABI = Family(
    name="hanabi", title="Hanabi", task_label="env", tasks={"Hanabi": "hanabi"},
    ours_preset="ippo_Hanabi", jaxmarl_script=JAXMARL_IPPO / "ippo_ff_hanabi.py",
    jaxmarl_env_kwargs=_no_env_kwargs,
    return_note="Mean episode return per agent: the final score, 0 to 25 (every player gets the team's "
                "change in score; 0 when the lives run out)",
    timesteps=1e8, points=(10_000_000, 25_000_000, 50_000_000, 100_000_000), half_window=1_000_000,
)
SWITCH_RIDDLE = Family(
    name="switch_riddle", title="Switch Riddle", task_label="env", tasks={"SwitchRiddle": "switch_riddle"},
    ours_preset="ippo_SwitchRiddle", jaxmarl_script=JAXMARL_IPPO / "ippo_ff_switch_riddle.py",
    jaxmarl_env_kwargs=_no_env_kwargs,
    return_note="Mean episode return per agent, 3 prisoners: +1 for a true announcement, -1 for a false one, "
                "0 when the 6 days run out (every prisoner gets the team's reward)",
    timesteps=1e6, points=(250_000, 500_000, 1_000_000), half_window=50_000, jaxmarl_steps_per_env_step=3,
)
FAMILIES = {family.name: family for family in (OVERCOOKED, HANABI, SWITCH_RIDDLE)}


def canonical_task(family: Family, name: str) -> str:
    """Our task name for ours or JaxMARL's (Overcooked's ``coord_ring`` -> ``coordination_ring``)."""
    if name in family.tasks:
        return name
    ours = {jaxmarl_name: task for task, jaxmarl_name in family.tasks.items()}
    if name in ours:
        return ours[name]
    raise ValueError(f"unknown {family.task_label} {name!r}; choose from {list(family.tasks)} "
                     f"(or JaxMARL's {list(ours)})")


@dataclasses.dataclass
class Curve:
    """One training run's per-update returns."""

    task: str
    """Our name of what was trained: an Overcooked layout, ``Hanabi``."""
    side: str
    seed: int
    env_steps: np.ndarray
    """``[updates]`` env steps at the end of each update."""
    returns: np.ndarray
    """``[updates]`` mean return per agent of the episodes finished in the update, NaN if none."""
    episodes: np.ndarray
    """``[updates]`` episodes finished in the update."""
    seconds: float
    """Wall-clock of the run: env construction, compile and training."""
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Anything else worth keeping in ``--json`` (JaxMARL's own logged metric)."""

    def window_mean(self, point: float, half_width: float) -> float:
        """Episode-weighted mean return over the updates ending in ``(point - half, point + half]``; NaN
        past the end of the run (a point within one update of the end, such as 3e6 for a run of 1,464
        updates of 2,048 steps, is in it) or when no episode finished there."""
        if len(self.env_steps) == 0 or point >= self.env_steps[-1] + self.env_steps[0]:
            return math.nan
        inside = (self.env_steps > point - half_width) & (self.env_steps <= point + half_width)
        return _weighted(self.returns[inside], self.episodes[inside])

    def final_mean(self, fraction: float = FINAL_FRACTION) -> float:
        """Episode-weighted mean return over the last ``fraction`` of the updates that finished episodes."""
        finished = np.flatnonzero((self.episodes > 0) & np.isfinite(self.returns))
        if len(finished) == 0:
            return math.nan
        last = finished[-max(1, int(len(finished) * fraction)):]
        return _weighted(self.returns[last], self.episodes[last])


def _weighted(returns: np.ndarray, episodes: np.ndarray) -> float:
    keep = (episodes > 0) & np.isfinite(returns)
    if not keep.any():
        return math.nan
    return float(np.sum(returns[keep] * episodes[keep]) / np.sum(episodes[keep]))


# --------------------------------------------------------------------------------------------------- ours
def train_ours(preset_name: str, task: str, timesteps: int, seed: int,
               overrides: dict[str, Any] | None = None) -> Curve:
    """Our IPPO with the preset (a name or a path) for ``timesteps`` env steps (``overrides`` on its
    ``config``); the curve is labelled ``task``."""
    preset = load_preset(preset_name)
    config = build(ippo.Config, {**preset["config"], "total_timesteps": int(timesteps), **(overrides or {})})
    hparams = build(ippo.HParams, preset["hparams"])
    start = time.perf_counter()
    train = jax.jit(make_train(ippo, config))
    output = jax.block_until_ready(train(jax.random.PRNGKey(seed), hparams))
    seconds = time.perf_counter() - start
    updates = np.arange(1, config.num_updates + 1)
    return Curve(task, "ours", seed, updates * config.batch_size,
                 np.asarray(output.metrics["return_mean"], dtype=np.float64),
                 np.asarray(output.metrics["episodes"], dtype=np.float64), seconds)


# ------------------------------------------------------------------------------------------------ JaxMARL
LOGGED = ("returned_episode", "finished_episode_returns", "returned_episode_returns")
"""The info entries of JaxMARL's scripts that make a curve."""


@contextlib.contextmanager
def averaging_io_callbacks() -> Iterator[list[dict[str, float]]]:
    """While open, ``jax.experimental.io_callback(callback, shapes, info)`` calls ``callback`` as before,
    first appending to the yielded list ``update_steps`` and the mean of each of ``LOGGED`` in ``info``
    (JaxMARL's Hanabi script logs an update's ``info`` this way and returns no metrics). Calls without those
    entries pass through untouched."""
    logged: list[dict[str, float]] = []
    io_callback = jax.experimental.io_callback

    def averaging_io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                              **kwargs: Any) -> Any:
        if not (args and isinstance(args[0], dict) and set(LOGGED) <= set(args[0])):
            return io_callback(callback, result_shape_dtypes, *args, **kwargs)

        def average_then_call(info: dict[str, Any], *rest: Any, **kwrest: Any) -> Any:
            means = {name: float(np.mean(np.asarray(info[name], dtype=np.float64))) for name in LOGGED}
            logged.append({**means, "update_steps": float(np.asarray(info.get("update_steps", len(logged))))})
            return callback(info, *rest, **kwrest)

        return io_callback(average_then_call, result_shape_dtypes, *args, **kwargs)

    jax.experimental.io_callback = averaging_io_callback  # type: ignore[assignment]
    try:
        yield logged
    finally:
        jax.experimental.io_callback = io_callback  # type: ignore[assignment]


def per_update_means(output: dict[str, Any], logged: Sequence[dict[str, float]]) -> dict[str, np.ndarray]:
    """``{entry: [updates]}`` for each of ``LOGGED``: the script's returned ``metrics`` (Overcooked's,
    averaged on device per update), else what its io_callback logged (Hanabi's), in update order."""
    if "metrics" in output:  # per update (Overcooked's), or per update, step and env (Switch Riddle's)
        return {name: np.asarray(output["metrics"][name], dtype=np.float64).reshape(
                    np.shape(output["metrics"][name])[0], -1).mean(-1) for name in LOGGED}
    ordered = sorted(logged, key=lambda entry: entry["update_steps"])
    return {name: np.array([entry[name] for entry in ordered], dtype=np.float64) for name in LOGGED}


def read_jaxmarl_config(path: Path) -> dict[str, Any]:
    """JaxMARL's YAML as hydra reads it (OmegaConf: ``2.5e-4`` is a float, not a string)."""
    from omegaconf import OmegaConf

    container = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    assert isinstance(container, dict), f"{path} is not a mapping"
    return {str(key): value for key, value in container.items()}


def _finished_episode_log_wrapper(base: type) -> type:
    """JaxMARL's ``LogWrapper`` plus ``info["finished_episode_returns"]``: each agent's return on the step
    its episode ends, 0 elsewhere (see the module docstring). Training is unchanged."""

    class FinishedEpisodeLogWrapper(base):  # type: ignore[misc,valid-type]
        def step(self, key: Array, state: Any, action: Any) -> tuple[Any, ...]:
            obs, state, reward, done, info = super().step(key, state, action)
            info["finished_episode_returns"] = info["returned_episode_returns"] * info["returned_episode"]
            return obs, state, reward, done, info

    return FinishedEpisodeLogWrapper


@dataclasses.dataclass
class JaxMarlIPPO:
    """One of JaxMARL's ``ippo_ff_<family>.py`` scripts imported as a module, with its config."""

    module: types.ModuleType
    config: dict[str, Any]
    path: Path
    config_path: Path

    def train(self, task: str, env_kwargs: dict[str, Any], timesteps: int, seed: int,
              overrides: dict[str, Any] | None = None) -> Curve:
        """Its ``make_train`` on its config with ``env_kwargs`` added to ``ENV_KWARGS``, ``TOTAL_TIMESTEPS``
        set to ``timesteps`` and ``overrides`` on top; the curve is labelled ``task``."""
        config = {**self.config, **(overrides or {})}
        config["ENV_KWARGS"] = {**config["ENV_KWARGS"], **env_kwargs}
        config["TOTAL_TIMESTEPS"] = int(timesteps)
        for key in ("NUM_ENVS", "NUM_STEPS", "UPDATE_EPOCHS", "NUM_MINIBATCHES"):
            config[key] = int(config[key])
        start = time.perf_counter()
        with stdout_to_stderr(), averaging_io_callbacks() as logged:
            train = jax.jit(self.module.make_train(config))  # it writes NUM_UPDATES & co. into config
            output = jax.block_until_ready(train(jax.random.PRNGKey(seed)))
            jax.effects_barrier()  # every io_callback has run
        seconds = time.perf_counter() - start
        metrics = per_update_means(output, logged)
        num_updates = int(config["NUM_UPDATES"])
        assert all(len(values) == num_updates for values in metrics.values()), (
            f"{self.path.name}: {[len(values) for values in metrics.values()]} logged updates, "
            f"expected {num_updates}")
        done_fraction = metrics["returned_episode"]  # mean over steps, envs and agents of the 0/1 flag
        with np.errstate(invalid="ignore", divide="ignore"):
            returns = np.where(done_fraction > 0, metrics["finished_episode_returns"] / done_fraction, np.nan)
        batch = config["NUM_ENVS"] * config["NUM_STEPS"]
        updates = np.arange(1, num_updates + 1)
        episodes = np.rint(done_fraction * batch)  # a mean of 0/1 flags times their count
        return Curve(task, "jaxmarl", seed, updates * batch, returns, episodes, seconds,
                     extra={"jaxmarl_logged": metrics["returned_episode_returns"].tolist()})


def load_jaxmarl_ippo(path: str | os.PathLike[str], config_path: str | os.PathLike[str] | None = None
                      ) -> JaxMarlIPPO:
    """Import one of JaxMARL's IPPO scripts with ``hydra``, ``omegaconf`` and ``wandb`` stubbed; its config
    from ``config_path`` or ``config/<script stem>.yaml`` beside it."""
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: clone FLAIROx/JaxMARL and pass --jaxmarl-ippo")
    config_file = Path(config_path).resolve() if config_path else path.parent / "config" / f"{path.stem}.yaml"
    if not config_file.is_file():
        raise FileNotFoundError(f"no config {config_file}; pass --jaxmarl-config")
    config = read_jaxmarl_config(config_file)
    module = import_jaxmarl_script(path)
    module.LogWrapper = _finished_episode_log_wrapper(module.LogWrapper)  # type: ignore[attr-defined]
    return JaxMarlIPPO(module, config, path, config_file)


# ------------------------------------------------------------------------------------------------ driving
def run_curves(
    family: Family, tasks: Sequence[str], timesteps: int, seeds: Sequence[int], sides: Sequence[str] = SIDES,
    jaxmarl: JaxMarlIPPO | None = None, ours_overrides: dict[str, Any] | None = None,
    jaxmarl_overrides: dict[str, Any] | None = None, on_curve: Callable[[Curve], None] | None = None,
    ours_preset: str | None = None,
) -> list[Curve]:
    """Train every (task, seed) on each side, alternating sides; the first side flips per task. Ours uses
    ``ours_preset`` (a name or a path) for every task, else the family's preset for each."""
    if "jaxmarl" in sides and jaxmarl is None:
        raise ValueError("the jaxmarl side needs a loaded JaxMarlIPPO (load_jaxmarl_ippo)")
    curves = []
    for index, task in enumerate(canonical_task(family, name) for name in tasks):
        order = list(sides) if index % 2 == 0 else list(reversed(sides))
        for seed in seeds:
            for side in order:
                if side == "ours":
                    preset = ours_preset or family.ours_preset.format(task=task)
                    curve = train_ours(preset, task, timesteps, seed, ours_overrides)
                else:
                    assert jaxmarl is not None
                    env_kwargs = family.jaxmarl_env_kwargs(family.tasks[task])
                    budget = timesteps * family.jaxmarl_steps_per_env_step
                    curve = jaxmarl.train(task, env_kwargs, budget, seed, jaxmarl_overrides)
                curves.append(curve)
                if on_curve is not None:
                    on_curve(curve)
    return curves


def point_label(point: float) -> str:
    """``500000`` -> ``0.5e6``, ``3000000`` -> ``3e6``."""
    return f"{point / 1e6:g}e6"


def _cell(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value:.1f}"


def format_table(curves: Sequence[Curve], points: Sequence[float], half_width: float,
                 task_label: str = "task") -> str:
    """Markdown: one row per run, the windowed return at each point, ``final`` and seconds."""
    header = [task_label, "side", "seed", *(point_label(p) for p in points), "final", "seconds"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for curve in curves:
        cells = [curve.task, curve.side, str(curve.seed)]
        cells += [_cell(curve.window_mean(p, half_width)) for p in points]
        cells += [_cell(curve.final_mean()), f"{curve.seconds:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def report(family: Family, curves: Sequence[Curve], machine: dict[str, str], command: str, timesteps: int,
           points: Sequence[float], half_width: float, missing: Sequence[str] = ()) -> str:
    """The markdown document: what ran, the machine, the table."""
    lines = [
        f"# IPPO on {family.title}: ours vs JaxMARL's IPPO-FF",
        "",
        f"`{command}`",
        "",
        f"{timesteps:,} env steps per run. {family.return_note}, episode-weighted over the updates ending "
        f"within +-{half_width:,.0f} env steps of each point (clipped at the run's end); `final`: the last "
        f"{FINAL_FRACTION:.0%} of the updates that finished episodes; seconds: wall-clock with env "
        "construction and compile. JaxMARL's return is the mean over the episodes finished in each update "
        "(its `returned_episode_returns` on the steps where `returned_episode` is set), not its logged "
        "step-average (see scripts/ippo_curves.py's docstring).",
        "",
        format_table(curves, points, half_width, family.task_label),
    ]
    if missing:
        lines += [f"Not run: {', '.join(missing)}.", ""]
    lines += ["Machine:", ""] + [f"- {key}: {value}" for key, value in machine.items()] + [""]
    return "\n".join(lines)


def save_json(path: Path, family: Family, curves: Sequence[Curve], machine: dict[str, str], command: str,
              timesteps: int) -> None:
    """Every run's per-update curve, with the family, the machine and the command, for ``--from-json``."""
    runs = [{"task": c.task, "side": c.side, "seed": c.seed, "seconds": c.seconds,
             "env_steps": c.env_steps.tolist(),
             "returns": [None if not math.isfinite(r) else r for r in c.returns.tolist()],
             "episodes": c.episodes.tolist(), **c.extra} for c in curves]
    document = {"env": family.name, "command": command, "timesteps": timesteps, "machine": machine,
                "curves": runs}
    path.write_text(json.dumps(document))


CURVE_KEYS = ("task", "layout", "side", "seed", "seconds", "env_steps", "returns", "episodes")
"""A ``--json`` run's keys that ``Curve`` has fields for (``layout``: the task in older files)."""


def load_json(path: Path) -> tuple[Family, list[Curve], dict[str, str], str, int]:
    """``(family, curves, machine, command, timesteps)`` from a ``--json`` file. Files written by
    ``scripts/overcooked_curves.py`` before Hanabi joined have no ``env`` and call the task ``layout``."""
    document = json.loads(path.read_text())
    curves = []
    for run in document["curves"]:
        task = run["task"] if "task" in run else run["layout"]
        returns = np.array([math.nan if r is None else r for r in run["returns"]], dtype=np.float64)
        extra = {key: value for key, value in run.items() if key not in CURVE_KEYS}
        curves.append(Curve(task, run["side"], run["seed"], np.asarray(run["env_steps"]), returns,
                            np.asarray(run["episodes"], dtype=np.float64), run["seconds"], extra))
    family = FAMILIES[document.get("env", OVERCOOKED.name)]
    return family, curves, document["machine"], document["command"], document["timesteps"]


def _parser(family: Family | None, description: str) -> argparse.ArgumentParser:
    """The flags; ``--env`` only when ``family`` is not fixed by the calling script."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    if family is None:
        parser.add_argument("--env", choices=list(FAMILIES), default=None,
                            help="the env family to train (needed unless --from-json)")
    parser.add_argument("--layouts", nargs="+", default=None,
                        help="Overcooked only: our or JaxMARL's layout names (default: all five)")
    parser.add_argument("--timesteps", type=float, default=None,
                        help="env steps per run (default: Overcooked 3e6, Hanabi 1e8)")
    parser.add_argument("--seeds", type=int, default=1, help="N seeds per task and side")
    parser.add_argument("--first-seed", type=int, default=0, help="the seeds are FIRST..FIRST+N-1")
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES))
    parser.add_argument("--points", nargs="+", type=float, default=None,
                        help="env steps where the table reports the windowed return (default: the family's)")
    parser.add_argument("--half-window", type=float, default=None,
                        help="env steps either side of a point (default: Overcooked 1e5, Hanabi 1e6)")
    parser.add_argument("--ours-preset", default=None, metavar="NAME_OR_PATH",
                        help="our preset for every task (default: ippo_Overcooked_<layout>, ippo_Hanabi)")
    parser.add_argument("--jaxmarl-ippo", type=Path, default=None,
                        help="JaxMARL's IPPO script (default: /tmp/JaxMARL/baselines/IPPO/ippo_ff_<env>.py)")
    parser.add_argument("--jaxmarl-config", type=Path, default=None,
                        help="its YAML (default: config/<script stem>.yaml beside it)")
    parser.add_argument("--jaxmarl-num-envs", type=int, default=None,
                        help="JaxMARL's NUM_ENVS (default: its config's; Overcooked 16, Hanabi 1024)")
    parser.add_argument("--markdown", type=Path, default=None, help="write the report here (after every run)")
    parser.add_argument("--json", type=Path, default=None, help="write per-update curves here")
    parser.add_argument("--from-json", type=Path, default=None,
                        help="train nothing: rebuild the report from a --json file (e.g. another window)")
    return parser


def _load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: Sequence[str] | None = None, family: Family | None = None,
         script: str = "scripts/ippo_curves.py", description: str | None = __doc__) -> None:
    """Parse flags, train both sides per task, print and write the table. ``family`` fixes the env family
    (``scripts/overcooked_curves.py``); otherwise ``--env`` chooses it."""
    parser = _parser(family, description or "")
    args = parser.parse_args(argv)
    if args.from_json is not None:
        family, curves, machine, command, timesteps = load_json(args.from_json)
        points = [int(p) for p in args.points] if args.points else list(family.points)
        half_width = family.half_window if args.half_window is None else args.half_window
        text = report(family, curves, machine, command, timesteps, points, half_width)
        print(text)
        if args.markdown is not None:
            args.markdown.write_text(text)
        return
    if family is None:
        if args.env is None:
            parser.error("--env is needed to train (or --from-json to rebuild a report)")
        family = FAMILIES[args.env]
    if args.layouts is not None and family is not OVERCOOKED:
        parser.error("--layouts is for --env overcooked")
    tasks = [canonical_task(family, name) for name in (args.layouts or family.tasks)]
    if args.ours_preset is not None and len(tasks) > 1:
        parser.error("--ours-preset trains one env: name one layout with --layouts")
    timesteps = int(family.timesteps if args.timesteps is None else args.timesteps)
    points = [int(p) for p in args.points] if args.points else list(family.points)
    half_width = family.half_window if args.half_window is None else args.half_window
    jaxmarl_overrides = {} if args.jaxmarl_num_envs is None else {"NUM_ENVS": args.jaxmarl_num_envs}
    jaxmarl = None
    if "jaxmarl" in args.sides:
        jaxmarl = load_jaxmarl_ippo(args.jaxmarl_ippo or family.jaxmarl_script, args.jaxmarl_config)
    machine = machine_info()
    machine["load average at start"] = _load_average()
    machine["our preset"] = args.ours_preset or f"baselines/configs/{family.ours_preset}.yaml"
    if jaxmarl is not None:
        machine["JaxMARL script"] = f"{jaxmarl.path} (sha256 {_sha(jaxmarl.path)})"
        machine["JaxMARL config"] = f"{jaxmarl.config_path} (sha256 {_sha(jaxmarl.config_path)})"
        if jaxmarl_overrides:
            machine["JaxMARL overrides"] = json.dumps(jaxmarl_overrides)
    command = " ".join([f"python {script}", *(argv if argv is not None else sys.argv[1:])])
    curves: list[Curve] = []

    def write(missing: Sequence[str] = ()) -> str:
        assert family is not None
        text = report(family, curves, machine, command, timesteps, points, half_width, missing)
        if args.markdown is not None:
            args.markdown.write_text(text)
        if args.json is not None:
            save_json(args.json, family, curves, machine, command, timesteps)
        return text

    def on_curve(curve: Curve) -> None:
        curves.append(curve)
        print(f"{curve.task} {curve.side} seed {curve.seed}: final {_cell(curve.final_mean())} "
              f"in {curve.seconds:.0f} s", file=sys.stderr, flush=True)
        done = {c.task for c in curves}
        write([name for name in tasks if name not in done])

    seeds = range(args.first_seed, args.first_seed + args.seeds)
    run_curves(family, tasks, timesteps, seeds, args.sides, jaxmarl, jaxmarl_overrides=jaxmarl_overrides,
               on_curve=on_curve, ours_preset=args.ours_preset)
    machine["load average at end"] = _load_average()
    print(write())


if __name__ == "__main__":
    main()
