"""A controller key for tests: signs the corpora tests build, so their grades are trusted."""

from __future__ import annotations

import json
from pathlib import Path

from playproof.corpus import CorpusAnswers, load_corpus, load_manifest
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


def synthetic_corpus(folder: Path, names: tuple[str, ...] = ("one", "two")) -> Path:
    """A corpus of made-up ROMs in ``folder`` (manifest.json, answers.json, roms/), unsigned.

    Every case passes on the serial text ``Passed``; returns the manifest's path.
    """
    from playproof.core.canonical import sha256_hex
    from playproof.corpus import CorpusCase, CorpusManifest, SerialAnswer

    roms = folder / "roms"
    roms.mkdir(parents=True)
    cases = []
    for name in names:
        data = name.encode() + bytes(300)
        (roms / f"{name}.gb").write_bytes(data)
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
    (folder / "manifest.json").write_text(json.dumps(manifest.model_dump(mode="json")), "utf-8")
    (folder / "answers.json").write_text(json.dumps(answers.model_dump(mode="json")), "utf-8")
    return folder / "manifest.json"
