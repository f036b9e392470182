"""What runs and grades share: the attempts of a server-side verification and its stored report.

Both are uploaded signed documents that the server verifies again in its
executor; both keep ``status``, ``attempts``, ``error_kind``, ``finished_at``
and the verification report's JSON in ``report``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol, TypeVar

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from playproof.core.report import VerificationReport
from playproof.service.db import utc_now
from playproof.service.runs.models import RunStatus

__all__ = ["MAX_ERROR_KIND_CHARS", "Verified", "add_once", "count_raise", "parse_report"]

MAX_ERROR_KIND_CHARS = 64
_Item = TypeVar("_Item")


class Verified(Protocol):
    """A stored upload the server verifies (a run or a grade)."""

    status: str
    attempts: int
    error_kind: str | None
    finished_at: datetime | None


def count_raise(item: Verified, error: BaseException, max_attempts: int) -> bool:
    """Count one verification that raised; True when ``item`` is now ``failed`` (no commit).

    Only the error's kind (its class name) is kept, never its message or
    traceback, which may quote server paths.
    """
    item.attempts = (item.attempts or 0) + 1
    item.error_kind = type(error).__name__[:MAX_ERROR_KIND_CHARS]
    failed = item.attempts >= max_attempts
    if failed:
        item.status = RunStatus.FAILED.value
        item.finished_at = utc_now()
    return failed


def parse_report(text: str | None) -> VerificationReport | None:
    """A stored verification report (None while pending or if unreadable)."""
    if text is None:
        return None
    try:
        return VerificationReport.model_validate_json(text)
    except ValueError:
        return None


def add_once(
    session: Session, item: _Item, existing: Callable[[], _Item | None]
) -> tuple[_Item, bool]:
    """Store ``item`` (commits); (item, True), or (the stored one, False) when it raced.

    Uploads are unique by envelope digest: when the same envelope raced in from
    another request, the insert fails and the stored upload is the answer.
    """
    session.add(item)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raced = existing()
        if raced is None:
            raise
        return raced, False
    return item, True
