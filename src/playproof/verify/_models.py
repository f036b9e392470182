"""The calibration report: who earned which milestone, and whether the contract separates.

Every field is a pure function of the build, the contract, the reference,
the game seed and the baseline seed, so two runs with the same inputs write
byte-identical reports (no timestamps, no wall times: cost is counted in
replayed turns).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CALIBRATION_SCHEMA",
    "BaselineRow",
    "CalibrationReport",
    "CollapseFinding",
    "MilestoneRow",
    "MilestoneVerdict",
    "SweepRow",
]

CALIBRATION_SCHEMA = "playproof/calibration/v1"

Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
MilestoneVerdict = Literal["separates", "trivial", "unearned"]
"""``separates``: the reference earns it and no baseline does; ``trivial``: some
baseline earns it; ``unearned``: nobody in the calibration earns it."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class MilestoneRow(_Frozen):
    """One milestone: its check kind, who earned it, and its verdict."""

    id: str
    kind: str
    legible: bool
    attrition: bool
    """Earned by a channel that only ever falls (lives lost): scored apart from achievements."""
    reference_turn: int | None
    earned_by: tuple[str, ...]
    verdict: MilestoneVerdict


class BaselineRow(_Frozen):
    """One trivial policy: what it earned over the reference length."""

    name: str
    earned: tuple[str, ...]
    legible: int
    over_at: int | None


class SweepRow(_Frozen):
    """Substitution sweep of one opaque milestone along the reference prefix."""

    milestone: str
    reference_turn: int
    probes: int
    """Single-input substitutions tried (each a full replay of the prefix)."""
    reached: int
    """Probes that still reached the milestone."""
    probe_turns: int
    """Cost: inputs replayed by the probes."""


class CollapseFinding(_Frozen):
    """One prerequisite gates every milestone; ``collapsed`` when the score is all-or-nothing."""

    gate: str
    collapsed: bool
    reason: str


class CalibrationReport(_Frozen):
    """The calibration of one contract against the trivial baselines (see the module docstring)."""

    schema_: Literal["playproof/calibration/v1"] = Field("playproof/calibration/v1", alias="schema")
    game: str
    build_digest: Sha256Hex
    contract_hash: Sha256Hex
    reference_digest: Sha256Hex
    """SHA-256 of the canonical JSON list of reference inputs."""
    seed: int
    baseline_seed: int
    walks: int
    length: int
    """Inputs per baseline (the reference length)."""
    milestones: tuple[MilestoneRow, ...]
    baselines: tuple[BaselineRow, ...]
    reference_legible: int
    best_baseline_legible: int
    best_baselines: tuple[str, ...]
    separates: bool
    """At least one legible milestone separates and the reference earns strictly
    more legible milestones than the best baseline."""
    opaque_declared: tuple[str, ...]
    sweeps: tuple[SweepRow, ...]
    collapse: CollapseFinding | None
    problems: tuple[str, ...]
    """Everything that fails the gate besides the verdict (opaque sets, collapse, attrition)."""
    passed: bool
    """The gate: ``separates`` and no problems."""
    message: str

    def to_json(self) -> dict[str, object]:
        """The JSON form written next to a packaged contract."""
        return self.model_dump(mode="json", by_alias=True)
