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
from rich.text import Text

from playproof._api import acampaign, resolve_target
from playproof._bounded import read_bounded
from playproof.cli._agents import parse_agent, run_settings
from playproof.cli._app import (
    KeyDir,
    LazyBar,
    _emit,
    _print_record,
    _record_summary,
    _wants_json,
    app,
    progress_score,
    signing_key,
    turn_limit,
    turn_progress,
)
from playproof.cli._files import DEFAULT_KEY_DIR, check_key_dir, default_record_path
from playproof.cli._files import write_document as _write_document
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
    Reply,
    ReplyMode,
    Seed,
    StopAtGameOver,
    TargetName,
    Vision,
    Worker,
    agent_options,
)
from playproof.cli._output import console, line, styled
from playproof.engine import (
    Analysis,
    Analyst,
    CampaignResult,
    Ledger,
    SegmentReport,
    Steer,
    TurnReport,
    load_ledger,
)
from playproof.errors import HookError, TargetError
from playproof.sign import SigningKey, VerifyingKey, sign_record
from playproof.targets import read_contract

__all__ = ["GUARD_FOLDER", "MAX_STEER_FILE_BYTES", "SteerFile", "campaign"]

GUARD_FOLDER = "campaigns"
"""The folder in ``--key-dir`` where each campaign's last save is noted (the rollback guard)."""

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
        if not self.path.exists():
            return None
        data = read_bounded(self.path, MAX_STEER_FILE_BYTES, "steering file", HookError)
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


def _last_note(ledger: Path, key: VerifyingKey) -> tuple[str | None, Ledger | None]:
    """The last steering note a saved ledger holds and the ledger (None, None when new).

    The ledger is read once, here: the campaign resumes from it and checks it
    against itself, the run and replay.
    """
    if not ledger.exists():
        return None, None
    saved = load_ledger(ledger, key, consistent=False)
    note = saved.steering[-1].steer.note.strip() if saved.steering else None
    return note, saved


def _status(spent: float, budget: float | None, report: TurnReport) -> str:
    money = f"${spent:.4f}" + (f" of ${budget:.4f}" if budget is not None else "")
    return f"{progress_score(report)}, {money}"


def _watch(
    bar: LazyBar,
    quiet: bool,
    budget: float | None,
    analyst: Analyst | None,
    first: Text | None = None,
) -> tuple[Callable[[TurnReport], None], Callable[[SegmentReport], None], Analyst | None]:
    """Display callbacks: per turn, per segment, and an analyst wrapper showing summaries.

    Notes go to stderr beside the bar; with ``quiet`` (``--json``) nothing is shown.
    ``first`` is noted at the first turn, once the campaign has checked its ledger.
    """
    shown = {"summary": ""}
    pending = [first] if first is not None else []

    def note(text: Text) -> None:
        if not quiet:
            bar.progress.console.print(text)

    def on_turn(report: TurnReport) -> None:
        while pending:
            note(pending.pop())
        status = _status(report.spent_usd, budget, report)
        for milestone in report.new_milestones:
            turn = f" verified at turn {report.turn}"
            note(line("  milestone ", styled(milestone, "bold"), turn))
        if shown["summary"]:
            status += f"  analyst: {shown['summary']}"
        bar.update(report.turn, status)

    def on_segment(report: SegmentReport) -> None:
        state = report.stop_reason.value if report.stop_reason else report.status.value
        note(
            line(
                f"segment {report.segment}: turns {report.first_turn}-{report.last_turn} "
                f"({state}), score {report.score}, ${report.spent_usd:.4f} spent; ledger saved"
            )
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
        shown["summary"] = summary.strip().splitlines()[0][:80] if summary.strip() else ""
        note(line(f"  analyst after segment {report.segment}: {shown['summary']}"))
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
    reply: Reply = ReplyMode.JSON,
    agent_timeout: AgentTimeout = None,
    contract: ContractFile = None,
    out: Out = None,
    key_dir: KeyDir = DEFAULT_KEY_DIR,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print machine-readable JSON.")
    ] = False,
) -> None:
    """Play TARGET in segments, signing and saving LEDGER after each; rerun to resume."""
    # Check the command line (agent, analyst) before the key is made or anything is drawn.
    resolved = resolve_target(target, read_contract(contract) if contract else None)
    quiet = _wants_json(json_output)
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
    turns = turn_limit(choice, max_turns)
    analyst_hook = _load_analyst(analyst) if analyst else None
    check_key_dir(key_dir)
    # The key that signs the record also signs every save of the ledger.
    key = signing_key(key_dir, quiet=quiet)
    last_note, saved = _last_note(ledger, key.verifying_key)
    done = len(saved.decisions) if saved is not None else 0
    steering = SteerFile(steer_file, last_note) if steer_file is not None else None
    resuming = line(f"resuming from {ledger} ({done} decisions)") if done else None
    # The bar is drawn at the first turn: a ledger or mode error comes before it.
    bar = LazyBar(turn_progress(quiet), resolved.name, turns, completed=done)
    try:
        on_turn, on_segment, hook = _watch(bar, quiet, budget, analyst_hook, resuming)
        result = asyncio.run(
            acampaign(
                resolved,
                choice.driver,
                segment_turns=segment_turns,
                ledger=ledger,
                ledger_key=key,
                seed=seed,
                budget_usd=budget,
                max_turns=turns,
                stop_at_game_over=stop_at_game_over,
                mode=mode,
                worker=worker,
                analyst=hook,
                steering=steering,
                segments=segments,
                saved=saved,
                on_turn=on_turn,
                on_segment=on_segment,
                settings=run_settings(agent, options),
                guard=key_dir / GUARD_FOLDER,
            )
        )
    finally:
        bar.stop()
    _finish(result, ledger, out, key, quiet)


def _finish(
    result: CampaignResult, ledger: Path, out: Path | None, key: SigningKey, quiet: bool
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
                line(
                    f"campaign {result.status} after {len(saved.decisions)} decisions; "
                    "ledger saved to ",
                    styled(str(ledger), "bold"),
                    "; run the same command to resume",
                )
            )
        return
    path = _write_document(
        out or default_record_path(record.target.name or record.target.game_id, record.seed),
        sign_record(record, key).to_json(),
    )
    if quiet:
        _emit({**info, "record": str(path), **_record_summary(record)})
    else:
        _print_record(record, key.key_id, signature_checked=True)
        console.print(line("signed record written to ", styled(str(path), "bold")))
