"""The wire format: result shapes survive the trip exactly; errors map by an allowlist."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import playproof.workers
from playproof.core.evidence import Evidence
from playproof.core.game import Snapshot
from playproof.core.observation import Observation
from playproof.errors import (
    CheckpointError,
    ContractError,
    ObservationError,
    PlayproofError,
    WorkerError,
)
from playproof.workers import _wire
from playproof.workers.child import _EVIDENCE, _SNAPSHOT, _ok

ints = st.integers(-(2**63), 2**63 - 1)
maps = st.dictionaries(st.text(max_size=12), ints, max_size=6)
hashes = st.none() | st.text("0123456789abcdef", min_size=64, max_size=64)
evidence = st.builds(
    Evidence,
    engine=maps,
    save=maps,
    frame=maps,
    save_hash=hashes,
    frame_hash=hashes,
    events=st.lists(st.text(max_size=20), max_size=4).map(tuple),
)


def test_public_names_are_exactly_the_intended_ones() -> None:
    assert sorted(playproof.workers.__all__) == [
        "DEFAULT_CALL_TIMEOUT",
        "DEFAULT_REPLAY_TIMEOUT",
        "DEFAULT_START_TIMEOUT",
        "MAX_MESSAGE_BYTES",
        "PROTOCOL_VERSION",
        "QUIT_GRACE",
        "STDERR_TAIL_BYTES",
        "WorkerGame",
    ]
    assert playproof.workers.MAX_MESSAGE_BYTES == 64 << 20


@given(evidence)
def test_evidence_survives_the_wire(value: Evidence) -> None:
    response = _wire.EVIDENCE_RESPONSE.validate_json(_ok(_EVIDENCE.dump_json(value)), strict=True)
    assert response.result == value


@given(evidence, st.none() | st.booleans(), st.none() | st.text(max_size=50))
def test_snapshots_survive_the_wire(value: Evidence, over: bool | None, text: str | None) -> None:
    snapshot = Snapshot(value, over, None if text is None else Observation(text=text))
    response = _wire.SNAPSHOT_RESPONSE.validate_json(
        _ok(_SNAPSHOT.dump_json(snapshot)), strict=True
    )
    assert response.result == snapshot


@pytest.mark.parametrize(
    "body",
    [
        b'{"status":"ok","result":{"engine":{"x":1.0}}}',
        b'{"status":"ok","result":{"engine":{"x":true}}}',
        b'{"status":"ok","result":{"engine":{"x":"1"}}}',
        b'{"status":"ok","result":{"frame_hash":"nothex"}}',
        b'{"status":"ok","result":{"surprise":1}}',
        b'{"status":"maybe"}',
    ],
)
def test_loose_evidence_is_rejected(body: bytes) -> None:
    with pytest.raises(ValueError, match="validation error"):
        _wire.EVIDENCE_RESPONSE.validate_json(body, strict=True)


class _Custom(CheckpointError):
    pass


class CheckpointErrorLookalike(Exception):
    pass


@pytest.mark.parametrize(
    ("raised", "expected", "match"),
    [
        (CheckpointError("bad blob"), CheckpointError, "^bad blob$"),
        (ObservationError("too big"), ObservationError, "^too big$"),
        (WorkerError("inner"), WorkerError, "^inner$"),
        (ValueError("nope"), WorkerError, "the game raised ValueError: nope"),
        (_Custom("sub"), WorkerError, "the game raised _Custom: sub"),
        (CheckpointErrorLookalike("x"), WorkerError, "CheckpointErrorLookalike"),
    ],
)
def test_errors_map_through_the_allowlist(
    raised: Exception, expected: type[PlayproofError], match: str
) -> None:
    info = _wire.describe_exception(raised)
    with pytest.raises(expected, match=match) as caught:
        _wire.raise_error(info)
    assert type(caught.value) is expected


def test_contract_errors_keep_their_violations() -> None:
    info = _wire.describe_exception(ContractError(["a is bad", "b is bad"]))
    with pytest.raises(ContractError) as caught:
        _wire.raise_error(info)
    assert caught.value.violations == ("a is bad", "b is bad")


def test_an_unknown_error_type_from_the_wire_is_a_worker_error() -> None:
    info = _wire.ErrorInfo(type="SystemExit", message="boom")
    with pytest.raises(WorkerError, match="SystemExit: boom"):
        _wire.raise_error(info)


def test_error_messages_are_bounded() -> None:
    info = _wire.describe_exception(ValueError("x" * 100_000))
    assert len(info.message) == _wire.MAX_ERROR_CHARS


def test_blob_text_must_be_canonical_base64() -> None:
    assert _wire.decode_blob(_wire.encode_blob(b"\x00\xff")) == b"\x00\xff"
    with pytest.raises(CheckpointError, match="base64"):
        _wire.decode_blob("not base64!")
