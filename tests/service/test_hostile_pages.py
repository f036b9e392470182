"""Legal but hostile signed records do not break the pages that show them.

Each record here signs and parses, so the service stores it and gives its
verdict; what it holds is picked by its uploader to strain the run page.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

pytest.importorskip("jinja2", reason="the web pages need the server extra")

import playproof
from playproof.core.record import ClaimedMilestone, RunRecord
from playproof.corpus import CandidatePin, CaseResult, GradeRecord, sign_grade
from playproof.service.web.frames import cached_index, ensure_frames
from playproof.service.web.grades import MAX_CASE_ID_CHARS, MAX_LISTED_CASES
from playproof.sign import SigningKey

from .conftest import VERDICT_WAIT_S, Service, calls_to


def _stored(service: Service, signer: SigningKey, record: RunRecord) -> str:
    token = service.owner("alice", (signer.verifying_key,))
    answer = service.upload(playproof.sign_record(record, signer).to_bytes(), token)
    assert answer.status_code == 202, answer.text
    run_id = str(answer.json()["id"])
    assert service.verdict(run_id)["status"] == "rejected"
    return run_id


def test_a_record_claiming_more_milestones_than_its_contract_has_gets_its_pages(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    extra = tuple(
        ClaimedMilestone(id=f"made-up-{n}", turn=1) for n in range(record_2048.milestones_total + 1)
    )
    record = record_2048.model_copy(update={"claimed": record_2048.claimed + extra})
    run_id = _stored(service, signer, record)
    claimed = f"{len(record.claimed)} claimed of {record.milestones_total}"
    page = service.client.get(f"/runs/{run_id}")
    assert page.status_code == 200
    assert claimed in page.text
    download = service.client.get(f"/runs/{run_id}/proof.json")
    assert download.status_code == 200
    assert download.json()["run"]["claimed_score"] == claimed
    api = service.client.get(f"/api/v1/verifier/runs/{run_id}")
    assert api.status_code == 200
    assert api.json()["run"]["claimed_score"] == claimed


def _timeline(page: str) -> str:
    svg = page[page.index('<svg class="plot timeline"') :]
    return svg[: svg.index("</svg>")]


def test_a_milestone_claimed_many_times_is_marked_once_on_the_timeline(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    first = record_2048.claimed[0]
    repeats = tuple(ClaimedMilestone(id=first.id, turn=first.turn + n) for n in range(5000))
    record = record_2048.model_copy(update={"claimed": repeats})
    run_id = _stored(service, signer, record)
    page = service.client.get(f"/runs/{run_id}")
    assert page.status_code == 200
    timeline = _timeline(page.text)
    assert timeline.count('<text class="label"') == 1
    assert f"{first.id} · turn {first.turn}</text>" in timeline
    assert len(page.text) < 100_000


def test_the_grade_pages_remember_no_corpus_an_uploader_names() -> None:
    """Only shipped corpora are remembered: every id and digest a record names is not."""
    from playproof.corpus import SHIPPED
    from playproof.service.web import grades

    for n in range(len(SHIPPED) + 5):
        assert grades._shipped_cases(f"{'x' * 100_000}-{n}", f"{n:064x}") is None
        assert grades._shipped_cases(SHIPPED[0], f"{n:064x}") is None
    caches = [f for f in vars(grades).values() if type(f).__name__ == "_lru_cache_wrapper"]
    assert caches
    assert sum(f.cache_info().currsize for f in caches) <= len(SHIPPED)


def test_a_record_repeating_its_claims_gets_frames_that_are_read_back_from_the_cache(
    tmp_path: Path, record_2048: RunRecord
) -> None:
    """The frame index keeps one claim per milestone of the contract, so it stays small
    and its cache entry is used again (an unreadable index was drawn again every view)."""
    first = record_2048.claimed[0]
    claims = [ClaimedMilestone(id=first.id, turn=n) for n in range(200_000)]
    claims += [ClaimedMilestone(id=f"made-up-{n}", turn=1) for n in range(1000)]
    record = record_2048.model_copy(update={"claimed": tuple(claims)})
    digest = "ab" * 32
    index = ensure_frames(tmp_path, record, digest)
    assert [(m.id, m.turn) for m in index.claimed] == [(first.id, 0)]
    assert index.divergence is not None  # every claim still counts where replay parts
    assert cached_index(tmp_path, digest) == index
    assert (tmp_path / digest / "index.json").stat().st_size < 10_000


def _settled(service: Service, grade_id: str) -> None:
    deadline = time.monotonic() + VERDICT_WAIT_S
    while service.client.get(f"/api/v1/grades/{grade_id}").json()["status"] == "pending":
        assert time.monotonic() < deadline, "the grade stayed pending"
        time.sleep(0.05)


def _grade(cases: list[str], passed: bool, number: int) -> GradeRecord:
    return GradeRecord(
        corpus_id="my-corpus",
        corpus_version="1",
        corpus_digest="a" * 64,
        candidate=CandidatePin(command=["./candidate"], build_digest=str(number % 2) * 64),
        isolation="rlimits",
        limits={"cpu_seconds": 1.0},
        results=[CaseResult(case_id=c, passed=passed, reason="why") for c in cases],
        passed=len(cases) if passed else 0,
        denominator=len(cases),
        started_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=number),
        finished_at=datetime(2026, 1, 2, tzinfo=UTC),
    )


def test_a_grade_history_of_long_case_ids_names_them_cut(
    service: Service, signer: SigningKey
) -> None:
    """Every step names up to MAX_LISTED_CASES cases: each name is cut, so the page stays
    small however long the ids its uploader chose (each step repeated them in full)."""
    token = service.owner("alice", (signer.verifying_key,))
    cases = [f"case-{n}-" + "x" * 20_000 for n in range(MAX_LISTED_CASES)]
    grade_id = ""
    for number in range(6):  # every case passes, then fails, then passes again ...
        body = sign_grade(_grade(cases, number % 2 == 0, number), signer).to_bytes()
        answer = service.client.post(
            "/api/v1/grades", content=body, headers={"Authorization": f"Bearer {token}"}
        )
        assert answer.status_code == 202, answer.text
        grade_id = answer.json()["id"]
        _settled(service, grade_id)
    page = service.client.get(f"/grades/{grade_id}")
    assert page.status_code == 200
    history = page.text[page.text.index('id="history"') : page.text.index('id="cases-h"')]
    assert "Regressed (40)" in history
    assert "x" * (MAX_CASE_ID_CHARS + 1) not in history
    assert f"<code>{cases[0][: MAX_CASE_ID_CHARS - 1]}…</code>" in history
    assert len(history) < 200_000


def test_a_grade_history_reads_a_bounded_amount_of_case_ids(
    service: Service, signer: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each distinct case order of a lineage is read in full: past a budget of bytes the
    older grades are left out (200 orders of 16 MiB were read on every anonymous view)."""
    from playproof.service.web import grades

    token = service.owner("alice", (signer.verifying_key,))
    ids = []
    for number in range(5):  # every grade orders its cases in a way of its own
        cases = [f"order-{number}-case-{n}-" + "y" * 100 for n in range(10)]
        body = sign_grade(_grade(cases, number % 2 == 0, number), signer).to_bytes()
        answer = service.client.post(
            "/api/v1/grades", content=body, headers={"Authorization": f"Bearer {token}"}
        )
        assert answer.status_code == 202, answer.text
        ids.append(answer.json()["id"])
        _settled(service, ids[-1])
    one_order = len(json.dumps([f"order-0-case-{n}-" + "y" * 100 for n in range(10)]))
    monkeypatch.setattr(grades, "MAX_LINEAGE_CASE_BYTES", 3 * one_order, raising=False)
    read = calls_to(monkeypatch, grades, "_case_orders", 1)
    page = service.client.get(f"/grades/{ids[-1]}")
    assert page.status_code == 200
    assert len(read) == 1
    assert len(read[0]) == 3  # the newest three orders fit the budget
    history = page.text[page.text.index('id="history"') : page.text.index('id="cases-h"')]
    shown = [grade_id for grade_id in ids if f'data-grade="{grade_id}"' in history]
    assert shown == ids[-3:]


