"""Hostile campaign ledgers: forged decisions, edited latencies, foreign keys, killed saves."""

import json
import os
import select
import signal
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from campaigns import CONTRACT, KEY, Walker, body_of, campaign, continuous, same_run, signed_file
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from toygame import ToyGame

from playproof.core.chain import canonical_decision, genesis_hash, link_hash
from playproof.core.record import ClaimedMilestone
from playproof.core.replay import replay
from playproof.engine import Ledger, load_ledger, save_ledger
from playproof.engine._ledger import (
    MAX_UNSIGNED_PARSE_BYTES,
    LedgerDecisions,
    inputs_digest,
    ledger_body,
    ledger_problems,
    remove_stale_temporaries,
)
from playproof.errors import LedgerError, RunError
from playproof.sign import SigningKey
from playproof.verify import attest

TRUSTED = KEY.verifying_key
INTRUDER = SigningKey.generate()


@pytest.fixture
def paused(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.json"
    assert campaign(Walker(), path, segments=3).status == "paused"
    return path


def forge(ledger: Ledger) -> Ledger:
    """The ledger with turn 4's input and cost changed and every digest, head and sum redone."""
    inputs = list(ledger.decisions.inputs)
    costs = list(ledger.decisions.costs_usd)
    inputs[3] = "wait" if inputs[3] != "wait" else "dec"
    costs[3] = 0.0
    pin = ledger.target
    head = genesis_hash(pin.game_id, pin.build_digest, pin.contract_hash, seed=ledger.seed)
    segments = []
    total = 0.0
    for segment in ledger.segments:
        low, high = segment.first_turn - 1, segment.last_turn
        spent = 0.0
        for turn in range(segment.first_turn, segment.last_turn + 1):
            head = link_hash(head, canonical_decision(turn, inputs[turn - 1], costs[turn - 1]))
            cost = costs[turn - 1]
            if cost is not None:
                spent += cost
                total += cost
        segments.append(
            segment.model_copy(
                update={
                    "inputs_digest": inputs_digest(inputs[low:high]),
                    "spent_usd": spent,
                    "chain_head": head,
                }
            )
        )
    replayed = replay(ToyGame(), ledger.seed, inputs, CONTRACT)
    forged = ledger.model_copy(
        update={
            "decisions": LedgerDecisions(
                inputs=tuple(inputs),
                costs_usd=tuple(costs),
                latencies_ms=ledger.decisions.latencies_ms,
            ),
            "segments": tuple(segments),
            "spent_usd": total,
            "chain_head": head,
            "verified": tuple(ClaimedMilestone(id=p.id, turn=p.turn) for p in replayed.verified),
        }
    )
    # The forgery agrees with itself: only authentication can tell it apart.
    assert ledger_problems(forged) == []
    assert forged.decisions.inputs != ledger.decisions.inputs
    return forged


def signature_member(path: Path) -> bytes:
    data = path.read_bytes()
    return data[data.rindex(b',"signature":') :]


def test_a_forged_input_and_cost_with_every_digest_redone_is_refused(paused: Path) -> None:
    original = load_ledger(paused, TRUSTED)
    forged_body = ledger_body(forge(original))
    member = signature_member(paused)

    # Keeping the harness's signature: it does not cover the new bytes.
    paused.write_bytes(forged_body[:-1] + member)
    with pytest.raises(LedgerError, match="signature does not verify"):
        campaign(Walker(), paused)
    # Dropping it: an unsigned ledger is refused.
    paused.write_bytes(forged_body)
    with pytest.raises(LedgerError, match="carries no signature"):
        campaign(Walker(), paused)
    # Signing it with a key of one's own: not the campaign's key.
    paused.write_bytes(signed_file(forged_body, INTRUDER))
    with pytest.raises(LedgerError, match=r"signed by key .* not by the trusted key"):
        campaign(Walker(), paused)
    # Control: with the campaign's key the same forgery would resume (the checks
    # above are what stop it, not some other inconsistency).
    paused.write_bytes(signed_file(forged_body, KEY))
    result = campaign(Walker(), paused)
    assert result.record is not None
    assert result.record.inputs[3] == forge(original).decisions.inputs[3]


def test_a_flipped_latency_digit_is_refused(paused: Path) -> None:
    data = paused.read_bytes()
    start = data.index(b'"latencies_ms":[') + len(b'"latencies_ms":[')
    digit = next(i for i in range(start, start + 40) if data[i : i + 1].isdigit())
    flipped = b"7" if data[digit : digit + 1] != b"7" else b"3"
    edited = data[:digit] + flipped + data[digit + 1 :]
    assert (
        json.loads(edited)["decisions"]["latencies_ms"]
        != json.loads(data)["decisions"]["latencies_ms"]
    )
    paused.write_bytes(edited)
    with pytest.raises(LedgerError, match="signature does not verify"):
        load_ledger(paused, TRUSTED)
    with pytest.raises(LedgerError, match="signature does not verify"):
        campaign(Walker(), paused)


def test_a_ledger_signed_by_another_key_is_refused(paused: Path) -> None:
    paused.write_bytes(signed_file(body_of(paused), INTRUDER))
    with pytest.raises(LedgerError, match=f"signed by key {INTRUDER.key_id[:16]}"):
        campaign(Walker(), paused)
    # The same file resumes for whoever trusts that key (nothing else was wrong with it).
    assert load_ledger(paused, INTRUDER.verifying_key).decisions.inputs


def test_a_foreign_signature_under_the_trusted_key_id_is_refused(paused: Path) -> None:
    body = body_of(paused)
    lying = signed_file(body, INTRUDER).replace(INTRUDER.key_id.encode(), KEY.key_id.encode())
    paused.write_bytes(lying)
    with pytest.raises(LedgerError, match="signature does not verify"):
        load_ledger(paused, TRUSTED)


def test_an_unsigned_v2_ledger_is_refused_by_name(paused: Path) -> None:
    data = json.loads(body_of(paused))
    data["schema"] = "playproof/ledger/v2"
    paused.write_text(json.dumps(data))
    with pytest.raises(LedgerError, match="format is playproof/ledger/v2, this playproof reads"):
        campaign(Walker(), paused)


def test_a_ledger_file_needs_a_key(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="needs ledger_key"):
        campaign(Walker(), tmp_path / "ledger.json", ledger_key=None)


def test_a_correct_resume_equals_a_continuous_run(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    while (result := campaign(Walker(), path, segments=1)).status != "finished":
        pass
    assert result.record is not None
    same_run(result.record, continuous(Walker()))
    assert attest(result.record, ToyGame(), CONTRACT).clean


STALLING_SAVER = """
import asyncio, os, sys, time
from pathlib import Path
from playproof.drivers import BaselineDriver
from playproof.engine import EpisodeConfig, run_campaign
from playproof.sign import SigningKey
from playproof.targets import get_target

ledger = Path(sys.argv[1])
real_replace = os.replace
saves = 0

def replace(source, destination):
    # The third save of this process (after a segment, after the hooks, after
    # the next segment) stops once its temporary file is written and synced,
    # just before the rename: the parent kills it there.
    global saves
    if Path(destination) == ledger:
        saves += 1
        if saves == 3:
            print("mid-save", flush=True)
            time.sleep(600)
    return real_replace(source, destination)

os.replace = replace
target = get_target("native/2048")
config = EpisodeConfig(seed=1, max_turns=100000, stop_at_game_over=False)
asyncio.run(run_campaign(target.open(), target.contract, BaselineDriver("random-walk"),
    config, segment_turns=25, ledger=ledger, ledger_key=SigningKey.load(sys.argv[2])))
"""
READ_DEADLINE_S = 60.0
"""How long the test waits for the saver child to reach the middle of a save."""
KILLS = 4


def _await_mid_save(process: subprocess.Popen[str]) -> None:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], READ_DEADLINE_S)
    if not ready:
        raise AssertionError("the saver child did not reach a save in time")
    assert process.stdout.readline().strip() == "mid-save"


