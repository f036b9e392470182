"""The fixed rules that read evidence from a transcript (one definition, live and verifying)."""

from __future__ import annotations

import base64
import hashlib
import json

from hypothesis import given
from hypothesis import strategies as st

from playproof.core.transcript import (
    CollectedFile,
    EvidenceReader,
    EvidenceRules,
    FileField,
    TextEvent,
    TextRule,
    TranscriptStep,
    transcript_evidence,
    transcript_over_at,
)

RULES = EvidenceRules(
    state=(TextRule(key="gold", pattern=r"gold: (-?\d+)"),),
    events=(TextEvent(event="rich", pattern="rich"),),
    save=(FileField(key="ore", file="save", pointer="/a/0/ore"),),
    save_hash="save",
    over="^bye$",
)


def _step(turn: int, output: str = "", files: tuple[CollectedFile, ...] = ()) -> TranscriptStep:
    return TranscriptStep(turn=turn, output=output, files=files, at_ms=0.0, settled_ms=0.0)


def _file(data: bytes, appended: tuple[str, ...] = ()) -> CollectedFile:
    return CollectedFile(
        name="save",
        present=True,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        content=base64.b64encode(data).decode(),
        appended=appended,
    )


def test_state_carries_over_and_the_last_match_wins() -> None:
    steps = [_step(0, "gold: 1\ngold: 4\n"), _step(1, "nothing"), _step(2, "gold: 2")]
    assert [e.engine.get("gold") for e in transcript_evidence(RULES, steps)] == [4, 4, 2]


def test_events_fire_once_from_output_and_from_event_files() -> None:
    data = json.dumps({"a": [{"ore": 3}]}).encode()
    steps = [
        _step(0, "rich"),
        _step(1, "rich again", (_file(data, ("dug", "dug")),)),
        _step(2, "", (_file(data, ("dug", "smelted")),)),
    ]
    assert [e.events for e in transcript_evidence(RULES, steps)] == [
        ("rich",),
        ("dug",),
        ("smelted",),
    ]


def test_save_fields_and_hash_come_from_the_collected_file() -> None:
    data = json.dumps({"a": [{"ore": 7}]}).encode()
    (evidence,) = transcript_evidence(RULES, [_step(0, "", (_file(data),))])
    assert evidence.save == {"ore": 7}
    assert evidence.save_hash == hashlib.sha256(data).hexdigest()


def test_over_is_the_first_exit_or_over_match() -> None:
    steps = [_step(0), _step(1, "x\nbye\n"), _step(2)]
    assert transcript_over_at(RULES, steps) == 1
    exited = TranscriptStep(turn=1, exited=3, at_ms=0.0, settled_ms=0.0)
    assert transcript_over_at(EvidenceRules(), [_step(0), exited]) == 1


@given(output=st.text(max_size=2000))
def test_any_output_reads_into_evidence_without_raising(output: str) -> None:
    reader = EvidenceReader(RULES)
    evidence = reader.read(_step(0, output))
    assert set(evidence.engine) <= {"gold"}
    assert isinstance(reader.over(_step(0, output)), bool)


@given(
    document=st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False)
        | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        ),
        max_leaves=20,
    )
)
def test_any_json_save_reads_an_integer_or_nothing(document: object) -> None:
    data = json.dumps(document).encode()
    (evidence,) = transcript_evidence(RULES, [_step(0, "", (_file(data),))])
    assert set(evidence.save) <= {"ore"}
    assert all(type(v) is int for v in evidence.save.values())
