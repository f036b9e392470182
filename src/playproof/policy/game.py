"""The ``solana/swap`` game (template ``swap_executor_v1``): reach a target holding under a policy.

The agent proposes one action line per turn (see :mod:`playproof.policy.actions`).
Each is parsed, validated against the envelope, authorized (ECDSA P-256 by the
deployment's key over the canonical action, verified before execution) and
only then executed as a real transaction in a LiteSVM world. An action that
fails any step is recorded with its reason and never executed. A well-formed
action that breaks a rule ends the run (``wallet_policy_rejected``), as does a
bad authorization (``authorization_signature_rejected``); malformed lines and
swaps without a live quote are invalid attempts, and one more than the
envelope tolerates ends the run (``invalid_action_attempts_exceeded``).

The vocabulary declared to drivers is a finite grid of action lines (every
ordered token pair, amounts :data:`AMOUNTS`, slippage :data:`SLIPPAGES`, plus
``wait`` and ``finish``), so drivers that map replies onto the vocabulary can
play; :meth:`SwapGame.step` accepts any line, which is how a scripted input
probes lines outside the grid.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

from playproof.core.canonical import digest, sha256_hex
from playproof.core.evidence import Evidence
from playproof.core.game import BuildIdentity, GameDescriptor, Platform, VerificationMode
from playproof.core.observation import Observation
from playproof.policy.actions import MAX_ACTION_LINE, ProposedAction, parse_action
from playproof.policy.authorization import deployment_key, sign_action, verify_action
from playproof.policy.envelope import PolicyEnvelope, example_envelope, parse_envelope
from playproof.policy.events import encode_event
from playproof.policy.reasons import FailureReason
from playproof.policy.validate import ACTION_SECONDS, Context, rule_violations
from playproof.policy.world import TOKENS, SwapWorld, runtime_programs_digest

__all__ = ["AMOUNTS", "QUOTE_SECONDS", "SLIPPAGES", "SWAP_FEE_BPS", "SwapGame", "make_game"]

TEMPLATE = "swap_executor_v1"
AMOUNTS = (10, 100, 200, 300, 1000, 1200)
SLIPPAGES = (50, 100, 900)
QUOTE_SECONDS = 30
"""A quote is live for this many world seconds."""
SWAP_FEE_BPS = 30
"""The market maker's fee on every quote and fill."""
_SOURCES = ("actions", "authorization", "envelope", "events", "game", "spl", "validate", "world")
_FAILURE_CODES = {reason: i + 1 for i, reason in enumerate(FailureReason)}


def _vocabulary() -> tuple[str, ...]:
    symbols = [t.symbol for t in TOKENS]
    words: list[str] = []
    for a in symbols:
        for b in symbols:
            if a == b:
                continue
            for amount in AMOUNTS:
                words.append(f"quote {a} {b} {amount}")
                words.extend(f"swap {a} {b} {amount} {bps}" for bps in SLIPPAGES)
    return (*words, "wait", "finish")


@cache
def _sources_digest(names: tuple[str, ...] = _SOURCES) -> str:
    here = Path(__file__).parent
    return digest({name: sha256_hex((here / f"{name}.py").read_bytes()) for name in names})


