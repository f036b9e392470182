"""Corpora that ship inside the package, under ``playproof/corpus/data/<name>/``.

Each corpus folder keeps the upstream files unchanged in ``roms/``: the ROMs,
the licence and readme, ``SOURCE.md`` (where the files come from) and
``SHA256SUMS`` (whose paths are relative to ``roms/``). A corpus playproof can
grade also has ``manifest.json`` and ``answers.json`` beside ``roms/``.
The candidate line protocol ships as ``playproof/corpus/PROTOCOL.md``.
Nothing outside the installed package is read.
"""

from __future__ import annotations

from pathlib import Path

from playproof._bounded import read_bounded
from playproof.errors import TargetError

__all__ = [
    "CORPORA",
    "DATA",
    "PROTOCOL",
    "SHIPPED",
    "corpus_dir",
    "protocol_text",
    "shipped_paths",
]

CORPORA = ("blargg", "chip8", "dmg-acid2", "mooneye")
"""Corpora whose files (ROMs, licence, ``SOURCE.md``, ``SHA256SUMS``) ship with playproof."""
SHIPPED = ("blargg", "chip8", "dmg-acid2", "mooneye")
"""Corpora whose manifest and answers ship too, so ``playproof grade`` can use them by name."""
DATA = Path(__file__).parent / "data"
"""The package folder that holds every shipped corpus."""
ROMS_FOLDER = "roms"
PROTOCOL = Path(__file__).parent / "PROTOCOL.md"
"""The candidate line protocol every corpus candidate speaks (a task folder gets a copy)."""
MAX_PROTOCOL_BYTES = 64 * 1024
"""The largest protocol text read (it is a few kilobytes)."""


def protocol_text() -> bytes:
    """The candidate line protocol (``PROTOCOL.md``, shipped in the package) as UTF-8 bytes."""
    return read_bounded(PROTOCOL, MAX_PROTOCOL_BYTES, "protocol text", TargetError)


def corpus_dir(name: str) -> Path:
    """The folder of the shipped corpus ``name``: its files and their ``SHA256SUMS``.

    >>> corpus_dir("mooneye").relative_to(DATA).as_posix()
    'mooneye/roms'
    """
    if name not in CORPORA:
        raise TargetError(f"no shipped corpus {name!r}; shipped: {', '.join(CORPORA)}")
    return DATA / name / ROMS_FOLDER


def shipped_paths(name: str) -> tuple[Path, Path, Path]:
    """(manifest, answers, ROM folder) of the gradable shipped corpus ``name``."""
    if name not in SHIPPED:
        raise TargetError(
            f"no gradable shipped corpus {name!r}; gradable: {', '.join(SHIPPED)} "
            "(or give a manifest, answers file and ROM folder of your own)"
        )
    folder = DATA / name
    return folder / "manifest.json", folder / "answers.json", corpus_dir(name)
