"""Replay attestation on the packaged 2048, in-process and in a worker."""

from typing import Any

import pytest

import playproof
from playproof.adapters.native import Game2048
from playproof.core.record import RunRecord
from playproof.core.replay import replay_in_session
from playproof.drivers import ScriptedDriver
from playproof.targets import get_target
from playproof.verify import attest
from playproof.workers import WorkerGame

TARGET = get_target("native/2048")


@pytest.fixture(scope="module")
def reference_record() -> RunRecord:
    return playproof.run(TARGET, ScriptedDriver(TARGET.reference), max_turns=len(TARGET.reference))


def test_reference_verifies_every_milestone_in_process(reference_record: RunRecord) -> None:
    report = attest(reference_record, Game2048(), TARGET.contract)
    assert report.clean, report.failed()
    assert report.verified == list(TARGET.contract.ids) or set(report.verified) == set(
        TARGET.contract.ids
    )


def test_reference_verifies_in_a_worker_with_identical_evidence(
    reference_record: RunRecord,
) -> None:
    with WorkerGame("playproof.adapters.native.game2048:make_game") as remote:
        report = attest(reference_record, remote, TARGET.contract)
        assert report.clean, report.failed()
        remote_trace = remote.replay(0, TARGET.reference, TARGET.contract, trace=True).trace
    local_trace = replay_in_session(
        Game2048(), 0, TARGET.reference, TARGET.contract, trace=True
    ).trace
    assert remote_trace is not None
    assert local_trace is not None
    assert len(local_trace) == len(TARGET.reference) + 1
    assert remote_trace == local_trace


def test_truncated_reference_verifies_a_strict_subset_and_refuses_the_missing_claim(
    reference_record: RunRecord,
) -> None:
    cut = 120
    short = playproof.run(TARGET, ScriptedDriver(TARGET.reference[:cut]), max_turns=cut)
    report = attest(short, Game2048(), TARGET.contract)
    assert report.clean
    assert set(report.verified) < set(TARGET.contract.ids)
    missing = next(c for c in reference_record.claimed if c.id not in report.verified)
    forged = short.to_json()
    forged["claimed"].append({"id": missing.id, "turn": cut})
    rejected = attest(forged, Game2048(), TARGET.contract)
    assert not rejected.clean
    assert [c.id for c in rejected.failed()] == ["claims-reproduced"]
    assert missing.id in rejected.failed()[0].reason
    assert rejected.verified == report.verified


def test_garbage_script_verifies_nothing_it_should_not() -> None:
    junk = ["jump", "UP", "", "left ", "\x00", "🙂", "up down"] * 10
    game = Game2048()
    result = replay_in_session(game, 0, junk, TARGET.contract)
    assert result.verified == ()
    assert game.evidence().engine["moves"] == 0


@pytest.mark.parametrize(
    ("edit", "failed"),
    [
        (
            lambda r: r["decisions"]["inputs"].__setitem__(
                3, "up" if r["decisions"]["inputs"][3] != "up" else "down"
            ),
            "decision-chain-intact",
        ),
        (lambda r: r.update(seed=r["seed"] + 1), "decision-chain-intact"),
        (lambda r: [c.reverse() for c in r["decisions"].values()], "decision-chain-intact"),
        (lambda r: [c.pop() for c in r["decisions"].values()], "decision-chain-intact"),
        (lambda r: r["decisions"]["costs_usd"].__setitem__(0, 0.5), "decision-chain-intact"),
        (lambda r: r["accounting"].update(spent_usd=1.0), "accounting-consistent"),
        (lambda r: r["accounting"].update(total_latency_ms=0.0), "accounting-consistent"),
        (lambda r: r["target"].update(contract_hash="0" * 64), "target-pinned"),
        (lambda r: r["target"].update(build_digest="0" * 64), "target-pinned"),
        (lambda r: r["target"].update(verification_mode="trusted-recorder"), "mode-supported"),
        (lambda r: r["limits"].update(max_turns=10), "limits-respected"),
        (lambda r: r.update(stop_reason="turn-limit"), "limits-respected"),
        (lambda r: r["claimed"][1].update(turn=2), "claims-reproduced"),
        (lambda r: r["claimed"].append(dict(r["claimed"][0])), "claims-reproduced"),
    ],
)
def test_each_tamper_fails_its_named_check(
    reference_record: RunRecord, edit: Any, failed: str
) -> None:
    data = reference_record.to_json()
    edit(data)
    report = attest(data, Game2048(), TARGET.contract)
    assert not report.clean
    assert failed in {c.id for c in report.failed()}


@pytest.mark.parametrize(
    "hostile", [{}, [], None, "x" * 100_000, {"schema": "playproof/run/v1"}, 7]
)
def test_hostile_input_gives_a_report_not_an_exception(hostile: Any) -> None:
    report = attest(hostile, Game2048(), TARGET.contract)
    assert report.verdict == "rejected"
    assert report.checks[0].id == "record-well-formed"


def test_verify_record_uses_the_registry_target(reference_record: RunRecord) -> None:
    assert playproof.verify_record(reference_record.to_json()).clean
    anonymous = reference_record.to_json()
    anonymous["target"]["name"] = None
    report = playproof.verify_record(anonymous)
    assert not report.clean
    assert "no registered target" in report.checks[0].reason
