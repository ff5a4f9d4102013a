"""IPPO learning curves on the five Overcooked layouts: ours beside JaxMARL's IPPO-FF, same process, same day.

    python scripts/overcooked_curves.py --jaxmarl-ippo /tmp/JaxMARL/baselines/IPPO/ippo_ff_overcooked.py \\
        [--layouts cramped_room counter_circuit] [--timesteps 3e6] [--seeds 1] [--sides ours jaxmarl] \\
        [--markdown /tmp/overcooked_curves.md] [--json /tmp/overcooked_curves.json]
    python scripts/overcooked_curves.py --from-json /tmp/overcooked_curves.json --half-window 50000

For every layout and seed it trains, one after the other in this process (the side that goes first flips
from layout to layout, so slow drift of a shared machine does not always favour one side):

- **ours**: ``baselines/ippo.py`` with the preset ``ippo_Overcooked_<layout>`` on our env
  (``Overcooked_<layout>``), ``total_timesteps`` set to ``--timesteps``;
- **jaxmarl**: JaxMARL's ``baselines/IPPO/ippo_ff_overcooked.py`` with its own
  ``config/ippo_ff_overcooked.yaml`` (read with OmegaConf, as hydra reads it), ``ENV_KWARGS.layout`` set to
  JaxMARL's name of the layout and turned into ``overcooked_layouts[name]`` as its ``main`` does,
  ``TOTAL_TIMESTEPS`` set to ``--timesteps``, on JaxMARL's own Overcooked env. The script is imported with
  ``hydra``, ``omegaconf`` and ``wandb`` stubbed (its per-update ``wandb.log`` does nothing); its
  ``make_train`` runs unchanged but for one added info entry (below).

Both sides run 16 envs x 128 steps per update, so both log one point per 2,048 env steps (one env step:
both chefs act once), and both anneal the learning rate over ``--timesteps`` and the shaped reward over
the first 2.5e6 env steps. Each run is one ``jax.jit(train)(key)`` with key ``PRNGKey(seed)``; its
wall-clock includes building the env and compiling.

**The metric, like for like**: mean sparse episode return per agent over the episodes that finished.
Both envs give each chef the team's sparse reward (20 per soup), so a per-agent return is the team's.

- ours: ``metrics["return_mean"]``, the mean per-agent return of the episodes finished in an update
  (NaN if none), weighted by ``metrics["episodes"]``.
- JaxMARL: its ``LogWrapper`` reports per agent (``[2]`` per env, not summed) ``returned_episode_returns``,
  the return of the *last finished* episode held at every step until the next one ends (0 before the
  first), and its script logs the mean of that over steps, envs and agents: a lagged step-average, not a
  mean over finished episodes. So the wrapper here also puts
  ``finished_episode_returns = returned_episode_returns * returned_episode`` into ``info`` (no effect on
  training); the script averages it like every info entry, and
  ``mean(finished_episode_returns) / mean(returned_episode)`` is exactly the mean per-agent return of the
  episodes finished in that update. Episodes there per update: ``mean(returned_episode) * 16 * 128``.
  JaxMARL's own logged figure is kept in ``--json`` as ``jaxmarl_logged``.

Table columns: the episode-weighted mean of those per-update returns over the updates ending within
+-``--half-window`` env steps (default 100,000, i.e. 200k steps, ~98 updates, ~500 episodes) of 0.5e6, 1e6,
2e6 and 3e6 env steps (clipped at the run's end, so the last point of a run uses only the 100k before
it; ``-`` past the run); ``final``: over the last 10% of the updates that finished episodes (the figure
``tests/environments/test_overcooked_learning.py`` asserts on); wall-clock seconds, compile included.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import math
import os
import sys
import time
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxmarl_suite.baselines import ippo
from jaxmarl_suite.bench import machine_info
from jaxmarl_suite.training.kit import make_train
from jaxmarl_suite.training.runner.config import build, load_preset

Array = jax.Array

LAYOUTS = {
    "cramped_room": "cramped_room",
    "asymmetric_advantages": "asymm_advantages",
    "coordination_ring": "coord_ring",
    "forced_coordination": "forced_coord",
    "counter_circuit": "counter_circuit",
}
"""Our layout names (env id ``Overcooked_<name>``) -> JaxMARL's ``overcooked_layouts`` keys."""
ALIASES = {jaxmarl_name: ours for ours, jaxmarl_name in LAYOUTS.items()}
SIDES = ("ours", "jaxmarl")
POINTS = (500_000, 1_000_000, 2_000_000, 3_000_000)
"""Env steps at which the table reports the windowed return."""
HALF_WINDOW = 100_000
"""Updates ending within this many env steps of a point enter its mean."""
FINAL_FRACTION = 0.1
"""``final``: the last this fraction of the updates that finished episodes."""
DEFAULT_JAXMARL = Path("/tmp/JaxMARL/baselines/IPPO/ippo_ff_overcooked.py")


