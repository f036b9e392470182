"""Hostile run uploads: every malformed or oversized one is a typed refusal, never a crash."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi", reason="the service needs the server extra")

from playproof.errors import FormatError
from playproof.service.problems import Problem
from playproof.service.runs.uploads import MAX_TRANSCRIPT_UPLOAD_BYTES, is_run_upload, unpack
from playproof.sign import RUN_UPLOAD_MEDIA_TYPE, RunUpload, SigningKey
from playproof.sign._dsse import sign_payload

KEY = SigningKey.generate()


def _envelope(payload: bytes, payload_type: str = "application/vnd.in-toto+json") -> Any:
    return sign_payload(payload_type, payload, [KEY]).to_json()


def _body(**parts: Any) -> bytes:
    return json.dumps({"schema": "playproof/run-upload/v1", **parts}).encode()


def test_a_transcript_over_the_limit_is_refused_with_413() -> None:
    huge = _envelope(b"x" * (MAX_TRANSCRIPT_UPLOAD_BYTES + 1))
    with pytest.raises(Problem) as raised:
        unpack(_body(envelope=_envelope(b"{}"), transcript=huge), bundled=True)
    assert raised.value.status == 413


@pytest.mark.parametrize(
    "body",
    [
        b'{"schema": "playproof/run-upload/v1", "schema": "playproof/run-upload/v1"}',
        b'{"schema": "playproof/run-upload/v2", "envelope": {}}',
        b'{"schema": "playproof/run-upload/v1", "envelope": {"payload": NaN}}',
        b"\xff\xfe",
        b"",
    ],
)
def test_malformed_uploads_name_the_check(body: bytes) -> None:
    with pytest.raises(Problem) as raised:
        unpack(body, bundled=True)
    assert (raised.value.status, raised.value.kind) == (422, "upload-well-formed")


def test_an_upload_with_a_part_it_does_not_know_is_refused() -> None:
    with pytest.raises(Problem) as raised:
        unpack(_body(envelope=_envelope(b"{}"), extra=1), bundled=True)
    assert raised.value.kind == "upload-well-formed"


def test_a_run_upload_is_told_apart_by_its_media_type_only() -> None:
    assert is_run_upload(RUN_UPLOAD_MEDIA_TYPE)
    assert is_run_upload(f"{RUN_UPLOAD_MEDIA_TYPE.upper()}; charset=utf-8")
    assert not is_run_upload("application/json")
    assert not is_run_upload(None)
    # A run upload sent as application/json is read as an envelope, and refused as one.
    with pytest.raises(Problem) as raised:
        unpack(_body(envelope=_envelope(b"{}")), bundled=False)
    assert raised.value.kind == "envelope-well-formed"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=16,
)


@settings(max_examples=200, deadline=None)
@given(
    st.fixed_dictionaries(
        {"schema": st.just("playproof/run-upload/v1")},
        optional={"envelope": JSON, "transcript": JSON, "contract": JSON},
    )
    | JSON
)
def test_any_json_is_an_upload_or_a_format_error(value: Any) -> None:
    try:
        upload = RunUpload.parse(value)
    except FormatError:
        return
    assert RunUpload.parse(upload.to_json()) == upload
