"""Hostile input at the service's edges (the API-level tests are in tests/service)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi", reason="the service needs the server extra")

from playproof.service.problems import Problem
from playproof.service.runs.services import get_run


class _NoDatabase:
    """A session that fails the test if anything asks it a question."""

    def get(self, *_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("a malformed run id reached the database")


@pytest.mark.parametrize(
    "run_id", ["\x00", "a" * 31 + "\x00", "A" * 32, "g" * 32, "a" * 33, "", "../" * 20, "a" * 10**6]
)
def test_a_malformed_run_id_is_unknown_without_asking_the_database(run_id: str) -> None:
    # PostgreSQL refuses text with a NUL byte loudly (it was a 500); such an
    # id is now a 404 before any query.
    with pytest.raises(Problem) as caught:
        get_run(_NoDatabase(), run_id)  # type: ignore[arg-type]
    assert caught.value.status == 404


@pytest.mark.parametrize("bad_id", ["\x00", "A" * 32, "g" * 32, "a" * 33, "", "a" * 10**6])
def test_malformed_deployment_challenge_and_grade_ids_never_reach_the_database(
    bad_id: str,
) -> None:
    from playproof.service.deployments.services import get_deployment
    from playproof.service.grades.services import get_grade
    from playproof.service.leaderboards.services import get_challenge

    for lookup in (get_deployment, get_challenge, get_grade):
        with pytest.raises(Problem) as caught:
            lookup(_NoDatabase(), bad_id)  # type: ignore[arg-type]
        assert caught.value.status == 404


@pytest.mark.parametrize(
    "configuration",
    [{"a": float("nan")}, {"a": float("inf")}, {"a": 2**60}, {"a": [{"b": float("-inf")}]}],
)
def test_a_configuration_without_a_canonical_form_is_a_validation_error(
    configuration: dict[str, Any],
) -> None:
    # It was stored by canonical_json after validation, which raised: a 500.
    from pydantic import ValidationError

    from playproof.service.deployments.documents import DeploymentRequest

    with pytest.raises(ValidationError):
        DeploymentRequest(target="native/2048", configuration=configuration)
    with pytest.raises(ValidationError):
        DeploymentRequest(target="native/2048", policy_envelope=configuration)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=4), _JSON, max_size=4))
def test_any_configuration_validates_to_something_storable_or_is_refused(
    configuration: dict[str, Any],
) -> None:
    from pydantic import ValidationError

    from playproof.core.canonical import canonical_json
    from playproof.service.deployments.documents import DeploymentRequest

    try:
        request = DeploymentRequest(target="native/2048", configuration=configuration)
    except ValidationError:
        return
    canonical_json(request.configuration)  # what the service stores: never raises here


CLOSE_BOUND_S = 30.0
"""How long closing the replay queue may take before the test calls it stuck (a bound)."""


class _QueuedExecutor:
    """An executor whose jobs stay queued: never started, so closing can cancel them."""

    def __init__(self) -> None:
        self.futures: list[Any] = []

    def submit(self, *_args: Any, **_kwargs: Any) -> Any:
        from concurrent.futures import Future

        future: Future[Any] = Future()
        self.futures.append(future)
        return future


def test_closing_the_replay_queue_with_a_queued_replay_returns(tmp_path: Any) -> None:
    """Cancelling a queued replay runs its callback at once; close must not hold the lock then."""
    import threading

    from playproof.service.db import make_engine, session_factory, upgrade
    from playproof.service.owners.services import add_owner
    from playproof.service.runs.models import Run
    from playproof.service.runs.tasks import ReplayQueue

    engine = make_engine(f"sqlite:///{tmp_path / 'service.db'}")
    upgrade(engine)
    sessions = session_factory(engine)
    with sessions() as session:
        owner = add_owner(session, "o", None)
        session.flush()
        session.add(
            Run(
                id="a" * 32,
                owner_id=owner.id,
                envelope_sha256="b" * 64,
                envelope=b"{}",
                record_digest="c" * 64,
                key_id="k",
                decision_count=0,
                status="pending",
                trust_label="benchmarked_canonical_template",
                attempts=0,
            )
        )
        session.commit()
    executor = _QueuedExecutor()
    queue = ReplayQueue(sessions, executor)  # type: ignore[arg-type]
    queue.submit("a" * 32)
    assert len(executor.futures) == 1
    closing = threading.Thread(target=queue.close, daemon=True)
    closing.start()
    closing.join(CLOSE_BOUND_S)
    stuck = closing.is_alive()
    engine.dispose()
    assert not stuck, "ReplayQueue.close deadlocked on a queued replay's callback"
    assert executor.futures[0].cancelled()
    assert queue.in_flight() == 0
