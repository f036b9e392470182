"""Reward for training loops: the change in passing cases against the previous build.

+1 per newly passing case, -1 per newly failing case. A build that fails, or a
grading run that timed out, earns 0 and leaves the baseline as it was.
``finished`` is true only when every case passes in one build. A grade over
an untrusted corpus (see ``_trust``) earns 0 too, though its pass set becomes
the baseline.

The history lives in a small state file, written atomically and signed by the
grader: a DSSE envelope carrying an in-toto statement whose subjects are the
state itself and the corpus digest. A state that fails the signature check
(edited by hand, or written under another key) is refused, never repaired.
What the signature does not stop: whoever can read the grader's private key
can forge a state, and whoever can write the state file can delete it or put
back an older signed one; a served task (``_channel``) keeps both with the
grader's user.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from playproof._atomic import write_atomic
from playproof._bounded import read_bounded
from playproof.core.canonical import validate_strict
from playproof.errors import FormatError
from playproof.sign import (
    PredicateKind,
    SigningKey,
    VerifyingKey,
    sign_predicate,
    verify_statement,
)

__all__ = [
    "MAX_HISTORY",
    "REWARD_PREDICATE_TYPE",
    "REWARD_STATE",
    "BuildStatus",
    "RewardEntry",
    "RewardState",
    "load_state",
    "save_state",
]

MAX_HISTORY = 1000
"""Entries kept in the state file (the oldest are dropped)."""
MAX_STATE_BYTES = 8 * 1024 * 1024
REWARD_PREDICATE_TYPE = "https://playproof.dev/reward-state/v1"
"""The predicate type URI of a signed reward state."""

BuildStatus = Literal["graded", "build-failed", "grading-timed-out", "built"]
"""``built``: built with feedback disabled, not graded (never kept in the state)."""


class RewardEntry(BaseModel):
    """One build's outcome and the reward it earned."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    at: datetime
    build_digest: str
    status: BuildStatus
    passed: Annotated[int, Field(ge=0)]
    reward: int
    finished: bool
    trusted: bool = True
    """False when the corpus graded was not signed by a trusted controller (reward 0)."""


class RewardState(BaseModel):
    """The baseline pass set and the history of one candidate on one corpus."""

    model_config = ConfigDict(extra="forbid")

    corpus_digest: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    denominator: Annotated[int, Field(ge=1)]
    baseline: list[str] = Field(default_factory=list)
    """Case ids passing in the last graded build."""
    cumulative: int = 0
    history: list[RewardEntry] = Field(default_factory=list)

    def record(
        self,
        build_digest: str,
        status: BuildStatus,
        passing: frozenset[str] = frozenset(),
        *,
        trusted: bool = True,
    ) -> RewardEntry:
        """Apply one build's outcome; the entry (with its reward) is appended and returned.

        An untrusted grade moves the baseline but earns (and adds) nothing.
        """
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
            reward = len(passing - before) - len(before - passing) if trusted else 0
            self.baseline = sorted(passing)
            self.cumulative += reward
            entry = RewardEntry(
                at=datetime.now(UTC),
                build_digest=build_digest,
                status=status,
                passed=len(passing),
                reward=reward,
                finished=len(passing) == self.denominator,
                trusted=trusted,
            )
        self.history = [*self.history, entry][-MAX_HISTORY:]
        return entry


def _pins(state: RewardState) -> dict[str, str]:
    return {"corpus": state.corpus_digest}


def _read(text: bytes) -> RewardState:
    return validate_strict(RewardState, text, what="reward state")


REWARD_STATE: PredicateKind[RewardState] = PredicateKind(
    predicate_type=REWARD_PREDICATE_TYPE,
    write=lambda state: state.model_dump(mode="json"),
    read=_read,
    self_subject="reward-state",
    pins=_pins,
)
"""The reward-state predicate kind."""


def load_state(
    path: Path, corpus_digest: str, denominator: int, grader: VerifyingKey
) -> RewardState:
    """The state in ``path`` (a fresh one if absent), refused unless ``grader`` signed it.

    A state for another corpus is refused too.
    """
    if not path.exists():
        return RewardState(corpus_digest=corpus_digest, denominator=denominator)
    data = read_bounded(path, MAX_STATE_BYTES, "reward state")
    verdict = verify_statement(REWARD_STATE, data, grader)
    failed = next((check for check in verdict.checks if not check.passed), None)
    if failed is not None or verdict.value is None:
        reason = f"{failed.id}: {failed.reason}" if failed else "unreadable"
        raise FormatError(
            f"reward state {path} is refused: it is not as the grader signed it ({reason}); "
            "it was edited or written under another key. Delete the task's .playproof "
            "folder to start a new history from zero"
        )
    state = verdict.value
    if state.corpus_digest != corpus_digest:
        raise FormatError(f"reward state {path} belongs to another corpus")
    return state


def save_state(path: Path, state: RewardState, grader: SigningKey) -> None:
    """Sign ``state`` with ``grader`` and write it atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    envelope = sign_predicate(REWARD_STATE, state, grader)
    write_atomic(path, (json.dumps(envelope.to_json(), indent=1) + "\n").encode("utf-8"))
