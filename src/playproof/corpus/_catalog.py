"""What ``playproof corpus list`` shows: every shipped corpus, its size, terms and pin.

The licence and source pin of each corpus are those its ``SOURCE.md`` states
(a test keeps the two in step); the counts come from its ``SHA256SUMS`` and,
for a gradable corpus, its manifest.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from playproof.corpus._build import read_sums
from playproof.corpus._manifest import load_manifest, load_reference_results
from playproof.corpus._shipped import CORPORA, DATA, SHIPPED, corpus_dir

__all__ = ["CORPUS_FACTS", "CorpusFacts", "CorpusListing", "list_corpora"]

REFERENCE_RESULTS = "reference.json"
"""The reference's own grade, beside the manifest, where the answers are not its own."""
ROM_SUFFIXES = {"chip8": (".ch8",)}
DEFAULT_ROM_SUFFIXES = (".gb", ".gbc")


class CorpusFacts(BaseModel):
    """The fixed facts of a shipped corpus (as its ``SOURCE.md`` states them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    platform: Literal["dmg", "chip8"]
    licence: str
    repository: str
    commit: str


CORPUS_FACTS: dict[str, CorpusFacts] = {
    "blargg": CorpusFacts(
        platform="dmg",
        licence="LicenseRef-Blargg-Freeware",
        repository="retrio/gb-test-roms",
        commit="c240dd7d",
    ),
    "chip8": CorpusFacts(
        platform="chip8",
        licence="GPL-3.0-only",
        repository="Timendus/chip8-test-suite",
        commit="742e9eac9f5d44466c1c9d83fcaa8158c6683cb1",
    ),
    "dmg-acid2": CorpusFacts(
        platform="dmg",
        licence="MIT",
        repository="mattcurrie/dmg-acid2",
        commit="8a98ce731f96dde032ffb22ec36dc985d78fdb18",
    ),
    "mooneye": CorpusFacts(
        platform="dmg",
        licence="MIT",
        repository="Gekkio/mooneye-test-suite",
        commit="31510e12eea6286d36eea060a6adde755e1067aa",
    ),
}
"""Platform, licence (SPDX) and upstream pin of every corpus in :data:`CORPORA`."""


class CorpusListing(BaseModel):
    """One row of ``corpus list``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    platform: str
    roms: Annotated[int, Field(ge=0)]
    """ROM files pinned by the corpus's ``SHA256SUMS``."""
    cases: int | None
    """Cases in the manifest (None when the corpus has no manifest)."""
    excluded: int | None
    denominator: int | None
    """Cases graded (the manifest's fixed denominator)."""
    reference_passed: int | None
    """How many cases the reference candidate passes, where that is recorded."""
    licence: str
    source: str
    """``owner/repository@commit`` the files were taken from."""
    manifest_digest: str | None


def _listing(name: str) -> CorpusListing:
    facts = CORPUS_FACTS[name]
    roms = corpus_dir(name)
    suffixes = ROM_SUFFIXES.get(name, DEFAULT_ROM_SUFFIXES)
    count = sum(PurePosixPath(f).suffix in suffixes for f in read_sums(roms))
    cases = excluded = denominator = passed = None
    digest = None
    if name in SHIPPED:
        folder: Path = DATA / name
        manifest = load_manifest(folder / "manifest.json")
        cases, excluded = len(manifest.cases), len(manifest.excluded)
        denominator, digest = manifest.denominator, manifest.digest
        if (folder / REFERENCE_RESULTS).is_file():
            passed = load_reference_results(folder / REFERENCE_RESULTS, manifest).passed
    return CorpusListing(
        name=name,
        platform=facts.platform,
        roms=count,
        cases=cases,
        excluded=excluded,
        denominator=denominator,
        reference_passed=passed,
        licence=facts.licence,
        source=f"{facts.repository}@{facts.commit}",
        manifest_digest=digest,
    )


def list_corpora() -> list[CorpusListing]:
    """Every shipped corpus, each checked against its ``SHA256SUMS`` and manifest."""
    return [_listing(name) for name in CORPORA]
