"""Build a corpus and its answers by running the pinned reference emulator.

``build_corpus`` turns a folder of ROMs (pinned by a ``SHA256SUMS`` file) into
a manifest and an answers file: every ROM runs once on the reference
candidate; what the reference passes becomes a case with the reference's
observation as its answer, what it does not pass is listed in the manifest's
``excluded`` with the reason. The denominator is fixed then and never shrinks.
``generate_answers`` does the second half for a manifest a user wrote.

Two suites define passing themselves, so their answers never come from an
emulator: ``build_mooneye`` (the Fibonacci registers at the ``LD B,B``
breakpoint, every test that applies to a DMG-ABC) and ``build_acid2`` (the
SHA-256 of the author's reference picture). Each runs the reference once more
to record how it does, beside the manifest; a case it fails stays a case.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from playproof._bounded import read_bounded
from playproof.core.canonical import sha256_hex
from playproof.corpus._grader import grade, status_text
from playproof.corpus._manifest import (
    Answer,
    Corpus,
    CorpusAnswers,
    CorpusCase,
    CorpusManifest,
    ExcludedCase,
    FramebufferAnswer,
    MemoryAnswer,
    ReferenceCase,
    ReferenceResults,
    RegistersAnswer,
    SerialAnswer,
    corpus_file,
    load_corpus,
)
from playproof.corpus._reference import reference_candidate_spec, reference_identity
from playproof.corpus._runner import BLARGG_SIGNATURE, CaseObservation, run_corpus
from playproof.corpus._wire import MAX_ROM_BYTES, SCREEN_HEIGHT, SCREEN_WIDTH, SHADE_RGB
from playproof.errors import FormatError

__all__ = [
    "ACID2_FRAME",
    "BLARGG_SUITE_SECONDS",
    "FRAMES_PER_SECOND",
    "MOONEYE_BUDGET_FRAMES",
    "MOONEYE_MODEL",
    "MOONEYE_PASS",
    "Built",
    "build_acid2",
    "build_corpus",
    "build_mooneye",
    "draft_cases",
    "generate_answers",
    "mooneye_applies",
    "picture_sha256",
    "read_sums",
    "reference_answer",
    "reference_results",
]

FRAMES_PER_SECOND = 59.7275
BLARGG_SUITE_SECONDS: dict[str, float] = {
    "cpu_instrs": 55,
    "instr_timing": 1,
    "mem_timing": 3,
    "mem_timing-2": 4,
    "halt_bug": 2,
    "oam_bug": 21,
    "dmg_sound": 36,
    "interrupt_time": 2,
    "cgb_sound": 36,
}
"""Emulated seconds a DMG needs before each Blargg suite's result is final (SOURCE.md)."""
BUDGET_FACTOR = 1.5
BUDGET_SLACK_SECONDS = 2.0
DEFAULT_SECONDS = 60.0
MAX_SUMS_BYTES = 1024 * 1024
"""A ``SHA256SUMS`` file is at most this long."""
_SUMS_LINE = re.compile(r"(?P<sha>[0-9a-fA-F]{64}) [ *](?P<name>\S.*)")
MOONEYE_PASS = {"B": 3, "C": 5, "D": 8, "E": 13, "H": 21, "L": 34}
"""Mooneye's pass signal: these registers at the ``LD B,B`` breakpoint."""
BUILD_CASES_PER_PROCESS = 8
"""The reference is trusted, so the build reuses its processes (PyBoy takes 0.6 s to import)."""


