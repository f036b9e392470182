"""The ``playproof`` command: keygen, targets, run, verify, show, demo."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from playproof._api import arun, resolve_target, verify_record, verify_signed
from playproof.cli._agents import AgentChoice, AgentOptions, parse_agent
from playproof.cli._files import (
    DEFAULT_KEY_DIR,
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
    Cost,
    MaxTurns,
    Mode,
    Out,
    PriceCachedInput,
    PriceInput,
    PriceOutput,
    Reply,
    Seed,
    StopAtGameOver,
    TargetName,
    Vision,
    Worker,
    agent_options,
)
from playproof.core.canonical import parse_json
from playproof.core.record import RunRecord
from playproof.core.report import VerificationReport
from playproof.engine import DEFAULT_MAX_TURNS, TurnReport
from playproof.errors import FormatError, PlayproofError
from playproof.sign import MAX_ENVELOPE_BYTES, SigningKey, parse_envelope, sign_record
from playproof.targets import Target, list_targets

__all__ = ["EXIT_ERROR", "EXIT_REJECTED", "app", "main"]

EXIT_REJECTED = 1
"""``verify`` found the record not clean."""
EXIT_ERROR = 3
"""Bad input or a failed run; the message says why."""

app = typer.Typer(
    name="playproof",
    help="Verifiable, cost-aware benchmarks for any agent.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
_state: dict[str, bool] = {"json": False, "debug": False}
console = Console(stderr=False)
errors = Console(stderr=True)

KeyDir = Annotated[Path, typer.Option("--key-dir", help="Folder of the signing key pair.")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


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
        console.print(f"key id [bold]{key.key_id}[/]\nprivate {private}\npublic  {public}")


@app.command()
def targets(json_output: JsonFlag = False) -> None:
    """List the registered targets."""
    found = list_targets()
    if _wants_json(json_output):
        _emit([_target_summary(t) for t in found])
        return
    table = Table(title="playproof targets")
    for column in ("target", "milestones", "reference", "isolation", "separates"):
        table.add_column(column, no_wrap=True, min_width=len(column))
    table.add_column("description", overflow="fold", ratio=1)
    for target in found:
        summary = _target_summary(target)
        table.add_row(
            target.name,
            str(summary["milestones"]),
            f"{summary['reference_inputs']} inputs",
            target.spec.isolation,
            {True: "yes", False: "no", None: "not calibrated"}[target.spec.separates],
            target.spec.description,
        )
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
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=errors,
        disable=quiet,
        transient=False,
    )


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
    import asyncio

    choice = parse_agent(agent, target, seed=agent_seed, options=options)
    turns = turn_limit(choice, max_turns)
    with turn_progress(quiet) as progress:
        task = progress.add_task(target.name, total=turns, status="")

        def on_turn(report: TurnReport) -> None:
            status = (
                f"{report.verified}/{report.milestones_total} milestones, ${report.spent_usd:.4f}"
            )
            if report.new_milestones:
                status += f"  +{', '.join(report.new_milestones)}"
            progress.update(task, completed=report.turn, status=status)

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
            )
        )


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
    reply: Reply = "json",
    agent_timeout: AgentTimeout = None,
    out: Out = None,
    key_dir: KeyDir = DEFAULT_KEY_DIR,
    json_output: JsonFlag = False,
) -> None:
    """Play TARGET with an agent, sign the record and write it."""
    resolved = resolve_target(target)
    key, created = ensure_signing_key(key_dir)
    if created and not _wants_json(json_output):
        errors.print(f"created a signing key in {key_dir} (key id {key.key_id[:16]}...)")
    record = _play(
        resolved,
        agent,
        seed=seed,
        agent_seed=agent_seed,
        budget=budget,
        max_turns=max_turns,
        stop_at_game_over=stop_at_game_over,
        mode=mode,
        worker=worker,
        options=agent_options(
            cost=cost,
            base_url=base_url,
            api_key_env=api_key_env,
            price_input=price_input,
            price_cached_input=price_cached_input,
            price_output=price_output,
            vision=vision,
            reply=reply,
            agent_timeout=agent_timeout,
        ),
        quiet=_wants_json(json_output),
    )
    path = write_document(
        out or default_record_path(resolved.name, record.seed), sign_record(record, key).to_json()
    )
    if _wants_json(json_output):
        _emit({"record": str(path), "score": record.score, **_record_summary(record)})
    else:
        _print_record(record, key.key_id, signature_checked=True)
        console.print(f"signed record written to [bold]{path}[/]")


def _record_summary(record: RunRecord) -> dict[str, Any]:
    return {
        "target": record.target.name or record.target.game_id,
        "actor": f"{record.actor.kind}:{record.actor.id}",
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
    table = Table(show_header=False, title=f"run on {record.target.name or record.target.game_id}")
    table.add_column(style="bold")
    table.add_column()
    spent = f"${record.accounting.spent_usd:.6f}"
    if record.accounting.unmeasured_decisions:
        spent += f" (+{record.accounting.unmeasured_decisions} decisions with unmeasured cost)"
    rows = [
        ("actor", f"{record.actor.kind}:{record.actor.id}"),
        ("seed", str(record.seed)),
        ("turns", f"{len(record.decisions)} of {record.limits.max_turns}"),
        ("stop", record.stop_reason.value),
        ("score (claimed)", record.score),
        ("milestones", ", ".join(f"{c.id}@{c.turn}" for c in record.claimed) or "none"),
        ("spent", spent),
        ("latency", f"{record.accounting.total_latency_ms:.1f} ms total"),
        ("build", record.target.build_digest[:16] + "..."),
        ("contract", record.target.contract_hash[:16] + "..."),
        ("chain head", record.chain_head[:16] + "..."),
    ]
    if key_id is not None:
        note = "" if signature_checked else " (not checked: run playproof verify)"
        rows.append(("signed by", key_id[:16] + "..." + note))
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)


def _print_report(report: VerificationReport) -> None:
    table = Table(title=f"verification: {report.verdict}")
    table.add_column("check")
    table.add_column("result")
    table.add_column("reason")
    for check in report.checks:
        table.add_row(check.id, "[green]pass[/]" if check.passed else "[red]FAIL[/]", check.reason)
    console.print(table)
    total = report.milestones_total if report.milestones_total is not None else "?"
    console.print(
        f"verified by replay: [bold]{len(report.verified)} of {total}[/] "
        f"({', '.join(report.verified) or 'none'})"
    )


@app.command()
def verify(
    record: Annotated[Path, typer.Argument(help="Signed record (DSSE envelope JSON).")],
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
    key_dir: KeyDir = DEFAULT_KEY_DIR,
    json_output: JsonFlag = False,
) -> None:
    """Check the signature and replay the record; exit 0 only when clean."""
    data = read_document(record)
    if unsigned:
        try:
            parsed = parse_json(data, limit=MAX_ENVELOPE_BYTES, what=str(record))
        except FormatError as exc:
            parsed = str(exc)
        report = verify_record(parsed, target=target, worker=worker)
    else:
        report = verify_signed(data, trusted_keys(key or [], key_dir), target=target, worker=worker)
    if _wants_json(json_output):
        _emit(report.model_dump(mode="json"))
    else:
        _print_report(report)
    if not report.clean:
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
        parsed = RunRecord.model_validate(raw)
    except ValueError as exc:
        raise FormatError(f"{record} does not hold a playproof run record") from exc
    if _wants_json(json_output):
        _emit({**_record_summary(parsed), "key_id": key_id})
    else:
        _print_record(parsed, key_id, signature_checked=False)


def main() -> None:
    """Entry point: run the app, turning playproof errors into one clear line."""
    debug = "--debug" in sys.argv
    try:
        outcome = app(standalone_mode=False)
    except typer.Exit as done:
        raise SystemExit(done.exit_code) from None
    except PlayproofError as exc:
        if debug:
            raise
        errors.print(f"[red]error:[/] {type(exc).__name__}: {escape(str(exc))}", highlight=False)
        raise SystemExit(EXIT_ERROR) from None
    except KeyboardInterrupt:
        errors.print("interrupted")
        raise SystemExit(130) from None
    except Exception as exc:  # click usage errors and the unexpected
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            raise SystemExit(exc.exit_code) from None
        if isinstance(exc, click.exceptions.Abort):
            raise SystemExit(130) from None
        if debug:
            raise
        errors.print(
            f"[red]internal error:[/] {type(exc).__name__}: {escape(str(exc))} (rerun with --debug)"
        )
        raise SystemExit(EXIT_ERROR) from None
    # Without standalone mode, click returns the code a command exited with.
    raise SystemExit(outcome if isinstance(outcome, int) else 0)
