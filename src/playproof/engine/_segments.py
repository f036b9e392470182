"""What a campaign shows between segments, and how hook answers become guidance.

After a segment the campaign builds a :class:`SegmentReport` (text and
numbers only, never evidence) and may ask two hooks about it: an analyst
(answers an :class:`~playproof.engine.Analysis`) and a steering hook (a
human's or a program's :class:`~playproof.engine.Steer`, or plain text).
Steering outranks the analyst; blank guidance clears the guidance in effect.
Guidance reaches the driver only as ``DecisionContext.guidance``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from playproof.core.record import ClaimedMilestone, StopReason
from playproof.core.score import Score
from playproof.engine._ledger import (
    MAX_GUIDANCE_CHARS,
    Analysis,
    Recommendation,
    SegmentStatus,
    Steer,
)
from playproof.errors import HookError

__all__ = [
    "DEFAULT_RECENT",
    "Analyst",
    "SegmentReport",
    "SteeringHook",
    "TrajectoryStep",
    "ask_analyst",
    "ask_steering",
    "next_guidance",
]

DEFAULT_RECENT = 8
"""How many recent turns a segment report shows."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TrajectoryStep(_Frozen):
    """One recent turn: the observation text the driver saw and the input it gave."""

    turn: int
    observation: str
    input: str


class SegmentReport(_Frozen):
    """Progress after one segment, for hooks and displays (never evidence)."""

    segment: Annotated[int, Field(ge=0)]
    status: SegmentStatus
    stop_reason: StopReason | None
    first_turn: int
    last_turn: int
    turns: int
    max_turns: int
    spent_usd: float
    budget_usd: float | None
    remaining_usd: float | None
    new_milestones: tuple[str, ...]
    verified: tuple[ClaimedMilestone, ...]
    milestones_total: int
    identity_milestones: tuple[str, ...] = ()
    """The contract's identity milestones (``save-hash``/``frame-hash``), scored apart."""
    observation: str
    """The text of the last observation."""
    trajectory: tuple[TrajectoryStep, ...]
    latencies_ms: tuple[float, ...]
    """This segment's decision latencies, in order."""
    guidance: str | None
    """The guidance the driver saw during this segment."""
    finished: bool
    """True when the campaign ends with this segment (hooks are not asked)."""

    @property
    def score(self) -> Score:
        """The score so far: earned over earnable, identity milestones apart (``"3 of 7"``)."""
        identity = set(self.identity_milestones)
        reached = sum(1 for m in self.verified if m.id in identity)
        return Score(
            earned=len(self.verified) - reached,
            earnable=self.milestones_total - len(identity),
            identity_reached=reached,
            identity_total=len(identity),
        )


Analyst: TypeAlias = Callable[
    [SegmentReport],
    Analysis | Mapping[str, Any] | Awaitable[Analysis | Mapping[str, Any] | None] | None,
]
"""An analyst hook: reads a report, answers an Analysis (or its JSON form), or None."""
SteeringHook: TypeAlias = Callable[
    [SegmentReport],
    Steer | str | Mapping[str, Any] | Awaitable[Steer | str | Mapping[str, Any] | None] | None,
]
"""A steering hook: answers a Steer, plain text (a note; blank clears), its JSON form, or None."""


async def _call(hook: Callable[[SegmentReport], Any], report: SegmentReport, who: str) -> Any:
    try:
        answer = hook(report)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:
        raise HookError(f"the {who} hook failed after segment {report.segment}: {exc}") from exc
    return answer


def _invalid(who: str, report: SegmentReport, exc: ValidationError) -> HookError:
    reasons = "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'answer'}: {err['msg']}" for err in exc.errors()
    )
    return HookError(f"the {who} answered badly after segment {report.segment}: {reasons}")


async def ask_analyst(analyst: Analyst, report: SegmentReport) -> Analysis | None:
    """Ask the analyst about ``report``; HookError when it fails or its answer does not validate."""
    answer = await _call(analyst, report, "analyst")
    if answer is None or isinstance(answer, Analysis):
        return answer
    if not isinstance(answer, Mapping):
        raise HookError(
            f"the analyst answered {type(answer).__name__} after segment {report.segment}; "
            "answer an Analysis, its JSON object, or None"
        )
    try:
        return Analysis.model_validate(dict(answer))
    except ValidationError as exc:
        raise _invalid("analyst", report, exc) from exc


async def ask_steering(hook: SteeringHook, report: SegmentReport) -> Steer | None:
    """Ask the steering hook; text is a note. HookError when its answer does not validate."""
    answer = await _call(hook, report, "steering")
    if answer is None or isinstance(answer, Steer):
        return answer
    try:
        if isinstance(answer, str):
            return Steer(note=answer)
        if isinstance(answer, Mapping):
            return Steer.model_validate(dict(answer))
    except ValidationError as exc:
        raise _invalid("steering hook", report, exc) from exc
    raise HookError(
        f"the steering hook answered {type(answer).__name__} after segment {report.segment}; "
        f"answer a Steer, text (at most {MAX_GUIDANCE_CHARS} characters), its JSON object, or None"
    )


def next_guidance(
    current: str | None, analysis: Analysis | None, steer: Steer | None
) -> tuple[str | None, Literal["analyst", "steering"] | None]:
    """The guidance for the next segment and who stopped the campaign, if anyone.

    Steering outranks the analyst: when a steering note is present the
    analyst's recommendation is ignored. Blank guidance clears it.

    >>> next_guidance("old", Analysis(summary="s", recommendation="stop"), Steer(note="go left"))
    ('go left', None)
    >>> next_guidance("old", Analysis(summary="s", recommendation="steer", guidance=" "), None)
    (None, None)
    """
    if steer is not None:
        if steer.stop:
            return current, "steering"
        return steer.note.strip() or None, None
    if analysis is not None:
        if analysis.recommendation is Recommendation.STOP:
            return current, "analyst"
        if analysis.guidance is not None:
            return analysis.guidance.strip() or None, None
    return current, None
