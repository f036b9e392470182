"""Build a corpus and its answers by running the pinned reference emulator.

``build_corpus`` turns a folder of ROMs (pinned by a ``SHA256SUMS`` file) into
a manifest and an answers file: every ROM runs once on the reference
candidate; what the reference passes becomes a case with the reference's
observation as its answer, what it does not pass is listed in the manifest's
``excluded`` with the reason. The denominator is fixed then and never shrinks.
``generate_answers`` does the second half for a manifest a user wrote.

Three suites define passing themselves, so their answers never come from an
emulator: ``build_mooneye`` (the Fibonacci registers at the ``LD B,B``
breakpoint, every test that applies to a DMG-ABC), ``build_acid2`` (the
SHA-256 of the author's reference picture) and ``build_chip8`` (the Timendus
CHIP-8 suite, each case answered by the suite's published picture of it).
Each runs the reference once more to record how it does, beside the
manifest; a case it fails stays a case.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from playproof._bounded import read_bounded
from playproof.core.canonical import sha256_hex
from playproof.corpus._grader import grade, status_text
from playproof.corpus._manifest import (
    Answer,
    Chip8Key,
    Chip8Poke,
    Chip8Setup,
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
from playproof.corpus._wire import (
    CHIP8_SCREEN_HEIGHT,
    CHIP8_SCREEN_WIDTH,
    MAX_ROM_BYTES,
    SCREEN_HEIGHT,
    SCREEN_WIDTH,
    SHADE_RGB,
)
from playproof.errors import FormatError

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = [
    "ACID2_FRAME",
    "BLARGG_SUITE_SECONDS",
    "CHIP8_CASES",
    "CHIP8_EXCLUDED",
    "CHIP8_IPF",
    "Chip8Plan",
    "FRAMES_PER_SECOND",
    "MOONEYE_BUDGET_FRAMES",
    "MOONEYE_MODEL",
    "MOONEYE_PASS",
    "Built",
    "build_acid2",
    "build_chip8",
    "build_corpus",
    "chip8_picture_bits",
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
        reference_candidate_spec(corpus.manifest.platform),
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
        reference=reference_identity(manifest.platform),
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
        reference=reference_identity(manifest.platform),
        passed=result.passed,
        denominator=result.denominator,
        results=tuple(
            ReferenceCase(case_id=r.case_id, passed=r.passed, reason=r.reason)
            for r in result.results
        ),
    )


def _require_pinned(root: Path, pinned: Mapping[str, str], *names: str) -> None:
    for name in names:
        if name not in pinned:
            raise FormatError(f"{root}/SHA256SUMS does not pin {name}")


def _pinned_picture(root: Path, pinned: Mapping[str, str], name: str) -> bytes:
    picture = read_bounded(corpus_file(root, name), MAX_PICTURE_BYTES, "picture")
    if sha256_hex(picture) != pinned[name]:
        raise FormatError(f"{name} does not match {root}/SHA256SUMS")
    return picture


def _built(
    manifest: CorpusManifest,
    root: Path,
    reference: str,
    found: Mapping[str, Answer],
    jobs: int,
    on_case: Callable[[CaseObservation], None] | None,
) -> Built:
    """``manifest`` answered by ``found`` (from ``reference``), and how the reference does on it."""
    answers = CorpusAnswers(
        corpus_id=manifest.corpus_id,
        manifest_digest=manifest.digest,
        reference=reference,
        answers=dict(found),
    )
    seen = _run_reference(load_corpus(manifest, root), jobs, on_case)
    return Built(manifest, answers, reference_results(manifest, answers, seen))


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
    found = {case.id: RegistersAnswer(registers=dict(MOONEYE_PASS)) for case in cases}
    return _built(manifest, root, MOONEYE_CONVENTION, found, jobs, on_case)


ACID2_ROM = "dmg-acid2.gb"
ACID2_PICTURE = "reference-dmg.png"
ACID2_FRAME = 120
"""The frame (counted from power-on) whose picture a dmg-acid2 case hashes: the test has
drawn its face by frame 76 and executes ``LD B,B`` at frame 83 in the reference."""
MAX_PICTURE_BYTES = 1024 * 1024
"""A reference picture file is at most this long."""


def _rgb_picture(data: bytes, what: str, max_width: int | None = None) -> Image:
    """The picture file ``data`` decoded as a Pillow RGB image; a picture wider than
    ``max_width`` is refused before it is decoded. Needs Pillow."""
    import io

    try:
        from PIL import Image as Pillow
    except ImportError:
        raise FormatError(
            "reading a reference picture needs Pillow: pip install 'playproof[pyboy]'"
        ) from None
    try:
        with Pillow.open(io.BytesIO(data)) as image:
            if max_width is not None and image.size[0] > max_width:
                raise FormatError(f"{what} is {image.size[0]} pixels wide, over the bound")
            image.load()
            return image.convert("RGB")
    except (OSError, ValueError, Pillow.DecompressionBombError) as exc:
        raise FormatError(f"{what} is not a readable picture: {exc}") from None


def picture_sha256(data: bytes, what: str = "the reference picture") -> str:
    """SHA-256 of a 160x144 greyscale picture (file bytes) as the ``framebuffer`` criterion
    hashes a screen: R, G, B per pixel, row-major, every level one of 0xFF/0xAA/0x55/0x00.

    Needs Pillow (``pip install 'playproof[pyboy]'``); a picture of another size,
    or with a colour that is not one of the four DMG shades, is a FormatError.
    """
    rgb = _rgb_picture(data, what)
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
    _require_pinned(root, pinned, ACID2_ROM, ACID2_PICTURE)
    picture = _pinned_picture(root, pinned, ACID2_PICTURE)
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
    found = {case.id: FramebufferAnswer(sha256=picture_sha256(picture, ACID2_PICTURE))}
    reference = f"{ACID2_PICTURE} (the author's reference picture)"
    return _built(manifest, root, reference, found, jobs, on_case)


CHIP8_IPF = 15
"""CHIP-8 instructions per 1/60 s frame in every shipped case (900 per second). The
quirks test needs timers and at least this many to tell the display wait apart."""
CHIP8_SELECTOR = 0x1FF
"""The byte the quirks and keypad ROMs read to skip their menu (1 = CHIP-8 in the quirks test)."""
CHIP8_KEY_FRAME = 60
"""When the keypad cases press their keys: a second in, long after the test has drawn."""
CHIP8_PICTURE_UNIFORM = 15 / 16
"""Share of a scaled picture cell that must have the cell's colour (the rest is noise,
such as the three stray white pixels of ``quirks.png``)."""
CHIP8_PICTURE_COVERAGE = 0.99
"""Share of a picture's pixels that must be its two display colours."""
CHIP8_PICTURE_MAX_SCALE = 32
"""A picture wider than 32 x 64 pixels is refused before it is decoded."""


