"""The replay viewer's cost bounds: who gets frames drawn, how many at once, how much disk."""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

import playproof
from playproof.core.record import ClaimedMilestone, RunRecord
from playproof.service.web import frames as frames_module
from playproof.service.web.frames import cached_index, ensure_frames
from playproof.sign import SigningKey

from .conftest import Service, calls_to

WAIT_S = 60.0
"""A bound on waiting for the blocked drawing (not a timed assertion)."""


def _cache(service: Service) -> Path:
    cache = service.client.app.state.web.frames_cache  # type: ignore[attr-defined]
    assert isinstance(cache, Path)
    return cache


def _rejected(record: RunRecord) -> RunRecord:
    last = record.claimed[-1]
    moved = (*record.claimed[:-1], ClaimedMilestone(id=last.id, turn=last.turn + 3))
    return RunRecord.model_validate(
        {
            **record.model_copy(update={"claimed": moved}).to_json(),
            "started_at": uuid.uuid4().hex,
        }
    )


def test_a_rejected_run_gets_its_verdict_and_no_drawn_frames(
    service: Service,
    signer: SigningKey,
    record_2048: RunRecord,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    accepted = service.upload(
        playproof.sign_record(_rejected(record_2048), signer).to_bytes(), token
    )
    run_id = accepted.json()["id"]
    assert service.verdict(run_id)["status"] == "rejected"
    drawn = calls_to(monkeypatch, frames_module, "_generate_isolated", 1)
    run_page = service.client.get(f"/runs/{run_id}").text
    assert "Why there is no replay to watch" in run_page  # no promise of a replay
    assert "Watch the replay" not in run_page

    page = service.client.get(f"/runs/{run_id}/replay")  # anonymous: the run is public
    assert page.status_code == 200
    assert 'id="no-frames"' in page.text
    assert "only for verified runs" in page.text
    last = record_2048.claimed[-1]
    assert "claims-reproduced" in page.text
    assert last.id in page.text
    assert f"turn {last.turn}" in page.text
    frame = service.client.get(f"/runs/{run_id}/frames/0")
    assert frame.status_code == 409
    assert drawn == []
    assert not _cache(service).exists() or not any(_cache(service).iterdir())

    verified = service.upload_verified(signer, record_2048, token)
    assert "Watch the replay" in service.client.get(f"/runs/{verified}").text
    assert service.client.get(f"/runs/{verified}/replay").status_code == 200
    assert len(drawn) == 1  # a verified run is drawn as before


def test_drawing_past_the_bound_is_busy_rather_than_another_drawing(
    service: Service,
    signer: SigningKey,
    record_2048: RunRecord,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    first, second = (service.upload_verified(signer, record_2048, token) for _ in range(2))
    monkeypatch.setattr(frames_module, "_GATE", frames_module._Gate(slots=1, queue=0))
    real = frames_module._generate_isolated
    entered, release = threading.Event(), threading.Event()
    drawn: list[str] = []

    def blocked(record: RunRecord, record_digest: str, folder: Path) -> Any:
        drawn.append(record_digest)
        entered.set()
        release.wait(WAIT_S)
        return real(record, record_digest, folder)

    monkeypatch.setattr(frames_module, "_generate_isolated", blocked)
    answers: dict[str, httpx.Response] = {}
    viewer = threading.Thread(
        target=lambda: answers.setdefault("first", service.client.get(f"/runs/{first}/replay"))
    )
    viewer.start()
    try:
        assert entered.wait(WAIT_S)
        for path in (f"/runs/{second}/replay", f"/runs/{second}/frames/3"):
            busy = service.client.get(path)
            assert busy.status_code == 503, path
            assert busy.headers["Retry-After"] == str(frames_module.BUSY_RETRY_AFTER_S)
            assert "busy" in busy.text
        assert len(drawn) == 1  # no second drawing was started
    finally:
        release.set()
        viewer.join(WAIT_S)
    assert answers["first"].status_code == 200
    assert service.client.get(f"/runs/{second}/replay").status_code == 200  # a slot is free
    assert len(drawn) == 2


def _age(folder: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(folder / "index.json", (then, then))


def test_the_disk_bound_deletes_the_least_recently_viewed_records(
    record_2048: RunRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, c = ("a" * 64, "b" * 64, "c" * 64)
    ensure_frames(tmp_path, record_2048, a)
    ensure_frames(tmp_path, record_2048, b)
    size = int((tmp_path / a / frames_module.SIZE_FILE).read_text())
    assert size > 0
    _age(tmp_path / a, 1000)
    _age(tmp_path / b, 500)
    ensure_frames(tmp_path, record_2048, a)  # viewed again: now the most recent
    monkeypatch.setattr(frames_module, "MAX_CACHE_BYTES", size * 5 // 2)
    ensure_frames(tmp_path, record_2048, c)
    assert cached_index(tmp_path, b) is None
    assert cached_index(tmp_path, a) is not None
    assert cached_index(tmp_path, c) is not None
    assert frames_module.evict(tmp_path) <= size * 5 // 2
    # A record larger than the bound alone is kept (it is the one just drawn).
    assert frames_module.evict(tmp_path, keep=c, limit=1) == size
    assert sorted(p.name for p in tmp_path.iterdir()) == [c]


def test_a_scratch_folder_left_by_a_dead_drawing_is_deleted(tmp_path: Path) -> None:
    stale = tmp_path / f".partial-{'d' * 64}-{uuid.uuid4().hex}"
    live = tmp_path / f".partial-{'e' * 64}-{uuid.uuid4().hex}"
    for folder in (stale, live):
        folder.mkdir()
        (folder / "0000000.txt").write_text("frame")
    then = time.time() - 2 * frames_module.FRAME_GENERATION_TIMEOUT_S
    os.utime(stale, (then, then))
    frames_module.evict(tmp_path)
    assert not stale.exists()
    assert live.exists()


def test_the_pages_of_a_run_parse_its_record_once(
    service: Service,
    signer: SigningKey,
    record_2048: RunRecord,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Run page, its decision pages, the viewer and its frames share one parsed record."""
    from playproof.service.web import records as records_module

    token = service.owner("alice", (signer.verifying_key,))
    run_id = service.upload_verified(signer, record_2048, token)
    parsed: list[str] = []
    real = records_module.signed_record

    def noting(run: Any) -> Any:
        parsed.append(run.id)
        return real(run)

    monkeypatch.setattr(records_module, "signed_record", noting)
    get = service.client.get
    for path in (f"/runs/{run_id}", f"/runs/{run_id}?page=1", f"/runs/{run_id}/replay"):
        assert get(path).status_code == 200
    assert get(f"/runs/{run_id}/frames/1").status_code == 200
    assert parsed == [run_id]


def test_the_record_cache_is_bounded_by_envelope_bytes() -> None:
    from types import SimpleNamespace

    from playproof.service.web.records import ParsedRecords

    key = SigningKey.generate()
    envelopes = []
    for seed in range(3):
        played = playproof.run("native/2048", playproof.BaselineDriver("round-robin"), seed=seed)
        envelopes.append(playproof.sign_record(played, key).to_bytes())
    runs = [
        SimpleNamespace(id=f"run{i}", envelope=body, envelope_sha256=f"digest{i}")
        for i, body in enumerate(envelopes)
    ]
    cache = ParsedRecords(limit=len(envelopes[0]) + len(envelopes[1]))
    first = cache.record(runs[0])
    assert first is not None
    assert cache.record(runs[0]) is first
    cache.record(runs[1])
    cache.record(runs[2])  # the least recently read goes
    assert cache.kept_bytes <= len(envelopes[0]) + len(envelopes[1])
    assert cache.record(runs[0]) is not first  # parsed again
    tampered = SimpleNamespace(id="run0", envelope=b"{}", envelope_sha256="other")
    assert cache.record(tampered) is None  # keyed by digest too
    small = ParsedRecords(limit=10)
    assert small.record(runs[1]) is not None
    assert small.kept_bytes == 0  # over the bound alone: parsed, not kept


def test_the_viewer_reads_and_parses_records_off_the_event_loop(
    service: Service,
    signer: SigningKey,
    record_2048: RunRecord,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A record near the upload limit takes a third of a second to load and parse: never
    on the loop, where it would hold every other request up."""
    import asyncio

    from playproof.service.web import records as records_module
    from playproof.service.web import routes as routes_module

    on_loop: list[str] = []

    def noting(name: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                asyncio.get_running_loop()
                on_loop.append(name)
            except RuntimeError:
                pass
            return real(*args, **kwargs)

        return call

    token = service.owner("alice", (signer.verifying_key,))
    verified = service.upload_verified(signer, record_2048, token)
    rejected = service.upload(
        playproof.sign_record(_rejected(record_2048), signer).to_bytes(), token
    )
    assert service.verdict(rejected.json()["id"])["status"] == "rejected"
    monkeypatch.setattr(routes_module, "get_run", noting("get_run", routes_module.get_run))
    monkeypatch.setattr(
        records_module, "signed_record", noting("signed_record", records_module.signed_record)
    )
    monkeypatch.setattr(
        routes_module, "stored_report", noting("stored_report", routes_module.stored_report)
    )
    for path in (
        f"/runs/{verified}/replay",
        f"/runs/{verified}/frames/2",
        f"/runs/{rejected.json()['id']}/replay",
    ):
        assert service.client.get(path).status_code == 200
    assert on_loop == []
