"""Trivial baseline policies as deterministic input sequences.

A contract that one of these satisfies measures nothing. Each baseline is a
pure function of the vocabulary, a length and (for the random walk) a seed, so
a calibration report reproduces from one number.

>>> list(baseline_inputs("round-robin", ("a", "b"), 3))
['a', 'b', 'a']
>>> walk = baseline_inputs("random-walk", ("a", "b"), 5, seed=1)
>>> walk == baseline_inputs("random-walk", ("a", "b"), 5, seed=1)
True
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from playproof.errors import TargetError

__all__ = ["UNKNOWN_WORD", "baseline_inputs", "baseline_names"]

UNKNOWN_WORD = "__unknown__"
"""A word no game declares: every game must treat it as a no-op."""

_MASK = (1 << 64) - 1


def _splitmix(seed: int) -> Iterator[int]:
    state = seed & _MASK
    while True:
        state = (state + 0x9E3779B97F4A7C15) & _MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        yield z ^ (z >> 31)


def baseline_names(vocabulary: Sequence[str]) -> tuple[str, ...]:
    """Every baseline: one constant per word, unknown, round-robin, random walk."""
    return (*(f"constant:{w}" for w in vocabulary), "unknown", "round-robin", "random-walk")


def baseline_inputs(
    name: str, vocabulary: Sequence[str], length: int, *, seed: int = 0
) -> tuple[str, ...]:
    """The first ``length`` inputs of the baseline called ``name``."""
    if not vocabulary:
        raise TargetError("a baseline needs a non-empty vocabulary")
    if name.startswith("constant:"):
        word = name.removeprefix("constant:")
        if word not in vocabulary:
            raise TargetError(f"constant baseline word {word!r} is not in the vocabulary")
        return (word,) * length
    if name == "unknown":
        return (UNKNOWN_WORD,) * length
    if name == "round-robin":
        return tuple(vocabulary[i % len(vocabulary)] for i in range(length))
    if name == "random-walk":
        numbers = iter(_splitmix(seed))
        return tuple(vocabulary[next(numbers) % len(vocabulary)] for _ in range(length))
    raise TargetError(
        f"unknown baseline {name!r}; choose from {', '.join(baseline_names(vocabulary))}"
    )
