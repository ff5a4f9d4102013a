"""The Multi-Robot Warehouse (RWARE), step for step as ``rware`` 2.0.0 (see README.md)."""

from .rware import (
    IMAGE_LAYERS,
    OBSERVATION_TYPES,
    REWARD_TYPES,
    RobotWarehouse,
    RobotWarehouseParams,
    RobotWarehouseState,
    layout_from_params,
    layout_from_string,
)

__all__ = [
    "IMAGE_LAYERS",
    "OBSERVATION_TYPES",
    "REWARD_TYPES",
    "RobotWarehouse",
    "RobotWarehouseParams",
    "RobotWarehouseState",
    "layout_from_params",
    "layout_from_string",
]
