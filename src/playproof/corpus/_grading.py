"""Grade a candidate end to end: run it jailed, grade the observations, make the record."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from playproof.core.canonical import digest
from playproof.corpus._grader import Grade, grade
from playproof.corpus._jail import IsolationChoice, JailLimits, python_paths
from playproof.corpus._manifest import Corpus, CorpusAnswers
from playproof.corpus._record import CandidatePin, GradeRecord, grade_record
from playproof.corpus._runner import CandidateSpec, CaseObservation, RunOutcome, run_corpus
from playproof.corpus._trust import CorpusTrust
from playproof.corpus._variants import VariantPin, VariantPlan, run_with_variants
from playproof.errors import FormatError

__all__ = [
    "MAX_BUILD_BYTES",
    "MAX_BUILD_FILES",
    "GradingRun",
    "candidate_digest",
    "command_candidate",
    "grade_candidate",
    "tree_digest",
]

MAX_BUILD_FILES = 20_000
"""A build folder with more files than this is refused (its digest would be unbounded)."""
MAX_BUILD_BYTES = 2 * 1024**3
"""A build folder holding more bytes than this is refused (a build is stopped past it)."""
HASH_CHUNK = 1024 * 1024


def _file_sha(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(HASH_CHUNK):
            sha.update(chunk)
    return sha.hexdigest()


def tree_digest(folder: Path) -> str:
    """SHA-256 over the sorted relative paths and contents of every file under ``folder``."""
    entries: list[tuple[str, str]] = []
    total = 0
    for parent, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = Path(parent) / name
            if path.is_symlink() or not path.is_file():
                continue
            total += path.stat().st_size
            if len(entries) >= MAX_BUILD_FILES or total > MAX_BUILD_BYTES:
                raise FormatError(f"{folder} is over the build bound ({MAX_BUILD_FILES} files)")
            entries.append((path.relative_to(folder).as_posix(), _file_sha(path)))
    return digest([list(e) for e in entries])


def candidate_digest(command: tuple[str, ...], build_dir: Path | None = None) -> str:
    """The build digest: the command, the files it names, and the build folder's tree."""
    named = {arg: _file_sha(Path(arg)) for arg in command if os.path.isfile(arg)}
    tree = tree_digest(build_dir) if build_dir is not None else None
    return digest({"command": list(command), "files": named, "tree": tree})


def command_candidate(
    command: tuple[str, ...],
    *,
    build_dir: Path | None = None,
    hidden: tuple[Path, ...] = (),
    secret: tuple[Path, ...] = (),
) -> CandidateSpec:
    """The candidate a user's command line starts: what it names is visible read-only.

    Every argument naming a file is bound at its real path (symlinks resolved),
    and the command starts that same path, unless the file as written already
    shows through a visible folder (the interpreter's, ``build_dir``): then it
    starts as written, made absolute, so a virtual environment's ``python`` link
    keeps its environment. Either way the jail starts exactly what it shows;
    a relative argument works whatever the jail's working directory.
    """
    workdir = build_dir.resolve() if build_dir is not None else None
    folders = [*python_paths(), *([workdir] if workdir is not None else [])]
    visible = list(folders)
    started: list[str] = []
    for arg in command:
        if not Path(arg).is_file():
            started.append(arg)
            continue
        written = Path(os.path.abspath(arg))
        real = written.resolve()
        visible.append(real)
        shown = any(written.is_relative_to(folder) for folder in folders)
        started.append(str(written if shown else real))
    return CandidateSpec(
        command=tuple(started),
        read_only=tuple(visible),
        hidden=hidden,
        secret=secret,
        workdir=workdir,
    )


@dataclass(frozen=True)
class GradingRun:
    """What one grading produced: the record, the grade and the raw observations."""

    record: GradeRecord
    grade: Grade
    observations: list[CaseObservation]
    outcome: RunOutcome


def grade_candidate(
    corpus: Corpus,
    answers: CorpusAnswers,
    candidate: CandidateSpec,
    *,
    build_digest: str | None = None,
    jobs: int = 2,
    cases_per_process: int = 1,
    limits: JailLimits | None = None,
    isolation: IsolationChoice = "auto",
    on_case: Callable[[CaseObservation], None] | None = None,
    trust: CorpusTrust | None = None,
    variants: VariantPlan | None = None,
) -> GradingRun:
    """Run ``candidate`` on ``corpus`` in the jail and grade it against ``answers``.

    The answers are checked against the manifest before any case runs. The
    record is trusted only with a ``trust`` saying a controller signed the corpus.
    With ``variants``, the candidate also runs the ROM variants the plan's
    secret seed picks, the reference runs them alongside, and a case passes
    only when its variants match too (``_variants``).
    """
    answers.check_against(corpus.manifest)
    chosen = limits or JailLimits()
    started = datetime.now(UTC)
    pins: tuple[VariantPin, ...] = ()
    if variants is not None and variants.per_case > 0:
        varied = run_with_variants(
            corpus,
            answers,
            candidate,
            variants,
            jobs=jobs,
            cases_per_process=cases_per_process,
            limits=chosen,
            isolation=isolation,
            on_case=on_case,
        )
        outcome, result, pins = varied.outcome, varied.grade, varied.pins
    else:
        outcome = run_corpus(
            corpus,
            candidate,
            jobs=jobs,
            cases_per_process=cases_per_process,
            limits=chosen,
            isolation=isolation,
            on_case=on_case,
        )
        result = grade(corpus.manifest, answers, outcome.observations)
    pin = CandidatePin(
        command=list(candidate.command),
        build_digest=build_digest or candidate_digest(candidate.command),
    )
    record = grade_record(
        corpus.manifest,
        result,
        pin,
        outcome.isolation,
        chosen,
        started,
        cases_per_process=cases_per_process,
        trust=trust,
        variants=pins,
        variant_seed_sha256=variants.seed_sha256 if variants and variants.per_case else None,
    )
    return GradingRun(
        record=record, grade=result, observations=outcome.observations, outcome=outcome
    )
