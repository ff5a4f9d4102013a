"""jaxmarl_suite: multi-agent RL environments and baselines in JAX.

Importing this package is cheap: it imports neither JAX nor any env family. ``make`` imports what
the requested env needs. It does add one XLA flag to ``XLA_FLAGS`` (see ``jaxmarl_suite._xla``): a
workaround for a CPU scheduler that deadlocks vmapped training programs.
"""

from jaxmarl_suite._make import make
from jaxmarl_suite._version import __version__
from jaxmarl_suite._xla import apply_xla_defaults
from jaxmarl_suite.core.registry import env_spec, register, registered_envs

apply_xla_defaults()

__all__ = ["__version__", "env_spec", "make", "register", "registered_envs"]
