"""Fixtures: a small subset of the shipped Blargg corpus (quick ROMs), copied to a temp folder."""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from controllers import sign_test_corpus

from playproof.corpus import (
    CandidateSpec,
    CorpusAnswers,
    CorpusManifest,
    load_answers,
    load_manifest,
    shipped_paths,
)
from playproof.corpus._jail import JAIL_UID_BASE, _processes_of
from playproof.corpus._runner import LANES_PER_SLOT

CANDIDATES = Path(__file__).parent / "candidates"
collect_ignore = ["candidates"]  # scripts run inside the jail, not test modules
SUBSET = (
    "cpu_instrs/individual/01-special",
    "instr_timing/instr_timing",
    "mem_timing-2/rom_singles/01-read_timing",
    "dmg_sound/rom_singles/01-registers",
)
"""Two serial cases and two memory cases that finish in a few emulated seconds."""


@dataclass(frozen=True)
class Subset:
    """A small corpus on disk: manifest, answers and ROM folder, signed by a test controller."""

    manifest: CorpusManifest
    answers: CorpusAnswers
    manifest_path: Path
    answers_path: Path
    roms: Path
    controller_key: Path
    """The test controller's public key, which signed this corpus."""


@pytest.fixture(scope="session")
def shipped() -> tuple[CorpusManifest, CorpusAnswers, Path]:
    manifest_path, answers_path, roms = shipped_paths("blargg")
    manifest = load_manifest(manifest_path)
    return manifest, load_answers(answers_path, manifest), roms


def make_subset(folder: Path, shipped: tuple[CorpusManifest, CorpusAnswers, Path]) -> Subset:
    full, full_answers, roms = shipped
    cases = tuple(c for c in full.cases if c.id in SUBSET)
    manifest = full.model_copy(
        update={
            "corpus_id": "blargg-subset",
            "cases": cases,
            "excluded": (),
            "denominator": len(cases),
        }
    )
    manifest = CorpusManifest.model_validate(manifest.model_dump())
    answers = CorpusAnswers(
        corpus_id=manifest.corpus_id,
        manifest_digest=manifest.digest,
        reference=full_answers.reference,
        answers={c.id: full_answers.answers[c.id] for c in cases},
    )
    rom_dir = folder / "roms"
    for case in cases:
        target = rom_dir / case.file
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(roms / case.file, target)
    (folder / "private").mkdir()
    manifest_path = folder / "manifest.json"
    answers_path = folder / "private" / "answers.json"
    manifest_path.write_text(json.dumps(manifest.model_dump(mode="json")))
    answers_path.write_text(json.dumps(answers.model_dump(mode="json")))
    controller = sign_test_corpus(manifest_path, answers, rom_dir)
    return Subset(manifest, answers, manifest_path, answers_path, rom_dir, controller)


@pytest.fixture
def subset(tmp_path: Path, shipped: tuple[CorpusManifest, CorpusAnswers, Path]) -> Subset:
    return make_subset(tmp_path, shipped)


@pytest.fixture
def cheat() -> Callable[..., CandidateSpec]:
    """A factory of cheating candidates (scripts under candidates/)."""
    return _cheat


def _cheat(name: str, **env: str) -> CandidateSpec:
    return CandidateSpec(
        command=(sys.executable, str(CANDIDATES / f"{name}.py")),
        read_only=(CANDIDATES,),
        runtime="python",
        env=env,
    )


def no_jail_processes_left() -> None:
    """Wait (up to 5 s) until no process of a jail uid runs; fail naming how many do."""
    for _ in range(50):
        left = sum(_processes_of(JAIL_UID_BASE + n) for n in range(2 * LANES_PER_SLOT))
        if left == 0:
            return
        time.sleep(0.1)
    raise AssertionError(f"{left} processes of the jail uids are still running")
