"""Corpus tasks: grade an agent-built artifact against a pinned test corpus (ARCHITECTURE 7).

A manifest pins the cases; a separate answers file holds what passing looks
like and never enters the candidate's jail. The runner drives a candidate over
the line protocol of docs/corpus-protocol.md and reports raw observations; the
grader judges them over the fixed denominator; the reward is the change in
passing cases against the previous build; grade records are signed.
"""

from __future__ import annotations

from playproof.corpus._branch_hints import BranchHints
from playproof.corpus._build import build_corpus, generate_answers, read_sums
from playproof.corpus._channel import TaskReply, TaskRequest
from playproof.corpus._grader import CaseResult, Grade, grade, grade_case
from playproof.corpus._grading import GradingRun, candidate_digest, grade_candidate, tree_digest
from playproof.corpus._jail import (
    Isolation,
    IsolationChoice,
    JailLimits,
    JailSpec,
    bubblewrap_usable,
    resolve_isolation,
)
from playproof.corpus._manifest import (
    Answer,
    Corpus,
    CorpusAnswers,
    CorpusCase,
    CorpusManifest,
    ExcludedCase,
    FramebufferAnswer,
    MemoryAnswer,
    RegistersAnswer,
    SerialAnswer,
    load_answers,
    load_corpus,
    load_manifest,
)
from playproof.corpus._record import (
    GRADE_PREDICATE_TYPE,
    GRADE_RECORD,
    CandidatePin,
    GradeRecord,
    sign_grade,
    verify_grade,
)
from playproof.corpus._reference import reference_candidate_spec
from playproof.corpus._reward import RewardEntry, RewardState, load_state, save_state
from playproof.corpus._runner import CandidateSpec, CaseObservation, RunOutcome, run_corpus
from playproof.corpus._rust import CargoBuild, ToolchainFingerprint
from playproof.corpus._shipped import CORPORA, SHIPPED, corpus_dir, shipped_paths
from playproof.corpus._variants import VariantPin, VariantPlan

__all__ = [
    "BranchHints",
    "CORPORA",
    "GRADE_PREDICATE_TYPE",
    "GRADE_RECORD",
    "SHIPPED",
    "Answer",
    "CandidatePin",
    "CandidateSpec",
    "CargoBuild",
    "CaseObservation",
    "CaseResult",
    "Corpus",
    "CorpusAnswers",
    "CorpusCase",
    "CorpusManifest",
    "ExcludedCase",
    "FramebufferAnswer",
    "Grade",
    "GradeRecord",
    "GradingRun",
    "Isolation",
    "IsolationChoice",
    "JailLimits",
    "JailSpec",
    "MemoryAnswer",
    "RegistersAnswer",
    "RewardEntry",
    "RewardState",
    "RunOutcome",
    "SerialAnswer",
    "TaskReply",
    "TaskRequest",
    "ToolchainFingerprint",
    "VariantPin",
    "VariantPlan",
    "bubblewrap_usable",
    "build_corpus",
    "candidate_digest",
    "corpus_dir",
    "generate_answers",
    "grade",
    "grade_candidate",
    "grade_case",
    "load_answers",
    "load_corpus",
    "load_manifest",
    "load_state",
    "read_sums",
    "reference_candidate_spec",
    "resolve_isolation",
    "run_corpus",
    "save_state",
    "shipped_paths",
    "sign_grade",
    "tree_digest",
    "verify_grade",
]
