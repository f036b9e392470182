"""The numbers of Gymnasium evidence, and which of them a contract can read.

Batch replay only needs the evidence a contract's checks look at; everything
else (observation components, info numbers, the observation hash) is computed
when a trace or a live snapshot asks for it. Gymnasium evidence never has
``save`` or ``frame`` numbers, a save hash or events, so checks on those read
the same (absent) values from partial evidence as from full evidence.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from playproof.core.contract import Contract, HashCheck, ValueCheck

__all__ = [
    "ALL_PARTS",
    "NO_PARTS",
    "MAX_INFO_KEYS",
    "MAX_OBSERVATION_CHANNELS",
    "EvidenceParts",
    "add_info",
    "add_observation",
    "base_numbers",
    "observation_hash",
    "parts_read",
    "scaled",
]

MAX_INFO_KEYS = 32
"""At most this many numeric ``info`` entries become evidence (first by sorted key)."""
MAX_OBSERVATION_CHANNELS = 16
"""Box observations up to this size are also published component by component."""
_KEY = re.compile(r"[^a-z0-9_]")


@dataclass(frozen=True, slots=True)
class EvidenceParts:
    """Which optional parts of Gymnasium evidence are computed (the base numbers always are)."""

    observation: bool
    """``obs`` / ``obs_<i>``."""
    info: bool
    """``info_<key>``."""
    frame_hash: bool
    """The SHA-256 of the observation bytes."""


ALL_PARTS = EvidenceParts(observation=True, info=True, frame_hash=True)
NO_PARTS = EvidenceParts(observation=False, info=False, frame_hash=False)


def parts_read(contract: Contract) -> EvidenceParts:
    """The parts of Gymnasium evidence that some check of ``contract`` reads."""
    keys = {
        m.check.key
        for m in contract.milestones
        if isinstance(m.check, ValueCheck) and m.check.kind == "state"
    }
    return EvidenceParts(
        observation=any(key == "obs" or key.startswith("obs_") for key in keys),
        info=any(key.startswith("info_") for key in keys),
        frame_hash=any(
            isinstance(m.check, HashCheck) and m.check.kind == "frame-hash"
            for m in contract.milestones
        ),
    )


def base_numbers(
    score: int, reward: int, steps: int, terminated: bool, truncated: bool
) -> dict[str, int]:
    """The numbers every snapshot has: score, last reward, steps applied and the end flags."""
    return {
        "score": score,
        "reward": reward,
        "steps": steps,
        "terminated": int(terminated),
        "truncated": int(truncated),
    }


def scaled(value: float, scale: int) -> int | None:
    """``value`` x ``scale`` rounded half to even; None when ``value`` is not finite."""
    number = float(value)
    return round(number * scale) if math.isfinite(number) else None


def add_observation(
    engine: dict[str, int], obs: np.ndarray, keys: tuple[str, ...], discrete: bool, scale: int
) -> None:
    """Add ``obs`` (Discrete) or ``obs_<i>`` (the components named by ``keys``) to ``engine``."""
    if discrete:
        engine["obs"] = int(obs)
    elif keys:
        values = obs.ravel().tolist()
        try:
            # round() is half-to-even; plain Python beats numpy on a handful of numbers.
            engine.update(zip(keys, [round(v * scale) for v in values], strict=True))
        except (OverflowError, ValueError):  # a non-finite component is left out
            for key, value in zip(keys, values, strict=True):
                number = scaled(value, scale)
                if number is not None:
                    engine[key] = number


def add_info(engine: dict[str, int], info: Mapping[str, Any], scale: int) -> None:
    """Add the first :data:`MAX_INFO_KEYS` numeric ``info`` entries (by sorted key)."""
    added = 0
    for key in sorted(info):
        if added == MAX_INFO_KEYS:
            break
        value = info[key]
        if isinstance(value, np.ndarray) and value.shape == ():
            value = value.item()
        if isinstance(value, bool | np.bool_):
            number: int | None = int(value)
        elif isinstance(value, int | float | np.integer | np.floating):
            number = scaled(float(value), scale)
        else:
            continue
        if number is not None:
            engine[f"info_{_KEY.sub('_', str(key).lower())[:60]}"] = number
            added += 1


def observation_hash(obs: np.ndarray) -> str:
    """SHA-256 hex of the observation array's bytes (C order)."""
    return hashlib.sha256(np.ascontiguousarray(obs).data).hexdigest()
