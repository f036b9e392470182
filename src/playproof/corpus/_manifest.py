"""Corpus manifests and expected answers, and loading a corpus whose files match its pins.

A manifest lists the cases (file, SHA-256, suite, mode, budget) and fixes the
denominator; it says which files were left out and why. The expected answers
live in a separate file bound to the manifest's digest and never enter a
candidate's jail. The corpus digest is the digest of the manifest, which pins
every case file by SHA-256, so it covers the manifest and every file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal, Self, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from playproof._bounded import read_bounded
from playproof.core.canonical import digest, parse_json, sha256_hex
from playproof.corpus._wire import MAX_DATA_BYTES, MAX_ROM_BYTES
from playproof.errors import FormatError

__all__ = [
    "MAX_ANSWERS_BYTES",
    "MAX_CORPUS_BYTES",
    "MAX_MANIFEST_BYTES",
    "Answer",
    "Chip8Key",
    "Chip8Poke",
    "Chip8Setup",
    "Corpus",
    "CorpusAnswers",
    "CorpusCase",
    "CorpusManifest",
    "ExcludedCase",
    "ReferenceCase",
    "ReferenceResults",
    "FramebufferAnswer",
    "MemoryAnswer",
    "RegistersAnswer",
    "SerialAnswer",
    "corpus_file",
    "load_answers",
    "load_corpus",
    "load_manifest",
    "load_reference_results",
]

MAX_MANIFEST_BYTES = 4 * 1024 * 1024
"""A manifest file is at most this long."""
MAX_ANSWERS_BYTES = 16 * 1024 * 1024
"""An answers file is at most this long."""
MAX_CASES = 10_000
MAX_CORPUS_BYTES = 512 * 1024 * 1024
"""The case files of one manifest add up to at most this many bytes, counted once per
case (each case sends its file to the candidate); identical files are kept in memory once."""
M = TypeVar("M", bound=BaseModel)
MAX_BUDGET_FRAMES = 1_000_000
"""About four and a half emulated hours at 59.73 frames per second."""

Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
CaseId = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\t\n\r]+$")]
Mode = Literal["until-result", "until-breakpoint", "frames"]
"""How the runner drives a case; docs/corpus.md says what each one observes."""
Platform = Literal["dmg", "chip8"]
"""The machine a corpus's cases run on (``PLATFORMS`` in ``_wire``)."""
MAX_CHIP8_IPF = 1000
"""CHIP-8 instructions per frame a case may ask for (60 000 per emulated second)."""
MAX_CHIP8_EVENTS = 256
"""Pokes, or key events, one CHIP-8 case may script."""


def _relative_file(value: str) -> str:
    path = PurePosixPath(value)
    if not value or path.is_absolute() or ".." in path.parts or "\\" in value:
        raise ValueError(f"{value[:80]!r} is not a relative path inside the corpus folder")
    return value


def corpus_file(root: Path, relative: str) -> Path:
    """``root / relative``, refused (FormatError) unless it stays inside ``root``.

    The name must be relative without ``..``, and once symlinks are resolved the
    file must still lie under ``root``: a link pointing out of the folder is refused.
    """
    try:
        _relative_file(relative)
    except ValueError as exc:
        raise FormatError(f"{exc} {root} (refusing the corpus)") from None
    base = root.resolve()
    path = (root / relative).resolve()
    if base not in path.parents:
        raise FormatError(
            f"{relative[:80]!r} leads out of the corpus folder {root} (refusing the corpus)"
        )
    return path


class Chip8Poke(BaseModel):
    """One byte written to CHIP-8 memory after ``LOAD`` (e.g. 0x1FF, the suite's selector)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    address: Annotated[int, Field(ge=0, le=0xFFF)]
    value: Annotated[int, Field(ge=0, le=255)]


class Chip8Key(BaseModel):
    """A scripted keypad event: after ``frame`` frames, key ``key`` goes down or comes up."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    frame: Annotated[int, Field(ge=0, le=MAX_BUDGET_FRAMES)]
    key: Annotated[int, Field(ge=0, le=15)]
    down: bool


