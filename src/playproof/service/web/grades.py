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
import itertools
import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from markupsafe import Markup
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from playproof.core.report import CheckResult
from playproof.errors import PlayproofError
from playproof.service.grades.models import Grade
from playproof.service.grades.services import stored_grade_record, stored_grade_report
from playproof.service.log.services import as_utc
from playproof.service.problems import Problem
from playproof.service.web.plots import suite_chart

__all__ = [
    "CASES_PAGE",
    "GRADES_PAGE",
    "MAX_CASE_ID_CHARS",
    "MAX_LINEAGE_CASE_BYTES",
    "MAX_LINEAGE_SCAN",
    "GradeLine",
    "GradeView",
    "HistoryStep",
    "grade_list",
    "grade_view",
]

GRADES_PAGE = 50
"""Grades listed per page of ``/grades``."""
CASES_PAGE = 500
"""Cases shown per page of a grade's page (``?page=``); its suite counts cover every case."""
MAX_LINEAGE_SCAN = 200
"""The most earlier grades of the same owner and corpus read to build a grade's history."""
MAX_LINEAGE_CASE_BYTES = 32 << 20
"""The most bytes of case ids (each distinct case order once) a grade's history reads.

The grade's own order is always read; older grades whose orders would pass
the bound are left out of the history, which then starts with the oldest one
read (each order may be as large as an upload: 200 of them were read on every
view).
"""
MAX_LISTED_CASES = 40
"""Case ids a history step names in full before it says how many more there are."""
MAX_CASE_ID_CHARS = 200
"""The most characters of a case id a history step shows (a longer id is cut, marked …).

Every step of a history may name the same cases again, so without a cut the
page grew with the steps times the length of ids an uploader chose (shipped
case ids are under 50 characters).
"""
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
    """The first MAX_LISTED_CASES cases newly passing, in this grade's case order (each id
    cut to MAX_CASE_ID_CHARS)."""
    regressed: tuple[str, ...]
    """The first MAX_LISTED_CASES cases that passed before and fail now, likewise."""
    newly_passing_count: int
    regressed_count: int
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
    """The cases of page ``page`` only (at most CASES_PAGE), in the record's order."""
    page: int
    pages: int
    first_case: int
    """The 1-based position of ``cases[0]`` among all the record's cases."""
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
def _shipped_manifest(corpus_id: str) -> tuple[str, dict[str, tuple[str, str]]] | None:
    """The digest of the shipped corpus ``corpus_id`` and the suite and mode of each case."""
    from playproof.corpus import load_manifest, shipped_paths

    try:
        manifest = load_manifest(shipped_paths(corpus_id)[0])
    except PlayproofError:
        return None
    return manifest.digest, {case.id: (case.suite, case.mode) for case in manifest.cases}


def _shipped_cases(corpus_id: str, corpus_digest: str) -> dict[str, tuple[str, str]] | None:
    """Suite and mode per case id of the shipped corpus ``corpus_id`` when its digest matches.

    Only shipped corpora are remembered, one entry each: the ids and digests
    records name are chosen by their uploaders, and keeping each one seen
    would let uploads grow the server's memory without end.
    """
    from playproof.corpus import SHIPPED

    if corpus_id not in SHIPPED:
        return None
    shipped = _shipped_manifest(corpus_id)
    if shipped is None or shipped[0] != corpus_digest:
        return None
    return shipped[1]


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
    members = _within_budget(session, members)
    orders = _case_orders(session, {row.case_ids_sha256: row.id for row in members})
    steps: list[HistoryStep] = []
    before: frozenset[str] = frozenset()
    for number, member in enumerate(members):
        order = orders[member.case_ids_sha256]
        passing = frozenset(itertools.compress(order.cases, _selectors(member.passing, order)))
        newly = passing - before
        regressed = (before - passing) & order.members
        steps.append(
            HistoryStep(
                id=member.id,
                status=_status(member.status),
                build_digest=member.build_digest or "",
                passed=member.passed or 0,
                denominator=member.denominator or 0,
                submitted_at=as_utc(member.created_at),
                newly_passing=order.first(newly),
                regressed=order.first(regressed),
                newly_passing_count=len(newly),
                regressed_count=len(regressed),
                first=number == 0,
                current=member.id == grade.id,
            )
        )
        before = passing
    return list(reversed(steps))