@dataclasses.dataclass
class Curve:
    """One training run's per-update returns."""

    layout: str
    side: str
    seed: int
    env_steps: np.ndarray
    """``[updates]`` env steps at the end of each update."""
    returns: np.ndarray
    """``[updates]`` mean sparse return per agent of the episodes finished in the update, NaN if none."""
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


def canonical_layout(name: str) -> str:
    """Our layout name for ours or JaxMARL's (``coord_ring`` -> ``coordination_ring``)."""
    if name in LAYOUTS:
        return name
    if name in ALIASES:
        return ALIASES[name]
    raise ValueError(f"unknown layout {name!r}; choose from {list(LAYOUTS)} (or JaxMARL's {list(ALIASES)})")


# --------------------------------------------------------------------------------------------------- ours
def train_ours(layout: str, timesteps: int, seed: int, overrides: dict[str, Any] | None = None) -> Curve:
    """Our IPPO with the layout's preset for ``timesteps`` env steps (``overrides`` on its ``config``)."""
    preset = load_preset(f"ippo_Overcooked_{layout}")
    config = build(ippo.Config, {**preset["config"], "total_timesteps": int(timesteps), **(overrides or {})})
    hparams = build(ippo.HParams, preset["hparams"])
    start = time.perf_counter()
    train = jax.jit(make_train(ippo, config))
    output = jax.block_until_ready(train(jax.random.PRNGKey(seed), hparams))
    seconds = time.perf_counter() - start
    updates = np.arange(1, config.num_updates + 1)
    return Curve(layout, "ours", seed, updates * config.batch_size,
                 np.asarray(output.metrics["return_mean"], dtype=np.float64),
                 np.asarray(output.metrics["episodes"], dtype=np.float64), seconds)


# ------------------------------------------------------------------------------------------------ JaxMARL
@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """JaxMARL prints on import and while tracing (``obs_shape``); keep stdout for the table."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


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
    """JaxMARL's ``ippo_ff_overcooked.py`` imported as a module, with its config."""

    module: types.ModuleType
    config: dict[str, Any]
    path: Path
    config_path: Path

    def train(self, layout: str, timesteps: int, seed: int, overrides: dict[str, Any] | None = None
              ) -> Curve:
        """Its ``make_train`` on its config with JaxMARL's layout and ``timesteps`` (``overrides`` on top)."""
        from jaxmarl.environments.overcooked import overcooked_layouts

        config = {**self.config, **(overrides or {})}
        config["ENV_KWARGS"] = {**config["ENV_KWARGS"], "layout": overcooked_layouts[LAYOUTS[layout]]}
        config["TOTAL_TIMESTEPS"] = int(timesteps)
        for key in ("NUM_ENVS", "NUM_STEPS", "UPDATE_EPOCHS", "NUM_MINIBATCHES"):
            config[key] = int(config[key])
        start = time.perf_counter()
        with _stdout_to_stderr():
            train = jax.jit(self.module.make_train(config))  # it writes NUM_UPDATES & co. into config
            output = jax.block_until_ready(train(jax.random.PRNGKey(seed)))
        seconds = time.perf_counter() - start
        metrics = {name: np.asarray(value, dtype=np.float64) for name, value in output["metrics"].items()
                   if name in ("returned_episode", "finished_episode_returns", "returned_episode_returns")}
        done_fraction = metrics["returned_episode"]  # mean over steps, envs and agents of the 0/1 flag
        with np.errstate(invalid="ignore", divide="ignore"):
            returns = np.where(done_fraction > 0, metrics["finished_episode_returns"] / done_fraction, np.nan)
        batch = config["NUM_ENVS"] * config["NUM_STEPS"]
        updates = np.arange(1, int(config["NUM_UPDATES"]) + 1)
        episodes = np.rint(done_fraction * batch)  # a float32 mean of 0/1 flags times their count
        return Curve(layout, "jaxmarl", seed, updates * batch, returns, episodes, seconds,
                     extra={"jaxmarl_logged": metrics["returned_episode_returns"].tolist()})