class Chip8Setup(BaseModel):
    """How a CHIP-8 case runs: its speed, memory set before the first frame, and key presses."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    instructions_per_frame: Annotated[int, Field(ge=1, le=MAX_CHIP8_IPF)]
    """Instructions per 1/60 s frame (fewer when a sprite is drawn: the display wait)."""
    poke: Annotated[tuple[Chip8Poke, ...], Field(max_length=MAX_CHIP8_EVENTS)] = ()
    keys: Annotated[tuple[Chip8Key, ...], Field(max_length=MAX_CHIP8_EVENTS)] = ()

    @model_validator(mode="after")
    def _keys_in_order(self) -> Self:
        frames = [event.frame for event in self.keys]
        if frames != sorted(frames):
            raise ValueError("CHIP-8 key events are not in frame order")
        return self


class CorpusCase(BaseModel):
    """One test: a ROM file pinned by SHA-256, how to run it and for how long."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: CaseId
    file: Annotated[str, Field(max_length=512)]
    sha256: Sha256
    suite: Annotated[str, Field(min_length=1, max_length=100)]
    mode: Mode = "until-result"
    budget_frames: Annotated[int, Field(ge=1, le=MAX_BUDGET_FRAMES)]
    poll_frames: Annotated[int, Field(ge=1, le=MAX_BUDGET_FRAMES)] = 60
    """``until-result`` checks for a result every this many frames."""
    stop_markers: tuple[Annotated[str, Field(min_length=1, max_length=64)], ...] = (
        "Passed",
        "Failed",
    )
    """Public serial text that ends an ``until-result`` case early (never a verdict)."""
    result_address: Annotated[int, Field(ge=0, le=0xFFFF - 255)] | None = 0xA000
    """Where a Blargg-style status block (status, DE B0 61, text) may appear."""
    chip8: Chip8Setup | None = None
    """A CHIP-8 case's speed, memory pokes and key script; absent from Game Boy cases."""

    @field_validator("file")
    @classmethod
    def _inside_corpus(cls, value: str) -> str:
        return _relative_file(value)

    @model_serializer(mode="wrap")
    def _without_absent_setup(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # A Game Boy case serialises as it did before CHIP-8 existed, so the
        # digests of existing manifests (and the answers bound to them) stay valid.
        data: dict[str, object] = handler(self)
        if data.get("chip8") is None:
            data.pop("chip8", None)
        return data


class ExcludedCase(BaseModel):
    """A file left out at build time, with the reason (the reference fails it, or it does
    not apply to the corpus's hardware model)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: Annotated[str, Field(max_length=512)]
    sha256: Sha256
    suite: Annotated[str, Field(min_length=1, max_length=100)]
    reason: Annotated[str, Field(min_length=1, max_length=500)]


class CorpusManifest(BaseModel):
    """The cases of a corpus and its fixed denominator."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1] = 1
    corpus_id: Annotated[
        str, Field(min_length=1, max_length=100, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    ]
    version: Annotated[str, Field(min_length=1, max_length=64)]
    platform: Platform = "dmg"
    description: Annotated[str, Field(max_length=2000)] = ""
    cases: Annotated[tuple[CorpusCase, ...], Field(min_length=1, max_length=MAX_CASES)]
    excluded: tuple[ExcludedCase, ...] = ()
    denominator: Annotated[int, Field(ge=1, le=MAX_CASES)]

    @model_validator(mode="after")
    def _fixed_denominator(self) -> Self:
        ids = [case.id for case in self.cases]
        if len(set(ids)) != len(ids):
            raise ValueError("case ids repeat")
        if self.denominator != len(self.cases):
            raise ValueError(
                f"denominator {self.denominator} is not the number of cases ({len(self.cases)})"
            )
        for case in self.cases:
            if self.platform == "chip8":
                if case.mode != "frames" or case.chip8 is None:
                    raise ValueError(
                        f"CHIP-8 case {case.id!r} needs mode 'frames' and a chip8 setup"
                    )
                if any(event.frame > case.budget_frames for event in case.chip8.keys):
                    raise ValueError(f"CHIP-8 case {case.id!r} has a key event after its budget")
            elif case.chip8 is not None:
                raise ValueError(
                    f"case {case.id!r} has a chip8 setup on platform {self.platform!r}"
                )
        return self

    @property
    def digest(self) -> str:
        """The corpus digest: SHA-256 of the canonical manifest (which pins every file)."""
        return digest(self.model_dump(mode="json"))

    def case(self, case_id: str) -> CorpusCase:
        """The case named ``case_id``."""
        for case in self.cases:
            if case.id == case_id:
                return case
        raise KeyError(case_id)


class SerialAnswer(BaseModel):
    """Pass when the serial transcript equals the reference's and holds the pass marker."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    criterion: Literal["serial"] = "serial"
    transcript: Annotated[str, Field(max_length=MAX_DATA_BYTES)]
    pass_marker: Annotated[str, Field(min_length=1, max_length=64)] = "Passed"


class MemoryAnswer(BaseModel):
    """Pass on a Blargg status block: signature DE B0 61, status 0, the reference's text."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    criterion: Literal["memory"] = "memory"
    status: Annotated[int, Field(ge=0, le=255)] = 0
    text: Annotated[str, Field(max_length=252)]


class RegistersAnswer(BaseModel):
    """Pass when the registers at the ``LD B,B`` breakpoint equal these (Mooneye: 3 5 8 ...)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    criterion: Literal["registers"] = "registers"
    registers: dict[Literal["A", "B", "C", "D", "E", "H", "L"], Annotated[int, Field(ge=0, le=255)]]


class FramebufferAnswer(BaseModel):
    """Pass when the SHA-256 of the screen after the case's frames equals this.

    On a DMG the hashed bytes are the 160x144 frame, row-major, three bytes
    (R, G, B) per pixel, shades 0..3 as the grey levels 0xFF, 0xAA, 0x55, 0x00.
    On CHIP-8 they are the 64x32 display, row-major, one byte per pixel (1 lit,
    0 dark): 2048 bytes.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    criterion: Literal["framebuffer"] = "framebuffer"
    sha256: Sha256


Answer = Annotated[
    SerialAnswer | MemoryAnswer | RegistersAnswer | FramebufferAnswer,
    Field(discriminator="criterion"),
]


class CorpusAnswers(BaseModel):
    """The expected answers of one manifest (bound by its digest); never shown to candidates."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1] = 1
    corpus_id: str
    manifest_digest: Sha256
    reference: Annotated[str, Field(max_length=200)]
    """Which emulator produced these answers."""
    answers: dict[CaseId, Answer]

    def check_against(self, manifest: CorpusManifest) -> None:
        """Raise FormatError unless these answers belong to ``manifest``, one per case."""
        if self.manifest_digest != manifest.digest or self.corpus_id != manifest.corpus_id:
            raise FormatError(
                f"the answers are for manifest {self.manifest_digest[:16]}... of "
                f"{self.corpus_id!r}, not {manifest.digest[:16]}... of {manifest.corpus_id!r}"
            )
        ids = {case.id for case in manifest.cases}
        missing, extra = sorted(ids - set(self.answers)), sorted(set(self.answers) - ids)
        if missing or extra:
            raise FormatError(
                f"answers do not match the cases: missing {missing[:5]}, extra {extra[:5]}"
            )


class ReferenceCase(BaseModel):
    """How the reference candidate did on one case (graded like any candidate)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: CaseId
    passed: bool
    reason: Annotated[str, Field(max_length=200)]


class ReferenceResults(BaseModel):
    """The reference candidate's grade on a corpus whose answers do not come from it.

    Where the expected answers are a suite's own convention (Mooneye) or its
    author's picture (dmg-acid2), the reference may fail some cases; they stay
    in the denominator and this file records which, bound to the manifest.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1] = 1
    corpus_id: str
    manifest_digest: Sha256
    reference: Annotated[str, Field(max_length=200)]
    passed: Annotated[int, Field(ge=0, le=MAX_CASES)]
    denominator: Annotated[int, Field(ge=1, le=MAX_CASES)]
    results: tuple[ReferenceCase, ...]

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if len(self.results) != self.denominator:
            raise ValueError(f"{len(self.results)} results for a denominator of {self.denominator}")
        if sum(r.passed for r in self.results) != self.passed:
            raise ValueError("the pass count is not the number of passing results")
        return self

    def check_against(self, manifest: CorpusManifest) -> None:
        """Raise FormatError unless these results cover exactly ``manifest``'s cases."""
        if self.manifest_digest != manifest.digest or self.corpus_id != manifest.corpus_id:
            raise FormatError(
                f"the reference results are for manifest {self.manifest_digest[:16]}..., "
                f"not {manifest.digest[:16]}... of {manifest.corpus_id!r}"
            )
        if [r.case_id for r in self.results] != [c.id for c in manifest.cases]:
            raise FormatError("the reference results do not list the manifest's cases in order")


def _model(model: type[M], path: Path, limit: int, what: str) -> M:
    data = read_bounded(path, limit, what)
    parse_json(data, limit=limit, what=f"{what} {path}")  # no repeated keys, no NaN
    try:
        # Strict, as the published schema: no "1" for a number, no 1.0 for a count.
        return model.model_validate_json(data, strict=True)
    except ValidationError as exc:
        raise FormatError(f"{what} {path} is not valid: {exc.errors()[0]['msg']}") from exc


def load_manifest(path: Path) -> CorpusManifest:
    """Read and validate a manifest file (bounded)."""
    return _model(CorpusManifest, path, MAX_MANIFEST_BYTES, "manifest")


def load_answers(path: Path, manifest: CorpusManifest) -> CorpusAnswers:
    """Read an answers file and refuse it unless it matches ``manifest``."""
    answers = _model(CorpusAnswers, path, MAX_ANSWERS_BYTES, "answers file")
    answers.check_against(manifest)
    return answers


def load_reference_results(path: Path, manifest: CorpusManifest) -> ReferenceResults:
    """Read a reference-results file and refuse it unless it matches ``manifest``."""
    results = _model(ReferenceResults, path, MAX_ANSWERS_BYTES, "reference results")
    results.check_against(manifest)
    return results


@dataclass(frozen=True)
class Corpus:
    """A manifest with every case file read and checked against its pin.

    ``roms`` maps case ids to file contents; cases naming the same file (or
    files with the same content) share one ``bytes`` object.
    """

    manifest: CorpusManifest
    roms: dict[str, bytes]

    @property
    def digest(self) -> str:
        """The corpus digest (see :attr:`CorpusManifest.digest`)."""
        return self.manifest.digest


def load_corpus(manifest: CorpusManifest | Path, root: Path) -> Corpus:
    """Read every case file under ``root``; refuse the corpus if any digest differs.

    Nothing runs before every file is checked, so a tampered ROM stops the
    grading before its first case.
    """
    parsed = manifest if isinstance(manifest, CorpusManifest) else load_manifest(manifest)
    files: dict[Path, tuple[bytes, str]] = {}
    contents: dict[str, bytes] = {}
    roms: dict[str, bytes] = {}
    total = 0
    for case in parsed.cases:
        path = corpus_file(root, case.file)
        if path not in files:
            data = read_bounded(path, MAX_ROM_BYTES, "case file")
            actual = sha256_hex(data)
            files[path] = (contents.setdefault(actual, data), actual)
        data, actual = files[path]
        total += len(data)
        if total > MAX_CORPUS_BYTES:
            raise FormatError(
                f"the case files of manifest {parsed.corpus_id!r} add up to more than "
                f"{MAX_CORPUS_BYTES // 2**20} MiB (the limit, counted once per case)"
            )
        if actual != case.sha256:
            raise FormatError(
                f"case {case.id!r}: {case.file} has SHA-256 {actual[:16]}..., "
                f"the manifest pins {case.sha256[:16]}... (refusing the whole corpus)"
            )
        roms[case.id] = data
    return Corpus(manifest=parsed, roms=roms)
