"""Calibrating packaged targets: run the calibration on an executor, store and check reports.

The stored report lives next to the packaged contract as ``calibration.json``;
:func:`stored_calibration_problems` is what CI runs to keep every packaged
target's claim (``separates`` / ``separation_note``) honest and current.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from playproof._bounded import read_bounded
from playproof.core.canonical import parse_json
from playproof.errors import FormatError
from playproof.exec._executors import RetryNotice
from playproof.exec._pool import Progress, close_replayer, make_replayer
from playproof.exec._spec import GameSpec, resolve_target
from playproof.targets import Target
from playproof.verify import (
    DEFAULT_SWEEP_TURNS,
    DEFAULT_WALKS,
    CalibrationReport,
    calibrate,
    publication_problems,
)

__all__ = [
    "CALIBRATION_FILE",
    "MAX_CALIBRATION_BYTES",
    "calibrate_target",
    "read_calibration",
    "render_calibration",
    "stored_calibration_problems",
    "write_calibration",
]

CALIBRATION_FILE = "calibration.json"
MAX_CALIBRATION_BYTES = 4 << 20
"""The largest stored calibration report playproof reads."""


def calibrate_target(
    target: Target | str,
    *,
    executor: str = "local",
    workers: int | None = None,
    progress: Progress | None = None,
    baseline_seed: int = 0,
    walks: int = DEFAULT_WALKS,
    sweep_turns: int = DEFAULT_SWEEP_TURNS,
    address: str | None = None,
    on_retry: RetryNotice | None = None,
) -> CalibrationReport:
    """Calibrate a packaged target's contract with its reference at its reference seed.

    ``executor`` is ``local``, ``serial`` or ``ray`` (``address``: the head of
    a running cluster; none starts a local Ray); ``on_retry`` hears of each
    episode sent again because its worker died.
    """
    resolved = resolve_target(target) if isinstance(target, str) else target
    # On the pool every process is already isolated; serially, honour the target's isolation.
    in_worker = executor == "serial" and resolved.spec.isolation == "worker"
    spec = GameSpec.of_target(resolved, worker=in_worker)
    replayer = make_replayer(
        spec,
        executor=executor,
        workers=workers,
        progress=progress,
        address=address,
        on_retry=on_retry,
    )
    try:
        return calibrate(
            replayer,
            resolved.contract,
            resolved.reference,
            seed=resolved.spec.reference_seed,
            baseline_seed=baseline_seed,
            walks=walks,
            opaque=resolved.spec.opaque,
            sweep_turns=sweep_turns,
        )
    finally:
        close_replayer(replayer)


def render_calibration(report: CalibrationReport) -> str:
    """The stored text of a report (sorted keys, one trailing newline)."""
    return json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n"


def write_calibration(target: Target, report: CalibrationReport) -> Path:
    """Store ``report`` next to the target's packaged contract."""
    if target.folder is None:
        raise FormatError(f"target {target.name} has no folder to store its calibration in")
    path = target.folder / CALIBRATION_FILE
    path.write_text(render_calibration(report), encoding="utf-8")
    return path


def read_calibration(path: Path) -> CalibrationReport:
    """Read a stored calibration report (bounded); a malformed one is a FormatError."""
    data = read_bounded(path, MAX_CALIBRATION_BYTES, "calibration report")
    try:
        return CalibrationReport.model_validate(
            parse_json(data, limit=MAX_CALIBRATION_BYTES, what=path.name)
        )
    except ValidationError as exc:
        raise FormatError(f"{path}: {exc.errors()[0]['msg']}") from exc


def stored_calibration_problems(target: Target) -> list[str]:
    """Why the target's stored calibration does not back its published claim (empty: it does)."""
    if target.folder is None or not (target.folder / CALIBRATION_FILE).is_file():
        return [f"target {target.name} has no stored {CALIBRATION_FILE}"]
    report = read_calibration(target.folder / CALIBRATION_FILE)
    return publication_problems(
        report,
        build_digest=target.spec.build_digest,
        contract=target.contract,
        reference=target.reference,
        seed=target.spec.reference_seed,
        separates=target.spec.separates,
        note=target.spec.separation_note,
        opaque=target.spec.opaque,
    )
