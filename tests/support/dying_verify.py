"""Batch-verification tasks that end their pool process (or raise) for one chosen record.

``verify_or_die`` stands in for :func:`playproof.exec._batch._verify_bytes` in
the pool: for the record of seed 1 it ends its process (status 9) when the game
would run in-process (``worker is False``), as a game that crashes natively
would. In a worker child of its own (``worker is None``) it verifies as usual,
unless ``always`` says the record kills every process it meets.
"""

from __future__ import annotations

import base64
import json
import os
import time
from typing import Any

from playproof.core.report import VerificationReport
from playproof.exec import _batch

DOOMED = b'"seed":1,'


def _doomed(data: bytes) -> bool:
    return DOOMED in base64.b64decode(json.loads(data)["payload"])


def verify_or_die(
    data: bytes, pems: Any, unsigned: bool, worker: Any, *rest: Any
) -> VerificationReport:
    if _doomed(data) and worker is False:
        os._exit(9)
    return _batch._verify_bytes(data, pems, unsigned, worker, *rest)


def always_die(
    data: bytes, pems: Any, unsigned: bool, worker: Any, *rest: Any
) -> VerificationReport:
    if _doomed(data):
        os._exit(9)
    return _batch._verify_bytes(data, pems, unsigned, worker, *rest)


def raise_for_doomed(
    data: bytes, pems: Any, unsigned: bool, worker: Any, *rest: Any
) -> VerificationReport:
    if _doomed(data):
        raise MemoryError("no room to replay")
    return _batch._verify_bytes(data, pems, unsigned, worker, *rest)


def hang_for_doomed(
    data: bytes, pems: Any, unsigned: bool, worker: Any, *rest: Any
) -> VerificationReport:
    if _doomed(data):
        while True:  # a game that never finishes its replay
            time.sleep(1)
    return _batch._verify_bytes(data, pems, unsigned, worker, *rest)
