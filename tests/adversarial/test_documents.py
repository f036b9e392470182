"""Hostile documents for every parser and verifier of a verified format.

Records, signed envelopes, contracts, ledgers, corpus manifests and grade
records are fed truncated, bit-flipped, huge, deeply nested, duplicated-key,
NaN-laden, wrongly typed, markup-laden and invalid UTF-8 variants of a valid
document. Every case must end in a typed playproof error or a rejected verdict;
any other exception fails the test. Documents are also re-signed after the
mutation, so the strict readers behind a genuine signature are reached too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from campaigns import CONTRACT, KEY, Walker, campaign, continuous, signed_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toygame import ToyGame

from playproof import verify_record
from playproof.core.canonical import canonical_json, parse_json, sha256_hex
from playproof.core.contract import parse_contract
from playproof.core.record import RunRecord, parse_run_record
from playproof.corpus import load_manifest, verify_grade
from playproof.corpus._record import GRADE_PREDICATE_TYPE, GradeRecord
from playproof.engine import load_ledger
from playproof.errors import FormatError, PlayproofError
from playproof.sign import (
    IN_TOTO_PAYLOAD_TYPE,
    RUN_PREDICATE_TYPE,
    Envelope,
    EnvelopeSignature,
    make_statement,
    parse_envelope,
    run_subjects,
    sign_record,
    verify_envelope,
)
from playproof.sign._dsse import b64encode, pae
from playproof.verify import parse_record

DEEP = 100_000
ROOT = Path(__file__).resolve().parents[2]
MARKUP = ["[/x]", "[green]", "[bold red]boom[/]", "[link=http://x]y[/link]", "\x1b[31m"]
HOSTILE_VALUES: list[Any] = [
    "0",
    "yes",
    1.0,
    -1,
    2**63,
    -0.5,
    None,
    True,
    [],
    {},
    "",
    "\u0000",
    "\U0001f600",
    *MARKUP,
]
# JSON text no value carries: constants, out-of-range numbers, deep nesting.
HOSTILE_TEXTS = [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"[" * DEEP + b"]" * DEEP]


# --- valid documents to start from -------------------------------------------------


@cache
def toy_record() -> RunRecord:
    from playproof.drivers import ScriptedDriver

    return continuous(ScriptedDriver(["inc", "inc", "wait", "dec", "inc"]), max_turns=5)


def record_bytes() -> bytes:
    return canonical_json(toy_record().to_json())


@cache
def envelope_bytes() -> bytes:
    return sign_record(toy_record(), KEY).to_bytes()


def contract_bytes() -> bytes:
    return canonical_json(CONTRACT.model_dump(mode="json", by_alias=True))


@cache
def ledger_body(folder: Path) -> bytes:
    path = folder / "ledger.json"
    campaign(Walker(), path, max_turns=9, segment_turns=4)
    data = path.read_bytes()
    return data[: data.rindex(b',"signature":')] + b"}"


@cache
def grade_predicate() -> dict[str, Any]:
    record = GradeRecord(
        corpus_id="toy-corpus",
        corpus_version="1",
        corpus_digest=sha256_hex(b"corpus"),
        candidate={"command": ["./emu", "[green]"], "build_digest": sha256_hex(b"emu")},
        isolation="rlimits",
        limits={"cpu_seconds": 5.0, "wall_seconds": 10.0},
        results=[
            {"case_id": "a", "passed": True, "reason": "ok"},
            {"case_id": "b", "passed": False, "reason": "[/x] wrong"},
        ],
        passed=1,
        denominator=2,
        started_at=datetime(2025, 1, 1, tzinfo=UTC),
        finished_at=datetime(2025, 1, 1, 0, 1, tzinfo=UTC),
    )
    return record.to_json()


def manifest_bytes() -> bytes:
    return (ROOT / "src/playproof/corpus/data/blargg/manifest.json").read_bytes()


def signed(payload: bytes, payload_type: str = IN_TOTO_PAYLOAD_TYPE) -> bytes:
    """An envelope with a genuine trusted signature over any payload."""
    sig = b64encode(KEY.sign(pae(payload_type, payload)))
    envelope = Envelope(
        payload=b64encode(payload),
        payloadType=payload_type,
        signatures=(EnvelopeSignature(keyid=KEY.key_id, sig=sig),),
    )
    return envelope.to_bytes()


def statement_over(predicate_text: bytes, predicate_type: str, pins: dict[str, str]) -> bytes:
    """A statement around predicate text as given; the first subject is its honest digest."""
    try:
        honest = sha256_hex(canonical_json(json.loads(predicate_text)))
    except (ValueError, RecursionError, FormatError):
        honest = sha256_hex(predicate_text)
    names = list(pins)
    digests = {names[0]: honest, **{name: pins[name] for name in names[1:]}} if names else {}
    subjects = [{"digest": {"sha256": sha}, "name": name} for name, sha in digests.items()]
    return (
        b'{"_type":"https://in-toto.io/Statement/v1","predicate":'
        + predicate_text
        + b',"predicateType":'
        + json.dumps(predicate_type).encode()
        + b',"subject":'
        + json.dumps(subjects, separators=(",", ":")).encode()
        + b"}"
    )


# --- the parsers and verifiers, each as "bytes in, outcome out" ------------------


def _typed(call: Callable[[], Any]) -> Any:
    """Run ``call``; a playproof error is an acceptable outcome, anything else fails."""
    try:
        return call()
    except PlayproofError as exc:
        return exc


def read_record(data: bytes) -> Any:
    return _typed(lambda: parse_run_record(data))


def verify_bare_record(data: bytes) -> Any:
    record, why = parse_record(data)
    assert (record is None) == bool(why.startswith("record is malformed"))
    report = verify_record(data, game=ToyGame(), contract=CONTRACT)
    assert record is not None or not report.clean
    return report


def verify_signed_envelope(data: bytes) -> Any:
    verdict = verify_envelope(data, KEY.verifying_key)
    _typed(lambda: parse_envelope(data))
    passed = {c.id for c in verdict.checks if c.passed}
    assert verdict.record is None or {"signature-valid", "statement-well-formed"} <= passed
    return verdict


def read_contract(data: bytes) -> Any:
    return _typed(lambda: parse_contract(parse_json(data, limit=1 << 20, what="contract")))


def read_manifest(folder: Path) -> Callable[[bytes], Any]:
    def read(data: bytes) -> Any:
        path = folder / "manifest.json"
        path.write_bytes(data)
        return _typed(lambda: load_manifest(path))

    return read


def read_ledger(folder: Path) -> Callable[[bytes], Any]:
    def read(body: bytes) -> Any:
        path = folder / "mutated-ledger.json"
        path.write_bytes(signed_file(body) if body.endswith(b"}") else body)
        return _typed(lambda: load_ledger(path, KEY.verifying_key))

    return read


def verify_grade_envelope(data: bytes) -> Any:
    report, record = verify_grade(data, KEY.verifying_key)
    assert record is not None or not report.clean
    return report


def resigned_record(predicate_text: bytes) -> Any:
    """A mutated record behind a genuine signature and honest digests."""
    pin = toy_record().target
    pins = {"run-record": "", f"build:{pin.game_id}": pin.build_digest}
    payload = statement_over(predicate_text, RUN_PREDICATE_TYPE, pins)
    return verify_signed_envelope(signed(payload))


def resigned_grade(predicate_text: bytes) -> Any:
    pins = {
        "grade-record": "",
        "corpus": grade_predicate()["corpus_digest"],
        "candidate": grade_predicate()["candidate"]["build_digest"],
    }
    payload = statement_over(predicate_text, GRADE_PREDICATE_TYPE, pins)
    return verify_grade_envelope(signed(payload))


# --- mutations ------------------------------------------------------------------


def _leaf_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaf_paths(v, (*prefix, k))] or [prefix]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaf_paths(v, (*prefix, i))] or [prefix]
    return [prefix]


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return copy


@st.composite
def mutated(draw: st.DrawFn, original: bytes) -> bytes:
    """A hostile variant of ``original`` (JSON text)."""
    kind = draw(
        st.sampled_from(
            ["truncate", "flip", "insert", "leaf", "leaf-text", "duplicate", "invalid-utf8"]
        )
    )
    at = draw(st.integers(0, max(0, len(original) - 1)))
    if kind == "truncate":
        return original[:at]
    if kind == "flip":
        return original[:at] + bytes([draw(st.integers(0, 255))]) + original[at + 1 :]
    if kind == "insert":
        return original[:at] + draw(st.binary(min_size=1, max_size=8)) + original[at:]
    if kind == "invalid-utf8":
        return (
            original[:at]
            + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"]))
            + original[at:]
        )
    value = json.loads(original)
    path = draw(st.sampled_from(_leaf_paths(value)))
    if kind == "leaf":
        return json.dumps(_replace(value, path, draw(st.sampled_from(HOSTILE_VALUES)))).encode()
    if kind == "leaf-text":
        marker = "\u2603-marker-\u2603"
        text = json.dumps(_replace(value, path, marker)).encode()
        return text.replace(json.dumps(marker).encode(), draw(st.sampled_from(HOSTILE_TEXTS)))
    # duplicate: repeat the document's first member with a hostile value
    if not isinstance(value, dict) or not value:
        return original + original
    key = next(iter(value))
    hostile = json.dumps(draw(st.sampled_from(HOSTILE_VALUES)))
    return b"{" + json.dumps(key).encode() + b":" + hostile.encode() + b"," + original[1:]


FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FUZZ
@given(st.data())
def test_records_fuzzed(data: st.DataObject) -> None:
    text = data.draw(mutated(record_bytes()))
    read_record(text)
    verify_bare_record(text)
    resigned_record(text)


@FUZZ
@given(st.data())
def test_signed_envelopes_fuzzed(data: st.DataObject) -> None:
    text = data.draw(mutated(envelope_bytes()))
    verdict = verify_signed_envelope(text)
    if verdict.record is not None:  # only formatting of the envelope itself may change
        assert verdict.record == toy_record()


@FUZZ
@given(st.data())
def test_contracts_fuzzed(data: st.DataObject) -> None:
    read_contract(data.draw(mutated(contract_bytes())))


@FUZZ
@given(st.data())
def test_manifests_fuzzed(tmp_path: Path, data: st.DataObject) -> None:
    read_manifest(tmp_path)(data.draw(mutated(manifest_bytes())))


@FUZZ
@given(st.data())
def test_ledgers_fuzzed(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    folder = tmp_path_factory.getbasetemp()
    body = ledger_body(folder)
    read_ledger(folder)(data.draw(mutated(body)))


@FUZZ
@given(st.data())
def test_grade_records_fuzzed(data: st.DataObject) -> None:
    text = data.draw(mutated(canonical_json(grade_predicate())))
    resigned_grade(text)
    verify_grade_envelope(
        data.draw(mutated(signed(statement_over(text, GRADE_PREDICATE_TYPE, {}))))
    )


# --- the named hostile cases, for every reader -------------------------------------


def _readers(folder: Path) -> dict[str, Callable[[bytes], Any]]:
    return {
        "record": read_record,
        "bare record verifier": verify_bare_record,
        "signed record verifier": verify_signed_envelope,
        "re-signed record": resigned_record,
        "contract": read_contract,
        "manifest": read_manifest(folder),
        "ledger": read_ledger(folder),
        "grade verifier": verify_grade_envelope,
        "re-signed grade": resigned_grade,
    }


NAMED = {
    "nested arrays": b"[" * DEEP + b"]" * DEEP,
    "nested objects": b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    "nested under a key": b'{"schema":' + b"[" * DEEP + b"]" * DEEP + b"}",
    "NaN": b'{"a": NaN}',
    "Infinity": b"[Infinity]",
    "duplicate keys": b'{"a": 1, "a": 2}',
    "invalid UTF-8": b'{"a": "\xff\xfe"}',
    "lone surrogate": b'{"a": "\\ud800"}',
    "truncated": b'{"a": [1, 2',
    "empty": b"",
    "not an object": b'"[green]hello[/x]"',
    "huge number": b'{"a": 1' + b"0" * 5000 + b"}",
    "huge exponent": b'{"a": 1e999999}',
    "markup only": b'{"[/x]": "[green]"}',
}


@pytest.mark.parametrize("case", NAMED)
@pytest.mark.parametrize(
    "reader",
    [
        "record",
        "bare record verifier",
        "signed record verifier",
        "re-signed record",
        "contract",
        "manifest",
        "ledger",
        "grade verifier",
        "re-signed grade",
    ],
)
def test_named_hostile_documents(tmp_path: Path, reader: str, case: str) -> None:
    outcome = _readers(tmp_path)[reader](NAMED[case])
    assert isinstance(outcome, PlayproofError) or not getattr(outcome, "clean", True)


@pytest.mark.parametrize(
    "reader", ["record", "bare record verifier", "signed record verifier", "manifest", "ledger"]
)
def test_documents_over_the_limit_are_refused(tmp_path: Path, reader: str) -> None:
    huge = b'{"a":"' + b"x" * (16 * 1024 * 1024 + 1) + b'"}'
    outcome = _readers(tmp_path)[reader](huge)
    assert isinstance(outcome, PlayproofError) or not outcome.clean


# --- defect 9: lax values the schema forbids are refused ---------------------------

LAX = {
    "seed as a string": (("seed",), "0"),
    "game_over as a word": (("game_over",), "yes"),
    "latency as a string": (("decisions", "latencies_ms", 0), "1.0"),
    "cost as a string": (("decisions", "costs_usd", 0), "0"),
    "stop_at_game_over as a number": (("limits", "stop_at_game_over"), 0),
}


@pytest.mark.parametrize("case", LAX)
def test_verify_unsigned_refuses_lax_values(case: str) -> None:
    path, value = LAX[case]
    good = toy_record().to_json()
    assert verify_record(json.dumps(good).encode(), game=ToyGame(), contract=CONTRACT).clean
    lax = json.dumps(_replace(good, path, value)).encode()
    report = verify_record(lax, game=ToyGame(), contract=CONTRACT)
    assert not report.clean
    assert report.checks[0].id == "record-well-formed"
    assert not report.checks[0].passed
    with pytest.raises(FormatError):
        parse_run_record(lax)
    with pytest.raises(FormatError):
        parse_run_record(json.loads(lax))


@pytest.mark.parametrize("case", LAX)
def test_signed_lax_values_fail_even_with_the_coerced_digest(case: str) -> None:
    path, value = LAX[case]
    record = toy_record()
    predicate = _replace(record.to_json(), path, value)
    statement = make_statement(run_subjects(record), RUN_PREDICATE_TYPE, predicate)
    # The payload as JSON tooling writes it: 1.0 stays 1.0.
    payload = json.dumps(statement.to_json()).encode()
    verdict = verify_envelope(signed(payload), KEY.verifying_key)
    assert not verdict.clean
    assert verdict.record is None


def test_contracts_refuse_lax_values() -> None:
    data = json.loads(contract_bytes())
    data["milestones"][0]["check"]["value"] = 1.0
    with pytest.raises(FormatError, match="value"):
        parse_contract(data)
    data["milestones"][0]["check"]["value"] = "1"
    with pytest.raises(FormatError, match="value"):
        parse_contract(data)


def test_manifests_refuse_lax_values(tmp_path: Path) -> None:
    data = json.loads(manifest_bytes())
    data["denominator"] = str(data["denominator"])
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(data))
    with pytest.raises(FormatError, match=r"denominator|integer"):
        load_manifest(path)


def test_ledgers_refuse_lax_values(tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.getbasetemp()
    body = json.loads(ledger_body(folder))
    body["seed"] = str(body["seed"])
    outcome = read_ledger(folder)(json.dumps(body, separators=(",", ":")).encode())
    assert isinstance(outcome, FormatError)
    assert "seed" in str(outcome)


def test_a_resigned_valid_document_is_clean() -> None:
    """The re-signing helpers produce clean verdicts for unmutated documents."""
    assert resigned_record(record_bytes()).clean
    assert resigned_grade(canonical_json(grade_predicate())).clean


def test_grade_records_refuse_lax_values() -> None:
    predicate = dict(grade_predicate())
    predicate["passed"] = "1"
    report = resigned_grade(json.dumps(predicate, separators=(",", ":")).encode())
    assert not report.clean
    assert "passed" in report.failed()[0].reason


# --- markup in documents reaches a person as text ----------------------------------


def test_markup_in_a_record_is_shown_literally(tmp_path: Path) -> None:
    from playproof.core.record import Actor

    record = toy_record().model_copy(update={"actor": Actor(kind="[green]", id="[/x]")})
    path = tmp_path / "run.json"
    path.write_bytes(sign_record(record, KEY).to_bytes())
    result = subprocess.run(
        [sys.executable, "-c", "from playproof.cli import main; main()", "show", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "[/x]" in result.stdout
    assert "[green]" in result.stdout


# --- v2 records: hostile decision columns ------------------------------------------

V2_HOSTILE: dict[str, Callable[[dict[str, Any]], None]] = {
    "columns of unequal length": lambda d: d["latencies_ms"].pop(),
    "an empty column beside full ones": lambda d: d["inputs"].clear(),
    "an input as a number": lambda d: d["inputs"].__setitem__(0, 5),
    "an empty input": lambda d: d["inputs"].__setitem__(1, ""),
    "an input over the byte bound": lambda d: d["inputs"].__setitem__(0, "é" * 40_000),
    "a cost as a string": lambda d: d["costs_usd"].__setitem__(0, "0"),
    "a cost as a boolean": lambda d: d["costs_usd"].__setitem__(0, False),
    "a negative cost": lambda d: d["costs_usd"].__setitem__(2, -0.5),
    "a latency as null": lambda d: d["latencies_ms"].__setitem__(0, None),
    "a latency as a list": lambda d: d["latencies_ms"].__setitem__(0, [1.0]),
    "a column as an object": lambda d: d.__setitem__("inputs", {"0": "inc"}),
    "a column missing": lambda d: d.pop("costs_usd"),
    "an extra column": lambda d: d.__setitem__("turns", [1, 2, 3, 4, 5]),
}


def _v2_document(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    document = toy_record().to_json()
    assert document["schema"] == "playproof/run/v2"
    change(document["decisions"])
    return document


@pytest.mark.parametrize("case", V2_HOSTILE)
def test_hostile_v2_columns_are_typed_errors_everywhere(case: str) -> None:
    document = _v2_document(V2_HOSTILE[case])
    text = json.dumps(document).encode()
    with pytest.raises(FormatError, match="decisions"):
        parse_run_record(text)
    with pytest.raises(FormatError, match="decisions"):
        parse_run_record(json.loads(text))
    report = verify_record(text, game=ToyGame(), contract=CONTRACT)
    assert report.checks[0].id == "record-well-formed"
    assert not report.checks[0].passed
    verdict = resigned_record(canonical_json(document))
    assert verdict.record is None
    assert any(c.id == "statement-well-formed" and not c.passed for c in verdict.checks)


@pytest.mark.parametrize("text", [b"NaN", b"Infinity", b"-Infinity", b"1e400"])
def test_non_finite_numbers_in_v2_columns_are_refused(text: bytes) -> None:
    good = canonical_json(toy_record().to_json())
    for column in (b'"costs_usd":[', b'"latencies_ms":['):
        hostile = good.replace(column, column + text + b",", 1).replace(
            b'"inputs":[', b'"inputs":["inc",', 1
        )
        with pytest.raises(FormatError):
            parse_run_record(hostile)
        verdict = resigned_record(hostile)
        assert verdict.record is None


def test_a_record_whose_form_contradicts_its_schema_is_refused() -> None:
    v2 = toy_record().to_json()
    v1 = toy_record().as_schema("playproof/run/v1").to_json()
    for document in ({**v2, "schema": "playproof/run/v1"}, {**v1, "schema": "playproof/run/v2"}):
        with pytest.raises(FormatError, match="record"):
            parse_run_record(json.dumps(document))
        assert resigned_record(json.dumps(document).encode()).record is None


def test_an_oversized_v2_record_is_refused_before_parsing() -> None:
    from playproof.core.record import MAX_RECORD_BYTES

    document = toy_record().to_json()
    columns = document["decisions"]
    count = MAX_RECORD_BYTES // 8 + 1
    columns.update(inputs=["up"] * count, costs_usd=[0] * count, latencies_ms=[0] * count)
    text = json.dumps(document, separators=(",", ":")).encode()
    assert len(text) > MAX_RECORD_BYTES
    with pytest.raises(FormatError, match="over the"):
        parse_run_record(text)


def test_verifying_a_signed_v2_record_holds_a_small_multiple_of_its_size() -> None:
    """The parsed payload, the canonical bytes and the record are never all held at once."""
    import tracemalloc

    from playproof.core.record import DecisionLog

    base = toy_record()
    count = 40_000
    latencies = [(i % 997) / 7.0 + 0.001 for i in range(count)]
    record = base.model_copy(
        update={"decisions": DecisionLog(["inc", "dec"] * (count // 2), [0.0] * count, latencies)}
    )
    envelope = sign_record(record, KEY).to_bytes()
    tracemalloc.start()
    try:
        verdict = verify_envelope(envelope, KEY.verifying_key)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [c.id for c in verdict.checks if not c.passed] == []
    # One decision model per decision, or the parsed payload held beside the
    # record and the canonical bytes, each cost more than this on their own.
    assert peak < 6 * len(envelope)
