"""Each canonical form is computed once per signature, and verification reads strictly.

The record digest in a statement's subjects is SHA-256 over the record's
RFC 8785 bytes as received; values the published schema forbids are refused,
not coerced into a record that happens to match.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playproof.core.canonical import canonical_json, sha256_hex
from playproof.core.record import RunRecord
from playproof.errors import FormatError
from playproof.sign import (
    IN_TOTO_PAYLOAD_TYPE,
    RUN_PREDICATE_TYPE,
    RUN_RECORD,
    Envelope,
    SigningKey,
    make_statement,
    record_digest,
    run_statement,
    run_subjects,
    sign_record,
    statement_payload,
    verify_envelope,
)
from playproof.sign._dsse import b64encode, pae

RecordFactory = Callable[..., RunRecord]


def _signed(key: SigningKey, payload: bytes) -> Envelope:
    from playproof.sign import EnvelopeSignature

    return Envelope(
        payload=b64encode(payload),
        payloadType=IN_TOTO_PAYLOAD_TYPE,
        signatures=(
            EnvelopeSignature(
                keyid=key.key_id, sig=b64encode(key.sign(pae(IN_TOTO_PAYLOAD_TYPE, payload)))
            ),
        ),
    )


def _failed(verdict: Any) -> dict[str, str]:
    return {c.id: c.reason for c in verdict.checks if not c.passed}


def _old_payload(record: RunRecord) -> bytes:
    """The payload as it was built before: the reference canonicalizer, twice."""
    subjects = {
        "run-record": sha256_hex(bytes(rfc8785.dumps(record.to_json()))),
        f"build:{record.target.game_id}": record.target.build_digest,
    }
    statement = make_statement(subjects, RUN_PREDICATE_TYPE, record.to_json())
    return bytes(rfc8785.dumps(statement.to_json()))


costs = st.none() | st.sampled_from([0.0, 0.002, 1.0, 1e-7, 0.1]) | st.floats(0, 10)
latencies = st.sampled_from([0.0, 1.5, 3.0, 1e-5, 123456.75]) | st.floats(0, 1e6)
words = st.text(
    st.characters(codec="utf-8") | st.sampled_from(["\n", '"', "\\", "\x00", "\U0001f600"]),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(words, min_size=1, max_size=12),
    st.integers(0, 2**32 - 1),
    st.text(min_size=1, max_size=20),
    st.data(),
)
def test_generated_records_sign_to_the_reference_bytes(
    make_record: RecordFactory,
    key: SigningKey,
    inputs: list[str],
    seed: int,
    actor_id: str,
    data: st.DataObject,
) -> None:
    from playproof.core.record import Actor

    record = make_record(inputs, seed=seed, actor=Actor(kind="scripted", id=actor_id))
    updated = [
        d.model_copy(update={"cost_usd": data.draw(costs), "latency_ms": data.draw(latencies)})
        for d in record.decisions
    ]
    record = record.model_copy(update={"decisions": tuple(updated)})
    assert canonical_json(record.to_json()) == bytes(rfc8785.dumps(record.to_json()))
    payload = sign_record(record, key).payload_bytes()
    assert payload == _old_payload(record) == run_statement(record).to_payload()
    verdict = verify_envelope(payload and sign_record(record, key), key.verifying_key)
    assert verdict.clean, verdict.reasons()


def test_statement_payload_splices_the_predicate(record: RunRecord) -> None:
    body = canonical_json(record.to_json())
    spliced = statement_payload(run_subjects(record), RUN_PREDICATE_TYPE, body)
    assert spliced == run_statement(record).to_payload()
    assert body in spliced
    assert run_subjects(record)["run-record"] == record_digest(record) == sha256_hex(body)


def test_signing_serializes_the_record_once(
    record: RunRecord, key: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    dump = RunRecord.model_dump

    def counting(self: RunRecord, **options: Any) -> dict[str, Any]:
        calls.append(1)
        return dump(self, **options)

    monkeypatch.setattr(RunRecord, "model_dump", counting)
    sign_record(record, key)
    assert len(calls) == 1


def test_verifying_never_reserializes_the_parsed_record(
    record: RunRecord, key: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    envelope = sign_record(record, key).to_bytes()

    def refuse(self: RunRecord, **options: Any) -> dict[str, Any]:
        raise AssertionError("the verifier re-serialized a parsed record")

    monkeypatch.setattr(RunRecord, "model_dump", refuse)
    verdict = verify_envelope(envelope, key.verifying_key)
    assert verdict.clean, verdict.reasons()


def _lax(record: RunRecord, path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    data = record.to_json()
    target: Any = data
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return data


# A float with an integral value (turn 1.0) has the same canonical bytes as
# the integer, so a canonical payload cannot carry one; a payload from other
# tooling can, and is tested below.
LAX = {
    "seed as a string": (("seed",), "7"),
    "game_over as a word": (("game_over",), "no"),
    "milestones_total as a float": (("milestones_total",), 3.5),
    "budget as a string": (("limits", "budget_usd"), "1.0"),
    "max_turns as a string": (("limits", "max_turns"), "100"),
    "stop_at_game_over as a number": (("limits", "stop_at_game_over"), 1),
    "input as a number": (("decisions", "inputs", 0), 5),
    "latency as a string": (("decisions", "latencies_ms", 0), "1.5"),
}


@pytest.mark.parametrize("case", LAX)
def test_lax_values_under_the_old_digest_recipe_are_rejected(
    record: RunRecord, key: SigningKey, case: str
) -> None:
    """A forger signs lax values with the digest of the record they coerce to."""
    path, value = LAX[case]
    predicate = _lax(record, path, value)
    statement = make_statement(run_subjects(record), RUN_PREDICATE_TYPE, predicate)
    verdict = verify_envelope(_signed(key, statement.to_payload()), key.verifying_key)
    assert not verdict.clean
    assert verdict.record is None
    assert "statement-well-formed" in _failed(verdict)


@pytest.mark.parametrize("case", LAX)
def test_lax_values_under_their_own_digest_are_rejected(
    record: RunRecord, key: SigningKey, case: str
) -> None:
    """Even when the digest is honest about the lax bytes, the schema refuses them."""
    path, value = LAX[case]
    predicate = _lax(record, path, value)
    subjects = {**run_subjects(record), "run-record": sha256_hex(canonical_json(predicate))}
    statement = make_statement(subjects, RUN_PREDICATE_TYPE, predicate)
    verdict = verify_envelope(_signed(key, statement.to_payload()), key.verifying_key)
    assert not verdict.clean
    assert "statement-well-formed" in _failed(verdict)


def test_a_float_turn_in_a_non_canonical_payload_is_rejected(
    record: RunRecord, key: SigningKey
) -> None:
    """Canonical form prints 1.0 as 1; other tooling's payload keeps 1.0 and is read as is."""
    record = record.as_schema("playproof/run/v1")  # only v1 records write turns
    predicate = _lax(record, ("decisions", 0, "turn"), 1.0)
    subjects = {**run_subjects(record), "run-record": sha256_hex(canonical_json(predicate))}
    statement = make_statement(subjects, RUN_PREDICATE_TYPE, predicate).to_json()
    payload = json.dumps(statement, indent=1).encode()
    assert b'"turn": 1.0' in payload
    verdict = verify_envelope(_signed(key, payload), key.verifying_key)
    assert "turn" in _failed(verdict)["statement-well-formed"]


