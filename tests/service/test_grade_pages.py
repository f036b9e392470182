"""The corpus-grade pages read summary columns: an anonymous view parses at most one envelope."""

from __future__ import annotations

import random
import re
import time
from datetime import UTC, datetime

import pytest

from playproof.corpus import CandidatePin, CaseResult, GradeRecord, sign_grade
from playproof.service.grades import services
from playproof.service.grades.models import Grade
from playproof.service.grades.services import get_grade, summary_columns
from playproof.service.settings import MAX_GRADE_CASES
from playproof.service.web.grades import (
    CASES_PAGE,
    MAX_LISTED_CASES,
    UNKNOWN,
    GradeLine,
    grade_list,
    grade_view,
)
from playproof.sign import SigningKey

from .conftest import VERDICT_WAIT_S, Service, calls_to

COMMAND = ["/home/alice/private/candidate", "--fast"]
CASES = ["a", "b", "c", "d", "e", "f", "g", "h", "i"]


def _record(passing: set[str], build: str, cases: list[str], command: list[str]) -> GradeRecord:
    results = [CaseResult(case_id=c, passed=c in passing, reason=f"why {c}") for c in cases]
    return GradeRecord(
        corpus_id="my-corpus",
        corpus_version="1",
        corpus_digest="a" * 64,
        candidate=CandidatePin(command=command, build_digest=build * 64),
        isolation="rlimits",
        limits={"cpu_seconds": 1.0},
        results=results,
        passed=sum(r.passed for r in results),
        denominator=len(results),
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        finished_at=datetime(2026, 1, 1, 0, 1, tzinfo=UTC),
    )


