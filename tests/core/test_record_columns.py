"""Run records in both forms: v2 decision columns and v1 decision objects."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from playproof.adapters.native import Game2048
from playproof.core.canonical import canonical_json, sha256_hex
from playproof.core.chain import MAX_INPUT_BYTES, Decision, chain_head, genesis_hash
from playproof.core.record import (
    RECORD_SCHEMA,
    RECORD_SCHEMA_V1,
    DecisionLog,
    RunRecord,
    parse_run_record,
    read_decision_columns,
)
from playproof.errors import FormatError
from playproof.sign import SigningKey, record_digest, sign_record, verify_envelope
from playproof.sign._run import predicate_bytes, record_bytes
from playproof.targets import get_target
from playproof.verify import attest

FIXTURES = Path(__file__).parents[1] / "fixtures" / "records"
V1_TEXT = (FIXTURES / "v1-2048-bare.json").read_bytes()
V1 = parse_run_record(V1_TEXT)
KEY = SigningKey.generate()

words = st.text(min_size=1, max_size=12)
measured = st.floats(min_value=0, max_value=1e15, allow_nan=False, allow_infinity=False)
columns = st.integers(0, 30).flatmap(
    lambda n: st.tuples(
        st.lists(words, min_size=n, max_size=n),
        st.lists(st.none() | measured, min_size=n, max_size=n),
        st.lists(measured, min_size=n, max_size=n),
    )
)


def _with_columns(
    inputs: list[str], costs: list[float | None], latencies: list[float]
) -> RunRecord:
    """The fixture record with other decisions (not a consistent run; a format check)."""
    return V1.model_copy(
        update={"schema_": RECORD_SCHEMA, "decisions": DecisionLog(inputs, costs, latencies)}
    )


def test_new_records_are_written_as_v2_columns() -> None:
    record = V1.as_schema(RECORD_SCHEMA)
    document = record.to_json()
    assert document["schema"] == "playproof/run/v2"
    assert list(document["decisions"]) == ["inputs", "costs_usd", "latencies_ms"]
    assert document["decisions"]["inputs"] == list(V1.inputs)
    assert list(document)[: list(document).index("decisions") + 2] == [
        "schema",
        "target",
        "actor",
        "seed",
        "limits",
        "decisions",
        "chain_head",
    ]


def test_a_v1_record_keeps_its_form_and_its_signed_digest() -> None:
    assert V1.schema_ == RECORD_SCHEMA_V1
    assert V1.decisions.form == "rows"
    assert canonical_json(V1.to_json()) == canonical_json(json.loads(V1_TEXT))
    assert record_digest(V1) == sha256_hex(canonical_json(json.loads(V1_TEXT)))


@given(columns)
def test_v2_round_trips_exactly(cols: tuple[list[str], list[float | None], list[float]]) -> None:
    record = _with_columns(*cols)
    text = record_bytes(record)
    assert text == bytes(rfc8785.dumps(record.to_json()))
    back = parse_run_record(text)
    assert back == record
    assert back.decisions.form == "columns"
    assert record_bytes(back) == text
    assert predicate_bytes(json.loads(text)) == text


def test_v1_and_v2_of_one_run_share_the_chain_head_and_verify_alike() -> None:
    target = get_target("native/2048")
    v2 = parse_run_record(record_bytes(V1.as_schema(RECORD_SCHEMA)))
    pin = V1.target
    genesis = genesis_hash(pin.game_id, pin.build_digest, pin.contract_hash, seed=V1.seed)
    assert chain_head(genesis, v2.decisions) == chain_head(genesis, V1.decisions) == V1.chain_head
    old = attest(V1, Game2048(), target.contract)
    new = attest(v2, Game2048(), target.contract)
    assert old.clean
    assert new.clean
    assert [(c.id, c.passed) for c in old.checks] == [(c.id, c.passed) for c in new.checks]
    assert old.verified == new.verified
    envelope = sign_record(v2, KEY).to_bytes()
    verdict = verify_envelope(envelope, KEY.verifying_key)
    assert verdict.clean, verdict.reasons()
    assert verdict.record == v2


def test_a_v2_record_is_less_than_half_the_bytes_of_its_v1_form() -> None:
    v2 = record_bytes(V1.as_schema(RECORD_SCHEMA))
    assert len(v2) * 2 < len(record_bytes(V1))


def test_the_log_reads_as_a_sequence_of_decisions() -> None:
    log = V1.decisions
    assert isinstance(log, DecisionLog)
    assert log[0] == Decision(
        turn=1, input=log.inputs[0], cost_usd=log.costs_usd[0], latency_ms=log.latencies_ms[0]
    )
    assert log[-1].turn == len(log)
    assert [d.turn for d in log[2:5]] == [3, 4, 5]
    assert tuple(log) == log[:]
    assert log == tuple(log)
    with pytest.raises(IndexError):
        log[len(log)]


def test_misnumbered_decisions_have_no_v2_form() -> None:
    rows = (
        Decision(turn=1, input="up", cost_usd=0.0, latency_ms=1.0),
        Decision(turn=3, input="up", cost_usd=0.0, latency_ms=1.0),
    )
    record = V1.model_copy(update={"schema_": RECORD_SCHEMA, "decisions": DecisionLog.of(rows)})
    with pytest.raises(FormatError, match="decision 2 is numbered turn 3"):
        record_bytes(record)
    v1 = record.as_schema(RECORD_SCHEMA_V1)
    assert [d["turn"] for d in v1.to_json()["decisions"]] == [1, 3]


def test_a_record_built_in_python_from_decisions_is_v2() -> None:
    data = {**V1.model_dump(by_alias=True), "decisions": tuple(V1.decisions)}
    del data["schema"]
    record = RunRecord.model_validate(data)
    assert record.schema_ == RECORD_SCHEMA
    assert record.decisions == V1.decisions


# --- the bulk column reader agrees with the schema's model --------------------------

anything = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([2**70, -0.0, 1e308, 0.5, -1e-300])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=3)
    | st.lists(st.integers(), max_size=1)
)


@given(
    st.lists(words | anything, max_size=4),
    st.lists(measured | anything, max_size=4),
    st.lists(measured | anything, max_size=4),
    st.booleans(),
)
def test_the_bulk_reader_judges_columns_as_the_schema_does(
    inputs: list[Any], costs: list[Any], latencies: list[Any], extra: bool
) -> None:
    value: dict[str, Any] = {"inputs": inputs, "costs_usd": costs, "latencies_ms": latencies}
    if extra:
        value["turns"] = []
    text = V1.as_schema(RECORD_SCHEMA).to_json()
    text["decisions"] = value
    reference: RunRecord | None
    try:
        reference = RunRecord.model_validate_json(json.dumps(text), strict=True)
    except ValueError:
        reference = None
    try:
        log = read_decision_columns(json.loads(json.dumps(value)))
    except FormatError:
        assert reference is None
    else:
        assert reference is not None
        assert log == reference.decisions
        assert all(type(c) is float for c in log.costs_usd if c is not None)
        assert all(type(ms) is float for ms in log.latencies_ms)


def test_integers_read_as_floats_beside_equal_floats() -> None:
    """An integer and an equal float share a table entry; both come out as that float."""
    value = {
        "inputs": ["a"] * 5,
        "costs_usd": [0, 0.0, None, 5, 2.5],
        "latencies_ms": [3, 3.0, 0, 7, 2**60],
    }
    log = read_decision_columns(value)
    assert log.costs_usd == (0.0, 0.0, None, 5.0, 2.5)
    assert log.latencies_ms == (3.0, 3.0, 0.0, 7.0, 2.0**60)
    assert [type(ms) for ms in log.latencies_ms] == [float] * 5


def test_the_bulk_reader_names_the_first_bad_value() -> None:
    good = {"inputs": ["up", "down"], "costs_usd": [0, None], "latencies_ms": [1.5, 2]}
    assert read_decision_columns(good).costs_usd == (0.0, None)
    cases = [
        ({"inputs": ["up", ""]}, "decisions.inputs.1"),
        ({"inputs": ["up", "é" * (MAX_INPUT_BYTES // 2 + 1)]}, "decisions.inputs.1"),
        ({"costs_usd": [0, -1]}, "decisions.costs_usd.1"),
        ({"costs_usd": [True, 0]}, "decisions.costs_usd.0"),
        ({"latencies_ms": [1.0, None]}, "decisions.latencies_ms.1"),
        ({"latencies_ms": [math.inf, 1.0]}, "decisions.latencies_ms.0"),
        ({"latencies_ms": [1.0, math.nan]}, "decisions.latencies_ms.1"),
        ({"latencies_ms": [10**400, 1.0]}, "decisions.latencies_ms.0"),
        ({"latencies_ms": [1.0]}, "differ in length: 2 inputs, 2 costs, 1 latencies"),
        ({"latencies_ms": (1.0, 2.0)}, "decisions.latencies_ms: must be an array"),
    ]
    for change, named in cases:
        with pytest.raises(FormatError, match=named.replace(".", r"\.")):
            read_decision_columns({**good, **change})


numbers = (
    st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.0, -0.0, 5.0, 1e-5, 1e-4, 1e16, 1e21, 2.0**53, 123456789.125, 0.1])
    | st.integers(-(2**53) + 1, 2**53 - 1)
    # What the engine records (latencies to 4 decimals), and integral floats
    # past 2**53, which repr() writes with a ".0" the fast path cuts.
    | st.floats(0, 1e12).map(lambda ms: round(ms, 4))
    | st.integers(-(2**62), 2**62).map(float)
)


@given(st.lists(st.none() | numbers, max_size=40), st.integers(1, 8))
def test_number_columns_are_written_as_rfc8785_writes_them(values: list[Any], chunk: int) -> None:
    """The C-encoder chunks and the number-by-number path agree with the reference."""
    import playproof.sign._run as run

    saved = run._CHUNK
    run._CHUNK = chunk  # several chunks, some plain and some not, in one column
    try:
        written = b"".join(run._numbers_parts(values, nullable=True))
    finally:
        run._CHUNK = saved
    assert written == bytes(rfc8785.dumps(values))


@pytest.mark.parametrize("bad", [math.nan, math.inf, True, "1", None])
def test_a_number_column_refuses_what_is_no_number(bad: Any) -> None:
    import playproof.sign._run as run

    with pytest.raises(FormatError):
        run._numbers_parts([1.5, bad], nullable=False)


def test_a_record_pickles_with_its_columns() -> None:
    """Records cross process boundaries (workers, executors) as pickles."""
    import pickle

    for record in (V1, V1.as_schema(RECORD_SCHEMA)):
        back = pickle.loads(pickle.dumps(record))
        assert back == record
        assert back.decisions.form == record.decisions.form
        assert record_bytes(back) == record_bytes(record)
