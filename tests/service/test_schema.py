"""Property test of the OpenAPI schema: generated requests never get a 500 or break the schema."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402

from playproof.service.app import create_app  # noqa: E402
from playproof.service.db import make_engine, upgrade  # noqa: E402
from playproof.service.settings import ServiceSettings  # noqa: E402

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

EXAMPLES = 30


@pytest.fixture
def api_schema(tmp_path: Path, replay_pool: ProcessPoolExecutor) -> Iterator[Any]:
    url = f"sqlite:///{tmp_path / 'service.db'}"
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    settings_ = ServiceSettings(database_url=url, log_key_file=tmp_path / "log.key")
    app = create_app(settings_, executor=replay_pool)
    with TestClient(app):  # runs the lifespan: database, queue, log key
        yield schemathesis.openapi.from_asgi("/openapi.json", app)


def test_no_500_and_no_schema_violation(api_schema: Any) -> None:
    operations = [result.ok() for result in api_schema.get_all_operations()]
    paths = {operation.path for operation in operations}
    assert {
        "/api/v1/deployments",
        "/api/v1/deployments/{deployment_id}",
        "/api/v1/deployments/{deployment_id}/runs",
        "/api/v1/leaderboards/{platform}/{name}",
        "/api/v1/challenges",
        "/api/v1/challenges/{challenge_id}/leaderboard",
        "/api/v1/grades",
        "/api/v1/verifier/grades/{grade_id}",
        "/api/v1/log/consistency",
        "/api/v1/log/inclusion",
        "/api/v1/targets",
    } <= paths
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: Any) -> None:
            case.call_and_validate()

        check()
