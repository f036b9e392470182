"""The grader: raw observations against the private answers, over the fixed denominator.

A case passes only when its observation ended ``ok`` and matches its answer; a
crash, a timeout, a protocol error or a missing observation is a fail with a
reason, never a smaller denominator.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from playproof.corpus._manifest import (
    Answer,
    CorpusAnswers,
    CorpusManifest,
    FramebufferAnswer,
    MemoryAnswer,
    RegistersAnswer,
    SerialAnswer,
)
from playproof.corpus._runner import BLARGG_SIGNATURE, CaseObservation

__all__ = ["STATUS_TEXT_AT", "CaseResult", "Grade", "grade", "grade_case", "status_text"]
__all__ += ["ReferenceRegistersAnswer"]

MAX_REASON = 200


class CaseResult(BaseModel):
    """One case: passed or not, and a short reason either way."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: str
    passed: bool
    reason: Annotated[str, Field(max_length=MAX_REASON)]


class Grade(BaseModel):
    """Per-case results in manifest order, the pass count and the fixed denominator."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    results: list[CaseResult]
    passed: Annotated[int, Field(ge=0)]
    denominator: Annotated[int, Field(ge=1)]

    @property
    def score(self) -> float:
        """Passes over the manifest denominator."""
        return self.passed / self.denominator

    @property
    def passing(self) -> frozenset[str]:
        """The ids of the passing cases."""
        return frozenset(r.case_id for r in self.results if r.passed)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


def _tail(text: str, size: int = 40) -> str:
    return repr(text[-size:])


STATUS_TEXT_AT = 4
"""Where a Blargg status block's text starts (after the status byte and the signature)."""


def status_text(block: bytes) -> str:
    """The zero-terminated text of a Blargg status block (after status and signature)."""
    return block[STATUS_TEXT_AT:].split(b"\0", 1)[0].decode("latin-1")


def _serial(answer: SerialAnswer, seen: CaseObservation) -> tuple[bool, str]:
    transcript = (seen.serial or "").rstrip()
    if answer.pass_marker not in transcript:
        return False, f"no {answer.pass_marker!r} in the serial output (ends {_tail(transcript)})"
    if transcript != answer.transcript.rstrip():
        return (
            False,
            f"serial output differs from the expected transcript (ends {_tail(transcript)})",
        )
    return True, f"serial transcript matches ({len(transcript)} bytes)"


def _memory(answer: MemoryAnswer, seen: CaseObservation) -> tuple[bool, str]:
    if seen.memory is None:
        return False, "no status block was read"
    block = bytes.fromhex(seen.memory)
    if block[1:4] != BLARGG_SIGNATURE:
        return False, "no DE B0 61 signature at the result address"
    text = status_text(block)
    if block[0] != answer.status:
        return (
            False,
            f"status {block[0]:#04x}, expected {answer.status:#04x} (text ends {_tail(text)})",
        )
    if text.rstrip() != answer.text.rstrip():
        return False, f"status text differs from the expected text (ends {_tail(text)})"
    return True, f"status {block[0]:#04x} and text match"


class ReferenceRegistersAnswer(RegistersAnswer):
    """A variant's registers answer with a second observation: the serial bytes.

    Made at grading time from the reference's run on the variant, never read
    from an answers file. A Mooneye test sends B, C, D, E, H, L over the serial
    port before its ``LD B,B`` (3, 5, 8, 13, 21, 34 on success, 0x42 six times
    on failure), so a run that really executed the exit routine reports those
    bytes too; ``serial`` is what the reference's run sent by its breakpoint
    (latin-1 text, as observations keep it).
    """

    serial: Annotated[str, Field(max_length=64)]


def _registers(answer: RegistersAnswer, seen: CaseObservation) -> tuple[bool, str]:
    if seen.at_breakpoint is False:
        return False, "no LD B,B breakpoint within the frame budget (RUNBP answered LIMIT)"
    if seen.registers is None:
        return False, "no registers were read"
    wrong = [
        f"{name}={seen.registers.get(name)} (expected {value})"
        for name, value in sorted(answer.registers.items())
        if seen.registers.get(name) != value
    ]
    if wrong:
        return False, "registers differ: " + ", ".join(wrong[:4])
    if isinstance(answer, ReferenceRegistersAnswer) and (seen.serial or "") != answer.serial:
        sent = (seen.serial or "").encode("latin-1")
        return False, (
            "registers match, but the serial bytes sent by the breakpoint differ from the "
            f"reference's ({sent[:16].hex(' ') or 'none'}; expected "
            f"{answer.serial.encode('latin-1').hex(' ') or 'none'})"
        )
    if isinstance(answer, ReferenceRegistersAnswer):
        return True, "registers and serial bytes at the breakpoint match"
    return True, "registers at the breakpoint match"


def _framebuffer(answer: FramebufferAnswer, seen: CaseObservation) -> tuple[bool, str]:
    if seen.screen_sha256 is None:
        return False, "no screen was read"
    if seen.screen_sha256 != answer.sha256:
        return False, f"screen hash {seen.screen_sha256[:12]}... differs from the expected"
    return True, "screen hash matches"


def grade_case(answer: Answer, seen: CaseObservation | None, case_id: str) -> CaseResult:
    """Judge one case's observation against its answer."""
    if seen is None:
        return CaseResult(case_id=case_id, passed=False, reason="no observation (case missing)")
    if seen.outcome != "ok":
        return CaseResult(
            case_id=case_id, passed=False, reason=_clip(f"{seen.outcome}: {seen.detail}")
        )
    if isinstance(answer, SerialAnswer):
        passed, reason = _serial(answer, seen)
    elif isinstance(answer, MemoryAnswer):
        passed, reason = _memory(answer, seen)
    elif isinstance(answer, RegistersAnswer):
        passed, reason = _registers(answer, seen)
    else:
        passed, reason = _framebuffer(answer, seen)
    return CaseResult(case_id=case_id, passed=passed, reason=_clip(reason))


def grade(
    manifest: CorpusManifest, answers: CorpusAnswers, observations: Iterable[CaseObservation]
) -> Grade:
    """Grade every manifest case; unknown or repeated observations change nothing."""
    answers.check_against(manifest)
    seen: dict[str, CaseObservation] = {}
    for observation in observations:
        seen.setdefault(observation.case_id, observation)
    results = [grade_case(answers.answers[c.id], seen.get(c.id), c.id) for c in manifest.cases]
    return Grade(
        results=results,
        passed=sum(r.passed for r in results),
        denominator=manifest.denominator,
    )
