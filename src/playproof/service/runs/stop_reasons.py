"""The stop reason of a stored run: its column, else read from its envelope once per envelope.

A run's status document names the stop reason its signed record states.
Ingest stores it in ``runs.stop_reason`` (migration 0009 filled it for older
runs), so a status read or a list of runs parses no envelope. Only a run
whose column is NULL (its record does not read) falls back to parsing the
record, which means parsing the whole record (milliseconds for a long run);
the envelope of a run never changes (it is stored once, under its digest), so
that answer is remembered by envelope digest, for the most recent runs asked
about.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from playproof.core.record import RunRecord
from playproof.service.runs.models import Run
from playproof.service.runs.services import signed_record

__all__ = ["MAX_REMEMBERED_STOP_REASONS", "StopReasons", "stop_reason"]

MAX_REMEMBERED_STOP_REASONS = 50_000
"""Envelopes whose stop reason is remembered at most (least recently used go first)."""


class StopReasons:
    """Stop reasons by envelope digest, bounded (thread-safe)."""

    def __init__(self, capacity: int = MAX_REMEMBERED_STOP_REASONS) -> None:
        self._capacity = capacity
        self._lock = threading.Lock()
        self._known: OrderedDict[str, str | None] = OrderedDict()

    def __len__(self) -> int:
        with self._lock:
            return len(self._known)

    def of(self, run: Run, record: RunRecord | None = None) -> str | None:
        """The stop reason ``run``'s signed record states (None: it does not read).

        ``record`` is that record when the caller has parsed it already.
        """
        if run.stop_reason is not None:
            return run.stop_reason
        digest = run.envelope_sha256
        with self._lock:
            if digest in self._known:
                self._known.move_to_end(digest)
                return self._known[digest]
        record = record if record is not None else signed_record(run)
        reason = record.stop_reason.value if record is not None else None
        with self._lock:
            self._known[digest] = reason
            while len(self._known) > self._capacity:
                self._known.popitem(last=False)
        return reason


_REMEMBERED = StopReasons()


def stop_reason(run: Run, record: RunRecord | None = None) -> str | None:
    """The stop reason ``run``'s signed record states, parsed once per envelope per process."""
    return _REMEMBERED.of(run, record)
