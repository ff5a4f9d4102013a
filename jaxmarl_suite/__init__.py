"""jaxmarl_suite: multi-agent RL environments and baselines in JAX.

Importing this package is cheap: it imports neither JAX nor any env family. ``make`` imports what
the requested env needs. It does add one XLA flag to ``XLA_FLAGS`` (see ``jaxmarl_suite._xla``): a
workaround for a CPU scheduler that deadlocks vmapped training programs.
"""

import time as _time

IMPORTED_AT = _time.perf_counter()
"""``time.perf_counter()`` when the package was first imported: where a command's start-up is counted from
when the process's own start time cannot be read (``pipeline.startup_seconds``)."""

from jaxmarl_suite._make import make  # noqa: E402
from jaxmarl_suite._version import __version__  # noqa: E402
from jaxmarl_suite._xla import apply_xla_defaults  # noqa: E402
from jaxmarl_suite.core.registry import env_spec, register, registered_envs  # noqa: E402

apply_xla_defaults()

__all__ = ["__version__", "env_spec", "make", "register", "registered_envs"]
