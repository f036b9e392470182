"""Reward for training loops: the change in passing cases against the previous build.

+1 per newly passing case, -1 per newly failing case. A build that fails, or a
grading run that timed out, earns 0 and leaves the baseline as it was.
``finished`` is true only when every case passes in one build. The history
lives in a small JSON state file, written atomically.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from playproof._bounded import read_bounded
from playproof.core.canonical import parse_json
from playproof.errors import FormatError

__all__ = ["MAX_HISTORY", "BuildStatus", "RewardEntry", "RewardState", "load_state", "save_state"]

MAX_HISTORY = 1000
"""Entries kept in the state file (the oldest are dropped)."""
MAX_STATE_BYTES = 8 * 1024 * 1024

BuildStatus = Literal["graded", "build-failed", "grading-timed-out"]


class RewardEntry(BaseModel):
    """One build's outcome and the reward it earned."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    at: datetime
    build_digest: str
    status: BuildStatus
    passed: Annotated[int, Field(ge=0)]
    reward: int
    finished: bool


class RewardState(BaseModel):
    """The baseline pass set and the history of one candidate on one corpus."""

    model_config = ConfigDict(extra="forbid")

    corpus_digest: str
    denominator: Annotated[int, Field(ge=1)]
    baseline: list[str] = Field(default_factory=list)
    """Case ids passing in the last graded build."""
    cumulative: int = 0
    history: list[RewardEntry] = Field(default_factory=list)

    def record(
        self, build_digest: str, status: BuildStatus, passing: frozenset[str] = frozenset()
    ) -> RewardEntry:
        """Apply one build's outcome; the entry (with its reward) is appended and returned."""
        if status != "graded":
            entry = RewardEntry(
                at=datetime.now(UTC),
                build_digest=build_digest,
                status=status,
                passed=len(self.baseline),
                reward=0,
                finished=False,
            )
        else:
            before = set(self.baseline)
            reward = len(passing - before) - len(before - passing)
            self.baseline = sorted(passing)
            self.cumulative += reward
            entry = RewardEntry(
                at=datetime.now(UTC),
                build_digest=build_digest,
                status=status,
                passed=len(passing),
                reward=reward,
                finished=len(passing) == self.denominator,
            )
        self.history = [*self.history, entry][-MAX_HISTORY:]
        return entry


def load_state(path: Path, corpus_digest: str, denominator: int) -> RewardState:
    """The state in ``path`` (a fresh one if absent); refuse one for another corpus."""
    if not path.exists():
        return RewardState(corpus_digest=corpus_digest, denominator=denominator)
    data = read_bounded(path, MAX_STATE_BYTES, "reward state")
    try:
        state = RewardState.model_validate(
            parse_json(data, limit=MAX_STATE_BYTES, what=f"reward state {path}")
        )
    except ValidationError as exc:
        raise FormatError(f"reward state {path} is not valid: {exc.errors()[0]['msg']}") from exc
    if state.corpus_digest != corpus_digest:
        raise FormatError(f"reward state {path} belongs to another corpus")
    return state


def save_state(path: Path, state: RewardState) -> None:
    """Write ``state`` atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(state.model_dump(mode="json"), indent=1) + "\n", "utf-8")
    os.replace(temporary, path)
