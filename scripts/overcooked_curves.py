"""IPPO learning curves on the five Overcooked layouts: ours beside JaxMARL's IPPO-FF, same process, same day.

    python scripts/overcooked_curves.py --jaxmarl-ippo /tmp/JaxMARL/baselines/IPPO/ippo_ff_overcooked.py \\
        [--layouts cramped_room counter_circuit] [--timesteps 3e6] [--seeds 1] [--sides ours jaxmarl] \\
        [--markdown /tmp/overcooked_curves.md] [--json /tmp/overcooked_curves.json]
    python scripts/overcooked_curves.py --from-json /tmp/overcooked_curves.json --half-window 50000

This is ``scripts/ippo_curves.py --env overcooked``: that script trains, measures and reports (its docstring
has the metric, the table's columns and every flag); this one fixes the family and keeps the Overcooked
names. Per layout and seed it trains, alternating sides:

- **ours**: ``baselines/ippo.py`` with the preset ``ippo_Overcooked_<layout>`` on our env
  (``Overcooked_<layout>``), ``total_timesteps`` set to ``--timesteps``;
- **jaxmarl**: JaxMARL's ``baselines/IPPO/ippo_ff_overcooked.py`` with its own
  ``config/ippo_ff_overcooked.yaml``, ``ENV_KWARGS.layout`` set to ``overcooked_layouts[name]`` for
  JaxMARL's name of the layout, as its ``main`` does, ``TOTAL_TIMESTEPS`` set to ``--timesteps``, on
  JaxMARL's own Overcooked env.

Both sides run 16 envs x 128 steps per update, so both log one point per 2,048 env steps (one env step:
both chefs act once), and both anneal the learning rate over ``--timesteps`` and the shaped reward over
the first 2.5e6 env steps. The metric: mean sparse episode return per agent over the episodes that
finished (20 per soup, the team's; JaxMARL's from its ``returned_episode_returns`` on the steps where
``returned_episode`` is set, not its logged step-average). Table columns: the episode-weighted mean of the
per-update returns over the updates ending within +-``--half-window`` env steps (default 100,000, i.e.
200k steps, ~98 updates, ~500 episodes) of 0.5e6, 1e6, 2e6 and 3e6 env steps (or ``--points``); ``final``:
over the last 10% of the updates that finished episodes (the figure
``tests/environments/test_overcooked_learning.py`` asserts on); wall-clock seconds, compile included.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path (tests), not run from scripts/
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import ippo_curves  # noqa: E402
from ippo_curves import Curve, JaxMarlIPPO, load_jaxmarl_ippo  # noqa: E402

__all__ = ["DEFAULT_JAXMARL", "HALF_WINDOW", "LAYOUTS", "POINTS", "Curve", "JaxMarlIPPO", "canonical_layout",
           "format_table", "load_jaxmarl_ippo", "main", "run_curves"]

OVERCOOKED = ippo_curves.OVERCOOKED
LAYOUTS = OVERCOOKED.tasks
"""Our layout names (env id ``Overcooked_<name>``) -> JaxMARL's ``overcooked_layouts`` keys."""
POINTS = OVERCOOKED.points
"""Env steps at which the table reports the windowed return."""
HALF_WINDOW = OVERCOOKED.half_window
"""Updates ending within this many env steps of a point enter its mean."""
DEFAULT_JAXMARL = OVERCOOKED.jaxmarl_script


def canonical_layout(name: str) -> str:
    """Our layout name for ours or JaxMARL's (``coord_ring`` -> ``coordination_ring``)."""
    return ippo_curves.canonical_task(OVERCOOKED, name)


def run_curves(
    layouts: Sequence[str], timesteps: int, seeds: Sequence[int], sides: Sequence[str] = ippo_curves.SIDES,
    jaxmarl: JaxMarlIPPO | None = None, ours_overrides: dict[str, Any] | None = None,
    jaxmarl_overrides: dict[str, Any] | None = None, on_curve: Callable[[Curve], None] | None = None,
) -> list[Curve]:
    """``ippo_curves.run_curves`` on Overcooked: every (layout, seed) on each side."""
    return ippo_curves.run_curves(OVERCOOKED, layouts, timesteps, seeds, sides, jaxmarl, ours_overrides,
                                  jaxmarl_overrides, on_curve)


def format_table(curves: Sequence[Curve], points: Sequence[float] = POINTS,
                 half_width: float = HALF_WINDOW) -> str:
    """Markdown: one row per run (first column ``layout``), the windowed return at each point, ``final``
    and seconds."""
    return ippo_curves.format_table(curves, points, half_width, OVERCOOKED.task_label)


def main(argv: Sequence[str] | None = None) -> None:
    """``scripts/ippo_curves.py --env overcooked`` with this script's name in the report."""
    ippo_curves.main(argv, OVERCOOKED, "scripts/overcooked_curves.py", __doc__)


if __name__ == "__main__":
    main()
