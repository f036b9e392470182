"""The campaign ledger: atomic signed saves, loading, and rejection of every inconsistency.

Most tamperings here are signed again with the campaign's key, so they reach
the ledger's own consistency checks (tests/adversarial/test_ledger.py covers
edits that the signature refuses).
"""

import asyncio
import json
import os
import random
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from campaigns import CONTRACT, KEY, Walker, campaign, resign, signed_file
from hypothesis import given
from hypothesis import strategies as st
from toygame import ToyGame

from playproof.core.record import ClaimedMilestone
from playproof.engine import (
    EpisodeConfig,
    Ledger,
    load_ledger,
    run_campaign,
    save_ledger,
)
from playproof.errors import LedgerError

Edit = Callable[[dict[str, Any]], None]
TRUSTED = KEY.verifying_key


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.json"
    result = campaign(Walker(), path, segments=3)
    assert result.status == "paused"
    return path


def edit(path: Path, change: Edit) -> None:
    """Apply ``change`` to the ledger's JSON and sign it again (what only the key's holder can)."""

    def rewrite(body: bytes) -> bytes:
        data = json.loads(body)
        change(data)
        return json.dumps(data).encode()

    resign(path, rewrite)


def _input(d: dict[str, Any]) -> None:
    inputs = d["decisions"]["inputs"]
    inputs[3] = "wait" if inputs[3] != "wait" else "inc"


def _cost(d: dict[str, Any]) -> None:
    d["decisions"]["costs_usd"][3] = 0.5


def _swap(d: dict[str, Any]) -> None:
    """Swap the first two decisions whose inputs differ (all three columns alike)."""
    columns = d["decisions"]
    inputs = columns["inputs"]
    i = next(i for i in range(len(inputs) - 1) if inputs[i] != inputs[i + 1])
    for column in columns.values():
        column[i], column[i + 1] = column[i + 1], column[i]


def _drop_latency(d: dict[str, Any]) -> None:
    d["decisions"]["latencies_ms"].pop()


TAMPERING: list[tuple[str, Edit, str]] = [
    ("edited input", _input, "an input was edited"),
    ("edited cost", _cost, "a cost was edited"),
    ("contract hash", lambda d: d["target"].update(contract_hash="0" * 64), "contract hash"),
    ("other seed", lambda d: d.update(seed=99), "seed is 99"),
    ("other budget", lambda d: d["limits"].update(budget_usd=5.0), "budget"),
    ("other turn limit", lambda d: d["limits"].update(max_turns=99), "turn limit"),
    ("dropped segment", lambda d: d["segments"].pop(1), "segment"),
    ("dropped last segment", lambda d: d["segments"].pop(), "do not cover the decisions"),
    ("reordered decisions", _swap, "reordered"),
    ("decision without latency", _drop_latency, "every decision has all three"),
    (
        "oversized input",  # within the character bound, over the byte bound
        lambda d: d["decisions"]["inputs"].__setitem__(2, "\U0001f600" * 16385),
        "turn 3 has an input over 65536 bytes",
    ),
    ("dropped decision", lambda d: [c.pop() for c in d["decisions"].values()], "do not cover"),
    ("verified list", lambda d: d.update(verified=[]), "verified milestones"),
    ("actor", lambda d: d["actor"].update(id="someone-else"), "actor"),
]


@pytest.mark.parametrize(("name", "change", "message"), TAMPERING, ids=[t[0] for t in TAMPERING])
def test_every_tampering_is_rejected_by_name(
    saved: Path, name: str, change: Edit, message: str
) -> None:
    edit(saved, change)
    with pytest.raises(LedgerError, match=message):
        campaign(Walker(), saved)


