"""Action lines a policy-bound agent proposes, and their parser.

One line, words separated by single spaces::

    quote IN OUT AMOUNT
    swap IN OUT AMOUNT MAX_SLIPPAGE_BPS
    wait
    finish

``IN``/``OUT`` are token symbols (``USDC``), ``AMOUNT`` a whole number of ``IN``
tokens (1..10^12), ``MAX_SLIPPAGE_BPS`` 0..10000. Any line may end with
``auth=HEX``: an authorization signed elsewhere (DER ECDSA P-256, hex) that is
checked instead of the deployment signing the action itself.

>>> parse_action("swap USDC JUP 200 100").max_slippage_bps
100
>>> parse_action("buy everything")
Traceback (most recent call last):
...
ValueError: unknown action 'buy'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_ACTION_LINE", "MAX_AMOUNT", "ProposedAction", "parse_action"]

MAX_ACTION_LINE = 256
"""The longest action line parsed; a longer one is malformed."""
MAX_AMOUNT = 10**12
_SYMBOL = re.compile(r"^[A-Z][A-Z0-9]{1,9}$")
_NUMBER = re.compile(r"^(0|[1-9][0-9]{0,12})$")
_AUTH = re.compile(r"^auth=([0-9a-f]{2,160})$")
_ARITY = {"quote": 3, "swap": 4, "wait": 0, "finish": 0}


@dataclass(frozen=True, slots=True)
class ProposedAction:
    """A parsed action line."""

    kind: str
    token_in: str | None = None
    token_out: str | None = None
    amount: int | None = None
    max_slippage_bps: int | None = None
    auth: str | None = None

    def canonical(self, sequence: int, chain: str) -> dict[str, Any]:
        """The object an authorization signs: the action, its run sequence number, the chain."""
        body: dict[str, Any] = {"kind": self.kind, "sequence": sequence, "chain": chain}
        if self.token_in is not None:
            body.update(token_in=self.token_in, token_out=self.token_out, amount=self.amount)
        if self.max_slippage_bps is not None:
            body["max_slippage_bps"] = self.max_slippage_bps
        return body

    @property
    def tokens(self) -> tuple[str, ...]:
        """The token symbols the action names."""
        return tuple(t for t in (self.token_in, self.token_out) if t is not None)


def _number(word: str, what: str, top: int) -> int:
    if not _NUMBER.match(word) or not 0 <= int(word) <= top:
        raise ValueError(f"{what} {word[:20]!r} is not a whole number in 0..{top}")
    return int(word)


def parse_action(line: str) -> ProposedAction:
    """Parse one action line; ValueError (one line, what is wrong) when malformed."""
    if not isinstance(line, str) or len(line) > MAX_ACTION_LINE:
        raise ValueError(f"an action is one line of at most {MAX_ACTION_LINE} characters")
    words = line.strip().split(" ")
    auth = None
    if words and (found := _AUTH.match(words[-1])):
        auth = found.group(1)
        words = words[:-1]
    kind = words[0] if words else ""
    if kind not in _ARITY:
        raise ValueError(f"unknown action {kind[:20]!r}")
    if len(words) - 1 != _ARITY[kind]:
        raise ValueError(f"{kind} takes {_ARITY[kind]} arguments, got {len(words) - 1}")
    if kind in ("wait", "finish"):
        return ProposedAction(kind, auth=auth)
    token_in, token_out = words[1], words[2]
    for symbol in (token_in, token_out):
        if not _SYMBOL.match(symbol):
            raise ValueError(f"{symbol[:20]!r} is not a token symbol")
    amount = _number(words[3], "amount", MAX_AMOUNT)
    if amount == 0:
        raise ValueError("amount must be at least 1")
    slippage = _number(words[4], "slippage", 10_000) if kind == "swap" else None
    return ProposedAction(kind, token_in, token_out, amount, slippage, auth)
