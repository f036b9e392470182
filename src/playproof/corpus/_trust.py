"""Signed corpora: a controller key vouches for a manifest, its answers and its case files.

A corpus signature is a DSSE envelope carrying an in-toto statement whose
subjects are the manifest digest (the corpus digest), the digest of the
expected answers and the digest of the case files' tree; the predicate names
the corpus id, version and platform. It lives beside the manifest as
``corpus.sig.json``. A grade is trusted only when that signature verifies
under a trusted controller key and still describes the files graded; the
project's controller public key ships in the package and is trusted by default.
Any other corpus still grades, for development, but untrusted and with a
reward of zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from playproof._bounded import read_bounded
from playproof.core.canonical import digest, sha256_hex, validate_strict
from playproof.corpus._manifest import Corpus, CorpusAnswers, Platform
from playproof.errors import SigningKeyError
from playproof.sign import (
    MAX_KEY_FILE_BYTES,
    Envelope,
    PredicateKind,
    SigningKey,
    VerifyingKey,
    sign_predicate,
    verify_statement,
)

__all__ = [
    "CONTROLLER_KEY",
    "CORPUS_PREDICATE_TYPE",
    "CORPUS_STATEMENT",
    "MAX_SIGNATURE_BYTES",
    "SIGNATURE_FILE",
    "CorpusClaim",
    "SignedClaim",
    "CorpusTrust",
    "Trust",
    "answers_digest",
    "case_files_digest",
    "check_corpus_signature",
    "corpus_claim",
    "load_controller_keys",
    "read_signature",
    "shipped_controller_key",
    "sign_corpus",
    "signature_path",
    "signed_claim",
]

CORPUS_PREDICATE_TYPE = "https://playproof.dev/corpus/v1"
"""The predicate type URI of a signed corpus statement."""
SIGNATURE_FILE = "corpus.sig.json"
"""The corpus signature's file name, beside ``manifest.json``."""
CONTROLLER_KEY = Path(__file__).parent / "controller.pub.pem"
"""The project's controller public key, shipped in the package and trusted by default."""
MAX_SIGNATURE_BYTES = 256 * 1024
"""A corpus signature file is at most this long (it is about two kilobytes)."""

Trust = Literal["trusted", "untrusted"]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class CorpusClaim(BaseModel):
    """What a controller signs: which corpus, and the digests of its three parts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1] = 1
    corpus_id: Annotated[str, Field(min_length=1, max_length=100)]
    version: Annotated[str, Field(min_length=1, max_length=64)]
    platform: Platform
    manifest_digest: Sha256
    """The corpus digest: SHA-256 of the canonical manifest."""
    answers_digest: Sha256
    """SHA-256 of the canonical answers file."""
    files_digest: Sha256
    """SHA-256 of the case files' tree (see :func:`case_files_digest`)."""

    def to_json(self) -> dict[str, object]:
        """The claim as JSON."""
        return self.model_dump(mode="json")


def _pins(claim: CorpusClaim) -> dict[str, str]:
    return {
        "manifest": claim.manifest_digest,
        "answers": claim.answers_digest,
        "case-files": claim.files_digest,
    }


def _read(text: bytes) -> CorpusClaim:
    return validate_strict(CorpusClaim, text, what="corpus claim")


CORPUS_STATEMENT: PredicateKind[CorpusClaim] = PredicateKind(
    predicate_type=CORPUS_PREDICATE_TYPE,
    write=CorpusClaim.to_json,
    read=_read,
    self_subject="corpus-claim",
    pins=_pins,
)
"""The signed-corpus predicate kind."""


def answers_digest(answers: CorpusAnswers) -> str:
    """SHA-256 of the canonical answers (whitespace and key order do not count)."""
    return digest(answers.model_dump(mode="json"))


def case_files_digest(corpus: Corpus) -> str:
    """SHA-256 over the sorted (relative path, SHA-256 of the bytes read) of every case file.

    Taken from the bytes actually loaded, not from the manifest's pins.
    """
    files: dict[str, str] = {}
    seen: dict[int, str] = {}
    for case in corpus.manifest.cases:
        data = corpus.roms[case.id]
        sha = seen.get(id(data))
        if sha is None:
            sha = seen[id(data)] = sha256_hex(data)
        files[case.file] = sha
    return digest(sorted([name, sha] for name, sha in files.items()))


