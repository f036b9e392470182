"""Grade a candidate end to end: run it jailed, grade the observations, make the record."""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from playproof.core.canonical import digest
from playproof.corpus._dispatch import run_corpus_on
from playproof.corpus._grader import Grade, grade
from playproof.corpus._jail import IsolationChoice, JailLimits
from playproof.corpus._manifest import Corpus, CorpusAnswers
from playproof.corpus._record import CandidatePin, GradeRecord, grade_record
from playproof.corpus._runner import CandidateSpec, CaseObservation, RunOutcome, run_corpus
from playproof.corpus._runtime import Runtime, runtime_view
from playproof.corpus._trees import walk_handles
from playproof.corpus._trust import CorpusTrust
from playproof.corpus._variants import VariantPin, VariantPlan, run_with_variants
from playproof.errors import FormatError

__all__ = [
    "HASH_DEADLINE_S",
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
HASH_DEADLINE_S = 120.0
"""The longest one digest (every file a command names, or a whole build folder) may take."""
_HASH_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def _file_sha(
    path: Path, budget: int, deadline: float, *, at: tuple[int, str] | None = None
) -> tuple[str, int]:
    """SHA-256 of the regular file ``path`` and its size, read within ``budget`` bytes.

    The file is opened without blocking and checked with ``fstat`` first, so a
    FIFO or a device (``/dev/zero``) is refused before a byte is read; a file
    longer than ``budget`` (or growing past it while read) and a read still
    going at ``deadline`` (``time.monotonic``) are refused too, never cut.
    """
    try:
        fd = (
            os.open(path, _HASH_OPEN_FLAGS)
            if at is None
            else os.open(at[1], _HASH_OPEN_FLAGS | os.O_NOFOLLOW, dir_fd=at[0])
        )
    except OSError as exc:
        raise FormatError(f"cannot read {path} to digest it: {exc.strerror}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FormatError(
                f"{path} is not a regular file; a candidate's build can only name regular files"
            )
        sha = hashlib.sha256()
        size = 0
        while size <= budget:
            if time.monotonic() > deadline:
                raise FormatError(
                    f"digesting {path} took over {HASH_DEADLINE_S:g} s; "
                    "copy the build to a local disk or make it smaller"
                )
            chunk = os.read(fd, min(HASH_CHUNK, budget + 1 - size))
            if not chunk:
                break
            sha.update(chunk)
            size += len(chunk)
    except OSError as exc:
        raise FormatError(f"cannot read {path} to digest it: {exc.strerror}") from exc
    finally:
        os.close(fd)
    if size > budget:
        raise FormatError(
            f"{path} holds over {budget} bytes, past the {MAX_BUILD_BYTES}-byte build bound "
            "(or it grew while read); make the build smaller"
        )
    return sha.hexdigest(), size


def tree_digest(folder: Path) -> str:
    """SHA-256 over the sorted relative paths and contents of every file under ``folder``.

    Bounded by :data:`MAX_BUILD_FILES`, :data:`MAX_BUILD_BYTES` (counted as
    read, so a file growing while read cannot pass) and :data:`HASH_DEADLINE_S`.
    """
    deadline = time.monotonic() + HASH_DEADLINE_S
    entries: list[tuple[str, str]] = []
    total = 0
    # By descriptor: the folder's owner (an agent) may be changing it while it is read,
    # and its paths may be longer than the system takes whole (PATH_MAX).
    for parent, dirs, files, handle in walk_handles(folder):
        dirs.sort()
        for name in sorted(files):
            path = Path(parent) / name
            try:
                info = os.stat(name, dir_fd=handle, follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed meanwhile
            except OSError as exc:
                raise FormatError(f"cannot read {path} to digest it: {exc.strerror}") from exc
            if not stat.S_ISREG(info.st_mode):
                continue
            if len(entries) >= MAX_BUILD_FILES or info.st_size > MAX_BUILD_BYTES - total:
                raise FormatError(
                    f"{folder} is over the build bound ({MAX_BUILD_FILES} files, "
                    f"{MAX_BUILD_BYTES} bytes)"
                )
            relative = path.relative_to(folder).as_posix()
            try:
                relative.encode("utf-8")
            except UnicodeEncodeError:
                shown = repr(relative.encode("utf-8", "surrogateescape"))[2:-1]  # controls too
                raise FormatError(
                    f"{folder} holds a file whose name is not UTF-8 ({shown}); "
                    "a build digest names every file: rename it"
                ) from None
            sha, size = _file_sha(path, MAX_BUILD_BYTES - total, deadline, at=(handle, name))
            total += size
            entries.append((relative, sha))
    return digest([list(e) for e in entries])


def candidate_digest(command: tuple[str, ...], build_dir: Path | None = None) -> str:
    """The build digest: the command, the files it names, and the build folder's tree.

    Each named regular file is hashed within :data:`MAX_BUILD_BYTES` and all of
    them within :data:`HASH_DEADLINE_S`; anything else a command names (a FIFO,
    a device) is an argument, not a file, and is never opened.
    """
    deadline = time.monotonic() + HASH_DEADLINE_S
    named = {
        arg: _file_sha(Path(arg), MAX_BUILD_BYTES, deadline)[0]
        for arg in command
        if os.path.isfile(arg)
    }
    tree = tree_digest(build_dir) if build_dir is not None else None
    return digest({"command": list(command), "files": named, "tree": tree})


def command_candidate(
    command: tuple[str, ...],
    *,
    build_dir: Path | None = None,
    hidden: tuple[Path, ...] = (),
    secret: tuple[Path, ...] = (),
    runtime: Runtime = "native",
) -> CandidateSpec:
    """The candidate a user's command line starts: what it names is visible read-only.

    Every argument naming a file is bound at its real path (symlinks resolved),
    and the command starts that same path, unless the file as written already
    shows through a visible folder (the runtime's, ``build_dir``): then it
    starts as written, made absolute. Either way the jail starts exactly what it
    shows; a relative argument works whatever the jail's working directory.
    ``runtime`` says what else the jail shows (``_runtime``): a named file that
    belongs to the grader's interpreter or libraries is covered in the jail
    unless the runtime allows it.
    """
    workdir = build_dir.resolve() if build_dir is not None else None
    folders = [*runtime_view(runtime).visible, *([workdir] if workdir is not None else [])]
    visible = [workdir] if workdir is not None else []  # the runner adds the runtime's
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
        runtime=runtime,
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
    executor: Executor | None = None,
    warm: bool = True,
) -> GradingRun:
    """Run ``candidate`` on ``corpus`` in the jail and grade it against ``answers``.

    The answers are checked against the manifest before any case runs. The
    record is trusted only with a ``trust`` saying a controller signed the corpus.
    With ``variants``, the candidate also runs the ROM variants the plan's
    secret seed picks, the reference runs them alongside, and a case passes
    only when its variants match too (``_variants``). With ``executor`` (a Ray
    cluster's), each case group is one task on it, jailed on the node it lands on
    (``_dispatch``), and ``jobs`` is the executor's business; the caller checks
    first that every node can build the jail (``playproof.exec.check_grading_nodes``).
    ``warm=False`` starts a new sandbox for every candidate process instead of
    the slot's warm jail (``run_corpus``).
    """
    answers.check_against(corpus.manifest)
    runner: Callable[..., RunOutcome] = (
        functools.partial(run_corpus, warm=warm)
        if executor is None
        else functools.partial(run_corpus_on, executor)
    )
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
            runner=runner,
        )
        outcome, result, pins = varied.outcome, varied.grade, varied.pins
    else:
        outcome = runner(
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
        sandbox=outcome.sandbox,
        memory_cgroup=outcome.memory_cgroup,
    )
    return GradingRun(
        record=record, grade=result, observations=outcome.observations, outcome=outcome
    )
