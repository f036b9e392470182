"""A replay that raises ends ``failed`` after a bounded number of attempts, never pending."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

from playproof.service.runs.models import Run
from playproof.service.runs.services import MAX_REPLAY_ATTEMPTS
from playproof.service.runs.tasks import ReplayQueue
from playproof.sign import SigningKey

from .conftest import Service

SECRET = "/srv/SENTINEL-traceback-path"


class RaisingExecutor(Executor):
    """Every job raises at once, with a message no response may repeat."""

    def __init__(self) -> None:
        self.calls = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.calls += 1
        future: Future[Any] = Future()
        future.set_exception(OSError(f"cannot open {SECRET}"))
        return future


def test_a_replay_that_keeps_raising_fails_with_its_error_kind(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    state = service.client.app.state.service  # type: ignore[attr-defined]
    raising = RaisingExecutor()
    state.queue = ReplayQueue(state.sessions, raising)
    token = service.owner("alice", (signer.verifying_key,))
    run_id = service.upload(signed_2048, token).json()["id"]
    status = service.verdict(run_id)
    assert status["status"] == "failed"
    assert status["error_kind"] == "OSError"
    assert raising.calls == MAX_REPLAY_ATTEMPTS
    with service.sessions() as session:
        stored = session.get(Run, run_id)
        assert stored is not None
        assert stored.attempts == MAX_REPLAY_ATTEMPTS
    proof = service.client.get(f"/api/v1/verifier/runs/{run_id}")
    assert proof.json()["run"]["status"] == "failed"
    assert proof.json()["transparency"] is None
    for body in (json.dumps(status), proof.text):
        assert SECRET not in body
    # A restart does not pick a failed run up again.
    assert state.queue.resume() == 0
    assert raising.calls == MAX_REPLAY_ATTEMPTS


def test_a_grade_whose_verification_keeps_raising_fails(
    service: Service, signer: SigningKey
) -> None:
    from playproof.corpus import sign_grade

    from .test_grades import _record, _wait

    state = service.client.app.state.service  # type: ignore[attr-defined]
    state.queue = ReplayQueue(state.sessions, RaisingExecutor())
    token = service.owner("alice", (signer.verifying_key,))
    body = sign_grade(_record(), signer).to_bytes()
    grade_id = service.client.post(
        "/api/v1/grades", content=body, headers={"Authorization": f"Bearer {token}"}
    ).json()["id"]
    done = _wait(service, grade_id)
    assert done["status"] == "failed"
    assert done["error_kind"] == "OSError"
    assert SECRET not in json.dumps(done)