def corpus_claim(corpus: Corpus, answers: CorpusAnswers) -> CorpusClaim:
    """The claim a controller signs for ``corpus`` with ``answers``."""
    manifest = corpus.manifest
    return CorpusClaim(
        corpus_id=manifest.corpus_id,
        version=manifest.version,
        platform=manifest.platform,
        manifest_digest=manifest.digest,
        answers_digest=answers_digest(answers),
        files_digest=case_files_digest(corpus),
    )


def sign_corpus(corpus: Corpus, answers: CorpusAnswers, key: SigningKey) -> Envelope:
    """The corpus signature of ``corpus`` and ``answers`` by the controller ``key``."""
    answers.check_against(corpus.manifest)
    return sign_predicate(CORPUS_STATEMENT, corpus_claim(corpus, answers), key)


def signature_path(manifest_path: Path) -> Path:
    """Where the signature of the corpus whose manifest is ``manifest_path`` lives."""
    return manifest_path.with_name(SIGNATURE_FILE)


def shipped_controller_key() -> VerifyingKey:
    """The project's controller public key (shipped in the package)."""
    return _public_key(CONTROLLER_KEY)


def _public_key(path: Path) -> VerifyingKey:
    data = read_bounded(path, MAX_KEY_FILE_BYTES, "controller key file", SigningKeyError)
    return VerifyingKey.from_pem(data)


def load_controller_keys(paths: Sequence[Path] = ()) -> list[VerifyingKey]:
    """The controller keys to trust: those in ``paths``, else the shipped one."""
    if paths:
        return [_public_key(path) for path in paths]
    return [shipped_controller_key()]


def read_signature(path: Path) -> bytes | None:
    """The corpus signature file's bytes (bounded), or None when there is none."""
    if not path.exists():
        return None
    return read_bounded(path, MAX_SIGNATURE_BYTES, "corpus signature")


@dataclass(frozen=True)
class CorpusTrust:
    """Whether a corpus is vouched for by a trusted controller, by which key, and why."""

    trust: Trust
    reason: str
    key_id: str | None = None

    @property
    def trusted(self) -> bool:
        """True when a trusted controller signed exactly these files."""
        return self.trust == "trusted"


def _differences(signed: CorpusClaim, actual: CorpusClaim) -> list[str]:
    named = {
        "corpus_id": "corpus id",
        "version": "version",
        "platform": "platform",
        "manifest_digest": "manifest",
        "answers_digest": "answers",
        "files_digest": "case files",
    }
    return [
        label for field, label in named.items() if getattr(signed, field) != getattr(actual, field)
    ]


def check_corpus_signature(
    corpus: Corpus,
    answers: CorpusAnswers,
    signature: bytes | None,
    trusted: Sequence[VerifyingKey],
) -> CorpusTrust:
    """Whether ``signature`` vouches for ``corpus`` and ``answers`` under a ``trusted`` key.

    Never raises on a bad signature: the answer is ``untrusted`` with the reason.
    """
    if signature is None:
        return CorpusTrust("untrusted", f"the corpus has no signature ({SIGNATURE_FILE})")
    verdict = verify_statement(CORPUS_STATEMENT, signature, list(trusted))
    failed = next((check for check in verdict.checks if not check.passed), None)
    if failed is not None or verdict.value is None:
        reason = f"{failed.id}: {failed.reason}" if failed else "the signature could not be read"
        return CorpusTrust("untrusted", f"the corpus signature does not check out ({reason})")
    changed = _differences(verdict.value, corpus_claim(corpus, answers))
    if changed:
        return CorpusTrust(
            "untrusted",
            f"the corpus signature covers another {', '.join(changed)} than the files given "
            "(changed since it was signed)",
            verdict.key_id,
        )
    return CorpusTrust("trusted", f"signed by controller key {verdict.key_id}", verdict.key_id)


@dataclass(frozen=True)
class SignedClaim:
    """A corpus claim whose signature verified, and the controller key that made it."""

    claim: CorpusClaim
    key_id: str
    """SHA-256 hex of the controller's raw public key."""


def signed_claim(signature: bytes | None, trusted: Sequence[VerifyingKey]) -> SignedClaim | None:
    """The claim in ``signature`` with its signer when it verifies under a ``trusted`` key.

    None when there is no signature or it does not verify: never raises on a bad one.
    """
    if signature is None:
        return None
    verdict = verify_statement(CORPUS_STATEMENT, signature, list(trusted))
    if verdict.verdict != "clean" or verdict.value is None or verdict.key_id is None:
        return None
    return SignedClaim(verdict.value, verdict.key_id)
