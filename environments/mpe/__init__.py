"""The multi-agent particle environments (MPE), batch-native, matching mpe2 transition for transition."""

from jaxmarl_suite.environments.mpe.physics import MPEParams, MPEState
from jaxmarl_suite.environments.mpe.simple_spread import SimpleSpread, SimpleSpreadParams

__all__ = ["MPEParams", "MPEState", "SimpleSpread", "SimpleSpreadParams"]
