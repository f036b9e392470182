"""The ``playproof`` command: keygen, targets, run, verify, show, demo."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress
from rich.table import Table
from rich.text import Text

from playproof._api import arun, resolve_target, verify_record, verify_signed
from playproof.cli._agents import AgentChoice, AgentOptions, parse_agent, run_settings
from playproof.cli._desktop import Recorder, read_transcript, recorder_for
from playproof.cli._files import (
    DEFAULT_KEY_DIR,
    check_key_dir,
    default_record_path,
    ensure_signing_key,
    key_paths,
    read_document,
    trusted_keys,
    write_document,
)
from playproof.cli._options import (
    AgentFlag,
    AgentSeed,
    AgentTimeout,
    ApiKeyEnv,
    BaseUrl,
    Budget,
    ContractFile,
    Cost,
    MaxTurns,
    Mode,
    Out,
    PriceCachedInput,
    PriceInput,
    PriceOutput,
    RecorderKey,
    Reply,
    ReplyMode,
    Seed,
    StopAtGameOver,
    TargetName,
    Vision,
    Worker,
    agent_options,
)
from playproof.cli._output import (
    actor_label,
    console,
    data,
    errors,
    line,
    progress_bar,
    row,
    say_error,
    styled,
)
from playproof.core.canonical import parse_json
from playproof.core.contract import Contract
from playproof.core.game import VerificationMode
from playproof.core.record import RunRecord, RunSettings, parse_run_record
from playproof.core.report import VerificationReport
from playproof.engine import DEFAULT_MAX_TURNS, TurnReport
from playproof.errors import FormatError, PlayproofError, RunError
from playproof.exec import BatchVerdict, record_files, verify_many
from playproof.sign import MAX_ENVELOPE_BYTES, SigningKey, parse_envelope, sign_record
from playproof.targets import Target, list_targets, read_contract

__all__ = ["EXIT_ERROR", "EXIT_REJECTED", "EXIT_USAGE", "app", "main"]

EXIT_REJECTED = 1
"""``verify`` found the record not clean."""
EXIT_ERROR = 3
"""Bad input or a failed run; the message says why."""
EXIT_USAGE = 2
"""The command line itself is wrong (unknown option, missing argument, invalid choice)."""

app = typer.Typer(
    name="playproof",
    help="Verifiable, cost-aware benchmarks for any agent.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
_state: dict[str, bool] = {"json": False, "debug": False}

KeyDir = Annotated[Path, typer.Option("--key-dir", help="Folder of the signing key pair.")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


class ExecutorName(StrEnum):
    """Where whole episodes run (the executors :mod:`playproof.exec` knows)."""

    LOCAL = "local"
    SERIAL = "serial"
    RAY = "ray"


Executor = Annotated[
    ExecutorName,
    typer.Option("--executor", help="Where episodes run: local pool, serial, or a Ray cluster."),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        metavar="HOST:PORT",
        help="Join the Ray cluster whose head is here (with --executor ray; default: start a "
        "local Ray).",
    ),
]


def say_retried(message: str) -> None:
    """Print an executor's retry notice (a task sent again after its worker died) on stderr."""
    say_error("retried", message)


@app.callback()
def _options(
    json_output: JsonFlag = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
) -> None:
    _state["json"] = json_output
    _state["debug"] = debug


def _wants_json(local: bool) -> bool:
    return local or _state["json"]


