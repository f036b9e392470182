"""Corpus commands: ``corpus build/answers/list/sign``, ``grade``, ``verify-grade``, ``task ...``.

Importing this module registers them on :data:`playproof.cli._app.app`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import signal
import subprocess
import threading
from collections import Counter
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.progress import Progress
from rich.table import Table

from playproof._atomic import write_atomic
from playproof.cli._app import (
    EXIT_REJECTED,
    Executor,
    ExecutorName,
    RayAddress,
    _emit,
    _wants_json,
    app,
    say_retried,
)
from playproof.cli._files import (
    DEFAULT_KEY_DIR,
    ensure_signing_key,
    read_document,
    trusted_keys,
    write_document,
)
from playproof.cli._output import console, line, progress_bar, row, styled
from playproof.core.report import CheckResult, VerificationReport
from playproof.corpus import (
    CaseObservation,
    CaseResult,
    GradeRecord,
    JailLimits,
    build_corpus,
    generate_answers,
    grade_candidate,
    load_answers,
    load_corpus,
    load_manifest,
    read_sums,
    reference_candidate_spec,
    shipped_paths,
    sign_grade,
    verify_grade,
)
from playproof.corpus._build import (
    CHIP8_CASES,
    build_acid2,
    build_chip8,
    build_mooneye,
    draft_cases,
    mooneye_applies,
)
from playproof.corpus._catalog import REFERENCE_RESULTS, list_corpora
from playproof.corpus._channel import (
    ServedTask,
    agent_shell_command,
    prepare_served_task,
    resolve_agent,
)
from playproof.corpus._grading import candidate_digest, command_candidate
from playproof.corpus._rust import STARTER_PACKAGE, rust_starter_build
from playproof.corpus._task import TaskSpec, init_task, task_progress, task_run_tests
from playproof.corpus._trust import (
    check_corpus_signature,
    load_controller_keys,
    read_signature,
    sign_corpus,
    signature_path,
    signed_claim,
)
from playproof.corpus._variants import (
    MAX_VARIANTS_PER_CASE,
    VariantPlan,
    default_variants,
    load_symbols,
    new_seed,
    parse_seed,
    verify_variants,
)
from playproof.corpus.task_client import SOCKET_NAME, ChannelError, ask, render
from playproof.errors import NotSupportedError, RunError
from playproof.exec import check_grading_executor, check_grading_nodes, open_executor
from playproof.sign import SigningKey

__all__ = ["corpus_app", "task_app"]

corpus_app = typer.Typer(help="Build corpora and their expected answers.", no_args_is_help=True)
task_app = typer.Typer(
    help="Tools for a coding agent working on a corpus task.", no_args_is_help=True
)
app.add_typer(corpus_app, name="corpus")
app.add_typer(task_app, name="task")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


class RuntimeName(StrEnum):
    """What a candidate's jail shows besides its own files (``playproof.corpus._runtime``)."""

    NATIVE = "native"
    PYTHON = "python"


RuntimeOption = Annotated[
    RuntimeName,
    typer.Option(
        help="What the candidate's jail shows besides its files: 'native' (system folders "
        "only) or 'python' (also a Python interpreter, standard library only); never "
        "the grader's own interpreter or packages.",
    ),
]
ControllerKeys = Annotated[
    list[Path] | None,
    typer.Option(
        "--controller-key",
        help="Controller public key to trust for corpus signatures (repeatable; "
        "default: the project's key shipped with playproof).",
    ),
]
MAX_TABLE_ROWS = 60


def _progress(total: int, quiet: bool, label: str) -> tuple[Progress, Any]:
    progress = progress_bar(quiet)
    task = progress.add_task(label, total=total, status="")
    return progress, task


def _write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(value, indent=1) + "\n").encode("utf-8"))


def _runtime(name: RuntimeName) -> Literal["native", "python"]:
    return "python" if name == RuntimeName.PYTHON else "native"


class BuildKind(StrEnum):
    """Where ``corpus build`` takes the expected answers from."""

    REFERENCE = "reference"
    MOONEYE = "mooneye"
    ACID2 = "dmg-acid2"
    CHIP8 = "chip8"


