"""Policy-bound runs: replay verification against bare LiteSVM, and envelope checks per second.

1. A 200-action ``solana/swap`` run (100 quote + swap pairs under an envelope
   that allows 200 actions) is played once with the engine. Then, per round:

   - ``bare``: a fresh LiteSVM world (same seed, same setup transactions) and
     the same 100 swap transactions sent straight to it with the same clock
     advances; no parsing, no envelope, no signatures, no events;
   - ``verify``: :func:`playproof.policy.replay.policy_groups_of_record`, i.e.
     a fresh game replaying the record's 200 inputs (parse, envelope rules,
     P-256 sign and verify of every action, transactions, sequenced events)
     and the ``wallet_safety`` group recomputed from the replayed events.

   Reported: bare time / verify time (target >= 0.8x), and beside it the
   P-256 signing and checking of the 200 actions timed alone (work the bare
   replay does not do and a verification cannot skip), which bounds the
   ratio from above.

   The envelope is the shipped one with room for the run: 200 actions, a day
   of world time, no position limit (the run swaps back and forth).

2. The envelope checker alone: :func:`playproof.policy.validate.rule_violations`
   over a mix of parsed actions with a fixed context, in actions per second,
   against parsing the same lines (:func:`playproof.policy.parse_action`).

Times are process CPU time, phases interleaved round by round, best round kept.

    python benchmarks/bench_policy.py [rounds]
"""

from __future__ import annotations

import sys
from dataclasses import replace

import playproof
from _timing import best_interleaved
from playproof.drivers import ScriptedDriver
from playproof.policy import parse_action, parse_envelope
from playproof.policy.authorization import (
    DEPLOYMENT_PUBLIC_KEY,
    deployment_key,
    forget_verifications,
    sign_action,
    verify_action,
)
from playproof.policy.envelope import example_envelope
from playproof.policy.events import decode_events
from playproof.policy.game import SwapGame
from playproof.policy.replay import policy_groups_of_record, replay_events
from playproof.policy.validate import ACTION_SECONDS, Context, rule_violations
from playproof.policy.world import SwapWorld
from playproof.targets import Target, get_target

ACTIONS = 200
VALIDATIONS = 20_000
TARGET_RATIO = 0.8


def _target() -> Target:
    envelope = {
        **example_envelope(),
        "max_iterations": ACTIONS,
        "max_runtime_seconds": 86_400,
        "max_position_usd": 1_000_000,
        "max_position_weight_bps": 10_000,
    }
    packaged = get_target("solana/swap")
    options = {**packaged.spec.options, "envelope": envelope}
    digest = SwapGame(**options).descriptor.build.digest
    spec = packaged.spec.model_copy(update={"options": options, "build_digest": digest})
    return replace(packaged, spec=spec)


def _lines() -> list[str]:
    lines: list[str] = []
    for i in range(ACTIONS // 2):
        pair = ("USDC", "JUP", 100) if i % 2 == 0 else ("JUP", "USDC", 10)
        lines += [f"quote {pair[0]} {pair[1]} {pair[2]}", f"swap {pair[0]} {pair[1]} {pair[2]} 100"]
    return lines


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    target = _target()
    lines = _lines()
    record = playproof.run(target, ScriptedDriver(lines), max_turns=ACTIONS)
    if len(record.decisions) != ACTIONS:
        raise RuntimeError(f"the run ended after {len(record.decisions)} actions")
    game = target.open(worker=False)
    events = decode_events(replay_events(game, record.seed, lines))
    game.close()
    swaps = [e for e in events if e["type"] == "execute" and e.get("action") == "swap"]
    if len(swaps) != ACTIONS // 2 or not all(s["ok"] for s in swaps):
        raise RuntimeError("every swap of the benchmark run must land")
    # The clock advance before each swap, as the game applied it.
    plan: list[tuple[int, str, str, int, int]] = []
    clock = 0
    for e in swaps:
        plan.append((e["t"] - clock, e["quote"]["sell"], e["quote"]["buy"], e["sold"], e["filled"]))
        clock = e["t"] + ACTION_SECONDS["swap"]

    def bare() -> None:
        world = SwapWorld(record.seed)
        world.open_wallet()
        for wait, sell, buy, sold, filled in plan:
            world.advance(wait)
            if not world.swap(sell, buy, sold, filled).ok:
                raise RuntimeError("a bare swap failed")
            world.advance(ACTION_SECONDS["swap"])

    def verify() -> None:
        forget_verifications()  # as in a fresh verifier: no signature checked before
        (safety,) = policy_groups_of_record(record, target)
        if not safety.passed:
            raise RuntimeError(f"the run fails {safety.failed()}")

    key = deployment_key()
    canonical = [
        parse_action(line).canonical(turn, "localnet") for turn, line in enumerate(lines, 1)
    ]

    def authorize() -> None:
        forget_verifications()
        for action in canonical:
            if not verify_action(DEPLOYMENT_PUBLIC_KEY, action, sign_action(key, action)):
                raise RuntimeError("a signature does not verify")

    phases = {"bare": bare, "verify": verify, "authorize": authorize}
    best = best_interleaved(phases, rounds)
    ratio = best["bare"] / best["verify"]
    ceiling = best["bare"] / (best["bare"] + best["authorize"])
    print(f"replay verification of a {ACTIONS}-action solana/swap run ({len(plan)} swaps)")
    print(f"  bare LiteSVM replay  {best['bare'] * 1e3:8.1f} ms")
    print(f"  policy verification  {best['verify'] * 1e3:8.1f} ms")
    verdict = "meets" if ratio >= TARGET_RATIO else "misses"
    print(f"  bare / verify        {ratio:8.2f}x  ({verdict} the {TARGET_RATIO}x target)")
    print(f"  P-256 sign + verify of the {ACTIONS} actions alone {best['authorize'] * 1e3:.1f} ms:")
    print(f"  even with nothing else, bare / (bare + that) is {ceiling:.2f}x")

    envelope = parse_envelope(example_envelope())
    context = Context(
        iteration=3,
        clock=40,
        prices={"USDC": 10**9, "JUP": 8 * 10**8, "BONK": 20_000, "RUG": 5 * 10**7},
        balances={"USDC": 9_000 * 10**6, "JUP": 1_000 * 10**6, "BONK": 10**11, "RUG": 0},
        decimals={"USDC": 6, "JUP": 6, "BONK": 5, "RUG": 6},
    )
    mix = [
        "swap USDC JUP 300 100",
        "quote USDC JUP 200",
        "swap USDC RUG 10 50",
        "swap USDC JUP 1200 900",
        "wait",
        "finish",
    ]
    words = (mix * (VALIDATIONS // len(mix) + 1))[:VALIDATIONS]
    parsed = [parse_action(w) for w in words]

    def parse_only() -> None:
        for w in words:
            parse_action(w)

    def validate_only() -> None:
        for action in parsed:
            rule_violations(action, envelope, context)

    timed = best_interleaved({"parse": parse_only, "validate": validate_only}, rounds)
    per_second = VALIDATIONS / timed["validate"]
    print(f"envelope checker over {VALIDATIONS} actions (a mix of allowed and refused)")
    print(f"  validated per second {per_second:12,.0f}")
    print(f"  parsed per second    {VALIDATIONS / timed['parse']:12,.0f}")
    print(f"  validate / parse     {timed['validate'] / timed['parse']:8.2f}x the time")


if __name__ == "__main__":
    main()
