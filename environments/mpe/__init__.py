"""The multi-agent particle environments (MPE), batch-native, matching mpe2 transition for transition."""

from .physics import MPEParams, MPEState
from .simple_spread import SimpleSpread, SimpleSpreadParams

__all__ = ["MPEParams", "MPEState", "SimpleSpread", "SimpleSpreadParams"]
