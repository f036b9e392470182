"""Scores: milestones earned over milestones earnable, identity milestones counted apart.

A contract's ``save-hash`` and ``frame-hash`` milestones are *identity*
milestones: they prove a run reached one exact state, not that it achieved
something a person can name, so they are kept out of the ratio. A score says
how many *earnable* (legible) milestones were earned, and separately how many
identity milestones were reached.

>>> str(Score(earned=3, earnable=4))
'3 of 4'
>>> s = Score(earned=3, earnable=4, identity_reached=2, identity_total=2)
>>> str(s), s.verified, s.total
('3 of 4 earnable (5 of 6 verified, 2 of 2 replay-identity)', 5, 6)
>>> str(Score(earned=7, earnable=7, identity_total=None))
'7 of 7'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from playproof.core.contract import Contract, HashCheck

__all__ = ["IDENTITY_KINDS", "Score", "identity_ids", "score_of"]

IDENTITY_KINDS = ("save-hash", "frame-hash")
"""The check kinds whose milestones are identity milestones (scored apart)."""

Count = Annotated[int, Field(ge=0)]


class Score(BaseModel):
    """Earned over earnable, plus identity milestones reached over identity milestones.

    ``identity_total`` is None when the count is unknown (a record written
    before identity milestones were counted apart); the score then reads as
    every milestone being earnable, as such records always did.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    earned: Count
    earnable: Count
    identity_reached: Count = 0
    identity_total: Count | None = 0

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.earned > self.earnable:
            raise ValueError(f"earned {self.earned} exceeds earnable {self.earnable}")
        if self.identity_total is None:
            if self.identity_reached:
                raise ValueError("identity milestones reached but their total is unknown")
        elif self.identity_reached > self.identity_total:
            raise ValueError(
                f"{self.identity_reached} identity milestones reached of {self.identity_total}"
            )
        return self

    @property
    def verified(self) -> int:
        """Every milestone reached, identity ones included."""
        return self.earned + self.identity_reached

    @property
    def total(self) -> int:
        """Every milestone of the contract."""
        return self.earnable + (self.identity_total or 0)

    @property
    def identity_known(self) -> bool:
        """False for records that did not say which milestones are identity milestones."""
        return self.identity_total is not None

    @property
    def text(self) -> str:
        """How a person reads it: ``"3 of 4"`` or, with identity milestones, the full form."""
        ratio = f"{self.earned} of {self.earnable}"
        if not self.identity_total:
            return ratio
        return (
            f"{ratio} earnable ({self.verified} of {self.total} verified, "
            f"{self.identity_reached} of {self.identity_total} replay-identity)"
        )

    def to_json(self) -> dict[str, object]:
        """The numbers and the text, for machine-readable output."""
        return {
            "score": self.text,
            "earned": self.earned,
            "earnable": self.earnable,
            "verified": self.verified,
            "milestones_total": self.total,
            "identity_reached": self.identity_reached,
            "identity_total": self.identity_total,
        }

    def __str__(self) -> str:
        return self.text

    def __format__(self, spec: str) -> str:
        return format(self.text, spec)


def identity_ids(contract: Contract) -> frozenset[str]:
    """The ids of the contract's identity milestones (``save-hash``/``frame-hash`` checks)."""
    return frozenset(m.id for m in contract.milestones if isinstance(m.check, HashCheck))


def score_of(contract: Contract, reached: Iterable[str]) -> Score:
    """The score of reaching the milestones ``reached`` (ids; unknown ids are ignored)."""
    identity = identity_ids(contract)
    known = set(contract.ids)
    hits = {m for m in reached if m in known}
    identity_reached = len(hits & identity)
    return Score(
        earned=len(hits) - identity_reached,
        earnable=len(known) - len(identity),
        identity_reached=identity_reached,
        identity_total=len(identity),
    )