@corpus_app.command("build")
def corpus_build(
    roms: Annotated[Path, typer.Option(help="Folder of ROMs with a SHA256SUMS file.")],
    out: Annotated[Path, typer.Option(help="Folder for manifest.json and answers.json.")],
    corpus_id: Annotated[
        str | None,
        typer.Option("--id", help="Corpus id (default: blargg, or the --kind name)."),
    ] = None,
    version: Annotated[str, typer.Option(help="Corpus version.")] = "1",
    kind: Annotated[
        BuildKind,
        typer.Option(
            help="Where the answers come from: the reference's results (keep what it "
            "passes), the Mooneye register convention, the dmg-acid2 reference picture, or "
            "the CHIP-8 suite's published pictures (all three also write reference.json, "
            "the reference's own grade)."
        ),
    ] = BuildKind.REFERENCE,
    jobs: Annotated[int, typer.Option(help="Parallel reference processes.")] = 2,
    json_output: JsonFlag = False,
) -> None:
    """Build a corpus's manifest and expected answers from a folder of pinned ROMs."""
    quiet = _wants_json(json_output)
    if corpus_id is None:
        corpus_id = "blargg" if kind == BuildKind.REFERENCE else kind.value
    sums = read_sums(roms)
    if kind == BuildKind.MOONEYE:
        total = sum(mooneye_applies(case.file) for case in draft_cases(sums))
    elif kind == BuildKind.CHIP8:
        total = len(CHIP8_CASES)
    else:
        total = 1 if kind == BuildKind.ACID2 else len(draft_cases(sums))
    progress, task = _progress(total, quiet, "reference")

    def advance(observation: CaseObservation) -> None:
        progress.update(task, advance=1, status=observation.case_id[-30:])

    reference = None
    with progress:
        if kind == BuildKind.REFERENCE:
            manifest, answers = build_corpus(
                roms, sums=sums, corpus_id=corpus_id, version=version, jobs=jobs, on_case=advance
            )
        else:
            builders = {
                BuildKind.MOONEYE: build_mooneye,
                BuildKind.ACID2: build_acid2,
                BuildKind.CHIP8: build_chip8,
            }
            build = builders[kind]
            built = build(
                roms, sums=sums, corpus_id=corpus_id, version=version, jobs=jobs, on_case=advance
            )
            manifest, answers, reference = built.manifest, built.answers, built.reference
    _write_json(out / "manifest.json", manifest.model_dump(mode="json"))
    _write_json(out / "answers.json", answers.model_dump(mode="json"))
    if reference is not None:
        _write_json(out / REFERENCE_RESULTS, reference.model_dump(mode="json"))
    summary = {
        "cases": manifest.denominator,
        "excluded": len(manifest.excluded),
        "reference_passed": reference.passed if reference is not None else None,
        "corpus_digest": manifest.digest,
        "out": str(out),
    }
    if quiet:
        _emit(summary)
    else:
        passed = (
            f"; the reference passes {reference.passed} of {reference.denominator}"
            if reference is not None
            else ""
        )
        console.print(
            line(
                f"{manifest.denominator} cases, {len(manifest.excluded)} excluded "
                f"(see manifest.json){passed}, digest {manifest.digest[:16]}..., written to {out}"
            )
        )


@corpus_app.command("list")
def corpus_list(json_output: JsonFlag = False) -> None:
    """Every shipped corpus: platform, ROMs, graded cases, licence and source pin."""
    listing = list_corpora()
    if _wants_json(json_output):
        _emit([entry.model_dump(mode="json") for entry in listing])
        return
    for entry in listing:
        if entry.denominator is None:
            graded = f"{entry.roms} ROMs, no manifest (not graded yet)"
        else:
            cases = "case" if entry.denominator == 1 else "cases"
            graded = f"{entry.denominator} {cases} graded of {entry.roms} ROMs"
            if entry.excluded:
                graded += f" ({entry.excluded} left out)"
            if entry.reference_passed is not None:
                graded += f"; the reference passes {entry.reference_passed}"
        console.print(line(styled(entry.name, "bold"), f" ({entry.platform}): {graded}"))
        console.print(line(f"  licence {entry.licence}"))
        console.print(line(f"  source {entry.source}"))


