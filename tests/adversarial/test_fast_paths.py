"""Hostile decisions on the fast paths: native checks, column linking in attestation, resume.

Each fast path must refuse what the path it replaced refused, with the same
error class, and must never raise where the old path reported a failed check.
"""

import json
import math
from pathlib import Path
from typing import Any

import pytest
from campaigns import KEY, Walker, campaign, resign

import playproof
from playproof.adapters.native import Game2048
from playproof.core.chain import MAX_INPUT_BYTES, Decision
from playproof.core.record import RunRecord, parse_run_record
from playproof.drivers import ScriptedDriver
from playproof.engine import load_ledger
from playproof.errors import FormatError, LedgerError
from playproof.targets import get_target
from playproof.verify import attest

TARGET = get_target("native/2048")


@pytest.fixture(scope="module")
def record() -> RunRecord:
    return playproof.run(TARGET, ScriptedDriver(TARGET.reference[:6]), max_turns=6)


def _with_decision(record: RunRecord, position: int, **fields: Any) -> dict[str, Any]:
    # Decision objects exist in the v1 form only (v2 stores columns).
    v1 = record.as_schema("playproof/run/v1")
    document: dict[str, Any] = json.loads(json.dumps(v1.to_json()))
    document["decisions"][position].update(fields)
    return document


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"cost_usd": -1.0}, "greater than or equal to 0"),
        ({"cost_usd": -5e-324}, "greater than or equal to 0"),
        ({"latency_ms": -0.5}, "greater than or equal to 0"),
        ({"input": ""}, f"at most {MAX_INPUT_BYTES} bytes"),
        ({"input": "\U0001f600" * (MAX_INPUT_BYTES // 4 + 1)}, f"at most {MAX_INPUT_BYTES} bytes"),
        ({"input": "\u00e9" * (MAX_INPUT_BYTES // 2 + 1)}, f"at most {MAX_INPUT_BYTES} bytes"),
        ({"input": 5}, f"at most {MAX_INPUT_BYTES} bytes"),
        ({"turn": 0}, "greater than or equal to 1"),
    ],
)
def test_a_hostile_decision_in_a_record_is_a_format_error(
    record: RunRecord, fields: dict[str, Any], named: str
) -> None:
    document = _with_decision(record, 1, **fields)
    with pytest.raises(FormatError, match=named):
        parse_run_record(json.dumps(document))
    report = attest(document, Game2048(), TARGET.contract)
    assert not report.clean
    assert report.failed()[0].id == "record-well-formed"


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_costs_and_latencies_are_refused(record: RunRecord, text: str) -> None:
    for name in ("cost_usd", "latency_ms"):
        document = json.dumps(_with_decision(record, 2, **{name: 0.25}))
        hostile = document.replace('"' + name + '": 0.25', f'"{name}": {text}', 1)
        assert hostile != document
        with pytest.raises(FormatError):
            parse_run_record(hostile)


@pytest.mark.parametrize(
    ("block", "hostile", "named"),
    [
        ('"driver": {}', '"driver": {"x": 1e400}', "not finite"),
        ('"driver": {}', '"driver": {"x": [-1e999]}', "not finite"),
        ('"driver": {}', '"driver": {"pad": "' + "a" * 70_000 + '"}', "over the 65536-byte"),
        ('"options": {}', '"options": {"x": 1e400}', "finite number"),
    ],
)
def test_free_form_provenance_holds_only_finite_plain_json_within_its_limit(
    record: RunRecord, block: str, hostile: str, named: str
) -> None:
    """An infinite number (``1e400``) or padding in a free-form block verified clean unsigned."""
    document = json.dumps(record.as_schema("playproof/run/v1").to_json())
    assert block in document
    text = document.replace(block, hostile, 1)
    with pytest.raises(FormatError, match=named):
        parse_run_record(text)
    report = playproof.verify_record(text.encode())
    assert not report.clean
    assert report.failed()[0].id == "record-well-formed"


class _Reporting(ScriptedDriver):
    def __init__(self, inputs: list[str], report: Any) -> None:
        super().__init__(inputs)
        self._report = report

    def provenance(self) -> Any:
        if isinstance(self._report, Exception):
            raise self._report
        return self._report


@pytest.mark.parametrize(
    "report",
    [
        {"x": math.inf},
        {"pad": "a" * 70_000},
        {"x": object()},
        ["not", "an", "object"],
        pytest.param(RuntimeError("the counters are gone \ud800" + "!" * 70_000), id="raises"),
    ],
)
def test_a_driver_report_a_record_cannot_hold_is_noted_and_the_run_is_kept(report: Any) -> None:
    played = playproof.run(TARGET, _Reporting(TARGET.reference[:4], report), max_turns=4)
    assert len(played.decisions) == 4
    note = played.provenance.driver["unrecorded"]
    assert note.startswith("the driver's provenance report was left out: ")
    assert playproof.verify_record(json.dumps(played.to_json()).encode()).clean


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_given_as_python_values_are_refused(value: float) -> None:
    for name in ("cost_usd", "latency_ms"):
        fields = {"turn": 1, "input": "up", "cost_usd": 0.0, "latency_ms": 0.0, name: value}
        with pytest.raises(ValueError, match="finite number"):
            Decision.model_validate(fields)


def test_a_decision_without_a_utf8_form_fails_the_chain_check_instead_of_raising(
    record: RunRecord,
) -> None:
    """A record built in Python (never parsed) may hold a lone surrogate; attest reports it."""
    unencodable = Decision.model_construct(turn=2, input="\ud800", cost_usd=0.0, latency_ms=1.0)
    decisions = (record.decisions[0], unencodable, *record.decisions[2:])
    forged = record.model_copy(update={"decisions": decisions})
    report = attest(forged, Game2048(), TARGET.contract)
    chain = next(c for c in report.checks if c.id == "decision-chain-intact")
    assert not chain.passed
    assert chain.reason == "an input is not valid Unicode"


def test_a_misnumbered_decision_is_named_by_its_position(record: RunRecord) -> None:
    document = _with_decision(record, 3, turn=9)
    report = attest(document, Game2048(), TARGET.contract)
    chain = next(c for c in report.checks if c.id == "decision-chain-intact")
    assert not chain.passed
    assert chain.reason == "decision 4 is numbered turn 9"


def test_an_over_long_input_in_a_resigned_ledger_is_refused(tmp_path: Path) -> None:
    """Past the native check (characters), the ledger still counts UTF-8 bytes of every input."""
    path = tmp_path / "ledger.json"
    campaign(Walker(), path, segments=1)

    def widen(body: bytes) -> bytes:
        data = json.loads(body)
        data["decisions"]["inputs"][-1] = "\u00e9" * (MAX_INPUT_BYTES // 2 + 1)
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()

    resign(path, widen)
    with pytest.raises(LedgerError, match=f"turn 7 has an input over {MAX_INPUT_BYTES} bytes"):
        load_ledger(path, KEY.verifying_key)


def test_a_resume_from_a_saved_ledger_checks_it_in_full(tmp_path: Path) -> None:
    """A ledger handed to the campaign (read once by the caller) gets every check of a file."""
    path = tmp_path / "ledger.json"
    campaign(Walker(), path, segments=2)

    def cost(body: bytes) -> bytes:
        data = json.loads(body)
        data["decisions"]["costs_usd"][3] = 0.5
        return json.dumps(data).encode()

    resign(path, cost)
    saved = load_ledger(path, KEY.verifying_key, consistent=False)
    with pytest.raises(LedgerError, match="a cost was edited"):
        campaign(Walker(), path, segments=1, saved=saved)
