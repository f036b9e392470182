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