@dataclass(frozen=True)
class Chip8Plan:
    """One shipped CHIP-8 case: which ROM, which published picture, how long and what input."""

    id: str
    rom: str
    picture: str
    budget_frames: int
    selector: int | None = None
    keys: tuple[tuple[int, int, bool], ...] = ()
    """(frame, key, down) events."""

    @property
    def suite(self) -> str:
        """The ROM's name: ``3-corax+`` for ``bin/3-corax+.ch8``."""
        return PurePosixPath(self.rom).stem


_KEYS_1_AND_6 = ((CHIP8_KEY_FRAME, 1, True), (CHIP8_KEY_FRAME, 6, True))
CHIP8_CASES: tuple[Chip8Plan, ...] = (
    Chip8Plan("1-chip8-logo", "bin/1-chip8-logo.ch8", "pictures/chip-8-logo.png", 60),
    Chip8Plan("2-ibm-logo", "bin/2-ibm-logo.ch8", "pictures/ibm-logo.png", 60),
    Chip8Plan("3-corax+", "bin/3-corax+.ch8", "pictures/corax+.png", 180),
    Chip8Plan("4-flags", "bin/4-flags.ch8", "pictures/flags.png", 240),
    Chip8Plan("5-quirks/chip8", "bin/5-quirks.ch8", "pictures/quirks.png", 480, selector=1),
    Chip8Plan(
        "6-keypad/down", "bin/6-keypad.ch8", "pictures/keypad-down.png", 180, 1, _KEYS_1_AND_6
    ),
    Chip8Plan("6-keypad/up", "bin/6-keypad.ch8", "pictures/keypad-up.png", 180, 2, _KEYS_1_AND_6),
    Chip8Plan(
        "6-keypad/getkey",
        "bin/6-keypad.ch8",
        "pictures/keypad-getkey.png",
        180,
        3,
        ((CHIP8_KEY_FRAME, 5, True), (CHIP8_KEY_FRAME + 10, 5, False)),
    ),
)
"""Every case of the shipped ``chip8`` corpus (the CHIP-8 platform only). Budgets leave
at least twice the frames the reference needs to show the picture."""
CHIP8_EXCLUDED: tuple[tuple[str, str], ...] = (
    (
        "bin/5-quirks.ch8",
        "selector 0x1FF = 2, 3, 4 (SUPER-CHIP modern, XO-CHIP, SUPER-CHIP legacy) are not "
        "cases: they need SUPER-CHIP/XO-CHIP instructions and hires mode, which the CHIP-8 "
        "reference does not have; selector 1 is case 5-quirks/chip8. Its menu picture "
        "(quirks-platform.png) shows one phase of a blinking cursor, not a result",
    ),
    (
        "bin/6-keypad.ch8",
        "its menu picture (keypad-menu.png) shows one phase of a blinking cursor, not a "
        "result; the three tests are cases 6-keypad/down, 6-keypad/up and 6-keypad/getkey",
    ),
    (
        "bin/7-beep.ch8",
        "tests the buzzer: its picture (beep.png) is one phase of an icon flashing in morse "
        "rhythm, and a screen hash cannot check sound",
    ),
    (
        "bin/8-scrolling.ch8",
        "SUPER-CHIP and XO-CHIP only (scrolling instructions, hires); its pictures are "
        "those platforms' screens",
    ),
)
"""ROM files (or their other uses) left out of the ``chip8`` corpus, with the reason."""


