"""Verification: recompute what a run earned; never calls an agent."""

from playproof.core.report import CHECK_IDS, CheckResult, VerificationReport
from playproof.verify._attest import (
    MODE_VERIFIERS,
    Admission,
    ModeVerifier,
    Reproduction,
    VerificationInputs,
    attest,
    attest_mode,
    library_differences,
    parse_record,
    verify_by_mode,
)
from playproof.verify._calibrate import (
    DEFAULT_SWEEP_TURNS,
    DEFAULT_WALKS,
    attrition_milestones,
    baseline_suite,
    calibrate,
    find_collapse,
    opaque_problems,
)
from playproof.verify._derive import MARKS_SCHEMA, Mark, MarkSet, derive_contract
from playproof.verify._discover import (
    DISCOVERY_SCHEMA,
    DiscoveredChannel,
    DiscoveryReport,
    MemoryArea,
    MemoryReader,
    discover,
)
from playproof.verify._explore import EXPLORATION_SCHEMA, ExplorationReport, explore
from playproof.verify._models import (
    CALIBRATION_SCHEMA,
    BaselineRow,
    CalibrationReport,
    CollapseFinding,
    MilestoneRow,
    SweepRow,
)
from playproof.verify._publish import publication_problems
from playproof.verify._replayer import Replayer, ReplayJob, SerialReplayer, trace_contract
from playproof.verify._transcript import TranscriptVerifier, transcript_trust

__all__ = [
    "CHECK_IDS",
    "CheckResult",
    "VerificationReport",
    "attest",
    "library_differences",
    "parse_record",
]
__all__ += [
    "MODE_VERIFIERS",
    "Admission",
    "ModeVerifier",
    "Reproduction",
    "TranscriptVerifier",
    "VerificationInputs",
    "attest_mode",
    "transcript_trust",
    "verify_by_mode",
]
__all__ += [
    "CALIBRATION_SCHEMA",
    "DEFAULT_SWEEP_TURNS",
    "DEFAULT_WALKS",
    "DISCOVERY_SCHEMA",
    "EXPLORATION_SCHEMA",
    "MARKS_SCHEMA",
    "DiscoveredChannel",
    "DiscoveryReport",
    "ExplorationReport",
    "Mark",
    "MarkSet",
    "MemoryArea",
    "MemoryReader",
    "BaselineRow",
    "CalibrationReport",
    "CollapseFinding",
    "MilestoneRow",
    "ReplayJob",
    "Replayer",
    "SerialReplayer",
    "SweepRow",
    "attrition_milestones",
    "baseline_suite",
    "calibrate",
    "derive_contract",
    "discover",
    "explore",
    "find_collapse",
    "opaque_problems",
    "publication_problems",
    "trace_contract",
]
