"""``playproof matrix run`` and ``playproof matrix report``.

``run`` plays agents x targets x seeds x repetitions from a TOML spec into one
signed record per cell (resumable: finished cells are skipped); ``report``
verifies every record and writes report.md, report.html and report.json.

Importing this module registers them on :data:`playproof.cli._app.app`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from playproof.cli._agents import AgentOptions, parse_agent, run_settings
from playproof.cli._app import (
    EXIT_ERROR,
    Executor,
    ExecutorName,
    KeyDir,
    RayAddress,
    _emit,
    _wants_json,
    app,
    say_retried,
    signing_key,
)
from playproof.cli._files import DEFAULT_KEY_DIR, check_key_dir, trusted_keys
from playproof.cli._output import console, errors, line, progress_bar, say_error, styled
from playproof.errors import FormatError, SigningKeyError
from playproof.exec import resolve_target
from playproof.matrix import (
    AgentProfile,
    CellAgent,
    CellEvent,
    MatrixSpec,
    check_executor,
    load_spec,
    report_matrix,
    require_report_extra,
    run_matrix,
)
from playproof.targets import Target

__all__ = ["build_agent", "matrix_app"]

matrix_app = typer.Typer(
    help="Sweep agents x targets x seeds x repetitions into signed records and a report.",
    no_args_is_help=True,
)
app.add_typer(matrix_app, name="matrix")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON summary document.")]
Jobs = Annotated[
    int | None, typer.Option("--jobs", "-j", min=1, help="Processes to use (default: every core).")
]


def _options(profile: AgentProfile) -> AgentOptions:
    pricing = profile.pricing
    return AgentOptions(
        cost_usd=profile.cost_usd,
        base_url=profile.base_url,
        api_key_env=profile.api_key_env,
        price_input=pricing.input_usd_per_mtok if pricing else None,
        price_cached_input=pricing.cached_input_usd_per_mtok if pricing else None,
        price_output=pricing.output_usd_per_mtok if pricing else None,
        vision=profile.vision,
        reply=profile.reply,
        timeout_s=profile.timeout_s,
    )


def build_agent(profile: AgentProfile, target: Target, agent_seed: int) -> CellAgent:
    """The driver a profile names, exactly as ``playproof run --agent`` builds it."""
    options = _options(profile)
    choice = parse_agent(profile.agent, target, seed=agent_seed, options=options)
    return CellAgent(choice.driver, choice.max_turns, run_settings(profile.agent, options))


def _check(spec: MatrixSpec) -> None:
    """Build every target and every profile's driver once, before any cell runs."""
    for name in spec.targets:
        target = resolve_target(name)
        for profile in spec.agents:
            build_agent(profile, target, profile.agent_seed)


@matrix_app.command("run")
def run(
    spec_file: Annotated[Path, typer.Argument(metavar="SPEC", help="The matrix spec (TOML).")],
    out: Annotated[Path, typer.Option("--out", help="Folder of the signed records.")],
    jobs: Jobs = None,
    executor: Executor = ExecutorName.LOCAL,
    ray_address: RayAddress = None,
    key_dir: KeyDir = DEFAULT_KEY_DIR,
    json_output: JsonFlag = False,
) -> None:
    """Play every cell of SPEC into a signed record in --out; a rerun resumes.

    One file per cell (agent, target, seed, repetition), written atomically;
    cells whose record is there and verifies by signature are skipped.
    """
    quiet = _wants_json(json_output)
    check_executor(executor, jobs, ray_address)
    spec = load_spec(spec_file)
    _check(spec)
    check_key_dir(key_dir)
    key = signing_key(key_dir, quiet=quiet)
    progress = progress_bar(quiet, transient=False)
    task = progress.add_task(spec.name, total=len(spec.cells()), status="")

    def on_cell(event: CellEvent) -> None:
        status = f"{event.status} {event.cell.id}"
        if event.record is not None:
            status += f" ({event.record.score.text})"
        progress.update(task, completed=event.done, status=status)
        if event.status == "failed":
            progress.console.print(line(styled("failed ", "red"), event.cell.id, ": ", event.error))

    with progress:
        outcome = run_matrix(
            spec,
            out,
            key,
            build_agent,
            executor=executor,
            jobs=jobs,
            on_cell=on_cell,
            address=ray_address,
            on_retry=say_retried,
        )
    summary: dict[str, Any] = {
        "out": str(out),
        "cells": outcome.total,
        "played": outcome.played,
        "skipped": outcome.skipped,
        "failed": [{"cell": cell, "error": error} for cell, error in outcome.failed],
        "complete": outcome.complete,
        "key_id": key.key_id,
    }
    if quiet:
        _emit(summary)
    else:
        console.print(
            line(
                f"{outcome.played} played, {outcome.skipped} already recorded, "
                f"{len(outcome.failed)} failed, of {outcome.total} cells; records in ",
                styled(str(out), "bold"),
            )
        )
    if outcome.failed:
        say_error("error", f"{len(outcome.failed)} cells failed; rerun to retry them")
        raise typer.Exit(EXIT_ERROR)


@matrix_app.command("report")
def report(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="Folder of a matrix run.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Report folder (default: DIR/report).")
    ] = None,
    key: Annotated[
        list[Path] | None, typer.Option("--key", "-k", help="Trusted public key file (repeatable).")
    ] = None,
    jobs: Jobs = None,
    executor: Executor = ExecutorName.LOCAL,
    ray_address: RayAddress = None,
    replay_all: Annotated[
        bool,
        typer.Option(
            "--replay-all", help="Replay every record, ignoring verifications stored beside them."
        ),
    ] = False,
    key_dir: KeyDir = DEFAULT_KEY_DIR,
    json_output: JsonFlag = False,
) -> None:
    """Verify every record in DIR and write report.md, report.html and report.json.

    Records that do not verify are listed and left out of every score.
    """
    require_report_extra()
    check_executor(executor, jobs, ray_address)
    keys = trusted_keys(key or [], key_dir)
    if not keys:
        raise SigningKeyError(
            f"no key to check the records with: pass --key FILE.pub.pem, or --key-dir with "
            f"signing.pub.pem (looked in {key_dir})"
        )
    quiet = _wants_json(json_output)
    target = out if out is not None else folder / "report"
    if out is None and target.is_symlink():
        # Whoever handed over DIR chose where that link points: never write through it.
        raise FormatError(
            f"{target} is a link, not a folder of DIR; give the report folder as --out"
        )
    progress = progress_bar(quiet, transient=True, status=False)
    task = progress.add_task("replaying records", total=None)
    with progress:
        result, files = report_matrix(
            folder,
            target,
            keys,
            executor=executor,
            jobs=jobs,
            trust_stored=not replay_all,
            on_record=lambda done, total: progress.update(task, completed=done, total=total),
            address=ray_address,
            on_retry=say_retried,
        )
    summary = {
        "report": str(target),
        "files": [str(f) for f in files],
        "verified": len(result.cells),
        "rejected": [r.model_dump() for r in result.rejected],
        "missing": result.missing,
        "kendall_w": result.kendall_w,
    }
    if quiet:
        _emit(summary)
        return
    for rejected in result.rejected:
        errors.print(
            line(styled("rejected ", "red"), rejected.file, ": ", "; ".join(rejected.reasons))
        )
    console.print(
        line(
            f"{len(result.cells)} records verified, {len(result.rejected)} rejected, "
            f"{len(result.missing)} missing; report in ",
            styled(str(target / "report.html"), "bold"),
        )
    )
