"""The LiteSVM world: fixed accounts, atomic swaps, byte-identical state across processes."""

import subprocess
import sys

import pytest

pytest.importorskip("solders", reason="the Solana world needs the solana extra")

from policyworld import REFERENCE, play

from playproof.policy.world import EPOCH_UNIX, SwapWorld, fixed_keypair

_DIGEST_SCRIPT = """
import sys
sys.path.insert(0, {support!r})
from policyworld import REFERENCE, play
played = play(REFERENCE, seed={seed})
print(played.digests[-1])
print(__import__("hashlib").sha256("\\n".join(played.events).encode()).hexdigest())
"""


def test_a_failing_leg_reverts_both() -> None:
    world = SwapWorld(3)
    world.open_wallet()
    before = world.balances()
    # The maker holds 50 RUG: asking it for 60 makes the second leg fail.
    result = world.swap("USDC", "RUG", 100 * 10**6, 60 * 10**6)
    assert not result.ok
    after = world.balances()
    assert {k: v for k, v in after.items() if k != "SOL"} == {
        k: v for k, v in before.items() if k != "SOL"
    }
    assert world.balance(world.maker.pubkey(), "RUG") == 50 * 10**6
    good = world.swap("USDC", "RUG", 100 * 10**6, 40 * 10**6)
    assert good.ok
    assert world.balances()["RUG"] == 40 * 10**6
    assert world.balances()["USDC"] == before["USDC"] - 100 * 10**6


def test_keys_clock_and_prices_are_fixed() -> None:
    one, two = SwapWorld(5), SwapWorld(5)
    assert one.maker.pubkey() == fixed_keypair("maker").pubkey()
    assert one.svm.get_clock().unix_timestamp == EPOCH_UNIX
    one.advance(40)
    two.advance(40)
    assert one.prices() == two.prices()
    assert one.svm.get_clock().unix_timestamp == EPOCH_UNIX + 40
    assert SwapWorld(6).prices() == one._prices[0]  # second 0 is the same for every seed
    other = SwapWorld(6)
    other.advance(40)
    assert other.prices() != one.prices()


@pytest.mark.parametrize("seed", [0, 11])
def test_same_seed_and_actions_give_the_same_state_in_another_process(seed: int) -> None:
    here = play(REFERENCE, seed=seed)
    support = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "support")
    out = subprocess.run(
        [sys.executable, "-c", _DIGEST_SCRIPT.format(support=support, seed=seed)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    events_digest = __import__("hashlib").sha256("\n".join(here.events).encode()).hexdigest()
    assert out == [here.digests[-1], events_digest]


def test_kept_reads_follow_every_transaction_and_are_not_shared() -> None:
    world = SwapWorld(2)
    world.open_wallet()
    before, digest = world.balances(), world.state_digest()
    before["USDC"] = -1  # a caller's copy: the world's kept read must not change
    assert world.balances()["USDC"] == 10_000 * 10**6
    assert world.swap("USDC", "JUP", 10 * 10**6, 12 * 10**6).ok
    assert world.balances()["USDC"] == 9_990 * 10**6
    assert world.balances()["JUP"] == 12 * 10**6
    assert world.state_digest() != digest
    fresh = SwapWorld(2)
    fresh.open_wallet()
    fresh.swap("USDC", "JUP", 10 * 10**6, 12 * 10**6)
    assert fresh.state_digest() == world.state_digest()
    # The kept digest equals one computed from scratch.
    fresh._digest = None
    assert fresh.state_digest() == world.state_digest()
