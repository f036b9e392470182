"""The pure check-group framework: preconditions, stable ids, and no heavy imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from playproof.checks import CheckGroup, CheckSpec, run_group


def _group(decide: dict[str, object]) -> CheckGroup[None]:
    return CheckGroup(
        name="g",
        title="t",
        checks=(
            CheckSpec("a", "a holds", "a does not hold"),
            CheckSpec("b", "b holds", "b does not hold", ("a",)),
            CheckSpec("c", "c holds", "c does not hold", ("b",)),
        ),
        evaluate=lambda _evidence: decide,  # type: ignore[arg-type,return-value]
    )


def test_a_failed_precondition_fails_everything_downstream() -> None:
    result = run_group(_group({"a": False, "b": True, "c": True}), None)
    assert [c.passed for c in result.checks] == [False, False, False]
    assert result.checks[2].explanation == "not checked: it needs b, which failed"


def test_only_a_decided_true_passes() -> None:
    # A truthy value that is not True (a count, a string) is not a pass.
    result = run_group(_group({"a": 1, "b": "yes", "c": True}), None)
    assert [c.passed for c in result.checks] == [False, False, False]
    assert result.result == "fail"


def test_an_undecided_check_fails() -> None:
    result = run_group(_group({"a": True, "b": True}), None)
    assert [c.passed for c in result.checks] == [True, True, False]


def test_ids_are_unique_and_preconditions_come_first() -> None:
    with pytest.raises(ValueError, match="twice"):
        CheckGroup("g", "t", (CheckSpec("a", "", ""), CheckSpec("a", "", "")), lambda _e: {})
    with pytest.raises(ValueError, match="requires"):
        CheckGroup("g", "t", (CheckSpec("b", "", "", ("a",)), CheckSpec("a", "", "")), dict)


@given(st.dictionaries(st.sampled_from("abc"), st.booleans()))
def test_a_group_passes_exactly_when_every_check_passes(decide: dict[str, bool]) -> None:
    result = run_group(_group(dict(decide)), None)
    assert (result.result == "pass") == all(decide.get(k, False) for k in "abc")
    for check in result.checks:
        spec = next(s for s in _group({}).checks if s.id == check.id)
        assert check.explanation in {spec.passed, spec.failed} or check.explanation.startswith(
            "not checked: it needs "
        )


HEAVY = ("sqlalchemy", "fastapi", "starlette", "alembic", "openai", "anthropic", "torch", "httpx")


def _loaded(statement: str) -> set[str]:
    probe = (
        "import json, sys\n"
        f"{statement}\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    return set(json.loads(out.stdout))


def test_the_framework_and_the_service_groups_import_no_database_http_or_model_library() -> None:
    # The package root brings the drivers' HTTP client; the check groups add nothing to it.
    baseline = _loaded("import playproof")
    loaded = _loaded("import playproof.checks; import playproof.service.checks.groups")
    assert loaded <= baseline
    assert not loaded & {"sqlalchemy", "fastapi", "starlette", "alembic", "openai", "anthropic"}
