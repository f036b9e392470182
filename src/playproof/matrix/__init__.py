"""The matrix runner: agents x targets x seeds x repetitions into signed records and a report.

:func:`run_matrix` plays every cell of a :class:`MatrixSpec` on the local
process pool (or serially) and writes one signed record per cell, atomically,
skipping cells already recorded. :func:`report_matrix` verifies every record
(by replay, or by a stored verification of the very same record) and writes
``report.md``, ``report.html`` and ``report.json``: scores with bootstrap
intervals, cost per earned milestone, a score-against-cost frontier, ranks per
target and rank agreement (Kendall's tau, Kendall's W). The report needs the
``report`` extra. See docs/matrix.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from playproof.matrix._collect import (
    VERIFICATION_SUFFIX,
    Collected,
    Rejected,
    StoredVerification,
    VerifiedCell,
    collect,
)
from playproof.matrix._executor import check_executor
from playproof.matrix._report import MatrixReport, build_report
from playproof.matrix._runner import (
    AgentBuilder,
    CellAgent,
    CellEvent,
    CellJob,
    MatrixOutcome,
    play_cell,
    run_matrix,
)
from playproof.matrix._secrets import looks_like_secret, secret_problems
from playproof.matrix._spec import (
    MATRIX_SCHEMA,
    MAX_CELLS,
    AgentProfile,
    Cell,
    MatrixSpec,
    ProfilePricing,
    load_spec,
    parse_spec,
)
from playproof.matrix._stats import require_report_extra
from playproof.matrix._store import SPEC_FILE, cell_of, record_path
from playproof.sign import VerifyingKey

__all__ = [
    "MATRIX_SCHEMA",
    "MAX_CELLS",
    "SPEC_FILE",
    "VERIFICATION_SUFFIX",
    "AgentBuilder",
    "AgentProfile",
    "Cell",
    "CellAgent",
    "CellEvent",
    "CellJob",
    "Collected",
    "MatrixOutcome",
    "MatrixReport",
    "MatrixSpec",
    "ProfilePricing",
    "Rejected",
    "StoredVerification",
    "VerifiedCell",
    "build_report",
    "cell_of",
    "check_executor",
    "collect",
    "load_spec",
    "looks_like_secret",
    "parse_spec",
    "play_cell",
    "record_path",
    "report_matrix",
    "require_report_extra",
    "run_matrix",
    "secret_problems",
]


def report_matrix(
    folder: Path,
    out: Path,
    keys: Sequence[VerifyingKey],
    *,
    executor: str = "local",
    jobs: int | None = None,
    trust_stored: bool = True,
    on_record: Callable[[int, int], None] | None = None,
    address: str | None = None,
    on_retry: Callable[[str], None] | None = None,
) -> tuple[MatrixReport, list[Path]]:
    """Verify every record in ``folder`` and write the report into ``out``; (report, files)."""
    require_report_extra()
    from playproof.matrix._render import write_report  # needs matplotlib

    collected = collect(
        folder,
        keys,
        executor=executor,
        jobs=jobs,
        trust_stored=trust_stored,
        on_record=on_record,
        address=address,
        on_retry=on_retry,
    )
    name = collected.spec.name if collected.spec is not None else folder.name
    report = build_report(collected, name)
    return report, write_report(report, out)
