"""What the corpus-grade pages show: the grades list, one grade's cases and its history.

Built from the grades service (no HTTP here). The list and the history read
only the summary columns ingest copies from each record (never an envelope:
an anonymous page view must not cost a parse per grade shown). A grade's own
cases, with their reasons, come from its signed grade record, the one
envelope a grade page parses; each case's suite and mode come from the manifest of the
shipped corpus the record pins (by digest), so a grade of a corpus this server
does not ship shows its cases without them. The history of a grade is its
lineage: the grades the same owner uploaded for the same corpus and the same
candidate command (compared, never shown: a command may name the owner's
paths), each compared with the one before it.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from markupsafe import Markup
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from playproof.core.report import CheckResult
from playproof.errors import PlayproofError
from playproof.service.grades.models import Grade
from playproof.service.grades.services import (
    passing_flags,
    stored_grade_record,
    stored_grade_report,
)
from playproof.service.log.services import as_utc
from playproof.service.web.plots import suite_chart

__all__ = [
    "GRADES_PAGE",
    "MAX_LINEAGE_SCAN",
    "GradeLine",
    "GradeView",
    "HistoryStep",
    "grade_list",
    "grade_view",
]

GRADES_PAGE = 50
"""Grades listed per page of ``/grades``."""
MAX_LINEAGE_SCAN = 200
"""The most earlier grades of the same owner and corpus read to build a grade's history."""
MAX_LISTED_CASES = 40
"""Case ids a history step names in full before it says how many more there are."""
UNKNOWN = "not known"


@dataclass(frozen=True)
class GradeLine:
    """One grade as the list shows it."""

    id: str
    corpus_id: str
    status: str
    passed: int | None
    denominator: int | None
    trust: str
    build_digest: str
    submitted_at: datetime

    @property
    def trust_confirmed(self) -> bool:
        """Whether the server's own check stands behind the record's word on trust."""
        return self.status == "verified"


@dataclass(frozen=True)
class CaseLine:
    """One case of a grade: where it is from, how it ran, how it ended and why."""

    case_id: str
    suite: str
    mode: str
    passed: bool
    reason: str


@dataclass(frozen=True)
class SuiteCount:
    """Passes over cases in one suite."""

    suite: str
    passed: int
    total: int


@dataclass(frozen=True)
class HistoryStep:
    """One grade of the lineage and what changed since the grade before it."""

    id: str
    status: str
    build_digest: str
    passed: int
    denominator: int
    submitted_at: datetime
    newly_passing: tuple[str, ...]
    regressed: tuple[str, ...]
    first: bool
    current: bool


_LAYOUTS = {"per-slot": ", one sandbox per slot", "per-process": ", a sandbox per process"}
"""How a grade page says which sandbox layout a bubblewrap grading had."""


@dataclass(frozen=True)
class GradeView:
    """Everything a grade's page shows."""

    id: str
    status: str
    corpus_id: str
    corpus_version: str
    corpus_digest: str
    manifest_known: bool
    build_digest: str
    isolation: str
    trust: str
    reward: int
    passed: int
    denominator: int
    variants: int
    started_at: datetime
    finished_at: datetime
    submitted_at: datetime
    signer_key_id: str
    cases: list[CaseLine]
    suites: list[SuiteCount]
    chart: Markup
    checks: list[CheckResult]
    history: list[HistoryStep]

    @property
    def trust_confirmed(self) -> bool:
        """Whether the server's own check stands behind the record's word on trust."""
        return self.status == "verified"


def _status(status: str) -> str:
    return status if status in {"verified", "rejected", "failed"} else "pending"


