"""The multi-agent particle environments (MPE), batch-native, matching mpe2 transition for transition."""

from .collect_treasure import CollectTreasure, CollectTreasureParams
from .physics import MPEParams, MPEState
from .simple import Simple
from .simple_adversary import SimpleAdversary
from .simple_crypto import SimpleCrypto
from .simple_facmac import SimpleFacmac, SimpleFacmacParams
from .simple_formation import SimpleFormation, SimpleFormationParams
from .simple_line import SimpleLine, SimpleLineParams
from .simple_push import SimplePush
from .simple_reference import SimpleReference, SimpleReferenceParams
from .simple_speaker_listener import SimpleSpeakerListener
from .simple_spread import SimpleSpread, SimpleSpreadParams
from .simple_tag import SimpleTag, SimpleTagParams
from .simple_world_comm import SimpleWorldComm, SimpleWorldCommParams

__all__ = [
    "CollectTreasure",
    "CollectTreasureParams",
    "MPEParams",
    "MPEState",
    "Simple",
    "SimpleAdversary",
    "SimpleCrypto",
    "SimpleFacmac",
    "SimpleFacmacParams",
    "SimpleFormation",
    "SimpleFormationParams",
    "SimpleLine",
    "SimpleLineParams",
    "SimplePush",
    "SimpleReference",
    "SimpleReferenceParams",
    "SimpleSpeakerListener",
    "SimpleSpread",
    "SimpleSpreadParams",
    "SimpleTag",
    "SimpleTagParams",
    "SimpleWorldComm",
    "SimpleWorldCommParams",
]
