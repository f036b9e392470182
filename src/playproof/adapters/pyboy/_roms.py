"""Finding and reading ROMs: the bundled pp-collect and the corpora shipped with playproof.

A corpus file is checked against its folder's ``SHA256SUMS`` before use.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from playproof._bounded import read_bounded
from playproof.errors import TargetError

__all__ = [
    "BUNDLED",
    "MAX_ROM_BYTES",
    "MAX_SUMS_BYTES",
    "checked_rom",
    "corpus_rom",
    "read_rom",
]

MAX_ROM_BYTES = 8 << 20
"""The largest Game Boy ROM (MBC5) is 8 MiB."""
MAX_SUMS_BYTES = 1 << 20
BUNDLED = {"pp-collect": Path(__file__).parent / "rom" / "pp_collect.gb"}


def read_rom(path: Path) -> bytes:
    """Read a ROM file with a size bound (a missing or oversized file is a TargetError)."""
    data = read_bounded(path, MAX_ROM_BYTES, "ROM", TargetError)
    if len(data) < 0x150:
        raise TargetError(f"ROM {path} is {len(data)} bytes, too small to hold a header")
    return data


def _expected_sum(folder: Path, relative: str) -> str:
    sums = folder / "SHA256SUMS"
    raw = read_bounded(sums, MAX_SUMS_BYTES, "checksum file", TargetError)
    try:
        text = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise TargetError(f"{sums} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    for line in text.splitlines():
        digest, _, name = line.partition("  ")
        if name.removeprefix("./") == relative:
            return digest.strip().lower()
    raise TargetError(f"{relative} is not listed in {sums}")


def checked_rom(folder: Path, relative: str) -> Path:
    """The path of ``relative`` inside ``folder``, verified against ``folder/SHA256SUMS``."""
    path = folder / relative
    expected = _expected_sum(folder, relative)
    actual = hashlib.sha256(read_rom(path)).hexdigest()
    if actual != expected:
        raise TargetError(
            f"{path} has SHA-256 {actual[:16]}..., SHA256SUMS says {expected[:16]}..."
        )
    return path


def corpus_rom(corpus: str, relative: str) -> Path:
    """The path of ``relative`` in the shipped corpus ``corpus``, verified against its SHA256SUMS.

    >>> corpus_rom("blargg", "halt_bug.gb").name
    'halt_bug.gb'
    """
    # Imported here so a PyBoy worker never loads the corpus package it does not use.
    from playproof.corpus._shipped import corpus_dir

    return checked_rom(corpus_dir(corpus), relative)
