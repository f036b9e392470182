"""``playproof calibrate | discover | explore | derive``: trustworthy scores from the command line.

Importing this module registers the four commands on :data:`playproof.cli._app.app`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.table import Table

from playproof._bounded import read_bounded
from playproof.cli._app import (
    EXIT_REJECTED,
    Executor,
    ExecutorName,
    JsonFlag,
    RayAddress,
    _emit,
    _wants_json,
    app,
    say_retried,
)
from playproof.cli._files import write_document
from playproof.cli._output import console, data, errors, line, progress_bar, row, styled
from playproof.core.baselines import baseline_inputs
from playproof.core.canonical import parse_json
from playproof.errors import FormatError, TargetError
from playproof.exec import (
    GameSpec,
    calibrate_target,
    resolve_target,
    write_calibration,
)
from playproof.exec._ram import memory_access
from playproof.targets import read_input_script
from playproof.verify import (
    DEFAULT_WALKS,
    CalibrationReport,
    MarkSet,
    derive_contract,
    discover,
    explore,
)

__all__ = [
    "MAX_MARKS_BYTES",
    "ExecutorName",
    "calibrate",
    "derive",
    "discover_rom",
    "explore_target",
]

MAX_MARKS_BYTES = 1 << 20
"""The largest marks document ``derive`` reads."""

Workers = Annotated[
    int | None, typer.Option("--workers", "-j", help="Pool processes (default: every core).")
]

Out = Annotated[Path | None, typer.Option("--out", "-o", help="Write the JSON document here.")]


@contextmanager
def _progress(label: str, quiet: bool) -> Iterator[Callable[[int, int], None]]:
    # Drawn at the first report, so an error raised before any work starts comes alone.
    bar = progress_bar(quiet, status=False)
    task = bar.add_task(label, total=None)
    started = False

    def update(done: int, total: int) -> None:
        nonlocal started
        if not started:
            started = True
            bar.start()
        bar.update(task, completed=done, total=total)

    try:
        yield update
    finally:
        if started:
            bar.stop()


def _print_calibration(name: str, report: CalibrationReport) -> None:
    table = Table(title=data(f"{name}: calibration (seed {report.seed}, {report.length} inputs)"))
    for column in ("milestone", "kind", "reference", "earned by", "verdict"):
        table.add_column(column)
    for milestone in report.milestones:
        kind = (
            milestone.kind
            + (" (opaque)" if not milestone.legible else "")
            + (" attrition" * milestone.attrition)
        )
        turn = "-" if milestone.reference_turn is None else f"turn {milestone.reference_turn}"
        earned = ", ".join(milestone.earned_by) or "-"
        row(table, milestone.id, kind, turn, earned, milestone.verdict)
    console.print(table)
    for sweep in report.sweeps:
        console.print(
            line(
                f"sweep {sweep.milestone}: {sweep.reached}/{sweep.probes} substitutions still "
                f"reach it ({sweep.probe_turns} inputs replayed)"
            )
        )
    verdict = styled("gate passes", "green") if report.passed else styled("gate fails", "red")
    console.print(line(verdict, f": {report.message}"))


@app.command()
def calibrate(
    target: Annotated[str, typer.Argument(help="Target name, e.g. ale/breakout.")],
    workers: Workers = None,
    executor: Executor = ExecutorName.LOCAL,
    ray_address: RayAddress = None,
    baseline_seed: Annotated[int, typer.Option(help="Seed of the random-walk baselines.")] = 0,
    walks: Annotated[int, typer.Option(help="Seeded random walks.")] = DEFAULT_WALKS,
    write: Annotated[
        bool, typer.Option("--write", help="Store calibration.json next to the packaged contract.")
    ] = False,
    out: Out = None,
    json_output: JsonFlag = False,
) -> None:
    """Replay the reference and every trivial baseline; exit 1 when the gate fails."""
    resolved = resolve_target(target)
    quiet = _wants_json(json_output)
    with _progress(f"calibrating {target}", quiet) as progress:
        report = calibrate_target(
            resolved,
            executor=executor,
            workers=workers,
            progress=progress,
            baseline_seed=baseline_seed,
            walks=walks,
            address=ray_address,
            on_retry=say_retried,
        )
    if write:
        errors.print(line(f"wrote {write_calibration(resolved, report)}"))
    if out is not None:
        write_document(out, report.to_json())
    if quiet:
        _emit(report.to_json())
    else:
        _print_calibration(target, report)
    if not report.passed:
        raise typer.Exit(EXIT_REJECTED)


def _discovery_spec(rom: str) -> GameSpec:
    """ROM forms: a target name, ``ale:<rom id>``, ``pyboy:pp-collect`` or a Game Boy ROM file."""
    if rom.startswith("ale:"):
        return GameSpec(factory="playproof.adapters.ale:make_game", options={"rom": rom[4:]})
    if rom.startswith("pyboy:"):
        return GameSpec(factory="playproof.adapters.pyboy:make_game", options={"rom": rom[6:]})
    if Path(rom).suffix.lower() in (".gb", ".gbc") and Path(rom).is_file():
        options = {"rom_path": str(Path(rom).resolve())}
        return GameSpec(factory="playproof.adapters.pyboy:make_game", options=options)
    if "/" in rom and not Path(rom).exists():
        resolved = resolve_target(rom)
        return GameSpec(factory=resolved.spec.factory, options=resolved.spec.options)
    raise TargetError(f"{rom!r} is not a target, ale:<rom>, pyboy:<rom> or a .gb/.gbc file")


@app.command("discover")
def discover_rom(
    rom: Annotated[str, typer.Argument(help="ale:<rom>, pyboy:<rom>, a .gb file or a target.")],
    length: Annotated[int, typer.Option(help="Inputs per exploration episode.")] = 500,
    walks: Annotated[int, typer.Option(help="Seeded random-walk episodes.")] = DEFAULT_WALKS,
    seed: Annotated[int, typer.Option(help="Game seed and first walk seed.")] = 0,
    reference: Annotated[
        Path | None, typer.Option(help="An input script of good play to rank channels by.")
    ] = None,
    top: Annotated[int, typer.Option(help="Channels to print.")] = 10,
    out: Out = None,
    json_output: JsonFlag = False,
) -> None:
    """Find progression channels in emulator RAM; the document is pinned to the ROM digest."""
    game = _discovery_spec(rom).open()
    try:
        read, rom_sha256, family = memory_access(game)
        vocabulary = game.descriptor.vocabulary
        episodes = [baseline_inputs(f"constant:{w}", vocabulary, length) for w in vocabulary]
        episodes += [
            baseline_inputs("random-walk", vocabulary, length, seed=seed + i) for i in range(walks)
        ]
        script = read_input_script(reference) if reference is not None else None
        report = discover(
            game,
            read,
            platform=family,
            rom_sha256=rom_sha256,
            episodes=episodes,
            reference=script,
            seed=seed,
        )
    finally:
        game.close()
    document = report.model_dump(mode="json", by_alias=True)
    if out is not None:
        write_document(out, document)
    if _wants_json(json_output):
        _emit(document)
        return
    title = f"{rom}: channels (ROM {rom_sha256[:12]}, {report.snapshots} snapshots)"
    table = Table(title=data(title))
    for column in (
        "rank",
        "address",
        "bytes",
        "encoding",
        "trend",
        "changes",
        "reference",
        "others",
    ):
        table.add_column(column)
    for ch in report.channels[:top]:
        row(
            table,
            str(ch.rank),
            f"{ch.address:#06x}",
            str(ch.size),
            f"{ch.encoding} {ch.endian}" if ch.size > 1 else ch.encoding,
            ch.trend,
            str(ch.changes),
            "-" if ch.reference_final is None else str(ch.reference_final),
            str(ch.others_final),
        )
    console.print(table)


@app.command("explore")
def explore_target(
    target: Annotated[str, typer.Argument(help="Target name, e.g. native/2048.")],
    goal: Annotated[str, typer.Option(help="Milestone id to reach.")],
    beam: Annotated[int, typer.Option(help="Nodes kept per depth.")] = 8,
    max_depth: Annotated[int, typer.Option(help="Longest script searched.")] = 1000,
    seed: Annotated[int | None, typer.Option(help="Game seed (default: the target's).")] = None,
    script: Annotated[Path | None, typer.Option(help="Write the found input script here.")] = None,
    out: Out = None,
    json_output: JsonFlag = False,
) -> None:
    """Beam-search over checkpoints for an input script that verifies ``--goal``."""
    resolved = resolve_target(target)
    spec = GameSpec.of_target(resolved)
    report = explore(
        spec.open,
        resolved.contract,
        goal,
        seed=resolved.spec.reference_seed if seed is None else seed,
        beam=beam,
        max_depth=max_depth,
    )
    document = report.model_dump(mode="json", by_alias=True)
    if out is not None:
        write_document(out, document)
    if script is not None and report.found:
        script.write_text("".join(f"{word}\n" for word in report.inputs), encoding="utf-8")
    if _wants_json(json_output):
        _emit(document)
    else:
        state = "found" if report.found else "did not find"
        console.print(
            line(
                f"{state} a {len(report.inputs)}-input script for {goal} ({report.expansions} "
                f"expansions); it verifies: {', '.join(report.verified) or '-'}"
            )
        )
    if not report.found:
        raise typer.Exit(EXIT_REJECTED)


def _read_marks(path: Path) -> MarkSet:
    data = read_bounded(path, MAX_MARKS_BYTES, "marks file")
    try:
        return MarkSet.model_validate(parse_json(data, limit=MAX_MARKS_BYTES, what=path.name))
    except ValidationError as exc:
        raise FormatError(f"{path}: {exc.errors()[0]['msg']}") from exc


@app.command()
def derive(
    target: Annotated[str, typer.Argument(help="Target whose game and reference to use.")],
    marks: Annotated[Path, typer.Option(help="Marks document (playproof/marks/v1).")],
    reference: Annotated[
        Path | None, typer.Option(help="Input script (default: the target's reference).")
    ] = None,
    out: Out = None,
    json_output: JsonFlag = False,
) -> None:
    """Derive a contract from a reference plus marks; values and hashes are read off the replay."""
    resolved = resolve_target(target)
    script = read_input_script(reference) if reference is not None else resolved.reference
    contract = derive_contract(
        GameSpec.of_target(resolved).open,
        script,
        _read_marks(marks),
        seed=resolved.spec.reference_seed,
    )
    document = contract.to_json()
    if out is not None:
        write_document(out, document)
    if _wants_json(json_output) or out is None:
        _emit(document)
    else:
        console.print(line(f"derived {len(contract.milestones)} milestones into {out}"))
