"""Bounded file reads: the one way playproof reads a file it did not write itself."""

from __future__ import annotations

from pathlib import Path

from playproof.errors import FormatError, PlayproofError

__all__ = ["read_bounded"]


def read_bounded(
    path: Path, limit: int, what: str, error: type[PlayproofError] = FormatError
) -> bytes:
    """At most ``limit`` bytes of ``path``; a missing, unreadable or larger file raises ``error``.

    One byte past the limit is read so an oversized file is refused, never cut.
    """
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror}") from exc
    if len(data) > limit:
        raise error(f"{what} {path} is over the {limit}-byte limit")
    return data
