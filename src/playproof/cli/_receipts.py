"""``playproof run SPEC --mode platform-attested``: a receipts target played from the command line.

SPEC is a receipts spec file (``playproof/receipts-target/v1``). The agent
plays the registered target the spec names in ``play``; the provider the
spec names is read before and after, with the user id and the credential
taken from the environment variables the spec names.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from playproof._provenance import source_checkout
from playproof.adapters.receipts import arun_receipts, credentials_from_env, read_receipts_spec
from playproof.cli._agents import AgentChoice
from playproof.core.game import VerificationMode
from playproof.core.receipts import ReceiptsSpec
from playproof.core.record import RunRecord, RunSettings
from playproof.engine import DEFAULT_HISTORY, EpisodeConfig, TurnReport
from playproof.errors import RunError
from playproof.targets import Target, target_libraries, target_roms

__all__ = ["play_receipts", "play_receipts_bar", "receipts_spec_of"]


def receipts_spec_of(target: str, *, contract: bool) -> ReceiptsSpec:
    """The receipts spec TARGET names (a file); RunError when a contract is also given."""
    if contract:
        raise RunError(
            "a receipts spec's milestones are its contract; drop --contract with "
            "--mode platform-attested"
        )
    return read_receipts_spec(Path(target))


def play_receipts(
    spec: ReceiptsSpec,
    played: Target,
    choice: AgentChoice,
    *,
    seed: int | None,
    budget: float | None,
    max_turns: int,
    stop_at_game_over: bool,
    worker: bool | None,
    settings: RunSettings,
    on_turn: Callable[[TurnReport], None] | None,
) -> RunRecord:
    """Play ``played`` under ``spec``'s receipts and return the (unsigned) record."""
    credentials = credentials_from_env(spec)  # before anything is opened or asked
    in_worker = played.spec.isolation == "worker" if worker is None else worker
    config = EpisodeConfig(
        seed=played.spec.reference_seed if seed is None else seed,
        budget_usd=budget,
        max_turns=max_turns,
        stop_at_game_over=stop_at_game_over,
        mode=VerificationMode.PLATFORM_ATTESTED,
        libraries=target_libraries(played),
        roms=target_roms(played),
        source=source_checkout(),
        settings=settings.model_copy(update={"worker": in_worker, "history": DEFAULT_HISTORY}),
    )
    game = played.open(worker=worker)
    try:
        return asyncio.run(
            arun_receipts(
                spec,
                game,
                choice.driver,
                config,
                credentials=credentials,
                on_turn=on_turn,
            )
        )
    finally:
        game.close()


def play_receipts_bar(
    spec: ReceiptsSpec,
    played: Target,
    choice: AgentChoice,
    *,
    seed: int | None,
    budget: float | None,
    max_turns: int | None,
    stop_at_game_over: bool,
    worker: bool | None,
    quiet: bool,
    settings: RunSettings,
) -> RunRecord:
    """:func:`play_receipts` with the run's progress bar, as ``playproof run`` shows it."""
    from playproof.cli._app import LazyBar, progress_score, turn_limit, turn_progress

    turns = turn_limit(choice, max_turns)
    bar = LazyBar(turn_progress(quiet), spec.name, turns)

    def on_turn(report: TurnReport) -> None:
        bar.update(report.turn, f"{progress_score(report)}, ${report.spent_usd:.4f}")

    try:
        return play_receipts(
            spec,
            played,
            choice,
            seed=seed,
            budget=budget,
            max_turns=turns,
            stop_at_game_over=stop_at_game_over,
            worker=worker,
            settings=settings,
            on_turn=on_turn,
        )
    finally:
        bar.stop()
