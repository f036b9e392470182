"""The records the pages read, parsed once and kept while they fit.

A run page, each page of its decisions and the replay viewer all read the
run's signed record. Parsing a record near the upload limit (16 MiB, some
800,000 decisions) takes a third of a second, so paging through such a run
parsed it again for every page. The last records read are kept here, keyed
by run and envelope digest, up to :data:`KEPT_ENVELOPE_BYTES` of envelopes in
all (a parsed record takes a few times its envelope); the least recently read
goes first. Records are frozen models, so threads share them safely.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from playproof.core.record import RunRecord
from playproof.service.runs.models import Run
from playproof.service.runs.services import signed_record

__all__ = ["KEPT_ENVELOPE_BYTES", "ParsedRecords"]

KEPT_ENVELOPE_BYTES = 24 * 1024 * 1024
"""Envelope bytes whose parsed records are kept (one record at the upload limit fits)."""


class ParsedRecords:
    """A least-recently-read cache of parsed run records, bounded by envelope bytes."""

    def __init__(self, limit: int = KEPT_ENVELOPE_BYTES) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, str], tuple[RunRecord, int]] = OrderedDict()
        self._bytes = 0

    def record(self, run: Run) -> RunRecord | None:
        """The record in ``run``'s envelope (None if it does not parse), parsed at most once."""
        key = (run.id, run.envelope_sha256)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                return kept[0]
        record = signed_record(run)  # outside the lock: other pages go on meanwhile
        size = len(run.envelope)
        if record is None or size > self._limit:
            return record
        with self._lock:
            if key not in self._kept:
                self._kept[key] = (record, size)
                self._bytes += size
            while self._bytes > self._limit:
                _, (_, dropped) = self._kept.popitem(last=False)
                self._bytes -= dropped
        return record

    @property
    def kept_bytes(self) -> int:
        """Envelope bytes of the records kept now."""
        with self._lock:
            return self._bytes