def grade_list(session: Session, page: int) -> tuple[list[GradeLine], int, int]:
    """A page of every grade, newest first; with the total and the page count.

    Reads the summary columns only (NULL where a record does not read).
    """
    total = session.scalar(select(func.count()).select_from(Grade)) or 0
    rows = session.execute(
        select(
            Grade.id,
            Grade.corpus_id,
            Grade.status,
            Grade.passed,
            Grade.denominator,
            Grade.trust,
            Grade.build_digest,
            Grade.created_at,
        )
        .order_by(Grade.created_at.desc(), Grade.id)
        .limit(GRADES_PAGE)
        .offset((page - 1) * GRADES_PAGE)
    )
    lines = [
        GradeLine(
            id=row.id,
            corpus_id=row.corpus_id,
            status=_status(row.status),
            passed=row.passed,
            denominator=row.denominator,
            trust=row.trust or UNKNOWN,
            build_digest=row.build_digest or "",
            submitted_at=as_utc(row.created_at),
        )
        for row in rows
    ]
    return lines, int(total), max(1, -(-int(total) // GRADES_PAGE))


@functools.cache
def _shipped_cases(corpus_id: str, corpus_digest: str) -> dict[str, tuple[str, str]] | None:
    """Suite and mode per case id of the shipped corpus ``corpus_id`` when its digest matches."""
    from playproof.corpus import SHIPPED, load_manifest, shipped_paths

    if corpus_id not in SHIPPED:
        return None
    try:
        manifest = load_manifest(shipped_paths(corpus_id)[0])
    except PlayproofError:
        return None
    if manifest.digest != corpus_digest:
        return None
    return {case.id: (case.suite, case.mode) for case in manifest.cases}


_LINEAGE_COLUMNS = (
    Grade.id,
    Grade.status,
    Grade.build_digest,
    Grade.passed,
    Grade.denominator,
    Grade.created_at,
    Grade.command_sha256,
    Grade.case_ids_sha256,
    Grade.passing,
)
"""What the history reads of each grade it scans: summary columns, never the envelope."""


def _lineage(session: Session, grade: Grade) -> list[HistoryStep]:
    """The grades of ``grade``'s lineage up to and including it, oldest first, with deltas.

    The lineage is the grades among the ``MAX_LINEAGE_SCAN`` earlier ones of
    the same owner and corpus whose command line has the same digest. Each
    distinct case order among them is read (and its JSON parsed) once.
    """
    earlier = list(
        session.execute(
            select(*_LINEAGE_COLUMNS)
            .where(
                Grade.owner_id == grade.owner_id,
                Grade.corpus_id == grade.corpus_id,
                Grade.created_at <= grade.created_at,
                Grade.id != grade.id,
            )
            .order_by(Grade.created_at.desc(), Grade.id.desc())
            .limit(MAX_LINEAGE_SCAN)
        )
    )
    current = session.execute(select(*_LINEAGE_COLUMNS).where(Grade.id == grade.id)).one()
    members = [
        row
        for row in [*reversed(earlier), current]
        if current.command_sha256 is not None
        and row.command_sha256 == current.command_sha256
        and row.case_ids_sha256 is not None
        and row.passing is not None
    ]
    orders = _case_orders(session, {row.case_ids_sha256: row.id for row in members})
    steps: list[HistoryStep] = []
    before: frozenset[str] | None = None
    for member in members:
        cases = orders[member.case_ids_sha256]
        flags = passing_flags(member.passing, len(cases))
        passing = frozenset(c for c, flag in zip(cases, flags, strict=True) if flag)
        steps.append(
            HistoryStep(
                id=member.id,
                status=_status(member.status),
                build_digest=member.build_digest or "",
                passed=member.passed or 0,
                denominator=member.denominator or 0,
                submitted_at=as_utc(member.created_at),
                newly_passing=tuple(c for c in cases if c in passing and c not in (before or ())),
                regressed=tuple(c for c in cases if c in (before or ()) and c not in passing),
                first=before is None,
                current=member.id == grade.id,
            )
        )
        before = passing
    return list(reversed(steps))


def _case_orders(session: Session, holders: dict[str, str]) -> dict[str, list[str]]:
    """The case ids of each case-order digest in ``holders`` (digest -> a grade holding it)."""
    if not holders:
        return {}
    rows = session.execute(
        select(Grade.case_ids_sha256, Grade.case_ids).where(Grade.id.in_(list(holders.values())))
    )
    return {digest: list(json.loads(ids or "[]")) for digest, ids in rows if digest in holders}


def grade_view(session: Session, grade: Grade) -> GradeView | None:
    """The page of ``grade`` (None when its stored record does not read)."""
    record = stored_grade_record(grade)
    if record is None:
        return None
    known = _shipped_cases(record.corpus_id, record.corpus_digest)
    cases = [
        CaseLine(
            case_id=result.case_id,
            suite=known[result.case_id][0] if known and result.case_id in known else UNKNOWN,
            mode=known[result.case_id][1] if known and result.case_id in known else UNKNOWN,
            passed=result.passed,
            reason=result.reason,
        )
        for result in record.results
    ]
    totals: Counter[str] = Counter(case.suite for case in cases)
    passes: Counter[str] = Counter(case.suite for case in cases if case.passed)
    suites = [SuiteCount(suite, passes[suite], totals[suite]) for suite in sorted(totals)]
    report = stored_grade_report(grade)
    return GradeView(
        id=grade.id,
        status=_status(grade.status),
        corpus_id=record.corpus_id,
        corpus_version=record.corpus_version,
        corpus_digest=record.corpus_digest,
        manifest_known=known is not None,
        build_digest=record.candidate.build_digest,
        isolation=str(record.isolation) + _LAYOUTS.get(record.sandbox or "", ""),
        trust=record.trust,
        reward=record.reward,
        passed=record.passed,
        denominator=record.denominator,
        variants=len(record.variants),
        started_at=as_utc(record.started_at),
        finished_at=as_utc(record.finished_at),
        submitted_at=as_utc(grade.created_at),
        signer_key_id=grade.key_id,
        cases=cases,
        suites=suites,
        chart=suite_chart([(s.suite, s.passed, s.total) for s in suites]),
        checks=list(report.checks) if report is not None else [],
        history=_lineage(session, grade),
    )
