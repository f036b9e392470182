"""The ``playproof campaign`` command: a long run in segments, saved to a ledger, resumable.

Importing this module registers the command on :data:`playproof.cli._app.app`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import Progress

from playproof._api import acampaign, resolve_target
from playproof.cli._agents import parse_agent
from playproof.cli._app import (
    KeyDir,
    _emit,
    _print_record,
    _record_summary,
    _wants_json,
    app,
    console,
    errors,
    turn_limit,
    turn_progress,
)
from playproof.cli._files import DEFAULT_KEY_DIR, default_record_path, ensure_signing_key
from playproof.cli._files import write_document as _write_document
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
from playproof.engine import (
    Analysis,
    Analyst,
    CampaignResult,
    SegmentReport,
    Steer,
    TurnReport,
    load_ledger,
)
from playproof.errors import HookError, TargetError
from playproof.sign import sign_record

__all__ = ["MAX_STEER_FILE_BYTES", "SteerFile", "campaign"]

MAX_STEER_FILE_BYTES = 64 * 1024
"""The most of a steering file read (longer notes are refused by the guidance bound anyway)."""
STOP_WORD = "STOP"
"""A steering file whose first non-blank line is this word stops the campaign."""


class SteerFile:
    """A steering hook over a text file a person edits between segments.

    Only an edit counts as a note: the file's text is compared with the last
    note taken (kept in the ledger), so an unchanged file never re-asserts
    itself over the analyst. A blank file clears the guidance; a first line of
    ``STOP`` stops the campaign; a missing file leaves no note.
    """

    def __init__(self, path: Path, last_note: str | None) -> None:
        self.path = path
        self.last_note = last_note

    def __call__(self, report: SegmentReport) -> Steer | None:
        """The note left since the last segment, if the file changed."""
        try:
            with self.path.open("rb") as handle:
                data = handle.read(MAX_STEER_FILE_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise HookError(f"cannot read the steering file {self.path}: {exc.strerror}") from exc
        if len(data) > MAX_STEER_FILE_BYTES:
            raise HookError(f"{self.path} is over {MAX_STEER_FILE_BYTES} bytes")
        text = data.decode("utf-8", errors="replace").strip()
        if text == self.last_note:
            return None
        self.last_note = text
        first = text.splitlines()[0].strip() if text else ""
        return Steer(note=text, stop=first.upper() == STOP_WORD)


def _load_analyst(spec: str) -> Analyst:
    module_name, _, attr = spec.removeprefix("python:").partition(":")
    if not module_name or not attr:
        raise TargetError(f"--analyst must look like python:MODULE:FUNCTION, not {spec}")
    try:
        hook: Analyst = getattr(import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise TargetError(f"cannot load analyst {spec}: {exc}") from exc
    return hook


def _last_note(ledger: Path) -> tuple[str | None, int]:
    """The last steering note a saved ledger holds and its turn count (None, 0 when new)."""
    if not ledger.exists():
        return None, 0
    saved = load_ledger(ledger)
    note = saved.steering[-1].steer.note.strip() if saved.steering else None
    return note, len(saved.decisions)


def _status(spent: float, budget: float | None, verified: int, total: int) -> str:
    money = f"${spent:.4f}" + (f" of ${budget:.4f}" if budget is not None else "")
    return f"{verified}/{total} milestones, {money}"


def _watch(
    progress: Progress, task: Any, budget: float | None, analyst: Analyst | None
) -> tuple[Callable[[TurnReport], None], Callable[[SegmentReport], None], Analyst | None]:
    """Display callbacks: per turn, per segment, and an analyst wrapper showing summaries."""
    shown = {"summary": ""}

    def on_turn(report: TurnReport) -> None:
        status = _status(report.spent_usd, budget, report.verified, report.milestones_total)
        for milestone in report.new_milestones:
            progress.console.print(
                f"  milestone [bold]{milestone}[/] verified at turn {report.turn}"
            )
        if shown["summary"]:
            status += f"  analyst: {shown['summary']}"
        progress.update(task, completed=report.turn, status=status)

    def on_segment(report: SegmentReport) -> None:
        state = report.stop_reason.value if report.stop_reason else report.status.value
        progress.console.print(
            f"segment {report.segment}: turns {report.first_turn}-{report.last_turn} "
            f"({state}), score {report.score}, ${report.spent_usd:.4f} spent; ledger saved"
        )

    if analyst is None:
        return on_turn, on_segment, None
    inner = analyst

    async def watched(report: SegmentReport) -> Any:
        answer = inner(report)
        if asyncio.iscoroutine(answer) or isinstance(answer, asyncio.Future):
            answer = await answer
        summary = answer.summary if isinstance(answer, Analysis) else ""
        if isinstance(answer, dict):
            summary = str(answer.get("summary", ""))
        shown["summary"] = escape(summary.splitlines()[0][:80]) if summary else ""
        progress.console.print(f"  analyst after segment {report.segment}: {shown['summary']}")
        return answer

    return on_turn, on_segment, watched


@app.command()
def campaign(
    target: TargetName,
    agent: AgentFlag,
    segment_turns: Annotated[int, typer.Option(help="Turns per segment.", min=1)],
    ledger: Annotated[
        Path, typer.Option(help="Ledger file (saved after every segment; resumed when it exists).")
    ],
    steer_file: Annotated[
        Path | None, typer.Option(help="A text file you may edit between segments to steer.")
    ] = None,
    analyst: Annotated[
        str | None, typer.Option(help="Analyst hook, python:MODULE:FUNCTION.")
    ] = None,
    segments: Annotated[
        int | None, typer.Option(help="Play at most this many segments now, then pause.", min=0)
    ] = None,
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
    json_output: Annotated[
        bool, typer.Option("--json", help="Print machine-readable JSON.")
    ] = False,
) -> None:
    """Play TARGET in segments, saving LEDGER after each; rerun to resume. Signs when finished."""
    resolved = resolve_target(target)
    quiet = _wants_json(json_output)
    choice = parse_agent(
        agent,
        resolved,
        seed=agent_seed,
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
    )
    turns = turn_limit(choice, max_turns)
    last_note, done = _last_note(ledger)
    steering = SteerFile(steer_file, last_note) if steer_file is not None else None
    with turn_progress(quiet) as progress:
        task = progress.add_task(resolved.name, total=turns, completed=done, status="")
        if done:
            progress.console.print(f"resuming from {ledger} ({done} decisions)")
        on_turn, on_segment, hook = _watch(
            progress, task, budget, _load_analyst(analyst) if analyst else None
        )
        result = asyncio.run(
            acampaign(
                resolved,
                choice.driver,
                segment_turns=segment_turns,
                ledger=ledger,
                seed=seed,
                budget_usd=budget,
                max_turns=turns,
                stop_at_game_over=stop_at_game_over,
                mode=mode,
                worker=worker,
                analyst=hook,
                steering=steering,
                segments=segments,
                on_turn=on_turn,
                on_segment=on_segment,
            )
        )
    _finish(result, ledger, out, key_dir, quiet)


def _finish(
    result: CampaignResult, ledger: Path, out: Path | None, key_dir: Path, quiet: bool
) -> None:
    saved = result.ledger
    info: dict[str, Any] = {
        "status": result.status,
        "ledger": str(ledger),
        "turns": len(saved.decisions),
        "segments": len(saved.segments),
        "spent_usd": saved.spent_usd,
        "verified": [c.id for c in saved.verified],
        "chain_head": saved.chain_head,
    }
    record = result.record
    if record is None:
        if quiet:
            _emit(info)
        else:
            console.print(
                f"campaign {result.status} after {len(saved.decisions)} decisions; ledger saved "
                f"to [bold]{ledger}[/]; run the same command to resume"
            )
        return
    key, created = ensure_signing_key(key_dir)
    if created and not quiet:
        errors.print(f"created a signing key in {key_dir} (key id {key.key_id[:16]}...)")
    path = _write_document(
        out or default_record_path(record.target.name or record.target.game_id, record.seed),
        sign_record(record, key).to_json(),
    )
    if quiet:
        _emit({**info, "record": str(path), "score": record.score, **_record_summary(record)})
    else:
        _print_record(record, key.key_id, signature_checked=True)
        console.print(f"signed record written to [bold]{path}[/]")