def _emit(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


@app.command()
def keygen(
    key_dir: KeyDir = DEFAULT_KEY_DIR,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing key.")] = False,
    json_output: JsonFlag = False,
) -> None:
    """Create an Ed25519 signing key pair (private key file mode 0600)."""
    private, public = key_paths(key_dir)
    key = SigningKey.generate()
    key_dir.mkdir(parents=True, exist_ok=True)
    key.save(private, overwrite=force)
    key.verifying_key.save(public, overwrite=True)
    if _wants_json(json_output):
        _emit({"key_id": key.key_id, "private": str(private), "public": str(public)})
    else:
        console.print(line("key id ", styled(key.key_id, "bold")))
        console.print(line(f"private {private}\npublic  {public}"))


@app.command()
def targets(json_output: JsonFlag = False) -> None:
    """List the registered targets."""
    found = list_targets()
    if _wants_json(json_output):
        _emit([_target_summary(t) for t in found])
        return
    # Two columns, the facts above the description, so the text stays readable at 80 columns.
    table = Table(title="playproof targets", show_lines=True)
    table.add_column("target", no_wrap=True)
    table.add_column("about", ratio=1)
    for target in found:
        summary = _target_summary(target)
        separates = {True: "yes", False: "no", None: "not calibrated"}[target.spec.separates]
        facts = (
            f"{summary['milestones']} milestones, reference of {summary['reference_inputs']} "
            f"inputs, {target.spec.isolation}, separates: {separates}"
        )
        row(table, target.name, line(styled(facts, "dim"), "\n", target.spec.description))
    console.print(table)


def _target_summary(target: Target) -> dict[str, Any]:
    return {
        "name": target.name,
        "description": target.spec.description,
        "milestones": len(target.contract.milestones),
        "contract_hash": target.contract.hash,
        "build_digest": target.spec.build_digest,
        "reference_inputs": len(target.reference),
        "isolation": target.spec.isolation,
        "separates": target.spec.separates,
        "separation_note": target.spec.separation_note,
    }


def turn_limit(choice: AgentChoice, max_turns: int | None) -> int:
    """The turn limit: as asked (default DEFAULT_MAX_TURNS), never past a script's end."""
    turns = max_turns if max_turns is not None else choice.max_turns or DEFAULT_MAX_TURNS
    return turns if choice.max_turns is None else min(turns, choice.max_turns)


def turn_progress(quiet: bool) -> Progress:
    """The live progress bar over turns (on stderr; silent when ``quiet``)."""
    return progress_bar(quiet, transient=False)


class LazyBar:
    """A progress bar drawn only once the first turn is reported.

    Everything a run checks before its first turn (the mode against the
    platform, a ledger against the target) fails before any bar is drawn.
    """

    def __init__(self, progress: Progress, description: str, total: int, completed: int = 0):
        self.progress = progress
        self._task = progress.add_task(description, total=total, completed=completed, status="")
        self._started = False

    def update(self, completed: int, status: str) -> None:
        """Show ``completed`` turns and ``status``, starting the bar if needed."""
        if not self._started:
            self._started = True
            self.progress.start()
        self.progress.update(self._task, completed=completed, status=status)

    def stop(self) -> None:
        """Stop the bar if it was started."""
        if self._started:
            self.progress.stop()


def _play(
    target: Target,
    agent: str,
    *,
    seed: int | None,
    agent_seed: int,
    budget: float | None,
    max_turns: int | None,
    stop_at_game_over: bool,
    mode: str | None,
    worker: bool | None,
    options: AgentOptions,
    quiet: bool,
) -> RunRecord:

    choice = parse_agent(agent, target, seed=agent_seed, options=options)
    return _play_choice(
        target,
        choice,
        seed=seed,
        budget=budget,
        max_turns=max_turns,
        stop_at_game_over=stop_at_game_over,
        mode=mode,
        worker=worker,
        quiet=quiet,
    )


def _play_choice(
    target: Target,
    choice: AgentChoice,
    *,
    seed: int | None,
    budget: float | None,
    max_turns: int | None,
    stop_at_game_over: bool,
    mode: str | None,
    worker: bool | None,
    quiet: bool,
    settings: RunSettings | None = None,
    recorder: Recorder | None = None,
) -> RunRecord:
    import asyncio

    turns = turn_limit(choice, max_turns)
    bar = LazyBar(turn_progress(quiet), target.name, turns)
    try:

        def on_turn(report: TurnReport) -> None:
            status = f"{progress_score(report)}, ${report.spent_usd:.4f}"
            if report.new_milestones:
                status += f"  +{', '.join(report.new_milestones)}"
            bar.update(report.turn, status)

        return asyncio.run(
            arun(
                target,
                choice.driver,
                seed=seed,
                budget_usd=budget,
                max_turns=turns,
                stop_at_game_over=stop_at_game_over,
                mode=mode,
                worker=worker,
                on_turn=on_turn,
                settings=settings,
                recorder=recorder,
            )
        )
    finally:
        bar.stop()


@app.command()
def run(
    target: TargetName,
    agent: AgentFlag,
    seed: Seed = None,
    agent_seed: AgentSeed = 0,
    budget: Budget = None,
    max_turns: MaxTurns = None,
    stop_at_game_over: StopAtGameOver = True,
    mode: Mode = None,
    worker: Worker = None,
    cost: Cost = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    price_input: PriceInput = None,
    price_cached_input: PriceCachedInput = None,
    price_output: PriceOutput = None,
    vision: Vision = False,
    reply: Reply = ReplyMode.JSON,
    agent_timeout: AgentTimeout = None,
    contract: ContractFile = None,
    out: Out = None,
    key_dir: KeyDir = DEFAULT_KEY_DIR,
    json_output: JsonFlag = False,
    recorder_key: RecorderKey = None,
) -> None:
    """Play TARGET with an agent, sign the record and write it.

    TARGET is a packaged target (native/2048) or an ad-hoc one with --contract:
    ale:ROM, gym:ENV-ID, retro:GAME, gb:ROM-FILE or retroarch:CORE:ROM-FILE
    (recorded as uncalibrated).
    With --mode trusted-recorder, desktop:SPEC.toml plays a native program once
    and writes its signed transcript beside the record.
    With --mode platform-attested, TARGET is a receipts spec file (Steam or
    Xbox achievements and stats, read before and after the run).
    """
    # Check everything before anything is created or drawn; the key comes after the run.
    spec = None
    if mode is VerificationMode.PLATFORM_ATTESTED:
        from playproof.cli._receipts import receipts_spec_of

        spec = receipts_spec_of(target, contract=contract is not None)
    resolved = resolve_target(
        spec.play if spec is not None else target, read_contract(contract) if contract else None
    )
    options = agent_options(
        cost=cost,
        base_url=base_url,
        api_key_env=api_key_env,
        price_input=price_input,
        price_cached_input=price_cached_input,
        price_output=price_output,
        vision=vision,
        reply=reply,
        agent_timeout=agent_timeout,
    )
    choice = parse_agent(agent, resolved, seed=agent_seed, options=options)
    check_key_dir(key_dir)
    recorder = None
    if mode is VerificationMode.TRUSTED_RECORDER:
        # The transcript is written beside the record, so the record's path is fixed first.
        played = resolved.spec.reference_seed if seed is None else seed
        out = out or default_record_path(resolved.name, played)
        quiet = _wants_json(json_output)

        def announce(text: str) -> None:
            if not quiet:
                errors.print(line(text))

        recorder = recorder_for(out, key_dir, recorder_key, announce=announce)
    if spec is not None:
        from playproof.cli._receipts import play_receipts_bar

        record = play_receipts_bar(
            spec,
            resolved,
            choice,
            seed=seed,
            budget=budget,
            max_turns=max_turns,
            stop_at_game_over=stop_at_game_over,
            worker=worker,
            quiet=_wants_json(json_output),
            settings=run_settings(agent, options),
        )
    else:
        record = _play_choice(
            resolved,
            choice,
            seed=seed,
            budget=budget,
            max_turns=max_turns,
            stop_at_game_over=stop_at_game_over,
            mode=mode,
            worker=worker,
            quiet=_wants_json(json_output),
            settings=run_settings(agent, options),
            recorder=recorder,
        )
    key = signing_key(key_dir, quiet=_wants_json(json_output))
    name = spec.name if spec is not None else resolved.name
    path = write_document(
        out or default_record_path(name, record.seed), sign_record(record, key).to_json()
    )
    if _wants_json(json_output):
        _emit({"record": str(path), **_record_summary(record)})
    else:
        _print_record(record, key.key_id, signature_checked=True)
        console.print(line("signed record written to ", styled(str(path), "bold")))


def signing_key(key_dir: Path, *, quiet: bool) -> SigningKey:
    """The signing key in ``key_dir``, created (and announced unless ``quiet``) when missing."""
    key, created = ensure_signing_key(key_dir)
    if created and not quiet:
        errors.print(line(f"created a signing key in {key_dir} (key id {key.key_id[:16]}...)"))
    return key


def progress_score(report: TurnReport) -> str:
    """The score so far, short enough for a progress bar (``3/7 milestones``)."""
    score = report.score
    if not score.identity_total:
        return f"{score.earned}/{score.earnable} milestones"
    return (
        f"{score.earned}/{score.earnable} earnable, "
        f"{score.identity_reached}/{score.identity_total} identity"
    )


def _provenance_text(record: RunRecord) -> str:
    """Libraries, ROMs and source checkout in one line (``none recorded`` for old records)."""
    found = record.provenance
    parts = [f"{name} {version}" for name, version in sorted(found.libraries.items())]
    parts += [f"ROM {name} {digest[:12]}..." for name, digest in sorted((found.roms or {}).items())]
    if found.source is not None:
        state = "dirty" if found.source.dirty else "clean"
        parts.append(f"playproof {found.playproof} at {found.source.commit[:12]} ({state})")
    else:
        parts.append(f"playproof {found.playproof}")
    return ", ".join(parts)


def _record_summary(record: RunRecord) -> dict[str, Any]:
    pin = record.target
    return {
        "target": pin.name or pin.game_id,
        "target_label": pin.label,
        "calibrated": pin.calibrated,
        **record.score.to_json(),
        "identity_claimed": list(record.identity_claimed)
        if record.identity_claimed is not None
        else None,
        "provenance": record.provenance.model_dump(mode="json", exclude={"driver"}),
        "actor": actor_label(record.actor.kind, record.actor.id),
        "seed": record.seed,
        "turns": len(record.decisions),
        "stop_reason": record.stop_reason.value,
        "claimed": [c.id for c in record.claimed],
        "milestones_total": record.milestones_total,
        "spent_usd": record.accounting.spent_usd,
        "unmeasured_decisions": record.accounting.unmeasured_decisions,
        "total_latency_ms": record.accounting.total_latency_ms,
        "chain_head": record.chain_head,
    }


def _print_record(record: RunRecord, key_id: str | None, *, signature_checked: bool) -> None:
    title = data(f"run on {record.target.label}")
    table = Table(show_header=False, title=title)
    table.add_column(style="bold")
    table.add_column()
    spent = f"${record.accounting.spent_usd:.6f}"
    if record.accounting.unmeasured_decisions:
        spent += f" (+{record.accounting.unmeasured_decisions} decisions with unmeasured cost)"
    rows = [
        ("actor", actor_label(record.actor.kind, record.actor.id)),
        ("seed", str(record.seed)),
        ("turns", f"{len(record.decisions)} of {record.limits.max_turns}"),
        ("stop", record.stop_reason.value),
        ("score (claimed)", record.score.text),
        ("milestones", ", ".join(f"{c.id}@{c.turn}" for c in record.claimed) or "none"),
        ("spent", spent),
        ("latency", f"{record.accounting.total_latency_ms:.1f} ms total"),
        ("build", record.target.build_digest[:16] + "..."),
        ("contract", record.target.contract_hash[:16] + "..."),
        ("chain head", record.chain_head[:16] + "..."),
        ("provenance", _provenance_text(record)),
    ]
    if record.target.calibrated is False:
        rows.insert(0, ("calibrated", "no (ad-hoc target or user contract; not comparable)"))
    if key_id is not None:
        note = "" if signature_checked else " (not checked: run playproof verify)"
        rows.append(("signed by", key_id[:16] + "..." + note))
    for name, value in rows:
        row(table, name, value)
    console.print(table)


def _print_report(report: VerificationReport) -> None:
    where = f" of {report.target}" if report.target else ""
    table = Table(title=data(f"verification{where}: {report.verdict}"))
    table.add_column("check")
    table.add_column("result")
    table.add_column("reason")
    for check in report.checks:
        mark = styled("pass", "green") if check.passed else styled("FAIL", "red")
        row(table, check.id, mark, check.reason)
    console.print(table)
    console.print(_replay_summary(report))
    if report.trust is not None:
        console.print(line(styled("trust: ", "bold"), report.trust))
    for warning in report.warnings:
        console.print(line(styled("warning: ", "yellow"), warning))
    if report.library_differences and not report.warnings:
        named = "; ".join(d.text for d in report.library_differences)
        console.print(line("note: library versions differ from the recorder's: ", named))


def _report_json(report: VerificationReport) -> dict[str, Any]:
    """The report's JSON plus the recomputed score (text and numbers)."""
    score = report.score
    numbers: dict[str, Any] = {"score": None, "earned": None, "earnable": None}
    if score is not None:
        numbers = {"score": score.text, "earned": score.earned, "earnable": score.earnable}
    return {**report.model_dump(mode="json"), **numbers}


def _replay_summary(report: VerificationReport) -> Text:
    """What replay showed, in words (a record rejected before replay says why)."""
    if report.milestones_total is None:
        failed = next((c for c in report.checks if not c.passed), None)
        why = f"{failed.id}: {failed.reason}" if failed is not None else "no check ran"
        return line(
            "verified by replay: ", styled("none", "bold"), f" (rejected before replay: {why})"
        )
    score = report.score
    shown = score.text if score is not None else f"{len(report.verified)} of ?"
    return line(
        "verified by replay: " if report.trust is None else "verified: ",
        styled(shown, "bold"),
        f" ({', '.join(report.verified) or 'none'})",
    )


KEY_HINT = (
    "name the signer's public key with --key FILE.pub.pem, or put it in the key folder "
    "{key_dir} as signing.pub.pem (choose the folder with --key-dir)"
)
"""How to say which key to trust, shown when the signer is not trusted."""


def _untrusted_signer(report: VerificationReport) -> bool:
    return any(
        c.id == "signature-valid"
        and not c.passed
        and ("no trusted key" in c.reason or "is not trusted" in c.reason)
        for c in report.checks
    )


@app.command()
def verify(
    records: Annotated[
        list[Path],
        typer.Argument(
            metavar="RECORD...",
            help="Signed record (DSSE envelope JSON); several, or folders of them, for a batch.",
        ),
    ],
    key: Annotated[
        list[Path] | None, typer.Option("--key", "-k", help="Trusted public key file (repeatable).")
    ] = None,
    target: Annotated[
        str | None, typer.Option(help="Target to replay on (default: the record's).")
    ] = None,
    unsigned: Annotated[
        bool,
        typer.Option("--unsigned", help="The file is a bare record: replay only, no signature."),
    ] = False,
    worker: Annotated[
        bool | None, typer.Option("--worker/--in-process", help="Replay in a child process.")
    ] = None,
    contract: ContractFile = None,
    key_dir: KeyDir = DEFAULT_KEY_DIR,
    executor: Executor = ExecutorName.LOCAL,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", min=1, help="Batch: records at once (default: every core)."),
    ] = None,
    ray_address: RayAddress = None,
    json_output: JsonFlag = False,
    cross: Annotated[
        str | None,
        typer.Option(
            "--cross",
            metavar="EMULATOR",
            help="Also replay the inputs on another emulator (pyboy, retroarch): "
            "agreement per channel.",
        ),
    ] = None,
    transcript: Annotated[
        Path | None,
        typer.Option(
            help="trusted-recorder: the signed transcript (default: RECORD.transcript.json "
            "beside the record)."
        ),
    ] = None,
) -> None:
    """Check the signature and replay the record; exit 0 only when clean.

    A record played on an ad-hoc target needs --contract; a gb: record is
    replayed on the ROM file it names, or on --target gb:FILE, whose SHA-256
    must be the recorded one. A trusted-recorder record is not replayed: it
    is checked against its signed transcript (--transcript), whose recorder
    key must be trusted (--key). Several records, or a folder of them, are a
    batch: each is verified as one task on --executor (a trusted-recorder
    record against the NAME.transcript.json beside it; --contract for every
    record), with a summary; exit 0 only when every one is clean.
    """
    if len(records) > 1 or records[0].is_dir():
        if target is not None or cross is not None or transcript:
            raise RunError(
                "--target, --cross and --transcript name one record's game; verify it alone "
                "(in a batch each record's transcript is the NAME.transcript.json beside it)"
            )
        _verify_batch(
            records,
            trusted_keys(key or [], key_dir),
            contract=read_contract(contract) if contract else None,
            unsigned=unsigned,
            executor=executor,
            jobs=jobs,
            address=ray_address,
            json_output=json_output,
        )
        return
    if executor != ExecutorName.LOCAL or ray_address is not None or jobs is not None:
        raise RunError("--executor, --jobs and --ray-address apply to a batch of records")
    record = records[0]
    pinned = read_contract(contract) if contract else None
    data = read_document(record)
    recorded = read_transcript(record, transcript)
    if unsigned:
        # The bytes go to the verifier, which reads them strictly (bounded, no
        # repeated keys, no coercion) and reports any problem as a check.
        report = verify_record(
            data,
            target=target,
            worker=worker,
            contract=pinned,
            transcript=recorded,
            recorder_keys=trusted_keys(key or [], key_dir) if recorded is not None else (),
        )
    else:
        report = verify_signed(
            data,
            trusted_keys(key or [], key_dir),
            target=target,
            worker=worker,
            contract=pinned,
            transcript=recorded,
        )
    crossed = None
    if cross is not None and report.clean:
        from playproof.exec._cross import cross_of_document  # local: launches emulators

        keys = None if unsigned else trusted_keys(key or [], key_dir)
        crossed = cross_of_document(data, cross, keys, contract=pinned)
    if _wants_json(json_output):
        shown = _report_json(report)
        if crossed is not None:
            shown["cross"] = crossed.as_json()
        _emit(shown)
    else:
        _print_report(report)
        if _untrusted_signer(report):
            console.print(line("hint: ", KEY_HINT.format(key_dir=key_dir)))
        if crossed is not None:
            from playproof.exec._cross import cross_lines

            for text in cross_lines(crossed):
                console.print(text, markup=False, highlight=False)
    if not report.clean or (crossed is not None and not crossed.agrees):
        raise typer.Exit(EXIT_REJECTED)