def test_a_non_canonical_payload_with_honest_digests_verifies(
    record: RunRecord, key: SigningKey
) -> None:
    statement = run_statement(record).to_json()
    payload = json.dumps(statement, indent=2, sort_keys=False).encode()
    assert payload != run_statement(record).to_payload()
    verdict = verify_envelope(_signed(key, payload), key.verifying_key)
    assert verdict.clean, verdict.reasons()
    assert verdict.record == record


def test_a_repeated_key_in_the_payload_is_rejected(record: RunRecord, key: SigningKey) -> None:
    payload = run_statement(record).to_payload()
    # The last "seed" wins in a lenient parser; the first one is what a reader may see.
    forged = payload.replace(b'"seed":7', b'"seed":8,"seed":7', 1)
    assert forged != payload
    verdict = verify_envelope(_signed(key, forged), key.verifying_key)
    assert "repeats the key 'seed'" in _failed(verdict)["statement-well-formed"]


def test_the_digest_covers_the_record_as_received(record: RunRecord, key: SigningKey) -> None:
    """A record written without an optional field is hashed without it, as a third party would."""
    predicate = record.to_json()
    del predicate["target"]["name"]  # optional; the model would write it back as null
    subjects = {**run_subjects(record), "run-record": sha256_hex(canonical_json(predicate))}
    statement = make_statement(subjects, RUN_PREDICATE_TYPE, predicate)
    verdict = verify_envelope(_signed(key, statement.to_payload()), key.verifying_key)
    assert verdict.clean, verdict.reasons()
    stale = make_statement(run_subjects(record), RUN_PREDICATE_TYPE, predicate)
    verdict = verify_envelope(_signed(key, stale.to_payload()), key.verifying_key)
    assert "subjects-match" in _failed(verdict)