def _within_budget(session: Session, members: list[Any]) -> list[Any]:
    """The newest of ``members`` (oldest first) whose distinct case orders fit
    MAX_LINEAGE_CASE_BYTES; the last member (the grade shown) is always kept."""
    if not members:
        return members
    holders = {row.case_ids_sha256: row.id for row in members}
    rows = session.execute(
        select(Grade.case_ids_sha256, func.length(Grade.case_ids)).where(
            Grade.id.in_(list(holders.values()))
        )
    )
    sizes = {digest: size for digest, size in rows}
    spent = 0
    counted: set[str] = set()
    for place in range(len(members) - 1, -1, -1):
        digest = members[place].case_ids_sha256
        if digest in counted:
            continue
        spent += sizes.get(digest) or 0
        if spent > MAX_LINEAGE_CASE_BYTES and place < len(members) - 1:
            return members[place + 1 :]
        counted.add(digest)
    return members


@dataclass(frozen=True)
class _CaseOrder:
    """The case ids of one case order, with each one's position (one per distinct order)."""

    cases: list[str]
    members: frozenset[str]
    position: dict[str, int]

    def first(self, cases: frozenset[str]) -> tuple[str, ...]:
        """The first MAX_LISTED_CASES of ``cases`` in this order (their positions sorted in C)."""
        first = sorted(map(self.position.__getitem__, cases))[:MAX_LISTED_CASES]
        return tuple(_cut(self.cases[index]) for index in first)


def _cut(case_id: str) -> str:
    """``case_id`` as a history step names it: at most MAX_CASE_ID_CHARS characters."""
    if len(case_id) <= MAX_CASE_ID_CHARS:
        return case_id
    return case_id[: MAX_CASE_ID_CHARS - 1] + "…"


_BITS = bytes.maketrans(b"01", b"\x00\x01")


def _selectors(bitmap: str, order: _CaseOrder) -> bytes:
    """A :func:`passing_bitmap` as one byte (0 or 1) per case of ``order``, made in C.

    The history compares up to MAX_LINEAGE_SCAN grades of any size, so no step
    loops over cases in Python: an anonymous view must not cost seconds.
    """
    packed = bytes.fromhex(bitmap)
    # A leading 1 keeps the bitmap's leading zeros in bin(); case 0 is the top bit.
    bits = bin(int.from_bytes(packed, "big") | (1 << 8 * len(packed)))[3:]
    return bits[: len(order.cases)].encode("ascii").translate(_BITS)


def _case_orders(session: Session, holders: dict[str, str]) -> dict[str, _CaseOrder]:
    """The case ids of each case-order digest in ``holders`` (digest -> a grade holding it)."""
    if not holders:
        return {}
    rows = session.execute(
        select(Grade.case_ids_sha256, Grade.case_ids).where(Grade.id.in_(list(holders.values())))
    )
    orders: dict[str, _CaseOrder] = {}
    for digest, ids in rows:
        if digest in holders and digest not in orders:
            cases = [str(case) for case in json.loads(ids or "[]")]
            position = {case: index for index, case in enumerate(cases)}
            orders[digest] = _CaseOrder(cases, frozenset(cases), position)
    return orders


def grade_view(session: Session, grade: Grade, page: int = 1) -> GradeView | None:
    """The page of ``grade`` showing its cases' page ``page`` (None when its record does not
    read; :class:`Problem` 404 for a page past the last).

    The suite counts cover every case; lines are made for the page's cases only.
    """
    record = stored_grade_record(grade)
    if record is None:
        return None
    pages = max(1, -(-len(record.results) // CASES_PAGE))
    if page > pages:
        raise Problem(404, "unknown-page", f"page {page} of a grade with {pages} pages of cases")
    known = _shipped_cases(record.corpus_id, record.corpus_digest)

    def where(case_id: str) -> tuple[str, str]:
        return known[case_id] if known and case_id in known else (UNKNOWN, UNKNOWN)

    totals: Counter[str] = Counter()
    passes: Counter[str] = Counter()
    for result in record.results:
        suite = where(result.case_id)[0]
        totals[suite] += 1
        passes[suite] += result.passed
    suites = [SuiteCount(suite, passes[suite], totals[suite]) for suite in sorted(totals)]
    first = (page - 1) * CASES_PAGE
    cases = [
        CaseLine(
            case_id=result.case_id,
            suite=where(result.case_id)[0],
            mode=where(result.case_id)[1],
            passed=result.passed,
            reason=result.reason,
        )
        for result in record.results[first : first + CASES_PAGE]
    ]
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
        page=page,
        pages=pages,
        first_case=first + 1,
        suites=suites,
        chart=suite_chart([(s.suite, s.passed, s.total) for s in suites]),
        checks=list(report.checks) if report is not None else [],
        history=_lineage(session, grade),
    )