def test_missing_and_malformed_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match="does not exist"):
        load_ledger(tmp_path / "nope.json", TRUSTED)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(LedgerError, match="not valid JSON"):
        load_ledger(bad, TRUSTED)
    bad.write_bytes(signed_file(b'{"schema":"playproof/ledger/v3"}'))
    with pytest.raises(LedgerError, match="not a playproof ledger"):
        load_ledger(bad, TRUSTED)
    bad.write_text('{"schema": "playproof/ledger/v3"}')
    with pytest.raises(LedgerError, match="carries no signature"):
        load_ledger(bad, TRUSTED)
    bad.write_text('{"schema": "playproof/ledger/v1", "decisions": []}')
    with pytest.raises(LedgerError, match="format is playproof/ledger/v1, this playproof reads"):
        load_ledger(bad, TRUSTED)
    bad.write_text('{"a": 1, "a": 2}')
    with pytest.raises(LedgerError, match="repeats the key"):
        load_ledger(bad, TRUSTED)


def test_save_load_round_trip_and_no_stray_temporary_files(saved: Path) -> None:
    ledger = load_ledger(saved, TRUSTED)
    again = save_ledger(ledger, saved.parent / "copy.json", KEY)
    assert load_ledger(again, TRUSTED) == ledger
    assert sorted(p.name for p in saved.parent.iterdir()) == ["copy.json", "ledger.json"]
    assert isinstance(ledger.verified[0], ClaimedMilestone)
    assert "decisions=21" in repr(ledger)


def test_hook_answers_after_unknown_segments_are_rejected(saved: Path) -> None:
    edit(saved, lambda d: d.update(steering=[{"segment": 9, "steer": {"note": "x"}}]))
    with pytest.raises(LedgerError, match="segment 9, which does not exist"):
        load_ledger(saved, TRUSTED)


SAVER = """
import asyncio, sys
from pathlib import Path
from playproof.drivers import BaselineDriver
from playproof.engine import EpisodeConfig, run_campaign
from playproof.sign import SigningKey
from playproof.targets import get_target
target = get_target("native/2048")
config = EpisodeConfig(seed=1, max_turns=100000, stop_at_game_over=False)
def saved(report):
    print(report.last_turn, flush=True)
asyncio.run(run_campaign(target.open(), target.contract, BaselineDriver("random-walk"),
    config, segment_turns=150, ledger=Path(sys.argv[1]), ledger_key=SigningKey.load(sys.argv[2]),
    on_segment=saved))
"""
READ_DEADLINE_S = 60.0
"""How long the test waits for the saver child to report a save."""


def _read_line(process: subprocess.Popen[str], deadline: float) -> str:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], max(deadline - time.monotonic(), 0))
    if not ready:
        raise AssertionError("the saver child did not report a save in time")
    return process.stdout.readline()