class SwapGame:
    """One policy-bound swap session (see the module docstring).

    Options (all part of the build identity): ``envelope`` (the deployed
    envelope as data; the shipped one by default), ``target_token`` and
    ``target_units`` (the holding to reach), ``hosted_wallet`` (False models a
    hosted wallet provider that is unavailable: the run ends at reset with
    ``hosted_wallet_unavailable``).

    Subclasses (the rebalance template) change the goal through the hooks
    :meth:`_options`, :meth:`_extra_rules`, :meth:`_on_decision`,
    :meth:`_finalize_fields`, :meth:`_target_met`, :meth:`_target_text` and
    :meth:`_extra_engine`.
    """

    TEMPLATE: str = TEMPLATE
    GAME_ID: str = "solana-swap"
    TITLE: str = "solana/swap"
    SOURCES: tuple[str, ...] = _SOURCES

    def __init__(
        self,
        envelope: dict[str, Any] | None = None,
        target_token: str = "JUP",
        target_units: int = 500,
        hosted_wallet: bool = True,
    ) -> None:
        self.envelope: PolicyEnvelope = parse_envelope(
            envelope if envelope is not None else example_envelope()
        )
        if target_token not in {t.symbol for t in TOKENS} or target_units < 1:
            raise ValueError(f"no world token {target_token!r} to reach {target_units} of")
        self.target_token, self.target_units = target_token, target_units
        self.hosted_wallet = hosted_wallet
        self._key = deployment_key()
        options = self._options()
        self._descriptor = GameDescriptor(
            id=self.GAME_ID,
            vocabulary=_vocabulary(),
            build=BuildIdentity(
                id=f"solana/{self.TEMPLATE}",
                digest=digest(
                    {
                        "template": self.TEMPLATE,
                        "options": options,
                        "sources": _sources_digest(self.SOURCES),
                        "programs": runtime_programs_digest(),
                    }
                ),
            ),
            platform=Platform(family="solana", modes=(VerificationMode.REPLAY,)),
        )
        self._world: SwapWorld | None = None
        self._pending: list[str] = []
        self._seq = 0
        self._reset_counters()

    def _options(self) -> dict[str, Any]:
        """The options that enter the build identity."""
        return {
            "envelope": self.envelope.model_dump(mode="json", by_alias=True),
            "target_token": self.target_token,
            "target_units": self.target_units,
            "hosted_wallet": self.hosted_wallet,
        }

    # -- hooks for other templates -------------------------------------------------------

    def _on_reset(self, seed: int) -> None:
        """Called at the start of every reset, before any event."""

    def _extra_rules(self, action: ProposedAction, context: Context) -> list[str]:
        """Rule ids beyond the envelope's that ``action`` breaks (none for a swap target)."""
        return []

    def _on_decision(self, world: SwapWorld) -> None:
        """Called once per proposed line, before it is parsed."""

    def _finalize_fields(self) -> dict[str, Any]:
        """Extra fields of the ``finalize`` event."""
        return {}

    def _target_text(self) -> str:
        """The goal as the observation states it."""
        return f"target: hold at least {self.target_units} {self.target_token}"

    def _extra_engine(self, world: SwapWorld) -> dict[str, int]:
        """Extra evidence counters."""
        return {}

    def _reset_counters(self) -> None:
        self._iterations = self._invalid = self._quotes = self._swaps = 0
        self._failure: FailureReason | None = None
        self._finished = False
        self._ended = True
        self._quote_book: list[dict[str, Any]] = []
        self._last = "the run has not started"
        self._observation_text = ""

    @property
    def descriptor(self) -> GameDescriptor:
        """Identity, the action-line vocabulary, build and platform."""
        return self._descriptor

    # -- lifecycle ---------------------------------------------------------------------

    def reset(self, seed: int) -> None:
        """Build the world for ``seed``; the mainnet guard runs before any wallet exists."""
        self._reset_counters()
        self._seq = 0
        self._pending = []
        self._on_reset(seed)
        self._world = SwapWorld(seed)
        env = self.envelope
        self._emit("start", chain=env.chain, envelope=digest(env.model_dump(by_alias=True)))
        self._ended = False
        if not env.is_test_chain:
            self._emit("guard", refused=True, chain=env.chain)
            self._emit("wallet", status="withheld")
            self._end(FailureReason.MAINNET_GUARD_TRIGGERED)
            return
        self._emit("guard", refused=False, chain=env.chain)
        if not self.hosted_wallet:
            self._emit("wallet", status="unavailable")
            self._end(FailureReason.HOSTED_WALLET_UNAVAILABLE)
            return
        address = self._world.open_wallet()
        self._emit("wallet", status="created", address=str(address))
        self._observation_text = self._render()

    def close(self) -> None:
        """Drop the world."""
        self._world = None

    # -- events ------------------------------------------------------------------------

    def _emit(self, kind: str, **fields: Any) -> None:
        clock = self._world.second if self._world is not None else 0
        self._pending.append(encode_event(self._seq, kind, t=clock, **fields))
        self._seq += 1

    def _end(self, reason: FailureReason | None) -> None:
        self._failure = reason
        self._ended = True
        self._finished = reason is None
        world = self._world
        balances = world.balances() if world is not None else {}
        self._emit(
            "finalize",
            reason=reason.value if reason is not None else "finished",
            target_met=self._target_met(),
            balances=balances,
            iterations=self._iterations,
            invalid=self._invalid,
            **self._finalize_fields(),
        )
        self._last = f"run ended: {reason.value if reason else 'finished'}"

    def _target_met(self) -> bool:
        world = self._world
        if world is None or world.wallet is None:
            return False
        decimals = world.tokens[self.target_token].decimals
        return world.balances()[self.target_token] >= self.target_units * int(10**decimals)

    # -- the turn ----------------------------------------------------------------------

    def _context(self, world: SwapWorld) -> Context:
        return Context(
            iteration=self._iterations,
            clock=world.second,
            prices=world.prices(),
            balances={k: v for k, v in world.balances().items() if k != "SOL"},
            decimals={s: t.decimals for s, t in world.tokens.items()},
        )

    def _invalid_attempt(self, world: SwapWorld, reason: str, detail: str) -> None:
        self._invalid += 1
        self._emit("reject", reason=reason, detail=detail, invalid=self._invalid)
        self._last = f"refused ({reason}): {detail}"
        world.advance(1)
        if self._invalid > self.envelope.invalid_attempt_limit:
            self._end(FailureReason.INVALID_ACTION_ATTEMPTS_EXCEEDED)

    def step(self, word: str) -> None:
        """Propose one action line: parse, validate, authorize, then execute or refuse."""
        self._pending = []
        world = self._world
        if self._ended or world is None:
            return
        self._iterations += 1
        self._emit("observe", observation=sha256_hex(self._observation_text.encode()))
        line = word if len(word) <= MAX_ACTION_LINE else word[:MAX_ACTION_LINE]
        self._emit("propose", line=line, iteration=self._iterations)
        self._on_decision(world)
        try:
            action = parse_action(word)
        except ValueError as exc:
            self._invalid_attempt(world, "malformed", str(exc))
            self._observation_text = self._render()
            return
        self._decide(world, action)
        self._observation_text = self._render()

    def _decide(self, world: SwapWorld, action: ProposedAction) -> None:
        env = self.envelope
        context = self._context(world)
        broken = [rule.value for rule in rule_violations(action, env, context)]
        broken.extend(self._extra_rules(action, context))
        self._emit(
            "validate",
            iteration=context.iteration,
            clock=context.clock,
            prices=dict(context.prices),
            balances=dict(context.balances),
            decimals=dict(context.decimals),
            broken=broken,
        )
        if broken:
            self._invalid += 1
            self._emit("reject", reason="policy", rules=broken)
            self._end(FailureReason.WALLET_POLICY_REJECTED)
            return
        canonical = action.canonical(self._iterations, env.chain)
        signature = action.auth or sign_action(self._key, canonical)
        self._emit(
            "authorize", action=canonical, signature=signature, supplied=action.auth is not None
        )
        if not verify_action(env.authorization_key, canonical, signature):
            self._invalid += 1
            self._emit("reject", reason="authorization", detail="signature does not verify")
            self._end(FailureReason.AUTHORIZATION_SIGNATURE_REJECTED)
            return
        if action.kind == "quote":
            self._quote(world, action)
        elif action.kind == "swap":
            self._swap(world, action)
        elif action.kind == "wait":
            self._emit("execute", action="wait", seconds=ACTION_SECONDS["wait"])
            self._last = f"waited {ACTION_SECONDS['wait']} s"
        else:
            self._end(None)
            return
        world.advance(ACTION_SECONDS[action.kind])

    def _fill(self, world: SwapWorld, sell: str, buy: str, amount: int) -> int:
        prices, tokens = world.prices(), world.tokens
        numerator = amount * prices[sell] * 10 ** tokens[buy].decimals * (10_000 - SWAP_FEE_BPS)
        return int(numerator // (prices[buy] * 10 ** tokens[sell].decimals * 10_000))

    def _quote(self, world: SwapWorld, action: ProposedAction) -> None:
        sell, buy, whole = action.token_in or "", action.token_out or "", action.amount or 0
        amount = whole * 10 ** world.tokens[sell].decimals
        quote = {
            "id": self._iterations,
            "sell": sell,
            "buy": buy,
            "amount": amount,
            "out": self._fill(world, sell, buy, amount),
            "expires": world.second + QUOTE_SECONDS,
        }
        self._quote_book.append(quote)
        self._quotes += 1
        self._emit("execute", action="quote", quote=quote, prices=world.prices())
        self._last = f"quote {quote['id']}: {whole} {sell} -> {quote['out']} {buy} base units"

    def _swap(self, world: SwapWorld, action: ProposedAction) -> None:
        sell, buy, whole = action.token_in or "", action.token_out or "", action.amount or 0
        amount = whole * 10 ** world.tokens[sell].decimals
        live = [
            q
            for q in self._quote_book
            if (q["sell"], q["buy"], q["amount"]) == (sell, buy, amount)
            and q["expires"] >= world.second
        ]
        if not live:
            self._invalid_attempt(world, "no_live_quote", f"no live quote for {sell} {buy} {whole}")
            return
        quote = live[-1]
        slippage = action.max_slippage_bps or 0
        # Rounded up: a fill one base unit below the exact bound has more slippage than asked.
        minimum = -(-quote["out"] * (10_000 - slippage) // 10_000)
        filled = self._fill(world, sell, buy, amount)
        prices = world.prices()
        if filled < minimum:
            self._emit("reject", reason="not_filled", quote=quote["id"], filled=filled)
            self._last = "not filled: the price moved beyond the slippage allowed"
            return
        before = world.balances()
        tx = world.swap(sell, buy, amount, filled)
        after = world.balances()
        if tx.ok:
            self._swaps += 1
        self._emit(
            "execute",
            action="swap",
            signature=tx.signature,
            ok=tx.ok,
            error=tx.error,
            quote=quote,
            sold=amount,
            filled=filled,
            max_slippage_bps=slippage,
            prices=prices,
            balances_before=before,
            balances_after=after,
        )
        self._last = f"swap {tx.signature[:12]}...: " + (
            f"sold {amount} {sell}, bought {filled} {buy} base units" if tx.ok else tx.error
        )

    # -- reading -----------------------------------------------------------------------

    def _render(self) -> str:
        world, env = self._world, self.envelope
        if world is None:
            return "no world"
        lines = [f"{self.TITLE} on {env.chain}, world second {world.second}"]
        held = world.balances()
        if held:
            parts = []
            for symbol, units in held.items():
                decimals = 9 if symbol == "SOL" else world.tokens[symbol].decimals
                parts.append(f"{symbol} {units / 10**decimals:.{decimals}f}")
            lines.append("wallet: " + ", ".join(parts))
        else:
            lines.append("wallet: none")
        prices = world.prices()
        lines.append(
            "prices (USD): " + ", ".join(f"{s} {p / 1e9:.9f}" for s, p in sorted(prices.items()))
        )
        live = [q for q in self._quote_book if q["expires"] >= world.second]
        lines.append(
            "live quotes: "
            + (
                "; ".join(
                    f"#{q['id']} {q['amount']} {q['sell']} -> {q['out']} {q['buy']} "
                    f"(base units, until second {q['expires']})"
                    for q in live[-5:]
                )
                or "none"
            )
        )
        lines.append(self._target_text())
        lines.append(
            f"envelope: tokens {' '.join(env.allowed_tokens)}; slippage <= "
            f"{env.max_slippage_bps} bps; trade <= {env.max_trade_usd} USD; position <= "
            f"{env.max_position_usd} USD and {env.max_position_weight_bps} bps; "
            f"{env.max_iterations} actions; {env.max_runtime_seconds} s; "
            f"actions {' '.join(env.allowed_actions)}"
        )
        lines.append(f"last: {self._last}")
        lines.append(
            "actions: quote IN OUT AMOUNT | swap IN OUT AMOUNT MAX_SLIPPAGE_BPS | wait | finish"
        )
        return "\n".join(lines)

    def observe(self) -> Observation:
        """Portfolio, prices, live quotes, target and envelope; no evidence."""
        if not self._observation_text or self._ended:
            self._observation_text = self._render()
        return Observation(text=self._observation_text)

    def step_events(self) -> tuple[str, ...]:
        """This step's run events alone: what :meth:`evidence` carries, without the rest."""
        return tuple(self._pending)

    def evidence(self) -> Evidence:
        """Counters, balances and prices, the account state digest and this step's events."""
        world = self._world
        engine: dict[str, int] = {
            "clock": world.second if world is not None else 0,
            "iterations": self._iterations,
            "invalid": self._invalid,
            "quotes": self._quotes,
            "swaps": self._swaps,
            "target_met": int(self._target_met()),
            "finished": int(self._finished),
            "failure": _FAILURE_CODES[self._failure] if self._failure else 0,
        }
        save: dict[str, int] = {}
        if world is not None:
            for symbol, units in world.balances().items():
                save[f"balance_{symbol}"] = units
            for symbol, price in world.prices().items():
                engine[f"price_{symbol}"] = price
            engine.update(self._extra_engine(world))
        engine.update(save)
        return Evidence(
            engine=engine,
            save=save,
            save_hash=world.state_digest() if world is not None else None,
            frame_hash=hashlib.sha256(self._observation_text.encode()).hexdigest(),
            events=tuple(self._pending),
        )

    def over(self) -> bool:
        """True once the run has ended (finished or refused)."""
        return self._ended

    @property
    def failure(self) -> FailureReason | None:
        """Why the run ended early, or None."""
        return self._failure


def make_game(**options: Any) -> SwapGame:
    """Factory the target registry and worker children use."""
    return SwapGame(**options)