def read_sums(root: Path) -> dict[str, str]:
    """The ``SHA256SUMS`` of ``root`` (relative path -> digest), every file checked.

    Lines are ``<sha256>  <path>`` (``sha256sum`` output; ``*`` before the path
    marks binary mode). Every path must stay inside ``root``: absolute paths,
    ``..`` and symlinks leading out are refused, as is any file over
    :data:`MAX_ROM_BYTES`; every problem is a FormatError naming the line.
    """
    path = root / "SHA256SUMS"
    raw = read_bounded(path, MAX_SUMS_BYTES, "checksum file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(f"{path} is not UTF-8 text (expected sha256sum output)") from None
    sums: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _SUMS_LINE.fullmatch(line)
        if match is None:
            raise FormatError(f"{path} line {number} is not '<sha256>  <path>': {line[:80]!r}")
        relative = PurePosixPath(match["name"]).as_posix().removeprefix("./")
        data = read_bounded(corpus_file(root, relative), MAX_ROM_BYTES, "corpus file")
        actual = sha256_hex(data)
        if actual != match["sha"].lower():
            raise FormatError(f"{relative} does not match {path} (refusing the corpus)")
        sums[relative] = actual
    return sums


def _suite(relative: str) -> str:
    return PurePosixPath(relative).parts[0].removesuffix(".gb")


def draft_cases(
    sums: Mapping[str, str], seconds: Mapping[str, float] = BLARGG_SUITE_SECONDS
) -> list[CorpusCase]:
    """One ``until-result`` case per ROM, with a budget from its suite's emulated seconds."""
    cases = []
    for relative, sha in sorted(sums.items()):
        if not relative.endswith((".gb", ".gbc")):
            continue
        suite = _suite(relative)
        needed = seconds.get(suite, DEFAULT_SECONDS) * BUDGET_FACTOR + BUDGET_SLACK_SECONDS
        cases.append(
            CorpusCase(
                id=relative.rsplit(".", 1)[0],
                file=relative,
                sha256=sha,
                suite=suite,
                budget_frames=math.ceil(needed * FRAMES_PER_SECOND),
            )
        )
    return cases


def reference_answer(case: CorpusCase, seen: CaseObservation) -> Answer | str:
    """The answer the reference's observation gives, or why the case is left out."""
    if seen.outcome != "ok":
        return f"reference {seen.outcome}: {seen.detail}"[:500]
    serial = seen.serial or ""
    if case.mode == "frames" and seen.screen_sha256 is not None:
        return FramebufferAnswer(sha256=seen.screen_sha256)
    if case.mode == "until-breakpoint":
        if seen.at_breakpoint is False:
            return f"reference reached no LD B,B within {case.budget_frames} frames"
        regs = seen.registers or {}
        if all(regs.get(name) == value for name, value in MOONEYE_PASS.items()):
            return RegistersAnswer(registers=dict(MOONEYE_PASS))
        return f"reference registers at the breakpoint are not 3 5 8 13 21 34: {regs}"[:500]
    if "Passed" in serial:
        return SerialAnswer(transcript=serial)
    block = bytes.fromhex(seen.memory) if seen.memory else b""
    if block[1:4] == BLARGG_SIGNATURE and block[0] == 0:
        return MemoryAnswer(text=status_text(block))
    if block[1:4] == BLARGG_SIGNATURE:
        text = status_text(block).strip().splitlines()
        return f"reference did not pass: status {block[0]:#04x}, {' / '.join(text[-2:])[:200]}"
    if serial:
        return f"reference did not pass: serial ends {serial.strip()[-120:]!r}"
    return f"reference reported no result within {case.budget_frames} frames"


def _run_reference(
    corpus: Corpus, jobs: int, on_case: Callable[[CaseObservation], None] | None
) -> dict[str, CaseObservation]:
    outcome = run_corpus(
        corpus,
        reference_candidate_spec(),
        jobs=jobs,
        cases_per_process=BUILD_CASES_PER_PROCESS,
        on_case=on_case,
    )
    return {o.case_id: o for o in outcome.observations}


def build_corpus(
    root: Path,
    *,
    corpus_id: str,
    version: str,
    description: str = "",
    seconds: Mapping[str, float] = BLARGG_SUITE_SECONDS,
    jobs: int = 2,
    on_case: Callable[[CaseObservation], None] | None = None,
    sums: Mapping[str, str] | None = None,
) -> tuple[CorpusManifest, CorpusAnswers]:
    """Build the manifest and answers of the ROMs pinned by ``root/SHA256SUMS``.

    ``sums`` is what :func:`read_sums` returned for ``root``, when the caller read it already.
    """
    drafts = draft_cases(read_sums(root) if sums is None else sums, seconds)
    if not drafts:
        raise FormatError(f"{root} holds no .gb ROMs")
    draft = CorpusManifest(
        corpus_id=corpus_id, version=version, cases=tuple(drafts), denominator=len(drafts)
    )
    seen = _run_reference(load_corpus(draft, root), jobs, on_case)
    kept: list[CorpusCase] = []
    excluded: list[ExcludedCase] = []
    found: dict[str, Answer] = {}
    for case in drafts:
        answer = reference_answer(case, seen[case.id])
        if isinstance(answer, str):
            excluded.append(
                ExcludedCase(file=case.file, sha256=case.sha256, suite=case.suite, reason=answer)
            )
        else:
            kept.append(case)
            found[case.id] = answer
    if not kept:
        raise FormatError("the reference passes none of the ROMs; there is no corpus to build")
    manifest = CorpusManifest(
        corpus_id=corpus_id,
        version=version,
        description=description,
        cases=tuple(kept),
        excluded=tuple(excluded),
        denominator=len(kept),
    )
    answers = CorpusAnswers(
        corpus_id=corpus_id,
        manifest_digest=manifest.digest,
        reference=reference_identity(),
        answers=found,
    )
    return manifest, answers


def generate_answers(
    manifest: CorpusManifest,
    root: Path,
    *,
    jobs: int = 2,
    on_case: Callable[[CaseObservation], None] | None = None,
) -> CorpusAnswers:
    """Answers for a manifest someone wrote; refuse if the reference fails any case."""
    seen = _run_reference(load_corpus(manifest, root), jobs, on_case)
    found: dict[str, Answer] = {}
    failing: list[str] = []
    for case in manifest.cases:
        answer = reference_answer(case, seen[case.id])
        if isinstance(answer, str):
            failing.append(f"{case.id}: {answer}")
        else:
            found[case.id] = answer
    if failing:
        raise FormatError(
            f"the reference does not pass {len(failing)} case(s), so they have no answer "
            f"(use corpus build to exclude them): {'; '.join(failing[:3])}"
        )
    return CorpusAnswers(
        corpus_id=manifest.corpus_id,
        manifest_digest=manifest.digest,
        reference=reference_identity(),
        answers=found,
    )


@dataclass(frozen=True)
class Built:
    """A corpus built from a suite's own pass convention, and how the reference did on it."""

    manifest: CorpusManifest
    answers: CorpusAnswers
    reference: ReferenceResults


MOONEYE_MODEL = "DMG-ABC"
"""The hardware Mooneye cases are chosen for: a DMG with CPU revision A, B or C."""
MOONEYE_BUDGET_FRAMES = 900
"""Frames (about 15 emulated seconds) a Mooneye test may take to reach its breakpoint;
the reference reaches it within 400 frames on every test."""
MOONEYE_CONVENTION = "Mooneye convention: B C D E H L = 3 5 8 13 21 34 at LD B,B"
_MODEL_TOKEN = re.compile(r"dmg[0ABC]*|mgb|sgb2?|cgb[0A-E]*|agb|ags|[GSCA]")


def mooneye_applies(relative: str) -> bool:
    """True when the Mooneye test ``relative`` applies to a DMG-ABC (its README's naming).

    A name without a ``-suffix`` applies to every model. A suffix lists models
    (``dmg0``, ``dmgABC``, ``mgb``, ``sgb``, ``sgb2``, ``cgb``...) or groups
    (``G`` = DMG + MGB, ``S`` = SGB + SGB2, ``C`` = CGB + AGB + AGS, ``A`` =
    AGB + AGS), run together: ``dmgABCmgb``, ``GS``. A suffix it cannot read is
    a FormatError.
    """
    stem = PurePosixPath(relative).stem
    if "-" not in stem:
        return True
    suffix = stem.rsplit("-", 1)[1]
    tokens = _MODEL_TOKEN.findall(suffix)
    if not suffix or "".join(tokens) != suffix:
        raise FormatError(f"{relative}: unknown model suffix {suffix!r} (Mooneye naming)")
    for token in tokens:
        if token == "G":
            return True
        if token.startswith("dmg") and (token == "dmg" or set(token[3:]) & set("ABC")):
            return True
    return False


def reference_results(
    manifest: CorpusManifest, answers: CorpusAnswers, seen: Mapping[str, CaseObservation]
) -> ReferenceResults:
    """The reference's observations graded against ``answers`` like any candidate's."""
    result = grade(manifest, answers, seen.values())
    return ReferenceResults(
        corpus_id=manifest.corpus_id,
        manifest_digest=manifest.digest,
        reference=reference_identity(),
        passed=result.passed,
        denominator=result.denominator,
        results=tuple(
            ReferenceCase(case_id=r.case_id, passed=r.passed, reason=r.reason)
            for r in result.results
        ),
    )


def _rom_files(sums: Mapping[str, str], suffix: str) -> list[tuple[str, str]]:
    return sorted((name, sha) for name, sha in sums.items() if name.endswith(suffix))


def build_mooneye(
    root: Path,
    *,
    corpus_id: str = "mooneye",
    version: str = "1",
    jobs: int = 2,
    on_case: Callable[[CaseObservation], None] | None = None,
    sums: Mapping[str, str] | None = None,
) -> Built:
    """The Mooneye corpus: every test for a DMG-ABC, answered by the suite's convention.

    Each ``.gb`` that applies to the model is an ``until-breakpoint`` case whose
    answer is :data:`MOONEYE_PASS`; the others are listed as excluded with the
    models they are for. The reference then runs every case once and its
    grade is kept as :class:`ReferenceResults`.
    """
    roms = _rom_files(read_sums(root) if sums is None else sums, ".gb")
    cases: list[CorpusCase] = []
    excluded: list[ExcludedCase] = []
    for relative, sha in roms:
        suite = PurePosixPath(relative).parent.as_posix()
        if not mooneye_applies(relative):
            suffix = PurePosixPath(relative).stem.rsplit("-", 1)[1]
            reason = f"for models {suffix!r} only, not a {MOONEYE_MODEL} (Mooneye naming)"
            excluded.append(ExcludedCase(file=relative, sha256=sha, suite=suite, reason=reason))
            continue
        cases.append(
            CorpusCase(
                id=relative.removesuffix(".gb"),
                file=relative,
                sha256=sha,
                suite=suite,
                mode="until-breakpoint",
                budget_frames=MOONEYE_BUDGET_FRAMES,
                result_address=None,
            )
        )
    if not cases:
        raise FormatError(f"{root} holds no Mooneye ROM for a {MOONEYE_MODEL}")
    manifest = CorpusManifest(
        corpus_id=corpus_id,
        version=version,
        description=(
            f"Mooneye Test Suite acceptance tests that apply to a {MOONEYE_MODEL} (DMG CPU "
            "revision A, B or C). Pass: B C D E H L = 3 5 8 13 21 34 when the test executes "
            "LD B,B (0x40); a failing test leaves 0x42 in each."
        ),
        cases=tuple(cases),
        excluded=tuple(excluded),
        denominator=len(cases),
    )
    answers = CorpusAnswers(
        corpus_id=corpus_id,
        manifest_digest=manifest.digest,
        reference=MOONEYE_CONVENTION,
        answers={case.id: RegistersAnswer(registers=dict(MOONEYE_PASS)) for case in cases},
    )
    seen = _run_reference(load_corpus(manifest, root), jobs, on_case)
    return Built(manifest, answers, reference_results(manifest, answers, seen))


ACID2_ROM = "dmg-acid2.gb"
ACID2_PICTURE = "reference-dmg.png"
ACID2_FRAME = 120
"""The frame (counted from power-on) whose picture a dmg-acid2 case hashes: the test has
drawn its face by frame 76 and executes ``LD B,B`` at frame 83 in the reference."""
MAX_PICTURE_BYTES = 1024 * 1024
"""A reference picture file is at most this long."""


def picture_sha256(data: bytes, what: str = "the reference picture") -> str:
    """SHA-256 of a 160x144 greyscale picture (file bytes) as the ``framebuffer`` criterion
    hashes a screen: R, G, B per pixel, row-major, every level one of 0xFF/0xAA/0x55/0x00.

    Needs Pillow (``pip install 'playproof[pyboy]'``); a picture of another size,
    or with a colour that is not one of the four DMG shades, is a FormatError.
    """
    import io

    try:
        from PIL import Image
    except ImportError:
        raise FormatError(
            "reading the reference picture needs Pillow: pip install 'playproof[pyboy]'"
        ) from None
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            rgb = image.convert("RGB")
    except (OSError, ValueError) as exc:
        raise FormatError(f"{what} is not a readable picture: {exc}") from None
    if rgb.size != (SCREEN_WIDTH, SCREEN_HEIGHT):
        raise FormatError(f"{what} is {rgb.size[0]}x{rgb.size[1]}, not 160x144")
    pixels = rgb.tobytes()
    levels = set(SHADE_RGB)
    for index in range(0, len(pixels), 3):
        r, g, b = pixels[index : index + 3]
        if not r == g == b or r not in levels:
            raise FormatError(
                f"{what}: pixel {index // 3} is #{r:02x}{g:02x}{b:02x}, not a DMG shade "
                "(#ffffff, #aaaaaa, #555555, #000000)"
            )
    return sha256_hex(pixels)


def build_acid2(
    root: Path,
    *,
    corpus_id: str = "dmg-acid2",
    version: str = "1",
    jobs: int = 1,
    on_case: Callable[[CaseObservation], None] | None = None,
    sums: Mapping[str, str] | None = None,
) -> Built:
    """The dmg-acid2 corpus: one ``frames`` case answered by the author's reference picture.

    The case runs :data:`ACID2_FRAME` frames and hashes that frame; the answer is
    :func:`picture_sha256` of ``reference-dmg.png`` (pinned by the same
    ``SHA256SUMS``), never an emulator's screen.
    """
    pinned = read_sums(root) if sums is None else sums
    for name in (ACID2_ROM, ACID2_PICTURE):
        if name not in pinned:
            raise FormatError(f"{root}/SHA256SUMS does not pin {name}")
    picture = read_bounded(corpus_file(root, ACID2_PICTURE), MAX_PICTURE_BYTES, "picture")
    if sha256_hex(picture) != pinned[ACID2_PICTURE]:
        raise FormatError(f"{ACID2_PICTURE} does not match {root}/SHA256SUMS")
    case = CorpusCase(
        id="dmg-acid2",
        file=ACID2_ROM,
        sha256=pinned[ACID2_ROM],
        suite="dmg-acid2",
        mode="frames",
        budget_frames=ACID2_FRAME,
        result_address=None,
    )
    manifest = CorpusManifest(
        corpus_id=corpus_id,
        version=version,
        description=(
            f"dmg-acid2 PPU test. The case runs {ACID2_FRAME} frames from power-on and hashes "
            f"frame {ACID2_FRAME} (160x144, row-major, R G B per pixel, shades 0-3 as grey "
            "0xFF 0xAA 0x55 0x00); it passes when that hash is the hash of the author's "
            "reference-dmg.png."
        ),
        cases=(case,),
        denominator=1,
    )
    answers = CorpusAnswers(
        corpus_id=corpus_id,
        manifest_digest=manifest.digest,
        reference=f"{ACID2_PICTURE} (the author's reference picture)",
        answers={case.id: FramebufferAnswer(sha256=picture_sha256(picture, ACID2_PICTURE))},
    )
    seen = _run_reference(load_corpus(manifest, root), jobs, on_case)
    return Built(manifest, answers, reference_results(manifest, answers, seen))
