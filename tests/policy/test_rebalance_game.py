"""The solana/rebalance target: the reference passes both groups and verifies by replay."""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("solders", reason="the Solana world needs the solana extra")

from rebalanceworld import REBALANCE_REFERENCE, play_rebalance

import playproof
from playproof.core.game import Game
from playproof.drivers import ScriptedDriver
from playproof.policy import REBALANCE_POLICY_CHECKS, WALLET_SAFETY_CHECKS
from playproof.policy.rebalance_game import RebalanceGame
from playproof.policy.replay import (
    deployed_allocation,
    policy_groups_of_record,
    replay_record,
    wallet_safety_of_record,
)
from playproof.targets import get_target

SUPPORT = str(Path(__file__).resolve().parents[1] / "support")

_DIGEST_SCRIPT = """
import sys, hashlib
sys.path.insert(0, {support!r})
from rebalanceworld import REBALANCE_REFERENCE, play_rebalance
played = play_rebalance(REBALANCE_REFERENCE, seed={seed})
print(played.digests[-1])
print(hashlib.sha256("\\n".join(played.events).encode()).hexdigest())
print(played.evidence.content_hash)
"""


def test_the_target_is_registered_pinned_and_a_game() -> None:
    target = get_target("solana/rebalance")
    assert target.reference == REBALANCE_REFERENCE
    assert target.spec.extra == "solana"
    assert target.spec.separates is True
    game = target.open()
    try:
        assert isinstance(game, Game)
        assert game.descriptor.build.id == "solana/rebalance_executor_v1"
        assert "swap USDC BONK 1000 100" in game.descriptor.vocabulary
    finally:
        game.close()
    allocation = deployed_allocation(target)
    assert allocation is not None
    assert allocation.sums_to_whole
    assert deployed_allocation(get_target("solana/swap")) is None


def test_the_reference_passes_every_check_of_both_groups() -> None:
    played = play_rebalance(REBALANCE_REFERENCE)
    assert played.failure is None
    assert tuple(c.id for c in played.safety.checks) == WALLET_SAFETY_CHECKS
    assert tuple(c.id for c in played.policy.checks) == REBALANCE_POLICY_CHECKS
    assert played.safety.passed, played.safety.failed()
    assert played.policy.passed, played.policy.failed()
    assert played.game.evidence().engine["target_met"] == 1
    assert played.game.evidence().engine["drift_bps"] <= 250
    swaps = [e for e in played.decoded() if e["type"] == "execute" and e["action"] == "swap"]
    assert len(swaps) == 6
    assert all(s["ok"] for s in swaps)
    # One evidence row per decision, every portfolio token priced, bound into finalize.
    assert [d.iteration for d in played.evidence.decisions] == list(range(1, 14))
    assert all(set(d.prices) == {"USDC", "JUP", "BONK"} for d in played.evidence.decisions)
    assert played.decoded()[-1]["rebalance_evidence"] == played.evidence.content_hash
    assert played.evidence.hash_ok


def test_the_observation_shows_weights_targets_and_no_evidence() -> None:
    game = RebalanceGame()
    game.reset(0)
    game.step("quote USDC JUP 1000")
    text = game.observe().text
    assert text.startswith("solana/rebalance on localnet")
    assert "target: weights BONK 1500 bps, JUP 2500 bps, USDC 6000 bps" in text
    assert "now BONK 19 bps, JUP 0 bps, USDC 9980 bps" in text
    assert "seq" not in text
    assert "signature" not in text


@pytest.mark.parametrize("seed", [0, 7])
def test_same_seed_and_actions_give_the_same_state_in_another_process(seed: int) -> None:
    here = play_rebalance(REBALANCE_REFERENCE, seed=seed)
    out = subprocess.run(
        [sys.executable, "-c", _DIGEST_SCRIPT.format(support=SUPPORT, seed=seed)],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout.split()  # fmt: skip
    events = hashlib.sha256("\n".join(here.events).encode()).hexdigest()
    assert out == [here.digests[-1], events, here.evidence.content_hash]


def test_the_engine_run_verifies_by_replay_in_a_fresh_process(tmp_path: Path) -> None:
    target = get_target("solana/rebalance")
    record = playproof.run(
        target, ScriptedDriver(REBALANCE_REFERENCE), max_turns=len(REBALANCE_REFERENCE)
    )
    assert [c.id for c in record.claimed] == ["swapped", "halfway", "balanced", "clean-finish"]
    groups = policy_groups_of_record(record, target)
    assert [g.group for g in groups] == ["wallet_safety", "rebalance_policy"]
    assert all(g.passed for g in groups), [g.failed() for g in groups]
    assert wallet_safety_of_record(record, target).passed
    replayed = replay_record(record, target)
    assert replayed.rebalance_evidence is not None
    assert replayed.difference(replayed.events, replayed.rebalance_evidence) is None
    out, keys = tmp_path / "run.json", tmp_path / "keys"
    cli = [sys.executable, "-c", "from playproof.cli import main; main()"]
    subprocess.run(
        [*cli, "run", "solana/rebalance", "--agent", "reference", "--out", str(out),
         "--key-dir", str(keys)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    verified = subprocess.run(
        [*cli, "verify", str(out), "-k", str(keys / "signing.pub.pem"), "--json"],
        check=False, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert json.loads(verified.stdout)["verdict"] == "clean"
    # A fresh process reads the record back and replays it to the same groups and evidence.
    saved = tmp_path / "record.json"
    saved.write_text(json.dumps(record.to_json()))
    script = (
        "import json\n"
        "from playproof.core.record import read_parsed_record\n"
        "from playproof.policy.replay import policy_groups_of_record, replay_record\n"
        "from playproof.targets import get_target\n"
        f"record = read_parsed_record(json.loads(open({str(saved)!r}).read()))\n"
        "target = get_target('solana/rebalance')\n"
        "groups = policy_groups_of_record(record, target)\n"
        "print(all(g.passed for g in groups), replay_record(record, target)"
        ".rebalance_evidence.content_hash)\n"
    )
    fresh = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True, timeout=300
    ).stdout.split()
    assert fresh == ["True", replayed.rebalance_evidence.content_hash]


def test_the_stored_calibration_is_current_and_separates() -> None:
    from playproof.exec import (
        CALIBRATION_FILE,
        calibrate_target,
        read_calibration,
        render_calibration,
        stored_calibration_problems,
    )

    target = get_target("solana/rebalance")
    assert target.folder is not None
    assert stored_calibration_problems(target) == []
    report = read_calibration(target.folder / CALIBRATION_FILE)
    assert report.passed is True
    assert report.separates is True
    verdicts = {m.id: m.verdict for m in report.milestones}
    assert verdicts["balanced"] == verdicts["clean-finish"] == "separates"
    stored = (target.folder / CALIBRATION_FILE).read_text()
    assert render_calibration(calibrate_target(target, executor="serial")) == stored
