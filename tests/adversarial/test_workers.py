"""Worker children that answer a request with a reply numbered for another one.

``programs/hostile_child.py`` answers the first ``reset`` correctly, then
answers the next one with a well-formed, otherwise acceptable reply that does
not belong to it: the earlier reply sent again (``replay``) or a reply numbered
one ahead (``skip``). The parent must refuse it with a typed error naming the
worker, kill the child, and refuse every later call.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from playproof.errors import WorkerCrashed, WorkerProtocolError
from playproof.workers import WorkerGame

PROGRAMS = Path(__file__).parent / "programs"
CALL_S = 5.0
"""One call's bound here; a refused reply must be refused long before it."""


class ForeignChildWorker(WorkerGame):
    """A worker whose child is ``hostile_child`` instead of playproof's own."""

    _child_module = "hostile_child"


@pytest.fixture(params=["replay", "skip"])
def worker(request: pytest.FixtureRequest) -> Iterator[WorkerGame]:
    env = {"PYTHONPATH": str(PROGRAMS), "HOSTILE_CHILD_MODE": request.param}
    game = ForeignChildWorker("hostile_game:make", {}, env=env, call_timeout=CALL_S)
    yield game
    game.close()


@pytest.mark.timeout(60)
def test_a_reply_that_answers_another_request_is_refused(worker: WorkerGame) -> None:
    worker.reset(0)  # answered honestly, numbered 1
    refused = rf"worker pid {worker.pid} .*reset \(request 2\)"
    with pytest.raises(WorkerProtocolError, match=refused):
        worker.reset(1)
    assert not Path(f"/proc/{worker.pid}").exists()
    with pytest.raises(WorkerCrashed, match="is gone"):
        worker.reset(2)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["replay", "skip"])
def test_the_refusal_says_which_way_the_reply_was_wrong(mode: str) -> None:
    env = {"PYTHONPATH": str(PROGRAMS), "HOSTILE_CHILD_MODE": mode}
    with ForeignChildWorker("hostile_game:make", {}, env=env, call_timeout=CALL_S) as worker:
        worker.reset(0)
        words = "earlier .*numbered 1" if mode == "replay" else "later .*numbered 3"
        with pytest.raises(WorkerProtocolError, match=words):
            worker.reset(1)
