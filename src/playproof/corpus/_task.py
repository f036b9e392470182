"""The task environment a coding agent works in: a task folder and two tools.

A task folder holds ``task.json`` (corpus, build and candidate commands),
``INSTRUCTIONS.md``, ``PROTOCOL.md`` and the agent's ``workspace/``. The agent
calls ``playproof task run-tests`` (build in the jail, grade the whole corpus,
reward, per-case TSV) and ``playproof task progress`` (no rebuild). A filter
only narrows which failures are listed; the score is always the whole corpus.

The reward state is signed by the task's grader key, kept in the task's
``.playproof`` folder (hidden from every jail). Run this way, as the grader's
own user, the agent's shell can reach that folder: an agent that reads the
grader's private key can forge a state. A served task (``_channel``) runs the
agent as a user of its own and keeps the folder, the answers and the key with
the grader. ``runtime`` in ``task.json`` says what the build and candidate
jails show besides the workspace (``_runtime``). Feedback is ``full`` (pass
count, reward, failures and the per-case TSV files) or ``disabled`` (the
build result only).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from playproof._atomic import write_atomic
from playproof._bounded import read_bounded
from playproof.core.canonical import parse_json
from playproof.corpus._briefs import platform_brief, task_platform
from playproof.corpus._grader import CaseResult, Grade
from playproof.corpus._grading import (
    MAX_BUILD_BYTES,
    MAX_BUILD_FILES,
    grade_candidate,
    tree_digest,
)
from playproof.corpus._jail import JailLimits, JailSpec, reserve_lanes
from playproof.corpus._manifest import (
    Corpus,
    CorpusAnswers,
    load_answers,
    load_corpus,
    load_manifest,
)
from playproof.corpus._reward import RewardEntry, RewardState, load_state, save_state
from playproof.corpus._runner import CandidateSpec, CaseObservation
from playproof.corpus._runtime import runtime_command, runtime_view
from playproof.corpus._rust import (
    BuiltProgram,
    CargoBuild,
    record_fingerprint,
    run_cargo_build,
    rust_instructions,
    write_rust_starter,
)
from playproof.corpus._shipped import protocol_text, shipped_paths
from playproof.corpus._trees import give_tree
from playproof.corpus._trust import (
    CorpusTrust,
    check_corpus_signature,
    load_controller_keys,
    read_signature,
    signature_path,
)
from playproof.corpus._variants import VariantPlan, default_variants, load_symbols
from playproof.corpus._watch import run_build
from playproof.errors import FormatError
from playproof.sign import SigningKey

__all__ = [
    "MAX_LISTED_FAILURES",
    "PRIVATE_FOLDER",
    "TaskReport",
    "TaskSpec",
    "init_task",
    "load_task",
    "task_answers_path",
    "task_progress",
    "task_run_tests",
]

MAX_LISTED_FAILURES = 20
"""Failures printed by ``run-tests`` (the TSV has all of them)."""
MAX_TASK_BYTES = 64 * 1024
"""The largest ``task.json`` read; a task file is a few hundred bytes."""
MAX_BUILD_LOG = 4000
BUILD_MEMORY_BYTES = 4 * 1024**3
"""What a build's processes may use together, as root where a control group can be made."""
PRIVATE_FOLDER = ".playproof"
"""The grader's own folder in a task: its key and the signed reward state."""
STATE_FILE = ".playproof/reward.json"
GRADER_KEY_FILE = ".playproof/grader.pem"
"""The task's grader key: signs the reward state (see the module's threat model)."""
RESULTS_FILE = "last.tsv"
"""Per-case results of the last graded build."""
PREVIOUS_RESULTS_FILE = "prev.tsv"
"""Per-case results of the graded build before it."""
FeedbackMode = Literal["full", "disabled"]
REFUSED_FEEDBACK = ("aggregate", "hidden")

