"""Trust labels: who may read a run, and which runs a public leaderboard lists."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

__all__ = ["TrustLabel", "TrustLabelName", "label_for_target"]


class TrustLabel(StrEnum):
    """How far the service vouches for what a run was played on."""

    CANONICAL = "benchmarked_canonical_template"
    """A packaged, calibrated target as shipped: public read, on public leaderboards."""
    CUSTOMIZED = "benchmark_compatible_customized_instance"
    """An uncalibrated or ad-hoc target, or a customized deployment: its owner reads it only."""
    EXTERNAL = "external_custom_runtime"
    """A runtime the service cannot replay: refused."""


TrustLabelName = Literal[
    "benchmarked_canonical_template",
    "benchmark_compatible_customized_instance",
    "external_custom_runtime",
]
"""The label as it appears in documents."""


def label_for_target(*, named: bool, packaged: bool, calibrated: bool | None) -> TrustLabel:
    """The label a record's target earns by itself (a deployment may lower it).

    ``named``: the record names its target at all (a game the verifier must
    be handed is an external runtime). ``packaged``: the name is a packaged
    registry target. ``calibrated``: what the record says (None: not said,
    which a packaged target's older records do not).
    """
    if not named:
        return TrustLabel.EXTERNAL
    if packaged and calibrated is not False:
        return TrustLabel.CANONICAL
    return TrustLabel.CUSTOMIZED