def chip8_picture_bits(data: bytes, what: str = "the picture") -> bytes:
    """A published CHIP-8 screenshot as the 2048 display bytes (1 lit, 0 dark), row-major.

    The picture must be the 64x32 display scaled by a whole factor (the suite's
    are 768x384, 12x) in two colours, the brighter one lit; a cell whose pixels
    are not at least 15/16 one colour is a FormatError, as is a picture of
    another shape or with more than 1% of other colours. Needs Pillow.
    """
    rgb = _rgb_picture(data, what, max_width=CHIP8_PICTURE_MAX_SCALE * CHIP8_SCREEN_WIDTH)
    width, height = rgb.size
    scale = width // CHIP8_SCREEN_WIDTH
    if scale < 1 or (width, height) != (scale * CHIP8_SCREEN_WIDTH, scale * CHIP8_SCREEN_HEIGHT):
        raise FormatError(
            f"{what} is {width}x{height}, not the 64x32 display scaled by a whole factor"
        )
    pixels = rgb.tobytes()
    counts: dict[bytes, int] = {}
    for at in range(0, len(pixels), 3):
        colour = pixels[at : at + 3]
        counts[colour] = counts.get(colour, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    if len(ranked) < 2 or ranked[0][1] + ranked[1][1] < CHIP8_PICTURE_COVERAGE * width * height:
        raise FormatError(f"{what} is not a two-colour screenshot")
    first, second = ranked[0][0], ranked[1][0]
    lit_colour = max(first, second, key=sum)
    dark_colour = min(first, second, key=sum)

    def lit(colour: bytes) -> bool:
        near_lit = sum((a - b) ** 2 for a, b in zip(colour, lit_colour, strict=True))
        near_dark = sum((a - b) ** 2 for a, b in zip(colour, dark_colour, strict=True))
        return near_lit < near_dark

    verdict = {colour: lit(colour) for colour in counts}
    cell = scale * scale
    out = bytearray(CHIP8_SCREEN_WIDTH * CHIP8_SCREEN_HEIGHT)
    for row in range(CHIP8_SCREEN_HEIGHT):
        for column in range(CHIP8_SCREEN_WIDTH):
            on = 0
            for dy in range(scale):
                start = 3 * ((row * scale + dy) * width + column * scale)
                for dx in range(scale):
                    on += verdict[pixels[start + 3 * dx : start + 3 * dx + 3]]
            share = max(on, cell - on) / cell
            if share < CHIP8_PICTURE_UNIFORM:
                raise FormatError(
                    f"{what}: display cell ({column}, {row}) is {on} of {cell} lit pixels, "
                    "not one colour"
                )
            out[row * CHIP8_SCREEN_WIDTH + column] = 1 if 2 * on > cell else 0
    return bytes(out)


def build_chip8(
    root: Path,
    *,
    corpus_id: str = "chip8",
    version: str = "1",
    jobs: int = 2,
    on_case: Callable[[CaseObservation], None] | None = None,
    sums: Mapping[str, str] | None = None,
) -> Built:
    """The Timendus CHIP-8 corpus: :data:`CHIP8_CASES`, each answered by its published picture.

    Every ROM and picture must be pinned by ``root/SHA256SUMS``. Each answer is
    the SHA-256 of :func:`chip8_picture_bits` of the case's picture, never an
    interpreter's screen; the reference then runs every case once and its
    grade is kept as :class:`ReferenceResults`.
    """
    pinned = read_sums(root) if sums is None else sums
    cases: list[CorpusCase] = []
    found: dict[str, Answer] = {}
    for plan in CHIP8_CASES:
        _require_pinned(root, pinned, plan.rom, plan.picture)
        picture = _pinned_picture(root, pinned, plan.picture)
        setup = Chip8Setup(
            instructions_per_frame=CHIP8_IPF,
            poke=()
            if plan.selector is None
            else (Chip8Poke(address=CHIP8_SELECTOR, value=plan.selector),),
            keys=tuple(Chip8Key(frame=f, key=k, down=d) for f, k, d in plan.keys),
        )
        cases.append(
            CorpusCase(
                id=plan.id,
                file=plan.rom,
                sha256=pinned[plan.rom],
                suite=plan.suite,
                mode="frames",
                budget_frames=plan.budget_frames,
                result_address=None,
                chip8=setup,
            )
        )
        bits = chip8_picture_bits(picture, plan.picture)
        found[plan.id] = FramebufferAnswer(sha256=sha256_hex(bits))
    excluded = []
    for name, reason in CHIP8_EXCLUDED:
        _require_pinned(root, pinned, name)
        suite = PurePosixPath(name).stem
        excluded.append(ExcludedCase(file=name, sha256=pinned[name], suite=suite, reason=reason))
    manifest = CorpusManifest(
        corpus_id=corpus_id,
        version=version,
        platform="chip8",
        description=(
            "Timendus CHIP-8 test suite on the CHIP-8 platform (COSMAC VIP behaviour). Each "
            f"case loads its ROM at 0x200, runs {CHIP8_IPF} instructions per 1/60 s frame "
            "(a draw ends the frame), sets the menu selector at 0x1FF and presses keys as its "
            "setup says, and hashes the 64x32 display after its frames (2048 bytes, 1 lit, "
            "0 dark, row-major); it passes when that is the hash of the suite's published "
            "picture of the test."
        ),
        cases=tuple(cases),
        excluded=tuple(excluded),
        denominator=len(cases),
    )
    reference = "the suite's published pictures (pictures/*.png, 12x scale of 64x32)"
    return _built(manifest, root, reference, found, jobs, on_case)
