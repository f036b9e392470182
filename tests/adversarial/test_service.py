"""Hostile input at the service's edges (the API-level tests are in tests/service)."""

from __future__ import annotations

from typing import Any

import pytest

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
