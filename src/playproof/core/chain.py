"""The decision chain: a hash chain over every decision of a run.

The genesis hash binds the target (game id, build digest, contract hash) and
the seed; each link is SHA-256 over the previous hash and the canonical
decision (turn, input and cost; latency is signed but not chained, so that the
same decisions always give the same head). The chain detects accidental edits;
the signature stops deliberate ones.

>>> head = genesis_hash("toy", "0" * 64, "1" * 64, seed=7)
>>> d = Decision(turn=1, input="up", cost_usd=0.0, latency_ms=1.5)
>>> len(link_hash(head, d))
64
"""

from __future__ import annotations

import binascii
import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, GetPydanticSchema, WithJsonSchema
from pydantic_core import CoreSchema, core_schema

from playproof.core.canonical import canonical_json, digest

__all__ = [
    "MAX_INPUT_BYTES",
    "ChainLinker",
    "Decision",
    "DecisionInput",
    "Measured",
    "canonical_decision",
    "chain_head",
    "first_too_large",
    "genesis_hash",
    "input_too_large",
    "link_hash",
]

MAX_INPUT_BYTES = 64 * 1024
"""The largest input (UTF-8 bytes) one decision may carry."""

GENESIS_SCHEMA = "playproof/chain/v1"

_SURELY_BOUNDED = MAX_INPUT_BYTES // 4
"""Inputs of at most this many characters are within MAX_INPUT_BYTES whatever they hold."""
_SAFE_INTEGER = 2**53
_MAX_PREFIXES = 4096
"""How many (input, cost) prefixes one ChainLinker remembers (a vocabulary is small)."""
_LINK_CHUNK = 8192
"""Decisions whose link bytes :meth:`ChainLinker.extend` prepares at once (bounded memory)."""
_MEMO_TYPES = frozenset({float, type(None)})
"""Costs that key the prefix memo safely (an int equals a float as a key but may be written
otherwise)."""


# RFC 8785 strings are JSON.stringify strings: the same escapes Python's encoder
# makes with ensure_ascii=False (quote, backslash, control characters as \b \f
# \n \r \t or lower-case \u00XX), and nothing else escaped.
_STRING = json.JSONEncoder(ensure_ascii=False).encode


def _number(value: float) -> str:
    """ECMAScript number formatting, by Python's repr where the two agree, else RFC 8785."""
    magnitude = abs(value)
    if value == int(value):
        if magnitude < 2**53:
            return str(int(value))
    elif 1e-4 <= magnitude < 1e16:
        return repr(value)
    return canonical_json(value).decode("ascii")


def input_too_large(word: str) -> bool:
    """True when ``word`` is over MAX_INPUT_BYTES in UTF-8 (short words are never encoded)."""
    # A character is at most 4 UTF-8 bytes, so short inputs need no encoding
    # (records and ledgers are checked in batches of millions of decisions).
    return len(word) > _SURELY_BOUNDED and len(word.encode("utf-8")) > MAX_INPUT_BYTES


def first_too_large(words: Sequence[str]) -> int | None:
    """The position of the first word over MAX_INPUT_BYTES in UTF-8, or None.

    The same answer as :func:`input_too_large` word by word; the usual case
    (every word short enough to need no encoding) is one pass in C.
    """
    if not words or max(map(len, words)) <= _SURELY_BOUNDED:
        return None
    return next((i for i, word in enumerate(words) if input_too_large(word)), None)


def _checked_input(word: str) -> str:
    if input_too_large(word):
        raise ValueError(f"input is over {MAX_INPUT_BYTES} bytes")
    return word


def _input_schema(_source: Any, _handler: Any) -> CoreSchema:
    """A non-empty string of at most MAX_INPUT_BYTES in UTF-8, checked in pydantic-core when short.

    A string of at most MAX_INPUT_BYTES // 4 characters cannot be over the
    bound, so the first branch accepts it without calling Python; only longer
    strings are encoded. Either way a refusal is one error with one message.
    """
    short = core_schema.str_schema(min_length=1, max_length=_SURELY_BOUNDED)
    checked = core_schema.no_info_after_validator_function(
        _checked_input, core_schema.str_schema(min_length=1, max_length=MAX_INPUT_BYTES)
    )
    return core_schema.union_schema(
        [short, checked],
        mode="left_to_right",
        custom_error_type="decision_input",
        custom_error_message=(
            f"input must be a non-empty string of at most {MAX_INPUT_BYTES} bytes in UTF-8"
        ),
    )


DecisionInput = Annotated[
    str,
    GetPydanticSchema(_input_schema),
    WithJsonSchema({"minLength": 1, "type": "string"}),
]
"""A decision's input: a non-empty string of at most MAX_INPUT_BYTES in UTF-8."""
Measured = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""A non-negative finite number (checked in pydantic-core: NaN and infinities are refused)."""


def canonical_decision(turn: int, word: str, cost_usd: float | None) -> bytes:
    """RFC 8785 bytes of what the chain covers of one decision: turn, input and cost.

    Latency is left out on purpose: it is wall time, different on every run, so
    a chain over it could never show that a resumed campaign equals a
    continuous one. Latency is still part of the signed record.

    The decision loop hashes one decision per turn; formatting the four known
    fields directly costs a fraction of a general canonicalizer. A property
    test holds the two equal.
    """
    cost = "null" if cost_usd is None else _number(cost_usd)
    return f'{{"cost_usd":{cost},"input":{_STRING(word)},"turn":{turn}}}'.encode()


class Decision(BaseModel):
    """One decision: the turn (1-based), the input applied, its measured cost and latency.

    ``cost_usd`` is ``None`` when the driver could not measure the cost; a cost
    is never invented.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    turn: Annotated[int, Field(ge=1)]
    input: DecisionInput
    cost_usd: Measured | None
    latency_ms: Measured

    def canonical(self) -> bytes:
        """The RFC 8785 form the chain hashes (turn, input, cost; not latency)."""
        return canonical_decision(self.turn, self.input, self.cost_usd)


