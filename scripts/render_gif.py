"""Render a random-policy episode of any registered env to a GIF.

    python scripts/render_gif.py MPE_simple_tag_v3 --out runs/gifs/tag.gif [--steps 50] [--seed 0] [--fps 10]
        [--size 400]

All frames come from one jitted call, and the GIF stops where the episode ends. It plays at the env's
``render_fps`` (MPE 10, SMAX 4) unless ``--fps`` says otherwise, with each frame scaled up by a whole factor
to a legible size (``--size``: the frame's shorter side in pixels) and captioned with the step and the
running per-agent mean return.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from jaxmarl_suite.rollout import render_random_episode


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, render, print the GIF's path."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("env", help="env id (aliases work)")
    parser.add_argument("--out", default=None, help="GIF path (default runs/gifs/<env>.gif)")
    parser.add_argument("--steps", type=int, default=None, help="episode length (default: the env's)")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--fps", type=float, default=None, help="frame rate (default: the env's render_fps)")
    parser.add_argument("--size", type=int, default=None, metavar="PIXELS",
                        help="the frame's shorter side in the GIF (default: a legible whole multiple)")
    args = parser.parse_args(argv)
    try:
        path = render_random_episode(
            args.env, args.out or f"runs/gifs/{args.env}.gif", args.steps, args.seed, args.fps, args.size
        )
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
