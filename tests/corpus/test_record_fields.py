"""docs/corpus.md lists every field of a grade record by hand; this holds the list to the model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from playproof.corpus import GradeRecord
from playproof.corpus._grader import CaseResult
from playproof.corpus._record import CandidatePin
from playproof.corpus._variants import VariantPin

DOCS = Path(__file__).resolve().parents[2] / "docs" / "corpus.md"


def _table() -> dict[str, str]:
    text = DOCS.read_text(encoding="utf-8")
    start = text.index("The record's fields (`GradeRecord`")
    rows: dict[str, str] = {}
    for line in text[start:].splitlines()[4:]:
        if not line.strip().startswith("|"):
            break
        names, meaning = line.strip().strip("|").split("|", 1)
        for name in re.findall(r"`([a-z_0-9]+)`", names):
            rows[name] = meaning
    return rows


def _names(model: type[BaseModel]) -> set[str]:
    return set(model.model_fields)


def test_every_grade_record_field_is_listed_and_nothing_else() -> None:
    rows = _table()
    assert set(rows) == _names(GradeRecord)


def test_the_nested_fields_are_named_in_their_rows() -> None:
    rows = _table()
    for field, model in (
        ("candidate", CandidatePin),
        ("results", CaseResult),
        ("variants", VariantPin),
    ):
        named = set(re.findall(r"`([a-z_0-9]+)`", rows[field]))
        assert named == _names(model), field


def test_every_limit_the_record_keeps_is_named(subset: Any) -> None:
    """The limits row names exactly the keys a grading writes (a real grade of a subset)."""
    from playproof.corpus import CandidateSpec, JailLimits, grade_candidate, load_corpus

    corpus = load_corpus(subset.manifest, subset.roms)
    run = grade_candidate(
        corpus,
        subset.answers,
        CandidateSpec(command=("/bin/true",)),
        jobs=1,
        limits=JailLimits(wall_seconds=4.0, cpu_seconds=20),
    )
    assert set(re.findall(r"`([a-z_0-9]+)`", _table()["limits"])) == set(run.record.limits)