@corpus_app.command("answers")
def corpus_answers(
    manifest: Annotated[Path, typer.Option(help="A manifest you wrote.")],
    roms: Annotated[Path, typer.Option(help="Folder the manifest's files are relative to.")],
    out: Annotated[Path, typer.Option(help="Where to write the answers file.")],
    jobs: Annotated[int, typer.Option(help="Parallel reference processes.")] = 2,
) -> None:
    """Generate the expected answers of a manifest by running the reference emulator."""
    parsed = load_manifest(manifest)
    answers = generate_answers(parsed, roms, jobs=jobs)
    _write_json(out, answers.model_dump(mode="json"))
    console.print(line(f"answers for {len(answers.answers)} cases written to {out}"))


@corpus_app.command("sign")
def corpus_sign(
    key: Annotated[Path, typer.Option(help="The controller's private key (PEM).")],
    corpus: Annotated[
        Path, typer.Option(help="Corpus folder holding manifest.json (and answers.json, roms/).")
    ],
    answers: Annotated[
        Path | None, typer.Option(help="Answers file (default: answers.json in the folder).")
    ] = None,
    roms: Annotated[
        Path | None, typer.Option(help="Case files' folder (default: roms/ in the folder).")
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Sign a corpus (manifest, answers, case files) with a controller key: corpus.sig.json."""
    manifest_path = corpus / "manifest.json"
    manifest = load_manifest(manifest_path)
    expected = load_answers(answers or corpus / "answers.json", manifest)
    loaded = load_corpus(manifest, roms or corpus / "roms")
    controller = SigningKey.load(key)
    target = write_document(
        signature_path(manifest_path), sign_corpus(loaded, expected, controller).to_json()
    )
    if _wants_json(json_output):
        _emit({"corpus_digest": manifest.digest, "key_id": controller.key_id, "out": str(target)})
    else:
        console.print(
            line(
                f"{manifest.corpus_id} {manifest.version} signed by controller key ",
                styled(controller.key_id, "bold"),
                f": {target}",
            )
        )


def _results_table(results: list[CaseResult], title: str) -> Table:
    table = Table(title=line(title))
    for column in ("case", "result", "reason"):
        table.add_column(column)
    for result in results[:MAX_TABLE_ROWS]:
        mark = styled("pass", "green") if result.passed else styled("FAIL", "red")
        row(table, result.case_id, mark, result.reason)
    return table


def _retried(retried: list[str], notice: str) -> None:
    retried.append(notice)
    say_retried(notice)


@app.command("grade")
def grade_command(
    candidate: Annotated[
        str,
        typer.Option(
            help="Candidate command line (no shell), or 'reference' for the corpus platform's "
            "reference (PyBoy on a DMG, the built-in interpreter on CHIP-8)."
        ),
    ],
    corpus: Annotated[str, typer.Option(help="Shipped corpus name or a manifest path.")] = "blargg",
    answers: Annotated[
        Path | None, typer.Option(help="Answers file (with a manifest path).")
    ] = None,
    roms: Annotated[Path | None, typer.Option(help="ROM folder (with a manifest path).")] = None,
    build_dir: Annotated[
        Path | None, typer.Option(help="Candidate build folder: hashed, visible read-only.")
    ] = None,
    runtime: RuntimeOption = RuntimeName.NATIVE,
    jobs: Annotated[int, typer.Option(help="Cases graded at once.")] = 2,
    reuse: Annotated[int, typer.Option(help="Cases per candidate process (1: fresh each).")] = 1,
    fresh_jail: Annotated[
        bool,
        typer.Option(
            "--fresh-jail",
            help="A new sandbox for every candidate process (default as root: one per slot, "
            "each process in namespaces and under a uid of its own).",
        ),
    ] = False,
    case_seconds: Annotated[float, typer.Option(help="Wall-clock limit per case.")] = 120.0,
    out: Annotated[
        Path | None, typer.Option(help="Where to write the signed grade record.")
    ] = None,
    key_dir: Annotated[Path, typer.Option("--key-dir")] = DEFAULT_KEY_DIR,
    controller_key: ControllerKeys = None,
    executor: Executor = ExecutorName.LOCAL,
    ray_address: RayAddress = None,
    variants: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=MAX_VARIANTS_PER_CASE,
            help="Secret ROM variants per case (0: none; default 2 on Mooneye, else 1); "
            "a case passes only with its variants.",
        ),
    ] = None,
    variant_seed: Annotated[
        str | None,
        typer.Option(help="Hex seed of the variants, for a reproducible grading (default secret)."),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Grade CANDIDATE on a corpus in the jail; print the results and sign a grade record.

    The grade is trusted only when a trusted controller key signed the corpus
    (corpus.sig.json beside the manifest); otherwise it is untrusted, reward 0.
    """
    check_grading_executor(executor, ray_address)
    if executor == ExecutorName.SERIAL:
        jobs = 1
    if Path(corpus).suffix == ".json":
        if answers is None or roms is None:
            raise typer.BadParameter("a manifest path needs --answers and --roms")
        manifest_path, answers_path, roms_path = Path(corpus), answers, roms
    else:
        manifest_path, answers_path, roms_path = shipped_paths(corpus)
    manifest = load_manifest(manifest_path)
    expected = load_answers(answers_path, manifest)
    loaded = load_corpus(manifest, roms_path)
    trust = check_corpus_signature(
        loaded,
        expected,
        read_signature(signature_path(manifest_path)),
        load_controller_keys(controller_key or []),
    )
    hidden = (roms_path.resolve(),)
    secret = (answers_path.resolve(),)
    if variants is None:
        variants = default_variants(manifest)
    plan = VariantPlan(
        seed=parse_seed(variant_seed) if variant_seed else new_seed(),
        per_case=variants,
        symbols=load_symbols(roms_path, manifest) if variants else {},
    )
    if candidate == "reference":
        reference = reference_candidate_spec(manifest.platform)
        command = reference.command
        spec = dataclasses.replace(reference, hidden=hidden, secret=secret)
    else:
        command = tuple(shlex.split(candidate))
        spec = command_candidate(
            command, build_dir=build_dir, hidden=hidden, secret=secret, runtime=_runtime(runtime)
        )
    quiet = _wants_json(json_output)
    progress, task = _progress(manifest.denominator, quiet, manifest.corpus_id)

    def seen(observation: CaseObservation) -> None:
        progress.update(
            task, advance=1, status=f"{observation.case_id[-30:]} {observation.outcome}"
        )

    retried: list[str] = []
    cluster = None
    if executor == ExecutorName.RAY:
        # Each case group is one Ray task; every node must build the jail (checked first).
        cluster, _ = open_executor(
            "ray", address=ray_address, on_retry=lambda notice: _retried(retried, notice)
        )
    try:
        if cluster is not None:
            check_grading_nodes(
                spec, *([reference_candidate_spec(manifest.platform)] if variants else [])
            )
        with progress:
            run = grade_candidate(
                loaded,
                expected,
                spec,
                build_digest=candidate_digest(command, build_dir),
                jobs=jobs,
                cases_per_process=reuse,
                limits=JailLimits(wall_seconds=case_seconds),
                on_case=seen,
                trust=trust,
                variants=plan,
                executor=cluster,
                isolation="auto" if cluster is None else "bubblewrap",
                warm=not fresh_jail,
            )
    except BaseException:
        if cluster is not None:
            cluster.shutdown(wait=False, cancel_futures=True)
        raise
    if cluster is not None:
        cluster.shutdown()
    key, _ = ensure_signing_key(key_dir)
    target = out or Path("playproof-runs") / f"grade-{manifest.corpus_id}.json"
    path = write_document(target, sign_grade(run.record, key).to_json())
    if quiet:
        _emit(
            {
                "passed": run.grade.passed,
                "denominator": run.grade.denominator,
                "isolation": run.record.isolation,
                "trust": run.record.trust,
                "trust_reason": trust.reason,
                "reward": run.record.reward,
                "variants": len(run.record.variants),
                "retried": len(retried),
                "record": str(path),
                "results": [r.model_dump() for r in run.grade.results],
            }
        )
        return
    console.print(_results_table(run.grade.results, f"{manifest.corpus_id} {manifest.version}"))
    console.print(
        line(
            styled(f"{run.grade.passed} of {run.grade.denominator}", "bold"),
            f" cases pass (isolation: {run.record.isolation}; "
            f"{len(run.record.variants)} ROM variants graded); signed grade record: {path}",
        )
    )
    if not trust.trusted:
        console.print(line(styled("untrusted", "yellow"), f" grade, reward 0: {trust.reason}"))


@app.command("verify-grade")
def verify_grade_command(
    record: Annotated[Path, typer.Argument(help="Signed grade record.")],
    key: Annotated[
        list[Path] | None, typer.Option("--key", "-k", help="Trusted public key.")
    ] = None,
    manifest: Annotated[Path | None, typer.Option(help="Manifest to check the corpus pin.")] = None,
    key_dir: Annotated[Path, typer.Option("--key-dir")] = DEFAULT_KEY_DIR,
    controller_key: ControllerKeys = None,
    variant_seed: Annotated[
        str | None,
        typer.Option(
            help="The grading's variant seed, once revealed: regenerate the variants and "
            "check their digests (needs --manifest; --roms unless the corpus is shipped)."
        ),
    ] = None,
    roms: Annotated[
        Path | None, typer.Option(help="ROM folder of --manifest (default: the shipped one).")
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Check a signed grade record; exit 0 only when clean. Reports the corpus trust.

    With --manifest, a record claiming a trusted corpus also needs the
    manifest's corpus.sig.json to verify under a trusted controller key.
    """
    signed = None
    if manifest is not None:
        signed = signed_claim(
            read_signature(signature_path(manifest)),
            load_controller_keys(controller_key or []),
        )
    report, parsed = verify_grade(
        read_document(record),
        trusted_keys(key or [], key_dir),
        load_manifest(manifest) if manifest else None,
        signed,
    )
    if variant_seed is not None:
        report = _with_variant_check(report, parsed, manifest, roms, variant_seed)
    trust = parsed.trust if parsed is not None else None
    # Without a manifest nothing checked the corpus signature: a trusted claim is the record's.
    trust_checked = manifest is not None
    if _wants_json(json_output):
        _emit({**report.model_dump(mode="json"), "trust": trust, "trust_checked": trust_checked})
    else:
        for check in report.checks:
            mark = "pass" if check.passed else "FAIL"
            console.print(line(f"{check.id}: {mark} ({check.reason})"))
        if parsed is not None:
            by = f" (controller key {parsed.controller_key})" if parsed.controller_key else ""
            claimed = (
                ", as the record claims: not checked without --manifest"
                if parsed.trust == "trusted" and not trust_checked
                else ""
            )
            console.print(line(f"trust: {parsed.trust}{by}{claimed}; reward {parsed.reward}"))
        console.print(line(f"verdict: {report.verdict}"))
    if not report.clean:
        raise typer.Exit(EXIT_REJECTED)


def _with_variant_check(
    report: VerificationReport,
    record: GradeRecord | None,
    manifest: Path | None,
    roms: Path | None,
    seed: str,
) -> VerificationReport:
    """The report plus ``variants-reproduced`` (the revealed seed remakes the recorded variants)."""
    if manifest is None:
        raise typer.BadParameter("--variant-seed needs --manifest")
    parsed = load_manifest(manifest)
    if record is None:
        check = CheckResult(id="variants-reproduced", passed=False, reason="no record to compare")
    else:
        folder = roms or shipped_paths(parsed.corpus_id)[2]
        # Counted in one pass: a record may pin any number of variants of one case.
        most = Counter(p.case_id for p in record.variants).most_common(1)
        per_case = most[0][1] if most else 1
        if per_case > MAX_VARIANTS_PER_CASE:
            check = CheckResult(
                id="variants-reproduced",
                passed=False,
                reason=f"the record pins {per_case} variants of case {most[0][0][:80]!r}; "
                f"a grading makes at most {MAX_VARIANTS_PER_CASE}",
            )
        else:
            plan = VariantPlan(
                seed=parse_seed(seed), per_case=per_case, symbols=load_symbols(folder, parsed)
            )
            check = verify_variants(
                record.variants, record.variant_seed_sha256, load_corpus(parsed, folder), plan
            )
    return VerificationReport.from_checks([*report.checks, check], key_id=report.key_id)


TaskDir = Annotated[Path, typer.Option("--task", help="Task folder.")]


class StarterName(StrEnum):
    """The starter workspace ``task init`` writes."""

    PYTHON = "python"
    RUST = "rust"


@task_app.command("init")
def task_init(
    folder: Annotated[Path, typer.Argument(help="Folder to create.")],
    candidate: Annotated[str, typer.Option(help="Candidate command.")] = "python3 candidate.py",
    build: Annotated[str | None, typer.Option(help="Build command.")] = None,
    corpus: Annotated[
        str | None, typer.Option(help="Shipped corpus (default: blargg; chip8 for --starter rust).")
    ] = None,
    runtime: RuntimeOption = RuntimeName.PYTHON,
    starter: Annotated[
        StarterName,
        typer.Option(
            help="'python': candidate.py; 'rust': a Cargo workspace (a CHIP-8 candidate) "
            "with a declared, offline, rule-checked cargo build and the native runtime."
        ),
    ] = StarterName.PYTHON,
) -> None:
    """Create a task folder (instructions, protocol spec, starter workspace)."""
    if starter == StarterName.RUST:
        if build is not None:
            raise typer.BadParameter("--starter rust declares its own cargo build; drop --build")
        spec = TaskSpec(
            corpus=corpus or "chip8",
            candidate=[STARTER_PACKAGE],
            build=rust_starter_build(),
            runtime="native",
        )
        init_task(folder, spec, starter="rust")
        console.print(line(f"task created in {folder} (Rust starter; build with run-tests)"))
        return
    spec = TaskSpec(
        corpus=corpus or "blargg",
        candidate=shlex.split(candidate),
        build=shlex.split(build) if build else None,
        runtime=_runtime(runtime),
    )
    init_task(folder, spec)
    console.print(line(f"task created in {folder}"))


@task_app.command("run-tests")
def task_run(
    task: TaskDir = Path("."),
    filter_text: Annotated[
        str | None, typer.Option("--filter", help="Only list failures whose id contains this.")
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Build in the jail, grade the whole corpus, print failures and the reward.

    In a served task (a grader.sock in the task folder) the task's grader does it.
    """
    quiet = _wants_json(json_output)
    if (task / SOCKET_NAME).exists():
        _ask_grader(task, "run-tests", filter_text, quiet)
        return
    progress, bar = _progress(0, quiet, "cases")
    with progress:
        report = task_run_tests(
            task,
            failure_filter=filter_text,
            on_case=lambda o: progress.update(bar, advance=1, status=o.case_id[-30:]),
        )
    entry = report.entry
    if quiet:
        _emit(
            {
                "status": entry.status,
                "passed": entry.passed,
                "denominator": report.denominator,
                "reward": entry.reward,
                "cumulative": report.cumulative,
                "finished": entry.finished,
                "trusted": entry.trusted,
                "results": str(report.results_path) if report.results_path else None,
                "failures": [r.model_dump() for r in report.failures],
                "build_log": report.build_log[-2000:],
            }
        )
        return
    if entry.status == "built":
        console.print(line("built; feedback is disabled in this task (no grade, no reward)"))
        return
    if entry.status != "graded":
        console.print(line(styled(entry.status, "red"), "; reward 0\n", report.build_log[-2000:]))
        return
    if report.failures:
        console.print(_results_table(report.failures, "failures (sample)"))
    console.print(
        line(
            styled(f"{entry.passed} of {report.denominator}", "bold"),
            f" pass; reward {entry.reward:+d}, cumulative {report.cumulative:+d}"
            f"{'; FINISHED' if entry.finished else ''}; all results in {report.results_path}",
        )
    )
    if not entry.trusted:
        console.print(line(styled("untrusted corpus", "yellow"), ": reward 0 (no valid signature)"))


@task_app.command("progress")
def task_progress_command(task: TaskDir = Path("."), json_output: JsonFlag = False) -> None:
    """Current pass count and cumulative reward (no rebuild)."""
    if (task / SOCKET_NAME).exists():
        _ask_grader(task, "progress", None, _wants_json(json_output))
        return
    passed, total, cumulative, last = task_progress(task)
    if _wants_json(json_output):
        _emit({"passed": passed, "denominator": total, "cumulative": cumulative})
        return
    when = f", last build {last.status} at {last.at:%Y-%m-%d %H:%M}" if last else ""
    console.print(line(f"{passed} of {total} pass; cumulative reward {cumulative:+d}{when}"))


def _ask_grader(task: Path, op: str, failure_filter: str | None, quiet: bool) -> None:
    """Send one request to a served task's grader and print its reply."""
    try:
        reply = ask(str(task / SOCKET_NAME), op, failure_filter)
    except ChannelError as exc:
        raise RunError(f"{exc}; is `playproof task serve` running for {task}?") from None
    if quiet:
        _emit(reply)
    else:
        console.print(line(render(reply)))
    if not reply.get("ok"):
        raise typer.Exit(1)


@task_app.command("serve")
def task_serve_command(
    task: TaskDir = Path("."),
    agent_user: Annotated[
        str, typer.Option(help="The agent's own unprivileged user (name or uid).")
    ] = "",
    same_user: Annotated[
        bool,
        typer.Option(
            help="Serve as an ordinary user, agent and grader alike: every grade untrusted."
        ),
    ] = False,
) -> None:
    """Serve TASK's grader to its agent over TASK/grader.sock until interrupted (root).

    Sets the task up first: the grader owns .playproof and the answers, the
    agent owns the workspace; refused while the agent could read a secret.
    """
    if not agent_user and not same_user:
        raise typer.BadParameter("--agent-user is required (or --same-user)")
    agent = resolve_agent(agent_user) if agent_user else os.getuid()
    untrusted = prepare_served_task(task, agent, same_user=same_user)
    served = ServedTask(task, agent, untrusted=untrusted)
    served.open()
    console.print(line(f"serving {task.resolve()} to uid {agent} on {served.path}"))
    if untrusted:
        console.print(line(styled("untrusted", "yellow"), f": {untrusted}; every reward is 0"))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # a plain kill also removes the socket
    try:
        served.serve(stop)
    except KeyboardInterrupt:
        stop.set()
    finally:
        served.close()


@task_app.command("shell", context_settings={"allow_extra_args": True})
def task_shell_command(
    command: Annotated[list[str], typer.Argument(help="The agent's command (after --).")],
    task: TaskDir = Path("."),
    agent_user: Annotated[str, typer.Option(help="The agent's user (name or uid).")] = "",
    bind: Annotated[
        list[Path] | None,
        typer.Option(help="A further folder the agent's shell shows read-only (repeatable)."),
    ] = None,
) -> None:
    """Run COMMAND as the task's agent in its sandbox (root, bubblewrap); exit with its status."""
    if os.geteuid() != 0:
        raise NotSupportedError(
            "the agent's shell runs the agent as its own user, which needs root; as an "
            "ordinary user, run the agent yourself and serve with --same-user (untrusted)"
        )
    if not agent_user:
        raise typer.BadParameter("--agent-user is required")
    argv = agent_shell_command(task, resolve_agent(agent_user), command, binds=tuple(bind or ()))
    done = subprocess.run(argv, check=False)
    raise typer.Exit(done.returncode)