def _batch_row(verdict: BatchVerdict) -> dict[str, Any]:
    report = verdict.report
    score = report.score
    return {
        "file": str(verdict.path),
        "verdict": report.verdict,
        "clean": report.clean,
        "score": score.text if score is not None else None,
        "reasons": [f"{c.id}: {c.reason}" for c in report.failed()],
    }


def _verify_batch(
    records: list[Path],
    keys: list[Any],
    *,
    contract: Contract | None = None,
    unsigned: bool,
    executor: str,
    jobs: int | None,
    address: str | None,
    json_output: bool,
) -> None:
    """Verify many records on an executor; print one line each and a summary."""
    quiet = _wants_json(json_output)
    records = record_files(records)  # a batch with nothing to verify fails before any bar
    retried: list[str] = []

    def on_retry(message: str) -> None:
        retried.append(message)
        say_retried(message)

    progress = progress_bar(quiet, transient=True, status=False)
    task = progress.add_task("verifying records", total=None)
    with progress:
        verdicts = verify_many(
            records,
            keys,
            executor=executor,
            jobs=jobs,
            address=address,
            unsigned=unsigned,
            contract=contract,
            progress=lambda done, total: progress.update(task, completed=done, total=total),
            on_retry=on_retry,
        )
    rows = [_batch_row(v) for v in verdicts]
    clean = sum(1 for r in rows if r["clean"])
    if quiet:
        _emit(
            {
                "records": rows,
                "total": len(rows),
                "clean": clean,
                "rejected": len(rows) - clean,
                "retried": len(retried),
            }
        )
    else:
        table = Table(title=data(f"verification of {len(rows)} records"))
        for column in ("record", "verdict", "score", "reason"):
            table.add_column(column)
        for entry in rows:
            mark = styled("clean", "green") if entry["clean"] else styled(entry["verdict"], "red")
            row(table, entry["file"], mark, entry["score"] or "-", "; ".join(entry["reasons"]))
        console.print(table)
        retries = f"; {len(retried)} tasks retried after a worker died" if retried else ""
        console.print(line(styled(f"{clean} of {len(rows)}", "bold"), f" records clean{retries}"))
    if clean < len(rows):
        raise typer.Exit(EXIT_REJECTED)