def load_jaxmarl_ippo(path: str | os.PathLike[str], config_path: str | os.PathLike[str] | None = None
                      ) -> JaxMarlIPPO:
    """Import JaxMARL's ``ippo_ff_overcooked.py`` with ``hydra``, ``omegaconf`` and ``wandb`` stubbed; its
    config from ``config_path`` or ``config/ippo_ff_overcooked.yaml`` beside it."""
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: clone FLAIROx/JaxMARL and pass --jaxmarl-ippo")
    config_file = Path(config_path).resolve() if config_path else path.parent / "config" / f"{path.stem}.yaml"
    if not config_file.is_file():
        raise FileNotFoundError(f"no config {config_file}; pass --jaxmarl-config")
    config = read_jaxmarl_config(config_file)
    hydra = types.ModuleType("hydra")
    hydra.main = lambda *args, **kwargs: (lambda function: function)  # type: ignore[attr-defined]
    omegaconf = types.ModuleType("omegaconf")
    omegaconf.OmegaConf = type("OmegaConf", (), {})  # type: ignore[attr-defined]
    wandb = types.ModuleType("wandb")
    wandb.log = lambda *args, **kwargs: None  # type: ignore[attr-defined]
    wandb.init = lambda *args, **kwargs: None  # type: ignore[attr-defined]
    stubs = {"hydra": hydra, "omegaconf": omegaconf, "wandb": wandb}
    saved = {name: sys.modules.get(name) for name in stubs}
    sys.modules.update(stubs)
    try:
        spec = importlib.util.spec_from_file_location(f"jaxmarl_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        with _stdout_to_stderr():
            spec.loader.exec_module(module)
    finally:
        for name, previous in saved.items():
            if previous is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous
    module.LogWrapper = _finished_episode_log_wrapper(module.LogWrapper)  # type: ignore[attr-defined]
    return JaxMarlIPPO(module, config, path, config_file)


# ------------------------------------------------------------------------------------------------ driving
def run_curves(
    layouts: Sequence[str], timesteps: int, seeds: Sequence[int], sides: Sequence[str] = SIDES,
    jaxmarl: JaxMarlIPPO | None = None, ours_overrides: dict[str, Any] | None = None,
    jaxmarl_overrides: dict[str, Any] | None = None, on_curve: Callable[[Curve], None] | None = None,
) -> list[Curve]:
    """Train every (layout, seed) on each side, alternating sides; the first side flips per layout."""
    if "jaxmarl" in sides and jaxmarl is None:
        raise ValueError("the jaxmarl side needs a loaded JaxMarlIPPO (load_jaxmarl_ippo)")
    curves = []
    for index, layout in enumerate(canonical_layout(name) for name in layouts):
        order = list(sides) if index % 2 == 0 else list(reversed(sides))
        for seed in seeds:
            for side in order:
                if side == "ours":
                    curve = train_ours(layout, timesteps, seed, ours_overrides)
                else:
                    assert jaxmarl is not None
                    curve = jaxmarl.train(layout, timesteps, seed, jaxmarl_overrides)
                curves.append(curve)
                if on_curve is not None:
                    on_curve(curve)
    return curves


def point_label(point: float) -> str:
    """``500000`` -> ``0.5e6``, ``3000000`` -> ``3e6``."""
    return f"{point / 1e6:g}e6"


def _cell(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value:.1f}"


def format_table(curves: Sequence[Curve], points: Sequence[float] = POINTS,
                 half_width: float = HALF_WINDOW) -> str:
    """Markdown: one row per run, the windowed return at each point, ``final`` and seconds."""
    header = ["layout", "side", "seed", *(point_label(p) for p in points), "final", "seconds"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for curve in curves:
        cells = [curve.layout, curve.side, str(curve.seed)]
        cells += [_cell(curve.window_mean(p, half_width)) for p in points]
        cells += [_cell(curve.final_mean()), f"{curve.seconds:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def report(curves: Sequence[Curve], machine: dict[str, str], command: str, timesteps: int,
           half_width: float, missing: Sequence[str] = (), points: Sequence[float] = POINTS) -> str:
    """The markdown document: what ran, the machine, the table."""
    lines = [
        "# IPPO on Overcooked: ours vs JaxMARL's IPPO-FF",
        "",
        f"`{command}`",
        "",
        f"{timesteps:,} env steps per run. Mean sparse episode return per agent (20 per soup, the team's), "
        f"episode-weighted over the updates ending within +-{half_width:,.0f} env steps of each point "
        f"(clipped at the run's end); `final`: the last {FINAL_FRACTION:.0%} of the updates that finished "
        "episodes; seconds: wall-clock with env construction and compile. JaxMARL's return is the mean over "
        "the episodes finished in each update (its `returned_episode_returns` on the steps where "
        "`returned_episode` is set), not its logged step-average (see the script's docstring).",
        "",
        format_table(curves, points, half_width),
    ]
    if missing:
        lines += [f"Not run: {', '.join(missing)}.", ""]
    lines += ["Machine:", ""] + [f"- {key}: {value}" for key, value in machine.items()] + [""]
    return "\n".join(lines)


def save_json(path: Path, curves: Sequence[Curve], machine: dict[str, str], command: str,
              timesteps: int) -> None:
    """Every run's per-update curve, with the machine and the command, for ``--from-json``."""
    runs = [{"layout": c.layout, "side": c.side, "seed": c.seed, "seconds": c.seconds,
             "env_steps": c.env_steps.tolist(),
             "returns": [None if not math.isfinite(r) else r for r in c.returns.tolist()],
             "episodes": c.episodes.tolist(), **c.extra} for c in curves]
    document = {"command": command, "timesteps": timesteps, "machine": machine, "curves": runs}
    path.write_text(json.dumps(document))


def load_json(path: Path) -> tuple[list[Curve], dict[str, str], str, int]:
    """``(curves, machine, command, timesteps)`` from a ``--json`` file."""
    document = json.loads(path.read_text())
    curves = []
    for run in document["curves"]:
        returns = np.array([math.nan if r is None else r for r in run["returns"]], dtype=np.float64)
        extra = {k: v for k, v in run.items()
                 if k not in ("layout", "side", "seed", "seconds", "env_steps", "returns", "episodes")}
        curves.append(Curve(run["layout"], run["side"], run["seed"], np.asarray(run["env_steps"]), returns,
                            np.asarray(run["episodes"], dtype=np.float64), run["seconds"], extra))
    return curves, document["machine"], document["command"], document["timesteps"]


def main(argv: Sequence[str] | None = None) -> None:
    """Parse flags, train both sides per layout, print and write the table."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layouts", nargs="+", default=list(LAYOUTS), help="our or JaxMARL's layout names")
    parser.add_argument("--timesteps", type=float, default=3e6, help="env steps per run (default 3e6)")
    parser.add_argument("--seeds", type=int, default=1, help="N seeds per layout and side")
    parser.add_argument("--first-seed", type=int, default=0, help="the seeds are FIRST..FIRST+N-1")
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES))
    parser.add_argument("--points", nargs="+", type=float, default=list(POINTS),
                        help="env steps where the table reports the windowed return")
    parser.add_argument("--half-window", type=float, default=HALF_WINDOW, help="env steps either side")
    parser.add_argument("--jaxmarl-ippo", type=Path, default=DEFAULT_JAXMARL,
                        help="JaxMARL's baselines/IPPO/ippo_ff_overcooked.py")
    parser.add_argument("--jaxmarl-config", type=Path, default=None,
                        help="its YAML (default: config/ippo_ff_overcooked.yaml beside it)")
    parser.add_argument("--markdown", type=Path, default=None, help="write the report here (after every run)")
    parser.add_argument("--json", type=Path, default=None, help="write per-update curves here")
    parser.add_argument("--from-json", type=Path, default=None,
                        help="train nothing: rebuild the report from a --json file (e.g. another window)")
    args = parser.parse_args(argv)
    points = [int(p) for p in args.points]
    if args.from_json is not None:
        curves, machine, command, timesteps = load_json(args.from_json)
        text = report(curves, machine, command, timesteps, args.half_window, points=points)
        print(text)
        if args.markdown is not None:
            args.markdown.write_text(text)
        return
    layouts = [canonical_layout(name) for name in args.layouts]
    timesteps = int(args.timesteps)
    jaxmarl = load_jaxmarl_ippo(args.jaxmarl_ippo, args.jaxmarl_config) if "jaxmarl" in args.sides else None
    machine = machine_info()
    machine["load average at start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    machine["our preset"] = "baselines/configs/ippo_Overcooked_<layout>.yaml"
    if jaxmarl is not None:
        machine["JaxMARL script"] = f"{jaxmarl.path} (sha256 {_sha(jaxmarl.path)})"
        machine["JaxMARL config"] = f"{jaxmarl.config_path} (sha256 {_sha(jaxmarl.config_path)})"
    command = " ".join(["python scripts/overcooked_curves.py", *(argv if argv is not None else sys.argv[1:])])
    curves: list[Curve] = []

    def on_curve(curve: Curve) -> None:
        curves.append(curve)
        print(f"{curve.layout} {curve.side} seed {curve.seed}: final {_cell(curve.final_mean())} "
              f"in {curve.seconds:.0f} s", file=sys.stderr, flush=True)
        done = {c.layout for c in curves}
        missing = [name for name in layouts if name not in done]
        if args.markdown is not None:
            args.markdown.write_text(report(curves, machine, command, timesteps, args.half_window, missing,
                                            points))
        if args.json is not None:
            save_json(args.json, curves, machine, command, timesteps)

    seeds = range(args.first_seed, args.first_seed + args.seeds)
    run_curves(layouts, timesteps, seeds, args.sides, jaxmarl, on_curve=on_curve)
    machine["load average at end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    text = report(curves, machine, command, timesteps, args.half_window, points=points)
    print(text)
    if args.markdown is not None:
        args.markdown.write_text(text)
    if args.json is not None:
        save_json(args.json, curves, machine, command, timesteps)


if __name__ == "__main__":
    main()
