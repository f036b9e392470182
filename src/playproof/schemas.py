"""JSON Schemas of every playproof format, generated from the pydantic models.

The checked-in copies live in ``schemas/``; a test fails when they drift.
Regenerate with ``python -m playproof.schemas schemas`` (``make schemas``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from playproof.adapters.desktop import DesktopSpec
from playproof.core.contract import Contract
from playproof.core.evidence import Evidence
from playproof.core.observation import Observation
from playproof.core.receipts import ReceiptsSpec
from playproof.core.record import RunRecord
from playproof.core.report import VerificationReport
from playproof.core.transcript import Transcript
from playproof.corpus import (
    BranchHints,
    CorpusAnswers,
    CorpusManifest,
    GradeRecord,
    TaskReply,
    TaskRequest,
    ToolchainFingerprint,
)
from playproof.engine import CampaignState, SignedLedger
from playproof.matrix import MatrixSpec
from playproof.policy.envelope import PolicyEnvelope
from playproof.policy.rebalance import RebalanceEvidence
from playproof.sign import Envelope, RunUpload, Statement
from playproof.targets import TargetSpec
from playproof.transparency import ConsistencyProof, InclusionProof, TreeHead
from playproof.verify import CalibrationReport, DiscoveryReport, ExplorationReport, MarkSet

__all__ = ["SCHEMAS", "generate", "render"]


def _model(model: type[BaseModel]) -> Callable[[], dict[str, Any]]:
    return lambda: model.model_json_schema(by_alias=True)


SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {
    "contract": _model(Contract),
    "run-record": _model(RunRecord),
    "observation": _model(Observation),
    "evidence": lambda: TypeAdapter(Evidence).json_schema(),
    "verification-report": _model(VerificationReport),
    "dsse-envelope": _model(Envelope),
    "in-toto-statement": _model(Statement),
    "target": _model(TargetSpec),
    "corpus-manifest": _model(CorpusManifest),
    "corpus-answers": _model(CorpusAnswers),
    "grade-record": _model(GradeRecord),
    "task-request": _model(TaskRequest),
    "branch-hints": _model(BranchHints),
    "task-reply": _model(TaskReply),
    "toolchain-fingerprint": _model(ToolchainFingerprint),
    "calibration-report": _model(CalibrationReport),
    "discovery-report": _model(DiscoveryReport),
    "exploration-report": _model(ExplorationReport),
    "marks": _model(MarkSet),
    "ledger": _model(SignedLedger),
    "campaign-state": _model(CampaignState),
    "log-tree-head": _model(TreeHead),
    "log-inclusion-proof": _model(InclusionProof),
    "log-consistency-proof": _model(ConsistencyProof),
    "matrix-spec": _model(MatrixSpec),
    "desktop-spec": _model(DesktopSpec),
    "transcript": _model(Transcript),
    "policy-envelope": _model(PolicyEnvelope),
    "rebalance-evidence": _model(RebalanceEvidence),
    "receipts-target": _model(ReceiptsSpec),
    "run-upload": _model(RunUpload),
}
"""Schema file stem -> generator."""


def render(name: str) -> str:
    """The schema text for ``name`` as written to ``schemas/<name>.schema.json``."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **SCHEMAS[name]()}
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def generate(folder: Path) -> list[Path]:
    """Write every schema into ``folder``; return the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in SCHEMAS:
        path = folder / f"{name}.schema.json"
        path.write_text(render(name), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in generate(Path(sys.argv[1] if len(sys.argv) > 1 else "schemas")):
        print(written_path)