@app.command()
def show(
    record: Annotated[Path, typer.Argument(help="Signed record (or a bare record).")],
    json_output: JsonFlag = False,
) -> None:
    """Print a readable summary of a record (the signature is not checked here)."""
    data = read_document(record)
    key_id: str | None = None
    try:
        envelope = parse_envelope(data)
        statement = parse_json(envelope.payload_bytes(), limit=MAX_ENVELOPE_BYTES, what="payload")
        raw = statement.get("predicate") if isinstance(statement, dict) else None
        key_id = envelope.signatures[0].keyid
    except FormatError:
        raw = parse_json(data, limit=MAX_ENVELOPE_BYTES, what=str(record))
    try:
        parsed = parse_run_record(raw)
    except FormatError as exc:
        raise FormatError(f"{record} does not hold a playproof run record: {exc}") from exc
    if _wants_json(json_output):
        _emit({**_record_summary(parsed), "key_id": key_id})
    else:
        _print_record(parsed, key_id, signature_checked=False)


def _usage_message(exc: Exception) -> str | None:
    """The one-line message of a command-line parser error, or None if ``exc`` is not one.

    Recognised by shape (``format_message`` and an integer ``exit_code``), not by
    class: typer raises its own copy of click's exceptions, older typers raise
    click's, and the CLI must work without click installed.
    """
    format_message = getattr(exc, "format_message", None)
    if not callable(format_message) or not isinstance(getattr(exc, "exit_code", None), int):
        return None
    context = getattr(exc, "ctx", None)
    path = getattr(context, "command_path", None) or "playproof"
    return f"{format_message()} (see: {path} --help)"