def _upload(service: Service, token: str, record: GradeRecord, signer: SigningKey) -> str:
    answer = service.client.post(
        "/api/v1/grades",
        content=sign_grade(record, signer).to_bytes(),
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 202, answer.text
    grade_id = str(answer.json()["id"])
    deadline = time.monotonic() + VERDICT_WAIT_S
    while service.client.get(f"/api/v1/grades/{grade_id}").json()["status"] == "pending":
        assert time.monotonic() < deadline, "the grade stayed pending"
        time.sleep(0.05)
    return grade_id


LINEAGE = [  # (passing cases, build, case order, command): oldest first
    ({"a", "b"}, "1", CASES, COMMAND),
    ({"a", "c", "d"}, "2", CASES, COMMAND),
    ({"a", "c"}, "3", CASES, ["/another/candidate"]),  # another command: another lineage
    ({"b", "c", "d", "i"}, "4", list(reversed(CASES)), COMMAND),  # another case order
    ({"c", "d", "e"}, "5", CASES, COMMAND),
]


def test_the_grade_pages_parse_at_most_one_envelope_and_show_the_same(
    service: Service, signer: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    records = [_record(*fields) for fields in LINEAGE]
    ids = [_upload(service, token, record, signer) for record in records]
    with service.sessions() as session:  # a row whose envelope does not read
        session.add(
            Grade(
                id="f" * 32,
                owner_id=1,
                envelope_sha256="f" * 64,
                envelope=b"not an envelope",
                record_digest="",
                key_id="k",
                corpus_id="my-corpus",
                corpus_digest="a" * 64,
                status="rejected",
                attempts=0,
                **summary_columns(None),
            )
        )
        session.commit()
    parsed = calls_to(monkeypatch, services, "parse_envelope")

    listing = service.client.get("/grades")
    assert listing.status_code == 200
    assert parsed == []  # the list reads no envelope
    for grade_id in (ids[-1], "f" * 32):  # the API's status and proof read no envelope
        assert service.client.get(f"/api/v1/grades/{grade_id}").status_code == 200
        proof = service.client.get(f"/api/v1/verifier/grades/{grade_id}")
        assert proof.status_code == 200
    assert proof.json()["record"] is None  # the row whose envelope does not read
    assert parsed == []
    page = service.client.get(f"/grades/{ids[-1]}")
    assert page.status_code == 200
    assert len(parsed) == 1  # the grade page reads its own record only, once
    for answer in (listing, page):
        assert COMMAND[0] not in answer.text  # the command ties a lineage; it is never shown
        assert "/another/candidate" not in answer.text

    with service.sessions() as session:
        lines, total, pages = grade_list(session, 1)
        view = grade_view(session, get_grade(session, ids[-1]))
    assert (total, pages) == (len(records) + 1, 1)
    unreadable = lines[0]
    assert (unreadable.id, unreadable.passed, unreadable.trust) == ("f" * 32, None, UNKNOWN)
    assert (unreadable.denominator, unreadable.build_digest) == (None, "")
    expected = [
        GradeLine(
            id=grade_id,
            corpus_id="my-corpus",
            status="verified",
            passed=record.passed,
            denominator=record.denominator,
            trust="untrusted",
            build_digest=record.candidate.build_digest,
            submitted_at=line.submitted_at,
        )
        for grade_id, record, line in zip(reversed(ids), reversed(records), lines[1:], strict=True)
    ]
    assert lines[1:] == expected

    assert view is not None
    members = [i for i, fields in enumerate(LINEAGE) if fields[3] == COMMAND]
    steps = list(reversed(view.history))
    assert [s.id for s in steps] == [ids[i] for i in members]
    assert [s.build_digest[0] for s in steps] == ["1", "2", "4", "5"]
    assert [s.first for s in steps] == [True, False, False, False]
    assert [s.current for s in steps] == [False, False, False, True]
    assert [(s.passed, s.denominator) for s in steps] == [(2, 9), (3, 9), (4, 9), (3, 9)]
    # In each step's own case order, as the records list them.
    assert [(s.newly_passing, s.regressed) for s in steps] == [
        (("a", "b"), ()),
        (("c", "d"), ("b",)),
        (("i", "b"), ("a",)),
        (("e",), ("b", "i")),
    ]
    assert [(c.case_id, c.passed, c.reason) for c in view.cases] == [
        (r.case_id, r.passed, r.reason) for r in records[-1].results
    ]


def _naive_deltas(lineage: list[tuple[list[str], set[str]]]) -> list[tuple[list[str], list[str]]]:
    """Newly passing and regressed cases of each step, case by case (the reference)."""
    deltas, before = [], set[str]()
    for cases, passing in lineage:
        newly = [c for c in cases if c in passing and c not in before]
        deltas.append((newly, [c for c in cases if c in before and c not in passing]))
        before = passing
    return deltas


def test_a_history_counts_every_change_and_names_the_first_ones_in_order(
    service: Service, signer: SigningKey
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    rng = random.Random(7)
    order = [f"case-{i:03}" for i in range(300)]
    lineage = []
    for build in "123456":
        if build in "35":  # the case order changes twice (and a case is dropped once)
            order = rng.sample(order, len(order) - (build == "5"))
        lineage.append((list(order), {c for c in order if rng.random() < 0.5}))
    ids = [
        _upload(service, token, _record(passing, build, cases, COMMAND), signer)
        for (cases, passing), build in zip(lineage, "123456", strict=True)
    ]
    with service.sessions() as session:
        view = grade_view(session, get_grade(session, ids[-1]))
    assert view is not None
    steps = list(reversed(view.history))
    expected = _naive_deltas(lineage)
    assert [(s.newly_passing_count, s.regressed_count) for s in steps] == [
        (len(newly), len(regressed)) for newly, regressed in expected
    ]
    assert [(s.newly_passing, s.regressed) for s in steps] == [
        (tuple(newly[:MAX_LISTED_CASES]), tuple(regressed[:MAX_LISTED_CASES]))
        for newly, regressed in expected
    ]
    assert steps[2].newly_passing_count > MAX_LISTED_CASES  # the page names the first ones
    page = service.client.get(f"/grades/{ids[-1]}").text
    assert f"Newly passing ({steps[-1].newly_passing_count})" in page


def test_a_grade_page_shows_its_cases_a_page_at_a_time(
    service: Service, signer: SigningKey
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    cases = [f"c{i:04}" for i in range(2 * CASES_PAGE + 3)]
    grade_id = _upload(service, token, _record(set(cases[::3]), "1", cases, COMMAND), signer)

    pages = [service.client.get(f"/grades/{grade_id}", params={"page": n}) for n in (1, 2, 3)]
    assert [p.status_code for p in pages] == [200, 200, 200]
    shown = [re.findall(r'<th scope="row"><code>(c\d+)</code>', p.text) for p in pages]
    assert shown == [cases[:CASES_PAGE], cases[CASES_PAGE : 2 * CASES_PAGE], cases[-3:]]
    assert f"Cases {CASES_PAGE + 1} to {2 * CASES_PAGE} of {len(cases)}" in pages[1].text
    assert 'rel="prev"' in pages[1].text
    assert 'rel="next"' in pages[1].text
    assert 'rel="next"' not in pages[2].text
    with service.sessions() as session:
        view = grade_view(session, get_grade(session, grade_id), 3)
    assert view is not None  # the suite counts cover every case, not the page's
    assert [(s.suite, s.passed, s.total) for s in view.suites] == [
        (UNKNOWN, len(cases[::3]), len(cases))
    ]
    for bad in ("4", "0", "x"):
        answer = service.client.get(f"/grades/{grade_id}", params={"page": bad})
        assert answer.status_code in (404, 422), (bad, answer.status_code)


def test_a_grade_of_more_cases_than_the_service_takes_is_refused(
    service: Service, signer: SigningKey
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    cases = [f"c{i}" for i in range(MAX_GRADE_CASES + 1)]
    body = sign_grade(_record(set(), "1", cases, COMMAND), signer).to_bytes()
    answer = service.client.post(
        "/api/v1/grades", content=body, headers={"Authorization": f"Bearer {token}"}
    )
    assert answer.status_code == 413
    assert answer.json()["type"].endswith("too-many-cases")
    assert f"holds {MAX_GRADE_CASES + 1} cases" in answer.json()["detail"]
    with service.sessions() as session:
        assert session.query(Grade).count() == 0
