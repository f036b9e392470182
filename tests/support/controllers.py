"""A controller key for tests: signs the corpora tests build, so their grades are trusted."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playproof.core.canonical import sha256_hex
from playproof.corpus import (
    CorpusAnswers,
    CorpusCase,
    CorpusManifest,
    SerialAnswer,
    load_corpus,
    load_manifest,
)
from playproof.corpus._grading import command_candidate
from playproof.corpus._jail import IsolationChoice, JailLimits
from playproof.corpus._runner import RunOutcome, run_corpus
from playproof.corpus._trust import sign_corpus, signature_path
from playproof.sign import SigningKey

CONTROLLER = SigningKey.generate()
"""A controller key made for this test session (never the project's)."""


def sign_test_corpus(manifest_path: Path, answers: CorpusAnswers, roms: Path) -> Path:
    """Sign the corpus with :data:`CONTROLLER`; the public key's file (beside it) is returned."""
    corpus = load_corpus(load_manifest(manifest_path), roms)
    envelope = sign_corpus(corpus, answers, CONTROLLER)
    signature_path(manifest_path).write_text(json.dumps(envelope.to_json()), "utf-8")
    public = manifest_path.with_name("controller.pub.pem")
    public.write_bytes(CONTROLLER.verifying_key.to_pem())
    return public


SYNTHETIC_CANDIDATE = Path(__file__).parents[1] / "corpus" / "candidates" / "synthetic.py"
"""A candidate that passes every case of :func:`synthetic_corpus`."""


@dataclass(frozen=True)
class Synthetic:
    """A corpus on disk made of made-up ROMs, graded by :data:`SYNTHETIC_CANDIDATE`."""

    manifest: CorpusManifest
    answers: CorpusAnswers
    manifest_path: Path
    answers_path: Path
    roms: Path


def synthetic(folder: Path, roms: dict[str, bytes]) -> Synthetic:
    """One ``until-result`` case per ROM in ``folder`` (manifest.json, answers.json, roms/),
    unsigned; every case passes on the serial text ``Passed``."""
    rom_dir = folder / "roms"
    rom_dir.mkdir(parents=True)
    cases = []
    for name, data in roms.items():
        (rom_dir / f"{name}.gb").write_bytes(data)
        cases.append(
            CorpusCase(
                id=name,
                file=f"{name}.gb",
                sha256=sha256_hex(data),
                suite="synthetic",
                budget_frames=120,
                poll_frames=60,
                result_address=None,
            )
        )
    manifest = CorpusManifest(
        corpus_id="synthetic", version="1", cases=tuple(cases), denominator=len(cases)
    )
    answers = CorpusAnswers(
        corpus_id="synthetic",
        manifest_digest=manifest.digest,
        reference="test",
        answers={c.id: SerialAnswer(transcript="Passed\n") for c in cases},
    )
    manifest_path, answers_path = folder / "manifest.json", folder / "answers.json"
    manifest_path.write_text(json.dumps(manifest.model_dump(mode="json")), "utf-8")
    answers_path.write_text(json.dumps(answers.model_dump(mode="json")), "utf-8")
    return Synthetic(manifest, answers, manifest_path, answers_path, rom_dir)


def synthetic_roms(names: tuple[str, ...] = ("one", "two")) -> dict[str, bytes]:
    """One made-up ROM of 300-odd bytes per name."""
    return {name: name.encode() + bytes(300) for name in names}


def synthetic_corpus(folder: Path, names: tuple[str, ...] = ("one", "two")) -> Path:
    """A :func:`synthetic` corpus of :func:`synthetic_roms`; returns the manifest's path."""
    return synthetic(folder, synthetic_roms(names)).manifest_path


def synthetic_task(folder: Path, corpus: Synthetic, *, signed: bool = True, **fields: Any) -> Path:
    """A task folder (``folder/task``) whose workspace holds :data:`SYNTHETIC_CANDIDATE`.

    Its ``task.json`` names ``corpus`` (signed by :data:`CONTROLLER` unless
    ``signed`` is false) with 20 s per case; ``fields`` add to it or replace.
    """
    task = folder / "task"
    (task / "workspace").mkdir(parents=True)
    (task / "workspace" / "candidate.py").write_bytes(SYNTHETIC_CANDIDATE.read_bytes())
    spec: dict[str, Any] = {
        "manifest": str(corpus.manifest_path),
        "answers": str(corpus.answers_path),
        "roms": str(corpus.roms),
        "candidate": [sys.executable, "candidate.py"],
        "runtime": "python",
        "case_seconds": 20,
        **fields,
    }
    if signed:
        spec["controller_key"] = str(
            sign_test_corpus(corpus.manifest_path, corpus.answers, corpus.roms)
        )
    (task / "task.json").write_text(json.dumps(spec), "utf-8")
    return task


def run_synthetic(
    folder: Path,
    roms: dict[str, bytes],
    *,
    limits: JailLimits,
    isolation: IsolationChoice = "bubblewrap",
    warm: bool,
    reuse: int,
) -> RunOutcome:
    """Run :data:`SYNTHETIC_CANDIDATE` (one slot) over a :func:`synthetic` corpus of ``roms``."""
    corpus = synthetic(folder, roms)
    spec = command_candidate((sys.executable, str(SYNTHETIC_CANDIDATE)), runtime="python")
    return run_corpus(
        load_corpus(corpus.manifest, corpus.roms),
        spec,
        jobs=1,
        cases_per_process=reuse,
        limits=limits,
        isolation=isolation,
        warm=warm,
    )
