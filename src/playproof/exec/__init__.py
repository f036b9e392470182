"""Executors: run whole episodes on a local process pool (default), in this process, or on Ray.

The analysis lives in :mod:`playproof.verify`; this package builds games
from picklable specs, spreads independent replays over cores or a Ray
cluster (one :class:`concurrent.futures.Executor` interface, see
:func:`open_executor`), verifies batches of records, stores calibration
reports next to packaged contracts, and checks that every Ray node can build
the corpus grading jail before a grading is spread over the cluster
(:func:`check_grading_nodes`).
"""

from playproof.exec._batch import BatchVerdict, record_files, verify_many
from playproof.exec._calibrate import (
    CALIBRATION_FILE,
    MAX_CALIBRATION_BYTES,
    calibrate_target,
    read_calibration,
    render_calibration,
    stored_calibration_problems,
    write_calibration,
)
from playproof.exec._executors import (
    EXECUTORS,
    RetryNotice,
    SerialExecutor,
    abandon,
    check_executor,
    check_grading_executor,
    default_workers,
    open_executor,
)
from playproof.exec._grading import GRADING_NEEDS, check_grading_nodes, jail_problem
from playproof.exec._pool import PoolReplayer, close_replayer, make_replayer
from playproof.exec._spec import GameSpec, resolve_target

__all__ = [
    "CALIBRATION_FILE",
    "EXECUTORS",
    "GRADING_NEEDS",
    "MAX_CALIBRATION_BYTES",
    "BatchVerdict",
    "GameSpec",
    "PoolReplayer",
    "RetryNotice",
    "SerialExecutor",
    "abandon",
    "calibrate_target",
    "check_executor",
    "check_grading_executor",
    "check_grading_nodes",
    "close_replayer",
    "default_workers",
    "jail_problem",
    "make_replayer",
    "open_executor",
    "record_files",
    "read_calibration",
    "render_calibration",
    "resolve_target",
    "stored_calibration_problems",
    "verify_many",
    "write_calibration",
]