STARTER = '''"""Starter candidate: answers HELLO and refuses everything else. Replace it."""

import sys

for line in sys.stdin.buffer:
    words = line.split()
    if words[:1] == [b"HELLO"]:
        sys.stdout.buffer.write(b"OK playproof-corpus/1 starter\\n")
    elif words[:1] == [b"QUIT"]:
        sys.stdout.buffer.write(b"OK\\n")
        break
    else:
        if words[:1] == [b"LOAD"]:
            sys.stdin.buffer.read(int(words[1]))
        sys.stdout.buffer.write(b"ERR not implemented\\n")
    sys.stdout.buffer.flush()
'''


class TaskSpec(BaseModel):
    """``task.json``: which corpus, how to build and start the candidate, the limits."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1] = 1
    corpus: str = "blargg"
    """A shipped corpus name, used unless ``manifest``/``answers``/``roms`` are given."""
    manifest: str | None = None
    answers: str | None = None
    roms: str | None = None
    workspace: str = "workspace"
    """The agent's folder, a relative path inside the task folder and outside ``.playproof``
    (it is handed to the agent and to each build's jail uid)."""
    build: list[str] | CargoBuild | None = None
    """Build command (argv) run in the workspace, in the jail, before grading; or a declared
    cargo build (``_rust``: a clean copy, offline, fingerprinted toolchain, rules)."""
    candidate: Annotated[list[str], Field(min_length=1)]
    """Candidate command (argv) run in the workspace (read-only), in the jail."""
    runtime: Literal["native", "python"] = "native"
    """What the build and candidate jails show besides the workspace: ``native``, the
    system's folders only (a compiled binary); ``python``, also the grader's base
    interpreter with its standard library. Never the grader's packages (``_runtime``)."""
    jobs: Annotated[int, Field(ge=1, le=64)] = 2
    build_seconds: Annotated[float, Field(gt=0, le=7200)] = 600.0
    case_seconds: Annotated[float, Field(gt=0, le=3600)] = 120.0
    grading_seconds: Annotated[float, Field(gt=0, le=86400)] = 1800.0
    feedback: FeedbackMode = "full"
    """``full``: pass count, reward, failures, per-case TSV; ``disabled``: build result only."""
    controller_key: str | None = None
    """A controller public key to trust instead of the shipped one (path, task-relative)."""

    @field_validator("workspace")
    @classmethod
    def _workspace_inside(cls, value: str) -> str:
        parts = PurePosixPath(value).parts
        if (
            not parts
            or value.startswith("/")
            or any(part in (".", "..") for part in value.split("/"))
            or parts[0] == PRIVATE_FOLDER
        ):
            raise ValueError(
                f"workspace {value!r} must be a relative path of folder names inside the task "
                f"folder, not {PRIVATE_FOLDER} or in it: the workspace is handed to the agent "
                "and to each build"
            )
        return value

    @field_validator("feedback", mode="before")
    @classmethod
    def _no_hidden_feedback(cls, value: Any) -> Any:
        if value in REFUSED_FEEDBACK:
            raise ValueError(
                f"feedback {value!r} is not offered: a candidate's workspace cannot hide what "
                "the verifier sees (the candidate produces every observation graded), so "
                "feedback is either 'full' or 'disabled'"
            )
        return value


@dataclass(frozen=True)
class TaskReport:
    """What ``run-tests`` did: the reward entry, the grade (if graded) and failures to show."""

    entry: RewardEntry
    cumulative: int
    denominator: int
    grade: Grade | None
    failures: list[CaseResult]
    results_path: Path | None
    build_log: str


def load_task(folder: Path) -> TaskSpec:
    """Read ``folder/task.json``."""
    path = folder / "task.json"
    raw = read_bounded(path, MAX_TASK_BYTES, "task file")
    try:
        return TaskSpec.model_validate(parse_json(raw, limit=MAX_TASK_BYTES, what=str(path)))
    except ValidationError as exc:
        message = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise FormatError(f"{path} is not valid: {message}") from exc


@dataclass(frozen=True)
class _Private:
    """What no jail of the task may show: the corpus folders and the answers file."""

    hidden: tuple[Path, ...]
    secret: tuple[Path, ...]


def _corpus(
    folder: Path, spec: TaskSpec
) -> tuple[Corpus, CorpusAnswers, _Private, CorpusTrust, VariantPlan]:
    manifest_path, answers_path, roms = shipped_paths(spec.corpus) if spec.corpus else (None,) * 3
    manifest_path = folder / spec.manifest if spec.manifest else manifest_path
    answers_path = folder / spec.answers if spec.answers else answers_path
    roms = folder / spec.roms if spec.roms else roms
    if manifest_path is None or answers_path is None or roms is None:
        raise FormatError("task.json names no corpus")
    manifest = load_manifest(manifest_path)
    answers = load_answers(answers_path, manifest)
    private = _Private(
        hidden=(roms.resolve(), folder.resolve() / ".playproof"),
        secret=(answers_path.resolve(),),
    )
    corpus = load_corpus(manifest, roms)
    keys = load_controller_keys([folder / spec.controller_key] if spec.controller_key else [])
    trust = check_corpus_signature(
        corpus, answers, read_signature(signature_path(manifest_path)), keys
    )
    # Each grading of a build draws a fresh secret seed: an agent that learned
    # one grading's variants has learned nothing about the next.
    plan = VariantPlan(per_case=default_variants(manifest), symbols=load_symbols(roms, manifest))
    return corpus, answers, private, trust, plan


def task_answers_path(folder: Path) -> Path:
    """The answers file the task grades with (the shipped corpus's, or ``answers`` in task.json)."""
    spec = load_task(folder)
    if spec.answers:
        return (folder / spec.answers).resolve()
    return shipped_paths(spec.corpus)[1].resolve()


def _grader_key(folder: Path) -> SigningKey:
    """The task's grader key, made on first use."""
    path = folder / GRADER_KEY_FILE
    if path.exists():
        return SigningKey.load(path)
    key = SigningKey.generate()
    path.parent.mkdir(parents=True, exist_ok=True)
    key.save(path)
    return key


def _state(folder: Path, corpus_digest: str, denominator: int) -> RewardState:
    """The signed reward state; refused when missing while the grader key exists."""
    path, key = folder / STATE_FILE, folder / GRADER_KEY_FILE
    if not path.exists() and key.exists():
        raise FormatError(
            f"reward state {path} is missing though the task's grader key exists (deleted?); "
            "delete the task's .playproof folder to start a new history from zero"
        )
    if not key.exists():
        return RewardState(corpus_digest=corpus_digest, denominator=denominator)
    grader = SigningKey.load(key).verifying_key
    return load_state(path, corpus_digest, denominator, grader)


_TSV_UNSAFE = re.compile(r"[\\\x00-\x1f\x7f\x85\u2028\u2029]")
_TSV_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _TSV_ESCAPES.get(char, f"\\x{code:02x}" if code < 256 else f"\\u{code:04x}")


def _cell(text: str) -> str:
    """``text`` as one TSV cell: backslash, tab, line breaks and other controls escaped.

    A reason may quote a candidate's own words; a raw tab or carriage return
    there would forge a column or a row for whoever reads the file.
    """
    return _TSV_UNSAFE.sub(_escaped, text)


def _write_results(folder: Path, grade: Grade) -> Path:
    """Write ``last.tsv``, keeping the one before it as ``prev.tsv``.

    Neither name is followed: a link planted at either (a task folder its agent
    once owned) is renamed or replaced like a file, and the new file is created
    afresh (``write_atomic``), so the grader never writes through a link.
    """
    results = folder / RESULTS_FILE
    if results.is_symlink() or results.exists():
        results.replace(folder / PREVIOUS_RESULTS_FILE)
    lines = ["case\tpassed\treason"]
    lines += [f"{_cell(r.case_id)}\t{int(r.passed)}\t{_cell(r.reason)}" for r in grade.results]
    write_atomic(results, ("\n".join(lines) + "\n").encode("utf-8"), mode=0o644)
    return results


def _build_program(
    folder: Path, spec: TaskSpec, workspace: Path, private: _Private
) -> tuple[bool, str, BuiltProgram | None]:
    """Build as ``task.json`` declares: a cargo build gives the program to grade."""
    if not isinstance(spec.build, CargoBuild):
        return (*_build(spec, workspace, private), None)
    view = runtime_view(spec.runtime)
    built = run_cargo_build(
        folder,
        workspace,
        spec.build,
        spec.candidate,
        read_only=view.visible,
        hidden=(*private.hidden, *view.hidden),
        secret=private.secret,
        seconds=spec.build_seconds,
        jobs=spec.jobs,
    )
    return built.program is not None, built.log, built.program


def _build(spec: TaskSpec, workspace: Path, private: _Private) -> tuple[bool, str]:
    if not isinstance(spec.build, list) or not spec.build:
        return True, ""
    # The watch keeps the workspace within what the next build digest accepts.
    limits = JailLimits(
        wall_seconds=spec.build_seconds,
        cpu_seconds=int(spec.build_seconds),
        writable_bytes=MAX_BUILD_BYTES,
        writable_files=MAX_BUILD_FILES,
        total_memory_bytes=BUILD_MEMORY_BYTES,
    )
    view = runtime_view(spec.runtime)
    jail = JailSpec(
        read_only=view.visible,
        writable=(workspace,),
        hidden=(*private.hidden, *view.hidden),
        secret=private.secret,
        limits=limits,
        workdir=workspace,
    )
    # As root the jail hands the workspace to a jail uid for the build; it is handed
    # back after, so the agent that owns it (a served task) can still edit it.
    owner = os.stat(workspace).st_uid
    try:
        with reserve_lanes(1) as (lane,):
            build = list(runtime_command(tuple(spec.build), spec.runtime))
            return run_build(build, jail, lane, spec.build_seconds, MAX_BUILD_LOG)
    finally:
        if os.geteuid() == 0:
            give_tree(workspace, owner)  # by descriptor, as it was handed over


def task_run_tests(
    folder: Path,
    *,
    failure_filter: str | None = None,
    on_case: Callable[[CaseObservation], None] | None = None,
    untrusted: str | None = None,
) -> TaskReport:
    """Build, grade the whole corpus, update the reward, write ``last.tsv`` and ``prev.tsv``.

    With feedback disabled, only build: no grade, no reward, no TSV. ``untrusted``
    (a reason) records every grade as untrusted, reward 0, whatever the corpus's
    signature: the grader serving the task could not keep its secrets from the agent.
    """
    spec = load_task(folder)
    workspace = (folder / spec.workspace).resolve()
    corpus, answers, private, trust, plan = _corpus(folder, spec)
    build_digest = tree_digest(workspace)
    if spec.feedback == "disabled":
        built, log, _ = _build_program(folder, spec, workspace, private)
        entry = RewardEntry(
            at=datetime.now(UTC),
            build_digest=build_digest,
            status="built" if built else "build-failed",
            passed=0,
            reward=0,
            finished=False,
        )
        return TaskReport(entry, 0, corpus.manifest.denominator, None, [], None, log)
    state_path = folder / STATE_FILE
    state = _state(folder, corpus.digest, corpus.manifest.denominator)
    grader = _grader_key(folder)
    if not state_path.exists():
        # The key and the first state are written together, so a grading that
        # dies before its result is saved cannot leave a key without a state.
        save_state(state_path, state, grader)
    built, log, program = _build_program(folder, spec, workspace, private)
    if not built:
        entry = state.record(build_digest, "build-failed")
        save_state(state_path, state, grader)
        return TaskReport(entry, state.cumulative, state.denominator, None, [], None, log)
    shown = workspace if program is None else program.folder
    candidate = CandidateSpec(
        command=tuple(spec.candidate) if program is None else program.command,
        read_only=(shown,),
        hidden=private.hidden,
        secret=private.secret,
        workdir=shown,
        runtime=spec.runtime,
    )
    started = time.monotonic()
    run = grade_candidate(
        corpus,
        answers,
        candidate,
        build_digest=build_digest,
        jobs=spec.jobs,
        limits=JailLimits(wall_seconds=spec.case_seconds),
        on_case=on_case,
        trust=trust,
        variants=plan,
    )
    if time.monotonic() - started > spec.grading_seconds:
        entry = state.record(build_digest, "grading-timed-out")
        save_state(state_path, state, grader)
        return TaskReport(entry, state.cumulative, state.denominator, None, [], None, log)
    trusted = trust.trusted and untrusted is None
    entry = state.record(build_digest, "graded", run.grade.passing, trusted=trusted)
    save_state(state_path, state, grader)
    results = _write_results(folder, run.grade)
    failing = [r for r in run.grade.results if not r.passed]
    if failure_filter:
        failing = [r for r in failing if failure_filter in r.case_id]
    return TaskReport(
        entry,
        state.cumulative,
        state.denominator,
        run.grade,
        failing[:MAX_LISTED_FAILURES],
        results,
        log,
    )


def task_progress(folder: Path) -> tuple[int, int, int, RewardEntry | None]:
    """(passing now, denominator, cumulative reward, last entry) without rebuilding.

    Refused when the signed reward state fails its check, or feedback is disabled.
    """
    spec = load_task(folder)
    if spec.feedback == "disabled":
        raise FormatError(
            f"feedback is disabled in {folder / 'task.json'}: this task reports no progress"
        )
    manifest_path = folder / spec.manifest if spec.manifest else shipped_paths(spec.corpus)[0]
    manifest = load_manifest(manifest_path)
    state = _state(folder, manifest.digest, manifest.denominator)
    last = state.history[-1] if state.history else None
    return len(state.baseline), state.denominator, state.cumulative, last


def init_task(
    folder: Path, spec: TaskSpec | None = None, *, starter: Literal["python", "rust"] = "python"
) -> Path:
    """Create a task folder with instructions, the protocol spec and a starter workspace.

    The ``rust`` starter is a Cargo workspace (a CHIP-8 candidate skeleton) built by a
    declared cargo build; the toolchain is fingerprinted now, when the task starts.
    """
    chosen = spec or TaskSpec(candidate=["python3", "candidate.py"], runtime="python")
    platform = task_platform(folder, chosen.corpus, chosen.manifest)
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / "task.json").exists():
        raise FormatError(f"{folder} already holds a task")
    workspace = folder / chosen.workspace
    workspace.mkdir(exist_ok=True)
    if starter == "rust":
        write_rust_starter(workspace)
        record_fingerprint(folder)
    elif not (workspace / "candidate.py").exists():
        (workspace / "candidate.py").write_text(STARTER, encoding="utf-8")
    (folder / "task.json").write_text(
        json.dumps(chosen.model_dump(mode="json", exclude_none=True), indent=2) + "\n", "utf-8"
    )
    (folder / "PROTOCOL.md").write_bytes(protocol_text())
    (folder / "INSTRUCTIONS.md").write_text(
        platform_brief(platform)
        + f"Work in `{chosen.workspace}/`. Your program speaks the protocol in PROTOCOL.md on\n"
        f"stdin/stdout; it is started as `{' '.join(chosen.candidate)}` inside a jail with no\n"
        "network and no view of the test ROMs or their answers. Besides the workspace it\n"
        f"sees the runtime task.json declares ({chosen.runtime}): `native` is the system's\n"
        "folders only (a compiled binary), `python` adds a Python interpreter with its\n"
        "standard library and no third-party packages.\n\n"
        "- `playproof task run-tests` builds, grades every case, prints the reward and a\n"
        "  sample of failures, and writes every case's result to last.tsv (the\n"
        "  build before it: prev.tsv).\n"
        "  `--filter TEXT` only narrows the failures listed; the score is always\n"
        "  the whole corpus.\n"
        "- `playproof task progress` prints the current pass count and cumulative reward.\n"
        "- In a served task (your shell runs as a user of its own), `run-tests` and\n"
        "  `run-tests --progress` (on your PATH) ask the task's grader to do the same.\n"
        + (rust_instructions(chosen.build) if isinstance(chosen.build, CargoBuild) else ""),
        encoding="utf-8",
    )
    return folder
