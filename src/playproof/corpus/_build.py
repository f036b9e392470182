"""Build a corpus and its answers by running the pinned reference emulator.

``build_corpus`` turns a folder of ROMs (pinned by a ``SHA256SUMS`` file) into
a manifest and an answers file: every ROM runs once on the reference
candidate; what the reference passes becomes a case with the reference's
observation as its answer, what it does not pass is listed in the manifest's
``excluded`` with the reason. The denominator is fixed then and never shrinks.
``generate_answers`` does the second half for a manifest a user wrote.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath

from playproof._bounded import read_bounded
from playproof.core.canonical import sha256_hex
from playproof.corpus._grader import status_text
from playproof.corpus._manifest import (
    Answer,
    Corpus,
    CorpusAnswers,
    CorpusCase,
    CorpusManifest,
    ExcludedCase,
    FramebufferAnswer,
    MemoryAnswer,
    RegistersAnswer,
    SerialAnswer,
    corpus_file,
    load_corpus,
)
from playproof.corpus._reference import reference_candidate_spec, reference_identity
from playproof.corpus._runner import BLARGG_SIGNATURE, CaseObservation, run_corpus
from playproof.corpus._wire import MAX_ROM_BYTES
from playproof.errors import FormatError

__all__ = [
    "BLARGG_SUITE_SECONDS",
    "FRAMES_PER_SECOND",
    "MOONEYE_PASS",
    "build_corpus",
    "draft_cases",
    "generate_answers",
    "read_sums",
    "reference_answer",
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