def test_the_run_kind_reads_records_strictly(record: RunRecord) -> None:
    text = canonical_json(record.to_json())
    assert RUN_RECORD.read(text) == record
    with pytest.raises(FormatError, match="seed"):
        RUN_RECORD.read(canonical_json(_lax(record, ("seed",), "7")))


@pytest.mark.parametrize(
    ("cost", "latency", "word"),
    [
        (0.0, 1.5, "up"),
        (None, 0.0, "\U0001f600"),
        (-0.0, 1e-7, 'a"\\\n\x00'),
        (2, 1e21, "x"),
        (1e-5, 123456789.125, "é"),
        (0.1, 2.0**60, "y"),
    ],
)
def test_record_bytes_equal_the_reference_for_any_decision_values(
    record: RunRecord, cost: Any, latency: Any, word: str
) -> None:
    """Decisions built without validation (as a ledger builds them) are written alike too."""
    from playproof.core.chain import Decision
    from playproof.sign._run import record_bytes

    odd = Decision.model_construct(turn=1, input=word, cost_usd=cost, latency_ms=latency)
    changed = record.model_copy(update={"decisions": (odd, *record.decisions[1:])})
    assert record_bytes(changed) == bytes(rfc8785.dumps(changed.to_json()))


@pytest.mark.parametrize(
    "fields",
    [
        {"turn": 1, "input": "\ud800", "cost_usd": 0.0, "latency_ms": 1.0},
        {"turn": 2**60, "input": "up", "cost_usd": 0.0, "latency_ms": 1.0},
        {"turn": 1, "input": "up", "cost_usd": float("nan"), "latency_ms": 1.0},
    ],
)
def test_record_bytes_refuse_what_has_no_canonical_form(
    record: RunRecord, fields: dict[str, Any]
) -> None:
    from playproof.core.chain import Decision
    from playproof.sign._run import record_bytes

    odd = Decision.model_construct(**fields)
    changed = record.model_copy(update={"decisions": (odd,)})
    with pytest.raises(FormatError):
        record_bytes(changed)


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.sampled_from([0, 0.0, -0.0, 2**53, 2.0**60, 2**60, 1e21, 1e-7, 1.5])
    | st.text(max_size=4)
)
decision_like = st.fixed_dictionaries(
    {"cost_usd": scalars, "input": scalars, "latency_ms": scalars, "turn": scalars},
    optional={"extra": scalars},
) | st.dictionaries(st.text(max_size=3), scalars, max_size=5)


@settings(max_examples=300)
@given(st.lists(decision_like | scalars, max_size=6), st.dictionaries(st.text(max_size=3), scalars))
def test_parsed_records_are_written_as_the_general_canonicalizer_writes_them(
    decisions: list[Any], rest: dict[str, Any]
) -> None:
    from playproof.sign._run import predicate_bytes

    predicate = {**rest, "decisions": decisions}
    try:
        expected = canonical_json(predicate)
    except FormatError:
        with pytest.raises(FormatError):
            predicate_bytes(predicate)
        return
    assert predicate_bytes(predicate) == expected


def test_parsed_record_fast_path_is_taken_for_plain_decisions(
    record: RunRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playproof.sign import _run

    parsed = json.loads(canonical_json(record.to_json()))
    general = canonical_json

    def no_decisions(value: Any) -> bytes:
        assert value is not parsed, "general path taken"
        assert value is not parsed["decisions"], "general path taken"
        return general(value)

    monkeypatch.setattr(_run, "canonical_json", no_decisions)
    assert _run.predicate_bytes(parsed) == canonical_json(parsed)
