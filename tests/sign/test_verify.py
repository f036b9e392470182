"""Signed run records: the clean path, forgeries, and hostile input (never an exception)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playproof.core.canonical import canonical_json, sha256_hex
from playproof.core.record import RunRecord
from playproof.sign import (
    IN_TOTO_PAYLOAD_TYPE,
    RUN_PREDICATE_TYPE,
    SIGNATURE_CHECK_IDS,
    Envelope,
    EnvelopeSignature,
    SigningKey,
    VerifyingKey,
    record_digest,
    run_statement,
    sign_record,
    verify_envelope,
)
from playproof.sign._dsse import b64encode, pae

RecordFactory = Callable[..., RunRecord]


def _failed(verdict: Any) -> dict[str, str]:
    return {c.id: c.reason for c in verdict.checks if not c.passed}


def _statement_of(envelope: Envelope) -> Any:
    return json.loads(envelope.payload_bytes())


def _with_payload(envelope: Envelope, statement: dict[str, Any] | bytes) -> Envelope:
    """The same signatures over a different payload: what a forger can produce."""
    payload = statement if isinstance(statement, bytes) else canonical_json(statement)
    return envelope.model_copy(update={"payload": b64encode(payload)})


def _signed_payload(
    key: SigningKey, payload: bytes, payload_type: str = IN_TOTO_PAYLOAD_TYPE
) -> Envelope:
    """An envelope with a genuine signature by ``key`` over an arbitrary payload."""
    return Envelope(
        payload=b64encode(payload),
        payloadType=payload_type,
        signatures=(
            EnvelopeSignature(
                keyid=key.key_id, sig=b64encode(key.sign(pae(payload_type, payload)))
            ),
        ),
    )


def test_sign_and_verify_clean(record: RunRecord, key: SigningKey) -> None:
    envelope = sign_record(record, key)
    verdict = verify_envelope(envelope.to_bytes(), [key.verifying_key])
    assert verdict.verdict == "clean", verdict.reasons()
    assert [c.id for c in verdict.checks] == list(SIGNATURE_CHECK_IDS)
    assert verdict.key_id == key.key_id
    assert verdict.record == record
    assert envelope.payloadType == "application/vnd.in-toto+json"


@pytest.mark.parametrize("form", ["bytes", "str", "dict", "model"])
def test_every_input_form_verifies(record: RunRecord, key: SigningKey, form: str) -> None:
    envelope = sign_record(record, key)
    data: Any = {
        "bytes": envelope.to_bytes(),
        "str": envelope.to_bytes().decode(),
        "dict": envelope.to_json(),
        "model": envelope,
    }[form]
    assert verify_envelope(data, key.verifying_key).clean


def test_statement_shape(record: RunRecord) -> None:
    doc = run_statement(record).to_json()
    assert doc["_type"] == "https://in-toto.io/Statement/v1"
    assert doc["predicateType"] == RUN_PREDICATE_TYPE == "https://playproof.dev/run/v1"
    assert doc["predicate"] == record.to_json()
    assert doc["subject"] == [
        {"name": "run-record", "digest": {"sha256": sha256_hex(canonical_json(record.to_json()))}},
        {"name": "build:toy", "digest": {"sha256": record.target.build_digest}},
    ]


def test_signature_over_the_payload_checks_with_plain_cryptography(
    record: RunRecord, key: SigningKey
) -> None:
    # What any DSSE tool does: PAE over the decoded payload, Ed25519 verify.
    doc = sign_record(record, key).to_json()
    payload = base64.b64decode(doc["payload"])
    message = b"DSSEv1 %d %b %d %b" % (
        len(doc["payloadType"]),
        doc["payloadType"].encode(),
        len(payload),
        payload,
    )
    assert key.verifying_key.verify(base64.b64decode(doc["signatures"][0]["sig"]), message)


def test_no_trusted_key_fails_the_signature_check(record: RunRecord, key: SigningKey) -> None:
    nothing: list[list[VerifyingKey] | None] = [None, []]
    for trusted in nothing:
        verdict = verify_envelope(sign_record(record, key).to_bytes(), trusted)
        assert verdict.verdict == "rejected"
        assert _failed(verdict)["signature-valid"] == "no trusted key given"
        assert verdict.record is None


def test_untrusted_signer_is_rejected(
    record: RunRecord, key: SigningKey, other_key: SigningKey
) -> None:
    verdict = verify_envelope(sign_record(record, other_key).to_bytes(), [key.verifying_key])
    assert "signature-valid" in _failed(verdict)
    assert verdict.key_id is None


def test_untrusted_signer_claiming_a_trusted_key_id(
    record: RunRecord, key: SigningKey, other_key: SigningKey
) -> None:
    envelope = sign_record(record, other_key)
    sig = envelope.signatures[0].model_copy(update={"keyid": key.key_id})
    forged = envelope.model_copy(update={"signatures": (sig,)})
    assert "signature-valid" in _failed(verify_envelope(forged.to_json(), [key.verifying_key]))


def test_changed_key_id_is_rejected(record: RunRecord, key: SigningKey) -> None:
    envelope = sign_record(record, key)
    sig = envelope.signatures[0].model_copy(update={"keyid": "0" * 64})
    forged = envelope.model_copy(update={"signatures": (sig,)})
    assert "signature-valid" in _failed(verify_envelope(forged.to_json(), [key.verifying_key]))


def test_one_good_signature_among_bad_ones_is_enough(
    record: RunRecord, key: SigningKey, other_key: SigningKey
) -> None:
    envelope = sign_record(record, [other_key, key])
    verdict = verify_envelope(envelope.to_bytes(), [key.verifying_key])
    assert verdict.clean
    assert verdict.key_id == key.key_id


def test_edited_input_with_rebuilt_chain_and_digests_is_rejected(
    record: RunRecord, make_record: RecordFactory, key: SigningKey
) -> None:
    envelope = sign_record(record, key)
    # The forger redoes every hash: the chain and the subjects are consistent again.
    forged_record = make_record(inputs=("up", "up", "right", "fire"))
    forged = _with_payload(envelope, run_statement(forged_record).to_json())
    verdict = verify_envelope(forged.to_bytes(), [key.verifying_key])
    assert verdict.verdict == "rejected"
    assert "signature-valid" in _failed(verdict)
    assert verdict.record is None


def test_appended_claim_is_rejected(
    record: RunRecord, make_record: RecordFactory, key: SigningKey
) -> None:
    envelope = sign_record(record, key)
    forged_record = make_record(claimed=(("reach-door", 3), ("open-chest", 4)))
    forged = _with_payload(envelope, run_statement(forged_record).to_json())
    assert "signature-valid" in _failed(verify_envelope(forged.to_bytes(), [key.verifying_key]))


@pytest.mark.parametrize("position", [0, 1, 57, -3, -1])
def test_flipped_payload_byte_is_rejected(
    record: RunRecord, key: SigningKey, position: int
) -> None:
    envelope = sign_record(record, key)
    payload = bytearray(envelope.payload_bytes())
    payload[position] ^= 0x01
    forged = _with_payload(envelope, bytes(payload))
    assert "signature-valid" in _failed(verify_envelope(forged.to_bytes(), [key.verifying_key]))


def test_changed_payload_type_is_rejected(record: RunRecord, key: SigningKey) -> None:
    envelope = sign_record(record, key).model_copy(update={"payloadType": "application/json"})
    assert "signature-valid" in _failed(verify_envelope(envelope.to_bytes(), [key.verifying_key]))


@pytest.mark.parametrize(
    "sig",
    [
        b64encode(b"\x00" * 63),
        b64encode(b"\x00" * 65),
        b64encode(b"\x00" * 64),
        "not base64!",
        "@@@@",
    ],
)
def test_bad_signature_bytes_are_rejected(record: RunRecord, key: SigningKey, sig: str) -> None:
    envelope = sign_record(record, key)
    bad = EnvelopeSignature(keyid=key.key_id, sig=sig)
    forged = envelope.model_copy(update={"signatures": (bad,)})
    verdict = verify_envelope(forged.to_bytes(), [key.verifying_key])
    assert verdict.verdict == "rejected"
    assert "signature-valid" in _failed(verdict)


def test_subject_mismatch_under_a_genuine_signature(record: RunRecord, key: SigningKey) -> None:
    # A buggy (or dishonest) signer: the signature is fine, the subjects are not.
    statement = run_statement(record).to_json()
    statement["subject"][0]["digest"]["sha256"] = "f" * 64
    verdict = verify_envelope(
        _signed_payload(key, canonical_json(statement)).to_bytes(), [key.verifying_key]
    )
    assert set(_failed(verdict)) == {"subjects-match"}
    statement = run_statement(record).to_json()
    statement["subject"][1]["name"] = "build:other"
    verdict = verify_envelope(
        _signed_payload(key, canonical_json(statement)).to_bytes(), [key.verifying_key]
    )
    assert set(_failed(verdict)) == {"subjects-match"}
    statement = run_statement(record).to_json()
    statement["subject"].append(statement["subject"][0])
    verdict = verify_envelope(
        _signed_payload(key, canonical_json(statement)).to_bytes(), [key.verifying_key]
    )
    assert "appears twice" in _failed(verdict)["subjects-match"]


def test_build_subject_must_equal_the_pinned_build(
    record: RunRecord, make_record: RecordFactory, key: SigningKey
) -> None:
    statement = run_statement(record).to_json()
    statement["subject"][1]["digest"]["sha256"] = "a" * 64
    verdict = verify_envelope(_signed_payload(key, canonical_json(statement)), [key.verifying_key])
    assert set(_failed(verdict)) == {"subjects-match"}
    assert record_digest(record) == statement["subject"][0]["digest"]["sha256"]


def _statement_variants(record: RunRecord) -> dict[str, bytes]:
    good = run_statement(record).to_json()
    wrong_type = {**good, "_type": "https://in-toto.io/Statement/v0.1"}
    wrong_predicate_type = {**good, "predicateType": "https://playproof.dev/grade/v1"}
    bad_predicate = {**good, "predicate": {**good["predicate"], "seed": -1}}
    extra = {**good, "unexpected": True}
    no_subject = {**good, "subject": []}
    variants = {
        "not json": b"this is not json",
        "json list": b"[1, 2, 3]",
        "truncated": canonical_json(good)[:-10],
        "wrong _type": canonical_json(wrong_type),
        "wrong predicateType": canonical_json(wrong_predicate_type),
        "predicate not a record": canonical_json(bad_predicate),
        "predicate empty": canonical_json({**good, "predicate": {}}),
        "extra field": canonical_json(extra),
        "no subject": canonical_json(no_subject),
        "nan": canonical_json(good).replace(b'"seed":7', b'"seed":NaN'),
    }
    assert set(variants) == set(STATEMENT_VARIANTS)
    return variants


STATEMENT_VARIANTS = [
    "not json",
    "json list",
    "truncated",
    "wrong _type",
    "wrong predicateType",
    "predicate not a record",
    "predicate empty",
    "extra field",
    "no subject",
    "nan",
]


@pytest.mark.parametrize("variant", STATEMENT_VARIANTS)
def test_malformed_statements_under_a_genuine_signature(
    record: RunRecord, key: SigningKey, variant: str
) -> None:
    payload = _statement_variants(record)[variant]
    verdict = verify_envelope(_signed_payload(key, payload).to_bytes(), [key.verifying_key])
    failed = _failed(verdict)
    assert verdict.verdict == "rejected"
    assert "statement-well-formed" in failed
    assert "envelope-well-formed" not in failed
    assert "signature-valid" not in failed
    assert failed["subjects-match"] == "not checked: statement-well-formed failed"
    assert verdict.record is None
    assert verdict.key_id == key.key_id


def test_wrong_payload_type_under_a_genuine_signature(record: RunRecord, key: SigningKey) -> None:
    payload = run_statement(record).to_payload()
    envelope = _signed_payload(key, payload, payload_type="application/json")
    failed = _failed(verify_envelope(envelope.to_bytes(), [key.verifying_key]))
    assert "payloadType" in failed["statement-well-formed"]


def test_expected_predicate_type_is_enforced(record: RunRecord, key: SigningKey) -> None:
    envelope = sign_record(record, key)
    verdict = verify_envelope(
        envelope.to_bytes(), [key.verifying_key], "https://example.com/other/v1"
    )
    assert "predicateType" in _failed(verdict)["statement-well-formed"]


HOSTILE: list[Any] = [
    None,
    {},
    [],
    0,
    1.5,
    True,
    "",
    b"",
    "null",
    "{}",
    "[]",
    '{"payload":',
    "x" * (20 * 1024 * 1024),
    b"{" * (17 * 1024 * 1024),
    "[" * 200_000,
    {"payload": None, "payloadType": None, "signatures": None},
    {
        "payload": "!!!",
        "payloadType": IN_TOTO_PAYLOAD_TYPE,
        "signatures": [{"keyid": "k", "sig": "AA=="}],
    },
    {
        "payload": "aGk=",
        "payloadType": IN_TOTO_PAYLOAD_TYPE,
        "signatures": [{"keyid": 5, "sig": []}],
    },
    {"payload": "aGk=", "payloadType": IN_TOTO_PAYLOAD_TYPE, "signatures": [None]},
    {"payload": "aGk=", "payloadType": IN_TOTO_PAYLOAD_TYPE, "signatures": "AA=="},
    {
        "payload": "aGk=",
        "payloadType": IN_TOTO_PAYLOAD_TYPE,
        "signatures": [{"sig": "AA=="}] * 1000,
    },
    {1: 2},
    object(),
    float("nan"),
    b"\xff\xfe\x00",
]


@pytest.mark.parametrize("data", HOSTILE, ids=lambda d: type(d).__name__)
def test_hostile_input_is_rejected_never_raised(data: Any, key: SigningKey) -> None:
    verdict = verify_envelope(data, [key.verifying_key])
    assert verdict.verdict == "rejected"
    assert [c.id for c in verdict.checks] == list(SIGNATURE_CHECK_IDS)
    assert not verdict.checks[0].passed
    assert verdict.record is None
    assert all(len(c.reason) <= 2048 for c in verdict.checks)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(_json)
def test_arbitrary_json_is_rejected(value: Any) -> None:
    verdict = verify_envelope(json.dumps(value), None)
    assert verdict.verdict == "rejected"


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_envelope_bytes_never_verify_a_different_record(
    record: RunRecord, key: SigningKey, data: st.DataObject
) -> None:
    original = sign_record(record, key)
    text = bytearray(original.to_bytes())
    for _ in range(data.draw(st.integers(1, 3))):
        position = data.draw(st.integers(0, len(text) - 1))
        text[position] = data.draw(st.integers(0, 255))
    verdict = verify_envelope(bytes(text), [key.verifying_key])
    if verdict.clean:
        # Only a change that decodes to the very same signed bytes may pass
        # (e.g. a non-canonical base64 tail); the record is then identical.
        assert verdict.record == record
        assert _statement_of(Envelope.model_validate_json(bytes(text))) == _statement_of(original)
