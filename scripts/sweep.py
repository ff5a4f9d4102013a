"""Run a sweep file: every (task, algorithm) block as one compiled program, then a report.

    python scripts/sweep.py baselines/configs/sweeps/mpe_small.yaml [--out DIR] [--dry-run] [--keep-going]

The same as ``jaxmarl-suite sweep``; the schema is in docs/sweeps.md.
"""

from __future__ import annotations

import sys

from jaxmarl_suite.pipeline import sweep_main as main

if __name__ == "__main__":
    sys.exit(main())
