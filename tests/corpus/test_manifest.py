"""Manifests, answers and corpus pins: refusals happen before anything runs."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from playproof.corpus import (
    CorpusCase,
    CorpusManifest,
    _wire,
    load_answers,
    load_corpus,
    reference_candidate,
)
from playproof.errors import FormatError

SHA = "0" * 64


def _case(case_id: str = "a", file: str = "a.gb") -> CorpusCase:
    return CorpusCase(id=case_id, file=file, sha256=SHA, suite="s", budget_frames=60)


def test_reference_candidate_constants_match_the_wire_module() -> None:
    for name in (
        "PROTOCOL_NAME",
        "PROTOCOL_VERSION",
        "MAX_LINE_BYTES",
        "MAX_DATA_BYTES",
        "MAX_ROM_BYTES",
        "SCREEN_BYTES",
        "CYCLES_PER_FRAME",
        "BUTTONS",
    ):
        assert getattr(reference_candidate, name) == getattr(_wire, name), name


def test_denominator_must_equal_the_case_count() -> None:
    with pytest.raises(ValidationError, match="denominator"):
        CorpusManifest(corpus_id="x", version="1", cases=(_case(),), denominator=2)


def test_case_ids_must_be_unique() -> None:
    with pytest.raises(ValidationError, match="repeat"):
        CorpusManifest(corpus_id="x", version="1", cases=(_case(), _case()), denominator=2)


@given(st.sampled_from(["../x.gb", "/etc/passwd", "a/../../b.gb", "a\\b.gb", ""]))
def test_case_files_stay_inside_the_corpus(path: str) -> None:
    with pytest.raises(ValidationError):
        _case(file=path)


@given(
    st.text(min_size=1, max_size=20).filter(
        lambda s: "\t" not in s and "\n" not in s and "\r" not in s
    )
)
def test_digest_changes_with_any_case_field(name: str) -> None:
    one = CorpusManifest(corpus_id="x", version="1", cases=(_case(),), denominator=1)
    two = CorpusManifest(corpus_id="x", version="1", cases=(_case(case_id=name),), denominator=1)
    assert (one.digest == two.digest) == (name == "a")


def test_shipped_corpus_loads_with_its_answers(subset: Any, shipped: Any) -> None:
    manifest, answers, roms = shipped
    corpus = load_corpus(manifest, roms)
    assert len(corpus.roms) == manifest.denominator == len(answers.answers)
    assert manifest.excluded, "the reference fails some Blargg ROMs; the manifest must say which"
    assert all(e.reason for e in manifest.excluded)


def test_tampered_rom_is_refused(subset: Any) -> None:
    case = subset.manifest.cases[0]
    path = subset.roms / case.file
    data = bytearray(path.read_bytes())
    data[0x150] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="refusing the whole corpus"):
        load_corpus(subset.manifest, subset.roms)


def test_answers_of_another_manifest_are_refused(subset: Any) -> None:
    other = CorpusManifest.model_validate({**subset.manifest.model_dump(), "version": "2"})
    with pytest.raises(FormatError, match="answers are for manifest"):
        load_answers(subset.answers_path, other)


def test_answers_missing_a_case_are_refused(subset: Any) -> None:
    dropped = dict(subset.answers.answers)
    dropped.pop(next(iter(dropped)))
    broken = subset.answers.model_copy(update={"answers": dropped})
    with pytest.raises(FormatError, match="missing"):
        broken.check_against(subset.manifest)
