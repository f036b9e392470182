"""A value already parsed from JSON is held to the same size bound as the text it came from.

Every reader that takes text or a parsed value (records, envelopes, run
uploads, tree heads, proofs) must refuse a value whose JSON could not have
been read, whichever form it is handed in.
"""

import json

import pytest
from campaigns import CONTRACT, Walker, continuous
from pydantic import BaseModel
from toygame import ToyGame

from playproof.core.canonical import parse_model
from playproof.core.chain import MAX_INPUT_BYTES
from playproof.core.record import MAX_RECORD_BYTES, parse_run_record
from playproof.errors import FormatError
from playproof.sign import MAX_ENVELOPE_BYTES, parse_envelope
from playproof.sign._dsse import MAX_PAYLOAD_CHARS
from playproof.verify import attest


class Note(BaseModel):
    text: str


def test_a_parsed_value_over_the_limit_is_refused_like_its_text() -> None:
    value = {"text": "a" * 100}
    with pytest.raises(FormatError, match="over the 50-byte limit"):
        parse_model(Note, json.dumps(value), limit=50, what="note")
    with pytest.raises(FormatError, match=r"note is 111 bytes as JSON, over the 50-byte limit"):
        parse_model(Note, value, limit=50, what="note")


def test_a_parsed_value_is_measured_as_utf8_not_as_escaped_ascii() -> None:
    # 40 characters of two UTF-8 bytes: 91 bytes as compact JSON, 251 with \\u escapes.
    value = {"text": "é" * 40}
    assert parse_model(Note, value, limit=91, what="note").text == "é" * 40
    compact = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert parse_model(Note, compact, limit=91, what="note").text == "é" * 40
    with pytest.raises(FormatError, match="92 bytes as JSON, over the 91-byte limit"):
        parse_model(Note, {"text": "é" * 40 + "x"}, limit=91, what="note")


def test_a_parsed_envelope_over_the_envelope_limit_is_refused() -> None:
    # The payload alone is within its own bound; with the rest the envelope is not.
    value = {
        "payload": "A" * MAX_PAYLOAD_CHARS,
        "payloadType": "application/vnd.in-toto+json",
        "signatures": [{"keyid": "k", "sig": "c2ln"}],
    }
    assert len(json.dumps(value)) > MAX_ENVELOPE_BYTES
    with pytest.raises(FormatError, match="over the"):
        parse_envelope(json.dumps(value).encode())
    with pytest.raises(FormatError, match="over the"):
        parse_envelope(value)


def test_a_parsed_record_whose_decisions_cannot_fit_the_limit_is_refused() -> None:
    data = continuous(Walker()).to_json()
    count = MAX_RECORD_BYTES // MAX_INPUT_BYTES + 2
    data["decisions"] = {
        "inputs": ["w" * MAX_INPUT_BYTES] * count,
        "costs_usd": [0.0] * count,
        "latencies_ms": [0.0] * count,
    }
    with pytest.raises(FormatError, match="over the"):
        parse_run_record(json.dumps(data).encode())
    with pytest.raises(FormatError, match=f"its {count} decisions alone take at least"):
        parse_run_record(data)
    report = attest(data, ToyGame(), CONTRACT)
    assert report.checks[0].id == "record-well-formed"
    assert not report.checks[0].passed


def test_a_parsed_record_near_the_limit_reads_as_its_text_does() -> None:
    data = continuous(Walker()).to_json()
    count = 2 * MAX_RECORD_BYTES // MAX_INPUT_BYTES  # inputs of about half the longest
    rest = len(json.dumps({**data, "decisions": {}}, separators=(",", ":")))
    room = (MAX_RECORD_BYTES - rest - 100 * count) // count
    data["decisions"] = {
        "inputs": ["w" * room] * count,
        "costs_usd": [0.0] * count,
        "latencies_ms": [0.0] * count,
    }
    text = json.dumps(data, separators=(",", ":")).encode()
    assert MAX_RECORD_BYTES - 100 * count < len(text) <= MAX_RECORD_BYTES
    assert parse_run_record(text).inputs == parse_run_record(data).inputs
