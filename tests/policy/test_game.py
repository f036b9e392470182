"""The solana/swap target: the reference earns every milestone and passes every check."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("solders", reason="the Solana world needs the solana extra")

from policyworld import REFERENCE, play

import playproof
from playproof.core.game import Game
from playproof.drivers import ScriptedDriver
from playproof.policy import WALLET_SAFETY_CHECKS
from playproof.policy.game import SwapGame
from playproof.policy.replay import deployed_envelope, wallet_safety_of_record
from playproof.targets import get_target


def test_the_target_is_registered_pinned_and_a_game() -> None:
    target = get_target("solana/swap")
    assert target.reference == REFERENCE
    assert target.spec.extra == "solana"
    game = target.open()
    try:
        assert isinstance(game, Game)
        assert "swap USDC JUP 300 100" in game.descriptor.vocabulary
        assert {"wait", "finish"} <= set(game.descriptor.vocabulary)
    finally:
        game.close()


def test_the_reference_passes_every_check() -> None:
    played = play(REFERENCE)
    assert played.failure is None
    assert played.checks.group == "wallet_safety"
    assert tuple(c.id for c in played.checks.checks) == WALLET_SAFETY_CHECKS
    assert played.checks.passed, played.checks.failed()
    kinds = [e["type"] for e in played.decoded()]
    assert kinds[:3] == ["start", "guard", "wallet"]
    assert kinds[3:8] == ["observe", "propose", "validate", "authorize", "execute"]
    assert kinds[-1] == "finalize"
    swaps = [e for e in played.decoded() if e["type"] == "execute" and e["action"] == "swap"]
    assert len(swaps) == 2
    for swap in swaps:
        assert swap["ok"] is True
        assert len(swap["signature"]) >= 64
        assert swap["balances_after"]["JUP"] - swap["balances_before"]["JUP"] == swap["filled"]
        assert swap["balances_before"]["USDC"] - swap["balances_after"]["USDC"] == swap["sold"]
        assert set(swap["prices"]) == {"USDC", "JUP", "BONK", "RUG"}


def test_the_observation_shows_portfolio_prices_quotes_target_and_envelope() -> None:
    game = SwapGame()
    game.reset(0)
    game.step("quote USDC JUP 300")
    text = game.observe().text
    for needle in ("wallet: ", "prices (USD)", "live quotes: #1", "target: hold", "envelope: "):
        assert needle in text
    assert "seq" not in text  # no evidence reaches the agent
    assert "signature" not in text


def test_a_quote_expires() -> None:
    played = play(["quote USDC JUP 100", "wait", "wait", "swap USDC JUP 100 100"])
    last = played.decoded()[-1]
    assert (last["type"], last["reason"]) == ("reject", "no_live_quote")
    assert played.balances[-1]["USDC"] == played.balances[0]["USDC"]
    assert played.checks.passed  # one invalid attempt is within the limit


def test_the_engine_run_verifies_by_replay_in_a_fresh_process(tmp_path: Path) -> None:
    target = get_target("solana/swap")
    record = playproof.run(target, ScriptedDriver(REFERENCE), max_turns=len(REFERENCE))
    assert [c.id for c in record.claimed] == [
        "quoted",
        "swapped",
        "target-holding",
        "clean-finish",
    ]
    assert wallet_safety_of_record(record, target).passed
    assert deployed_envelope(target).chain == "localnet"
    out = tmp_path / "run.json"
    keys = tmp_path / "keys"
    cli = [sys.executable, "-c", "from playproof.cli import main; main()"]
    subprocess.run(
        [*cli, "run", "solana/swap", "--agent", "reference", "--out", str(out),
         "--key-dir", str(keys)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    verified = subprocess.run(
        [*cli, "verify", str(out), "-k", str(keys / "signing.pub.pem"), "--json"],
        check=False, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr
    report = json.loads(verified.stdout)
    assert report["verdict"] == "clean"
