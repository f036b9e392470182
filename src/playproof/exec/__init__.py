"""Executors: run whole episodes on a local process pool (default) or in this process.

The analysis lives in :mod:`playproof.verify`; this package builds games
from picklable specs, spreads independent replays over cores and stores
calibration reports next to packaged contracts.
"""

from playproof.exec._calibrate import (
    CALIBRATION_FILE,
    MAX_CALIBRATION_BYTES,
    calibrate_target,
    read_calibration,
    render_calibration,
    stored_calibration_problems,
    write_calibration,
)
from playproof.exec._pool import (
    EXECUTORS,
    PoolReplayer,
    close_replayer,
    default_workers,
    make_replayer,
)
from playproof.exec._spec import GameSpec, resolve_target

__all__ = [
    "CALIBRATION_FILE",
    "EXECUTORS",
    "MAX_CALIBRATION_BYTES",
    "GameSpec",
    "PoolReplayer",
    "calibrate_target",
    "close_replayer",
    "default_workers",
    "make_replayer",
    "read_calibration",
    "render_calibration",
    "resolve_target",
    "stored_calibration_problems",
    "write_calibration",
]