def test_a_run_page_and_its_proof_download_parse_no_record_of_their_own(
    service: Service,
    signer: SigningKey,
    record_2048: RunRecord,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The proof document on a run page is built from the pages' parsed record: a record
    near the upload limit took a third of a second to parse again on every view."""
    from playproof.service.proofs import services as proofs

    token = service.owner("alice", (signer.verifying_key,))
    run_id = service.upload_verified(signer, record_2048, token)
    assert service.client.get(f"/runs/{run_id}").status_code == 200
    parsed = calls_to(monkeypatch, proofs, "signed_record")
    for path in (f"/runs/{run_id}", f"/runs/{run_id}?page=1", f"/runs/{run_id}/proof.json"):
        assert service.client.get(path).status_code == 200
    assert parsed == []


def test_a_right_to_left_override_in_an_actor_id_cannot_turn_the_page_around(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    # Shown raw, the override would make the heading read "... on native/2048 tneserp",
    # text the record never held; the page prints the control as a visible code point.
    spoof = "mallory\u202e8402/evitan no \u2066x\u2069"
    record = record_2048.model_copy(
        update={"actor": record_2048.actor.model_copy(update={"id": spoof})}
    )
    token = service.owner("alice", (signer.verifying_key,))
    answer = service.upload(playproof.sign_record(record, signer).to_bytes(), token)
    assert answer.status_code == 202, answer.text
    run_id = str(answer.json()["id"])
    service.verdict(run_id)
    for path in (f"/runs/{run_id}", f"/runs/{run_id}/replay"):
        page = service.client.get(path)
        assert page.status_code == 200, path
        assert not any(c in page.text for c in "\u202e\u2066\u2069"), path
        assert "mallory&lt;U+202E&gt;8402/evitan no &lt;U+2066&gt;x&lt;U+2069&gt;" in page.text
        heading = page.text[page.text.index("<h1>") : page.text.index("</h1>")]
        assert "<bdi>" in heading
    # The record itself is unchanged: its proof document keeps the id as signed.
    proof = service.client.get(f"/runs/{run_id}/proof.json")
    assert proof.status_code == 200
    assert spoof in json.dumps(proof.json(), ensure_ascii=False)
