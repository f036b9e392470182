"""The corpora ship inside the package, whole and matching their SHA256SUMS."""

from __future__ import annotations

from pathlib import Path

import pytest

import playproof
from playproof.corpus import (
    CORPORA,
    SHIPPED,
    corpus_dir,
    load_corpus,
    load_manifest,
    read_sums,
    shipped_paths,
)
from playproof.errors import TargetError

PINNED_FILES = {"blargg": 58, "chip8": 24, "dmg-acid2": 2, "mooneye": 150}
"""How many files each corpus's SHA256SUMS pins (from each SOURCE.md)."""
LICENCE = {
    "blargg": "readme.txt",
    "chip8": "LICENSE",
    "dmg-acid2": "LICENSE",
    "mooneye": "LICENSE",
}
"""The file that carries each corpus's terms (Blargg's are stated in SOURCE.md)."""


@pytest.mark.parametrize("name", CORPORA)
def test_every_shipped_corpus_is_whole_and_verified(name: str) -> None:
    folder = corpus_dir(name)
    package = Path(playproof.__file__).resolve().parent
    assert folder.resolve().is_relative_to(package / "corpus" / "data" / name)
    assert (folder / "SOURCE.md").stat().st_size > 0
    assert (folder / LICENCE[name]).stat().st_size > 0
    sums = read_sums(folder)  # reads and checks every pinned file
    assert len(sums) == PINNED_FILES[name]


@pytest.mark.parametrize(
    ("name", "cases"), [("blargg", 43), ("chip8", 8), ("dmg-acid2", 1), ("mooneye", 66)]
)
def test_the_gradable_corpora_load_from_the_package(name: str, cases: int) -> None:
    assert SHIPPED == ("blargg", "chip8", "dmg-acid2", "mooneye")
    manifest_path, answers_path, roms = shipped_paths(name)
    assert manifest_path.parent == answers_path.parent == roms.parent
    manifest = load_manifest(manifest_path)
    corpus = load_corpus(manifest, roms)  # refuses any file whose digest differs
    assert len(corpus.roms) == manifest.denominator == cases


def test_an_unknown_corpus_is_not_gradable_by_name() -> None:
    with pytest.raises(TargetError, match="no gradable shipped corpus 'nes'"):
        shipped_paths("nes")
    with pytest.raises(TargetError, match="no shipped corpus 'nes'"):
        corpus_dir("nes")
