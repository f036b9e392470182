"""Run events: the sequenced log a policy-bound run writes into its evidence.

Each event is one canonical JSON object (RFC 8785) carried as an evidence
event string: ``{"seq": N, "type": KIND, ...}``. ``seq`` counts from 0 with no
gaps over the whole run, so a dropped or reordered event is visible. Kinds:
``start``, ``guard``, ``wallet``, ``observe``, ``propose``, ``validate``,
``authorize``, ``execute``, ``reject``, ``finalize``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from playproof.core.canonical import canonical_json

__all__ = ["EVENT_KINDS", "MAX_EVENT_BYTES", "decode_events", "encode_event"]

EVENT_KINDS = frozenset(
    {
        "start",
        "guard",
        "wallet",
        "observe",
        "propose",
        "validate",
        "authorize",
        "execute",
        "reject",
        "finalize",
    }
)
MAX_EVENT_BYTES = 16_384
"""The largest event string decoded; a longer one is refused."""


def encode_event(seq: int, kind: str, **fields: Any) -> str:
    """One event as canonical JSON text."""
    return canonical_json({"seq": seq, "type": kind, **fields}).decode("utf-8")


def decode_events(strings: Iterable[str]) -> list[dict[str, Any]]:
    """The run events among evidence event strings, checked for sequence; ValueError if broken.

    Strings that are not run events (not a JSON object with ``seq`` and ``type``) are skipped.
    """
    decoded: list[dict[str, Any]] = []
    for text in strings:
        if not isinstance(text, str) or not text.startswith("{"):
            continue
        if len(text) > MAX_EVENT_BYTES:
            raise ValueError("an event is over the size limit")
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"an event is not JSON: {exc}") from exc
        if not isinstance(value, dict) or value.get("type") not in EVENT_KINDS:
            raise ValueError("an event has no known type")
        if value.get("seq") != len(decoded):
            raise ValueError(f"event sequence broken at {len(decoded)}")
        decoded.append(value)
    return decoded
