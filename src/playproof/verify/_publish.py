"""The publication gate: a packaged contract ships only with an honest, current calibration.

A target's data says whether its contract separates. That claim must match a
stored calibration report that is current (same build, contract, reference
and seed). A target whose contract does not separate must say why in a
non-blank note; a target whose contract does separate may not carry an excuse
that says otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from playproof.core.contract import Contract
from playproof.verify._calibrate import _reference_digest
from playproof.verify._models import CalibrationReport

__all__ = ["publication_problems"]


def publication_problems(
    report: CalibrationReport,
    *,
    build_digest: str,
    contract: Contract,
    reference: Sequence[str],
    seed: int,
    separates: bool | None,
    note: str,
    opaque: Iterable[str] = (),
) -> list[str]:
    """Every reason the stored ``report`` does not back the target's published claim."""
    problems: list[str] = []
    if report.build_digest != build_digest:
        problems.append("the calibration is stale: it was made on another build")
    if report.contract_hash != contract.hash:
        problems.append("the calibration is stale: the contract changed since")
    if report.reference_digest != _reference_digest(reference):
        problems.append("the calibration is stale: the reference changed since")
    if report.seed != seed:
        problems.append(f"the calibration used seed {report.seed}, the target declares {seed}")
    if tuple(sorted(set(opaque))) != report.opaque_declared:
        problems.append("the calibration used another opaque declaration than the target's")
    if separates is None:
        problems.append("the target does not say whether its contract separates")
    elif report.passed and not separates:
        problems.append(
            "stale excuse: the calibration gate passes but the target says it does not separate"
        )
    elif separates and not report.passed:
        problems.append(
            "the target claims to separate but the calibration gate fails: " + report.message
        )
    if not report.passed and not note.strip():
        problems.append("a contract that does not separate needs a non-blank separation_note")
    return problems
