"""Finding and reading ROMs: the bundled pp-collect and files of the shared corpus.

The shared folder is ``$PLAYPROOF_SHARED`` or ``<project root>/../shared``;
corpus files are checked against the folder's ``SHA256SUMS`` before use.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from playproof._bounded import read_bounded
from playproof.errors import FormatError, TargetError

__all__ = [
    "BUNDLED",
    "MAX_ROM_BYTES",
    "MAX_SUMS_BYTES",
    "SHARED_ENV",
    "corpus_rom",
    "read_rom",
    "shared_root",
]

MAX_ROM_BYTES = 8 << 20
"""The largest Game Boy ROM (MBC5) is 8 MiB."""
MAX_SUMS_BYTES = 1 << 20
SHARED_ENV = "PLAYPROOF_SHARED"
BUNDLED = {"pp-collect": Path(__file__).parent / "rom" / "pp_collect.gb"}
# src/playproof/adapters/pyboy/_roms.py -> the project root is four folders up.
_PROJECT_ROOT = Path(__file__).resolve().parents[4]


def read_rom(path: Path) -> bytes:
    """Read a ROM file with a size bound (a missing or oversized file is a TargetError)."""
    data = read_bounded(path, MAX_ROM_BYTES, "ROM", TargetError)
    if len(data) < 0x150:
        raise TargetError(f"ROM {path} is {len(data)} bytes, too small to hold a header")
    return data


def shared_root() -> Path:
    """The shared folder (``$PLAYPROOF_SHARED`` or ``../shared`` next to the project)."""
    configured = os.environ.get(SHARED_ENV)
    root = Path(configured) if configured else _PROJECT_ROOT.parent / "shared"
    if not root.is_dir():
        raise TargetError(f"shared folder {root} does not exist; set {SHARED_ENV}")
    return root


def _expected_sum(folder: Path, relative: str) -> str:
    sums = folder / "SHA256SUMS"
    try:
        with sums.open("rb") as handle:
            raw = handle.read(MAX_SUMS_BYTES + 1)
    except OSError as exc:
        raise TargetError(f"cannot read {sums}: {exc.strerror}") from exc
    if len(raw) > MAX_SUMS_BYTES:
        raise FormatError(f"{sums} is over the {MAX_SUMS_BYTES}-byte limit")
    for line in raw.decode("utf-8", errors="strict").splitlines():
        digest, _, name = line.partition("  ")
        if name.removeprefix("./") == relative:
            return digest.strip().lower()
    raise TargetError(f"{relative} is not listed in {sums}")


def corpus_rom(corpus: str, relative: str) -> Path:
    """The path of ``relative`` inside ``shared/corpora/<corpus>``, verified against SHA256SUMS."""
    folder = shared_root() / "corpora" / corpus
    path = folder / relative
    expected = _expected_sum(folder, relative)
    actual = hashlib.sha256(read_rom(path)).hexdigest()
    if actual != expected:
        raise TargetError(
            f"{path} has SHA-256 {actual[:16]}..., SHA256SUMS says {expected[:16]}..."
        )
    return path