def main() -> None:
    """Entry point: run the app; every error is one line on stderr (``--debug``: traceback)."""
    debug = "--debug" in sys.argv
    try:
        outcome = app(prog_name="playproof", standalone_mode=False)
    except typer.Exit as done:
        raise SystemExit(done.exit_code) from None
    except PlayproofError as exc:
        if debug:
            raise
        say_error("error", f"{type(exc).__name__}: {exc}")
        raise SystemExit(EXIT_ERROR) from None
    except (KeyboardInterrupt, typer.Abort):
        say_error("interrupted", "the command stopped before it finished")
        raise SystemExit(130) from None
    except Exception as exc:  # command-line usage errors and the unexpected
        if debug:
            raise
        if isinstance(exc, OSError) and exc.filename is not None:
            # A path given that cannot be used (a file where a folder goes, no permission).
            say_error("error", f"cannot use {exc.filename}: {exc.strerror or exc}")
            raise SystemExit(EXIT_ERROR) from None
        if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group: its help is the answer
            errors.print(data(str(exc)), soft_wrap=True)
            raise SystemExit(EXIT_USAGE) from None
        usage = _usage_message(exc)
        if usage is not None:
            say_error("usage error", usage)
            code = getattr(exc, "exit_code", EXIT_ERROR)
            raise SystemExit(EXIT_USAGE if code == EXIT_USAGE else EXIT_ERROR) from None
        say_error("internal error", f"{type(exc).__name__}: {exc} (rerun with --debug)")
        raise SystemExit(EXIT_ERROR) from None
    # Without standalone mode, click returns the code a command exited with.
    raise SystemExit(outcome if isinstance(outcome, int) else 0)