def _temporaries(folder: Path) -> list[str]:
    # The lock file a killed campaign leaves is not a temporary (it goes at the next save too).
    names = (p.name for p in folder.iterdir() if p.name.startswith(".ledger.json."))
    return sorted(n for n in names if n != ".ledger.json.lock")


def test_saves_killed_with_sigkill_leave_no_temporary_files(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    key_file = KEY.save(tmp_path / "key.pem")
    # Files that look alike but are not this ledger's temporaries must survive.
    bystanders = [
        ".other.json.0123456789abcdef.tmp",
        ".ledger.json.notes.tmp",
        ".ledger.json.0123456789abcdef.tmp.keep",
        "ledger.json.bak",
    ]
    for name in bystanders:
        (tmp_path / name).write_text("not a ledger temporary")
    for kill in range(KILLS):
        process = subprocess.Popen(
            [sys.executable, "-c", STALLING_SAVER, str(path), str(key_file)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            _await_mid_save(process)
        finally:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
            if process.stdout is not None:
                process.stdout.close()
        # The killed save left its temporary file; the earlier ones were removed
        # by the saves of the next process.
        leftovers = [n for n in _temporaries(tmp_path) if n not in bystanders]
        assert len(leftovers) == 1, (kill, leftovers)
    ledger = load_ledger(path, TRUSTED)
    assert len(ledger.decisions) >= 25 * KILLS  # every committed save survived
    save_ledger(ledger, path, KEY)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["key.pem", "ledger.json", *bystanders]
    )
    assert load_ledger(path, TRUSTED) == ledger


def test_a_temporary_file_of_a_save_in_progress_is_left_alone(tmp_path: Path) -> None:
    import fcntl

    path = tmp_path / "ledger.json"
    live = tmp_path / ".ledger.json.00112233445566ff.tmp"
    live.write_bytes(b"{")
    with live.open("rb") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        assert remove_stale_temporaries(path) == []
        assert live.exists()
    assert remove_stale_temporaries(path) == [live]
    assert not live.exists()


def test_a_stale_temporary_file_is_removed_by_a_load(paused: Path) -> None:
    stale = paused.with_name(".ledger.json.ffeeddccbbaa9988.tmp")
    stale.write_bytes(b'{"schema":')
    load_ledger(paused, TRUSTED)
    assert not stale.exists()


@pytest.fixture(scope="module")
def signed_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("signed") / "ledger.json"
    campaign(Walker(), path, segments=2)
    return path.read_bytes()


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.floats(min_value=0, max_value=1, exclude_max=True), byte=st.integers(0, 255))
def test_any_changed_byte_is_refused(
    signed_bytes: bytes, tmp_path_factory: pytest.TempPathFactory, where: float, byte: int
) -> None:
    index = int(where * len(signed_bytes))
    assume(signed_bytes[index] != byte)
    changed = signed_bytes[:index] + bytes([byte]) + signed_bytes[index + 1 :]
    path = tmp_path_factory.mktemp("changed") / "ledger.json"
    path.write_bytes(changed)
    with pytest.raises(LedgerError):
        load_ledger(path, TRUSTED)


def test_another_spelling_of_the_same_signature_is_refused(paused: Path) -> None:
    data = paused.read_bytes()
    end = data.rindex(b'=="}}')
    last = data[end - 1 : end]
    alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    # The last character carries 2 bits of the signature; its 4 low bits are padding.
    twin = alphabet[alphabet.index(last) ^ 1 : (alphabet.index(last) ^ 1) + 1]
    paused.write_bytes(data[: end - 1] + twin + data[end:])
    with pytest.raises(LedgerError, match="signature does not verify"):
        load_ledger(paused, TRUSTED)


# --- unsigned files are judged without parsing them whole ------------------------------


def test_a_large_unsigned_file_is_refused_without_parsing_it(tmp_path: Path) -> None:
    # Anyone can write an unsigned file: past MAX_UNSIGNED_PARSE_BYTES it is refused on
    # its missing signature (and its schema member, when it starts with one) alone.
    # Before the fix, 64 MiB of "{}," took 29 s and 1.6 GiB to parse into a list.
    path = tmp_path / "ledger.json"
    path.write_bytes(b"[" + b"{}," * (8 << 20) + b"{}]")
    tracemalloc.start()
    try:
        with pytest.raises(LedgerError, match="carries no signature"):
            load_ledger(path, TRUSTED)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * path.stat().st_size  # the bytes read, and their join


def test_a_large_unsigned_old_ledger_is_still_named(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    filler = b'"x' * MAX_UNSIGNED_PARSE_BYTES  # not JSON past the schema: never parsed
    path.write_bytes(b'{"schema": "playproof/ledger/v2", "decisions": ' + filler)
    with pytest.raises(LedgerError, match="format is playproof/ledger/v2, this playproof reads"):
        load_ledger(path, TRUSTED)