def genesis_hash(game_id: str, build_digest: str, contract_hash: str, *, seed: int) -> str:
    """The chain's starting hash, bound to the target and the seed."""
    if type(seed) is int and -_SAFE_INTEGER < seed < _SAFE_INTEGER:
        # The canonical form written directly (keys in RFC 8785 order); a
        # property test holds it equal to the general canonicalizer.
        text = (
            f'{{"build":{_STRING(build_digest)},"contract":{_STRING(contract_hash)},'
            f'"game":{_STRING(game_id)},"schema":"{GENESIS_SCHEMA}","seed":{seed}}}'
        )
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
    return digest(
        {
            "schema": GENESIS_SCHEMA,
            "game": game_id,
            "build": build_digest,
            "contract": contract_hash,
            "seed": seed,
        }
    )


def link_hash(previous: str, decision: Decision | bytes) -> str:
    """SHA-256 over the previous hash (hex, ASCII), a newline and the canonical decision."""
    body = decision if isinstance(decision, bytes) else decision.canonical()
    return hashlib.sha256(previous.encode("ascii") + b"\n" + body).hexdigest()


class ChainLinker:
    """Extends a chain head one decision at a time, exactly as :func:`link_hash` would.

    The decision loop links one decision per turn, and most turns repeat an
    (input, cost) pair already seen (a small vocabulary, a zero or fixed cost),
    so the canonical bytes that precede the turn number are remembered per
    pair. A property test holds the heads equal to :func:`link_hash`.
    """

    __slots__ = ("_prefixes", "head")

    def __init__(self, head: str) -> None:
        self.head = head
        self._prefixes: dict[tuple[str, float | None], bytes] = {}

    def link(self, turn: int, word: str, cost_usd: float | None) -> str:
        """Append one decision; return (and keep) the new head."""
        # Only float costs (what the loop and the models hold) use the memo: an
        # int equal to a float is the same dict key but may format differently.
        key = (word, cost_usd) if cost_usd is None or type(cost_usd) is float else None
        prefix = self._prefixes.get(key) if key is not None else None
        if prefix is None:
            prefix = _link_prefix(word, cost_usd)
            if key is not None and len(self._prefixes) < _MAX_PREFIXES:
                self._prefixes[key] = prefix
        head = hashlib.sha256(b"%s%s%d}" % (self.head.encode("ascii"), prefix, turn)).hexdigest()
        self.head = head
        return head

    def extend(self, first_turn: int, words: Sequence[str], costs: Sequence[float | None]) -> str:
        """Link ``words[i]`` with ``costs[i]`` as turn ``first_turn + i``; return the new head.

        The same heads as calling :meth:`link` once per decision. Checking a
        long ledger or record links millions of decisions, so the bytes of
        each chunk's links are looked up and formatted by ``map`` first, and
        the loop that remains only hashes.
        """
        if len(words) != len(costs):
            raise ValueError(f"{len(words)} inputs but {len(costs)} costs")
        sha256, hexlify, back = hashlib.sha256, binascii.hexlify, b"%d}".__mod__
        head = self.head.encode("ascii")
        for start in range(0, len(words), _LINK_CHUNK):
            stop = min(start + _LINK_CHUNK, len(words))
            fronts = self._fronts(words[start:stop], costs[start:stop])
            backs = list(map(back, range(first_turn + start, first_turn + stop)))
            for front, tail in zip(fronts, backs, strict=True):
                head = hexlify(sha256(head + front + tail).digest())
        self.head = head.decode("ascii")
        return self.head

    def _fronts(self, words: Sequence[str], costs: Sequence[float | None]) -> list[bytes]:
        """Each decision's link prefix, from the memo where its cost can key it."""
        if not set(map(type, costs)) <= _MEMO_TYPES:
            return [_link_prefix(word, cost) for word, cost in zip(words, costs, strict=True)]
        distinct = set(costs)
        if len(distinct) == 1:  # one cost throughout (a free or fixed-price agent): by word
            cost = next(iter(distinct))
            by_word = {word: self._memo(word, cost) for word in set(words)}
            return list(map(by_word.__getitem__, words))
        pairs = list(zip(words, costs, strict=True))
        table = {key: self._memo(*key) for key in set(pairs)}
        return list(map(table.__getitem__, pairs))

    def _memo(self, word: str, cost: float | None) -> bytes:
        key = (word, cost)
        prefix = self._prefixes.get(key)
        if prefix is None:
            prefix = _link_prefix(word, cost)
            if len(self._prefixes) < _MAX_PREFIXES:
                self._prefixes[key] = prefix
        return prefix


def _link_prefix(word: str, cost_usd: float | None) -> bytes:
    """The canonical bytes of a link that precede its turn number (from the newline on)."""
    cost = "null" if cost_usd is None else _number(cost_usd)
    return f'\n{{"cost_usd":{cost},"input":{_STRING(word)},"turn":'.encode()


def chain_head(genesis: str, decisions: Iterable[Decision]) -> str:
    """Fold :func:`link_hash` over ``decisions`` from ``genesis``."""
    head = genesis
    for decision in decisions:
        head = link_hash(head, decision)
    return head