def test_kill_9_during_saves_never_loses_a_reported_decision(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    key_file = KEY.save(tmp_path / "key.pem")
    chance = random.Random(6)
    reported = 0
    for _ in range(6):
        process = subprocess.Popen(
            [sys.executable, "-c", SAVER, str(path), str(key_file)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + READ_DEADLINE_S
            for _ in range(chance.randint(1, 4)):
                line = _read_line(process, deadline)
                reported = max(reported, int(line))
            # Land the kill anywhere: in play, or in the middle of a save.
            time.sleep(chance.uniform(0.0, 0.03))
        finally:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
            if process.stdout is not None:
                process.stdout.close()
        ledger = load_ledger(path, TRUSTED)
        assert len(ledger.decisions) >= reported
    assert reported > 150
    assert sorted(p.name for p in tmp_path.iterdir()) == ["key.pem", "ledger.json"]


def test_in_memory_ledger_is_consistent() -> None:
    config = EpisodeConfig(max_turns=20, history=3)
    result = asyncio.run(run_campaign(ToyGame(), CONTRACT, Walker(), config, segment_turns=6))
    ledger: Ledger = result.ledger
    assert [(s.first_turn, s.last_turn) for s in ledger.segments] == [
        (1, 6),
        (7, 12),
        (13, 18),
        (19, 20),
    ]


def _strict_parse_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the strict parse was not expected here")

    monkeypatch.setattr("playproof.engine._ledger.parse_json", refuse)


def test_a_ledger_as_saved_loads_without_the_strict_parse(
    saved: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = load_ledger(saved, TRUSTED)
    _strict_parse_forbidden(monkeypatch)
    assert load_ledger(saved, TRUSTED) == expected


def test_a_reformatted_ledger_signed_again_loads_through_the_strict_parse(saved: Path) -> None:
    expected = load_ledger(saved, TRUSTED)
    resign(saved, lambda body: json.dumps(json.loads(body), indent=2, ensure_ascii=True).encode())
    assert load_ledger(saved, TRUSTED) == expected


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # The repeated key carries the value the chain expects last, so a parser
        # that keeps the last of repeated keys would accept the document.
        ('"inputs":[', '"inputs":["x"],"inputs":['),
        ('"seed":0,', '"seed":0,"seed":0,'),
        ('"chain_head":', '"chain_head":"' + "0" * 64 + '","chain_head":'),
    ],
)
def test_a_repeated_key_in_a_saved_ledger_is_refused(saved: Path, old: str, new: str) -> None:
    assert old in saved.read_text()
    resign(saved, lambda body: body.replace(old.encode(), new.encode(), 1))
    with pytest.raises(LedgerError, match="repeats the key"):
        load_ledger(saved, TRUSTED)
    with pytest.raises(LedgerError, match="repeats the key"):
        campaign(Walker(), saved)


def test_a_nan_in_a_saved_ledger_is_refused(saved: Path) -> None:
    counts = []

    def nan(body: bytes) -> bytes:
        text, count = re.subn(
            rb'"latencies_ms":\[[0-9.e+-]+', b'"latencies_ms":[NaN', body, count=1
        )
        counts.append(count)
        return text

    resign(saved, nan)
    assert counts == [1]
    with pytest.raises(LedgerError, match="NaN"):
        load_ledger(saved, TRUSTED)


_COLUMN = st.lists(
    st.tuples(
        st.text(min_size=1, max_size=6),
        st.none() | st.floats(min_value=0, max_value=1e9),
        st.floats(min_value=0, max_value=1e6),
    ),
    max_size=20,
)


@given(_COLUMN)
def test_decision_columns_round_trip_and_number_turns_from_one(
    rows: list[tuple[str, float | None, float]],
) -> None:
    from playproof.engine._ledger import LedgerDecisions

    columns = LedgerDecisions(
        inputs=tuple(r[0] for r in rows),
        costs_usd=tuple(r[1] for r in rows),
        latencies_ms=tuple(r[2] for r in rows),
    )
    assert LedgerDecisions.model_validate_json(columns.model_dump_json()) == columns
    assert list(columns.rows()) == [(t, *r) for t, r in enumerate(rows, start=1)]
    assert len(columns) == len(rows)


@given(_COLUMN, st.sampled_from(["inputs", "costs_usd", "latencies_ms"]))
def test_columns_of_different_lengths_are_refused(
    rows: list[tuple[str, float | None, float]], short: str
) -> None:
    from pydantic import ValidationError

    from playproof.engine._ledger import LedgerDecisions

    data: dict[str, list[Any]] = {
        "inputs": [r[0] for r in rows] + ["x"],
        "costs_usd": [r[1] for r in rows] + [0.0],
        "latencies_ms": [r[2] for r in rows] + [0.0],
    }
    data[short].pop()
    with pytest.raises(ValidationError, match="every decision has all three"):
        LedgerDecisions.model_validate(data)


def test_a_save_that_cannot_be_written_is_a_ledger_error(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    result = campaign(Walker(), path, segments=1)

    def block(report: object) -> None:  # a folder takes the ledger's place mid-campaign
        path.unlink()
        path.mkdir()

    with pytest.raises(LedgerError, match="cannot save"):
        campaign(Walker(), path, saved=result.ledger, on_segment=block)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
