"""Host-side logging for compiled training loops: ``metrics.csv``, console lines, a live progress bar and
wandb. ``MetricsLogger.on_update`` is the target of a ``jax.debug.callback`` placed after every update, so
logging happens while the compiled program runs, not after it.
"""

from __future__ import annotations

import csv
import itertools
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

FIRST_COLUMNS = ("update", "env_steps", "seed", "grid_index", "return_mean", "episode_length", "episodes",
                 "wall_s")
"""The run-folder contract's columns come first in ``metrics.csv``; other metrics follow, sorted."""


def resolve_wandb_mode(requested: str | None) -> str:
    """``requested`` when given, else ``disabled``: wandb starts only when asked for (``--wandb offline``
    or ``online``), because even offline it starts ``wandb-core`` and looks a host up."""
    mode = requested or "disabled"
    if mode not in {"disabled", "offline", "online"}:
        raise ValueError(f"wandb: mode must be disabled, offline or online, got {mode!r}")
    return mode


class MetricsLogger:
    """Writes one CSV row per logged update, seed and grid point, and reports progress.

    Rows are written for every ``log_every``-th update and for the last one. A logger that is not
    ``enabled`` (processes other than 0 of a multi-process run) writes nothing. ``wall_s`` counts from the
    start of the run (compile included), plus ``wall_offset`` carried over from a resumed run.
    """

    def __init__(
        self,
        run_dir: Path,
        metric_names: Sequence[str],
        *,
        batch_size: int,
        num_updates: int,
        num_seeds: int,
        grid_size: int,
        log_every: int,
        start_update: int = 0,
        wall_offset: float = 0.0,
        progress: bool = True,
        wandb_run: Any = None,
        stream: Any = None,
        enabled: bool = True,
    ) -> None:
        self.enabled = enabled
        self.path = Path(run_dir) / "metrics.csv"
        self.columns = list(FIRST_COLUMNS) + sorted(set(metric_names) - set(FIRST_COLUMNS))
        self.batch_size = batch_size
        self.num_updates = num_updates
        self.num_seeds = num_seeds
        self.grid_size = grid_size
        self.log_every = log_every
        self.start_update = start_update
        self.wall_offset = wall_offset
        self.started = time.perf_counter()
        self.compute_started: float | None = None
        self.progress = progress
        self.wandb_run = wandb_run
        self.stream = stream or sys.stderr
        self.live = progress and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.console_every = max(1, num_updates // 20)
        if not enabled:  # another process of a multi-process run writes the files
            return
        self.logged_through = self._last_logged_update()
        new_file = not self.path.is_file()
        self.file = self.path.open("a", newline="")
        self.writer = csv.writer(self.file)
        if new_file:
            self.writer.writerow(self.columns)
            self.file.flush()

    def _last_logged_update(self) -> int:
        """The newest update already in ``metrics.csv`` (0 for none). A resumed run recomputes the updates
        between its checkpoint and the crash identically; the rows logged for them are kept, not rewritten,
        so nothing already logged is ever dropped."""
        if not self.path.is_file():
            return 0
        with self.path.open(newline="") as handle:
            updates = [int(row[0]) for row in itertools.islice(csv.reader(handle), 1, None) if row]
        return max(updates, default=0)

    def mark_compute_start(self) -> None:
        """Call once compilation is done, so steps/s counts compute only."""
        self.compute_started = time.perf_counter()

    def wall_s(self) -> float:
        """Seconds since the run started, including earlier segments of a resumed run."""
        return self.wall_offset + time.perf_counter() - self.started

    def on_update(self, update: Any, metrics: dict[str, Any]) -> None:
        """Callback target: ``update`` is the count after this update; each metric is ``[grid, seeds]``."""
        update = int(np.asarray(update))
        last = update == self.num_updates
        if not self.enabled or (update % self.log_every and not last):
            return
        metrics = {k: np.asarray(v) for k, v in metrics.items()}
        wall = self.wall_s()
        env_steps = update * self.batch_size
        for g in range(self.grid_size if update > self.logged_through else 0):
            for s in range(self.num_seeds):
                row = {"update": update, "env_steps": env_steps, "seed": s, "grid_index": g,
                       "wall_s": round(wall, 3)}
                row.update({k: float(v[g, s]) for k, v in metrics.items()})
                self.writer.writerow([_fmt(row.get(c, "")) for c in self.columns])
        self.file.flush()
        returns = metrics["return_mean"]
        mean_return = float(np.nanmean(returns)) if np.isfinite(returns).any() else math.nan
        if self.wandb_run is not None and update > self.logged_through:
            log = {"env_steps": env_steps, "wall_s": wall}
            for g in range(self.grid_size):
                for k, v in metrics.items():
                    log[f"g{g}/{k}"] = float(np.nanmean(v[g])) if np.isfinite(v[g]).any() else math.nan
            self.wandb_run.log(log, step=update)
        win_rate = metrics.get("win_rate")
        mean_win = None
        if win_rate is not None:
            mean_win = float(np.nanmean(win_rate)) if np.isfinite(win_rate).any() else math.nan
        greedy = metrics.get(GREEDY_RETURN)
        mean_greedy = None
        if greedy is not None:
            mean_greedy = float(np.nanmean(greedy)) if np.isfinite(greedy).any() else math.nan
        self._report(update, env_steps, mean_return, last, mean_win, mean_greedy)

    def _report(
        self, update: int, env_steps: int, mean_return: float, last: bool, win_rate: float | None = None,
        greedy_return: float | None = None,
    ) -> None:
        if not self.progress:
            return
        now = time.perf_counter()
        computing = now - (self.compute_started or self.started)
        done = update - self.start_update
        total_steps = done * self.batch_size * self.num_seeds * self.grid_size
        rate = total_steps / max(computing, 1e-9)
        remaining = computing / max(done, 1) * (self.num_updates - update)
        text = (f"update {update}/{self.num_updates}  {env_steps:,}/{self.num_updates * self.batch_size:,} "
                f"steps per run  {rate:,.0f} steps/s  elapsed {_clock(now - self.started)}  "
                f"eta {_clock(remaining)}  return_mean {mean_return:.3f}")
        if win_rate is not None:
            text += f"  win_rate {win_rate:.2f}"
        if greedy_return is not None:  # the value-based baselines' evaluation policy
            text += f"  greedy_return_mean {greedy_return:.3f}"
        if self.live:
            width = 24
            filled = int(width * update / self.num_updates)
            # \r and erase-to-end-of-line: a shorter line never leaves the tail of a longer one behind
            self.stream.write(f"\r\x1b[K[{'#' * filled}{'.' * (width - filled)}] {text}")
            if last:
                self.stream.write("\n")
            self.stream.flush()
        elif update % self.console_every == 0 or last:
            print(text, file=self.stream, flush=True)

    def end_line(self) -> None:
        """Finish a live progress line that an interruption left open, so the next message starts clean."""
        if self.live:
            self.stream.write("\n")
            self.stream.flush()

    def close(self) -> None:
        """Flush and close ``metrics.csv`` (and finish the wandb run)."""
        if not self.enabled:
            return
        self.file.close()
        if self.wandb_run is not None:
            self.wandb_run.finish()


def _clock(seconds: float) -> str:
    """``m:ss`` or ``h:mm:ss``."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _fmt(value: Any) -> Any:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.6g}"
    return value


def read_metrics(run_dir: Path) -> list[dict[str, float]]:
    """``metrics.csv`` of a run folder as a list of rows with float values (an empty cell, a metric that
    row did not measure, reads as NaN)."""
    with (Path(run_dir) / "metrics.csv").open(newline="") as handle:
        return [{k: float(v) if v not in ("", None) else math.nan for k, v in row.items() if k is not None}
                for row in csv.DictReader(handle)]


GREEDY_RETURN, GREEDY_WINS = "greedy_return_mean", "greedy_win_rate"
"""The value-based baselines' evaluation episodes (envs acting with epsilon 0), logged beside the exploring
envs' ``return_mean`` and ``win_rate``."""


def headline_metrics(rows: Sequence[dict[str, float]]) -> tuple[str, str]:
    """The columns a run is scored on: its evaluation policy's return and win rate. That is
    ``greedy_return_mean``/``greedy_win_rate`` where the run logged greedy episodes (IQL, VDN, QMIX, PQN: the
    exploring envs' ``return_mean`` understates the policy ``eval`` measures), else ``return_mean`` and
    ``win_rate`` (the PPO baselines act with their evaluation policy, the stochastic one, while training)."""
    greedy = any(math.isfinite(row.get(GREEDY_RETURN, math.nan)) for row in rows)
    return (GREEDY_RETURN, GREEDY_WINS) if greedy else ("return_mean", "win_rate")


FINAL_FRACTION = 0.1
"""The share of a run's logged updates, at the end, over which its final score is averaged."""


def final_score(values: Sequence[float] | np.ndarray, final_fraction: float = FINAL_FRACTION) -> float:
    """A run's final score: the mean of the finite values over the last ``final_fraction`` of its logged
    updates (at least one), NaN when none is finite. ``summary.json`` and ``report`` both use it, on the
    rows of ``metrics.csv`` (docs/training.md, "A run's final score")."""
    values = np.asarray(values, dtype=np.float64)
    if not 0.0 < final_fraction <= 1.0:
        raise ValueError(f"final_fraction must lie in (0, 1], got {final_fraction}")
    # the epsilon keeps float error (0.07 * 100 = 7.000000000000001) from adding an update to the window
    window = values[-max(1, math.ceil(final_fraction * len(values) - 1e-9)):]
    finite = window[np.isfinite(window)]
    return float(finite.mean()) if finite.size else math.nan


def start_wandb(mode: str, run_dir: Path, name: str, config: dict[str, Any]) -> Any:
    """A wandb run writing under ``run_dir`` (None when disabled). Offline never touches the network."""
    if mode == "disabled":
        return None
    import wandb

    mode_arg: Any = mode  # wandb types the mode as a Literal
    return wandb.init(mode=mode_arg, dir=str(run_dir), project="jaxmarl-suite", name=name, config=config,
                      reinit="finish_previous")
