"""The cache of serialized proof documents: same bytes as a fresh build, never a stale verdict."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import delete, update

import playproof
from playproof.core.record import RunRecord
from playproof.service.log.models import LogLeaf
from playproof.service.log.services import MAX_SIGNED_HEADS, LogCache
from playproof.service.proofs.cache import CachedProof, ProofCache
from playproof.service.proofs.services import proof_document
from playproof.service.runs.models import Run
from playproof.service.runs.services import get_run, stored_report
from playproof.service.runs.stop_reasons import StopReasons
from playproof.sign import SigningKey, VerifyingKey
from playproof.transparency import check_inclusion

from .conftest import Service, calls_to


def _upload_verified(service: Service, signer: SigningKey, record: RunRecord, token: str) -> str:
    return service.upload_verified(signer, record, token)


def _proof(service: Service, run_id: str) -> dict[str, Any]:
    answer = service.client.get(f"/api/v1/verifier/runs/{run_id}")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/json"
    return dict(answer.json())


def _fresh(service: Service, run_id: str) -> dict[str, Any]:
    """The document built from scratch, as the route served it before the cache."""
    state = service.client.app.state.service
    with service.sessions() as session:
        run = get_run(session, run_id)
        built = proof_document(session, run, state.log_key, LogCache())
        return dict(json.loads(built.model_dump_json()))


def test_a_cached_document_is_the_document_built_afresh(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = _upload_verified(service, signer, record_2048, token)
    with service.sessions() as session:  # rendered when the verdict was stored
        assert get_run(session, run_id).proof_document is not None
    first = _proof(service, run_id)
    cache = service.client.app.state.service.proof_cache
    assert len(cache) == 0  # served from the row: nothing built, nothing kept in the process
    assert _proof(service, run_id) == first == _fresh(service, run_id)


def test_a_run_stored_without_its_document_is_built_and_kept_in_the_process(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = _upload_verified(service, signer, record_2048, token)
    with service.sessions() as session:  # as a run finished before the column existed
        session.execute(
            update(Run).where(Run.id == run_id).values(proof_document=None, proof_key=None)
        )
        session.commit()
    first = _proof(service, run_id)
    assert len(service.client.app.state.service.proof_cache) == 1
    assert _proof(service, run_id) == first == _fresh(service, run_id)


@pytest.mark.parametrize("what", ["key", "row"])
def test_a_stored_document_whose_key_no_longer_matches_is_never_served(
    service: Service, signer: SigningKey, record_2048: RunRecord, what: str
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = _upload_verified(service, signer, record_2048, token)
    planted = b'{"planted":"STALE-DOCUMENT","transparency":'
    with service.sessions() as session:
        values: dict[str, Any] = {"proof_document": planted}
        if what == "key":  # built by another verifier version, say
            values["proof_key"] = "0" * 64
        else:  # the row moved on after the document was stored
            values["trust_label"] = "benchmark_compatible_customized_instance"
        session.execute(update(Run).where(Run.id == run_id).values(**values))
        session.commit()
    headers = {"Authorization": f"Bearer {token}"}
    answer = service.client.get(f"/api/v1/verifier/runs/{run_id}", headers=headers)
    assert answer.status_code == 200, answer.text
    assert b"STALE-DOCUMENT" not in answer.content
    assert answer.json() == _fresh(service, run_id)


def test_a_new_log_head_gets_a_new_inclusion_proof(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    first_id = _upload_verified(service, signer, record_2048, token)
    before = _proof(service, first_id)["transparency"]
    assert before["tree_head"]["tree_size"] == 1
    _upload_verified(service, signer, record_2048, token)
    after = _proof(service, first_id)["transparency"]
    assert after["tree_head"]["tree_size"] == 2  # not the cached head of one leaf
    log_key = VerifyingKey.from_pem(
        service.client.get("/api/v1/log/key").json()["public_key_pem"].encode()
    )
    with service.sessions() as session:
        digest = get_run(session, first_id).record_digest
    assert check_inclusion(after["tree_head"], after["inclusion_proof"], digest, log_key).valid
    assert _proof(service, first_id) == _fresh(service, first_id)


def test_a_run_whose_row_changed_is_never_served_from_the_cache(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = _upload_verified(service, signer, record_2048, token)
    assert _proof(service, run_id)["run"]["status"] == "verified"  # now cached
    with service.sessions() as session:
        report = stored_report(get_run(session, run_id))
        assert report is not None
        rewritten = report.model_copy(update={"verified": []})
        session.execute(
            update(Run)
            .where(Run.id == run_id)
            .values(status="rejected", report=rewritten.model_dump_json())
        )
        session.commit()
    served = _proof(service, run_id)
    assert served["run"]["status"] == "rejected"
    assert served["run"]["verified_milestones"] == []
    assert served == _fresh(service, run_id)


def test_a_pending_run_is_served_its_verdict_once_it_has_one(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = _upload_verified(service, signer, record_2048, token)
    with service.sessions() as session:  # back to pending and unlogged, as a restart finds it
        session.execute(delete(LogLeaf).where(LogLeaf.run_id == run_id))
        session.execute(update(Run).where(Run.id == run_id).values(status="pending", report=None))
        session.commit()
    pending = _proof(service, run_id)
    assert pending["run"]["status"] == "pending"
    assert pending["run"]["verified_score"] is None
    cache = service.client.app.state.service.proof_cache
    assert len(cache) == 0  # a pending run is not cached (the verified one was dropped)
    state = service.client.app.state.service
    state.queue.submit(run_id)
    assert service.verdict(run_id)["status"] == "verified"
    served = _proof(service, run_id)
    assert served["run"]["status"] == "verified"
    assert served["run"]["verified_score"] is not None


def test_the_proof_cache_keeps_the_most_recent_documents_only() -> None:
    cache = ProofCache(capacity=2)
    for name in ("a", "b", "c"):
        cache.put(name, CachedProof(fingerprint=(name,), head=b"{", leaf_index=None))
    assert cache.get("a", ("a",)) is None  # the least recent went first
    assert cache.get("b", ("b",)) is not None
    assert cache.get("c", ("other",)) is None  # another row version: dropped
    assert cache.get("c", ("c",)) is None
    assert len(cache) == 1
    entry = CachedProof(fingerprint=(), head=b'{"x":1,"transparency":', leaf_index=None)
    assert json.loads(entry.with_transparency(None)) == {"x": 1, "transparency": None}
    assert json.loads(entry.with_transparency(b'{"y":2}')) == {"x": 1, "transparency": {"y": 2}}


def test_each_tree_size_is_signed_once_and_few_are_kept(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    _upload_verified(service, signer, record_2048, token)
    key = SigningKey.generate()
    cache = LogCache()
    with service.sessions() as session:
        first = cache.head(session, key, 1)
        assert cache.head(session, key, 1) is first
        assert cache.head(session, key, 0) is not first
        for _ in range(MAX_SIGNED_HEADS + 5):
            cache.head(session, SigningKey.generate(), 1)
        assert cache.head(session, key, 1) is not first  # dropped, signed again
        assert cache.head(session, key, 1) == first  # and the same head


def test_polling_a_status_does_not_parse_the_record_again(
    service: Service, signed_2048: bytes, signer: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playproof.service.runs import services as run_services

    token = service.owner("alice", (signer.verifying_key,))
    accepted = service.upload(signed_2048, token)
    run_id = accepted.json()["id"]
    stop = accepted.json()["stop_reason"]
    # Once the verdict (and the proof document rendered with it) is stored, so that
    # only the polls are counted.
    assert service.verdict(run_id)["status"] == "verified"
    parsed = calls_to(monkeypatch, run_services, "parse_run_record")
    for _ in range(5):
        answer = service.client.get(f"/api/v1/runs/{run_id}").json()
        assert answer["stop_reason"] == stop
    assert parsed == []  # read at upload; polls reuse it


def test_remembered_stop_reasons_are_bounded(record_2048: RunRecord, signer: SigningKey) -> None:
    reasons = StopReasons(capacity=2)
    envelope = playproof.sign_record(record_2048, signer).to_bytes()
    runs = [Run(id=str(n), envelope_sha256=str(n), envelope=envelope) for n in range(3)]
    for run in runs:
        assert reasons.of(run) == record_2048.stop_reason.value
    assert len(reasons) == 2
    assert reasons.of(Run(id="x", envelope_sha256="x", envelope=b"not an envelope")) is None


def test_a_document_that_fails_to_render_never_holds_back_the_verdict(
    service: Service, signer: SigningKey, record_2048: RunRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playproof.service.runs import tasks

    def broken(*_args: object, **_kwargs: object) -> None:
        raise ValueError("a rendering bug")

    monkeypatch.setattr(tasks, "render_proof", broken)
    token = service.owner("alice", (signer.verifying_key,))
    run_id = _upload_verified(service, signer, record_2048, token)  # verified all the same
    with service.sessions() as session:
        assert get_run(session, run_id).proof_document is None
    assert _proof(service, run_id) == _fresh(service, run_id)  # built when asked for


def test_the_record_read_at_upload_renders_the_document_without_a_second_parse(
    service: Service, signer: SigningKey, record_2048: RunRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playproof.service.proofs import services as proof_services

    token = service.owner("alice", (signer.verifying_key,))
    parsed = calls_to(monkeypatch, proof_services, "signed_record")
    run_id = _upload_verified(service, signer, record_2048, token)
    with service.sessions() as session:
        assert get_run(session, run_id).proof_document is not None
    assert parsed == []  # rendered from the record the upload read
    assert service.client.app.state.service.queue.kept_records() == 0  # let go with the verdict
    assert _proof(service, run_id) == _fresh(service, run_id)  # and the same document
    assert [run.id for run in parsed] == [run_id]  # (the fresh build parsed the envelope)


def test_records_kept_for_rendering_are_bounded(
    record_2048: RunRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    from concurrent.futures import Executor, Future

    from playproof.service.runs import tasks
    from playproof.service.runs.services import ReplayJob

    class Idle(Executor):  # replays that never finish: what is kept stays kept
        def submit(self, *_args: object, **_kwargs: object) -> Future[Any]:
            return Future()

    monkeypatch.setattr(tasks, "MAX_KEPT_ENVELOPE_BYTES", 2_500)
    queue = tasks.ReplayQueue(sessions=None, executor=Idle())  # type: ignore[arg-type]
    for number in range(4):
        job = ReplayJob(envelope=b"x" * 1_000, key_pems=(), record=record_2048)
        queue.submit(f"run-{number}", job)
    assert queue.in_flight() == 4
    assert queue.kept_records() == 2  # the others are parsed again when their verdict comes
    queue.close()
    assert queue.kept_records() == 0
