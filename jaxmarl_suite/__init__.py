"""jaxmarl_suite: multi-agent RL environments and baselines in JAX.

Importing this package is cheap: it imports neither JAX nor any env family. ``make`` imports what
the requested env needs.
"""

from jaxmarl_suite._version import __version__
from jaxmarl_suite.core.registry import env_spec, make, register, registered_envs

__all__ = ["__version__", "env_spec", "make", "register", "registered_envs"]
