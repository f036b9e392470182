"""A platform-attested run: baseline receipts, the agent plays, final receipts, judged.

The agent acts on a game session (``played``) through the ordinary decision
loop. That session is wrapped so the loop pins the receipts target (the
spec's name, a build digest over the spec and the played build, the
contract the spec stands for, the provider as platform) and records no
per-turn evidence: receipts are read only before and after. Any failure of
either reading ends the run with a :class:`~playproof.errors.ReceiptError`
and no record.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from playproof._bounded import read_bounded
from playproof.adapters.receipts._sources import (
    MAX_SECRET_CHARS,
    MIN_SECRET_CHARS,
    USER_ID,
    Credentials,
    ReceiptsSource,
)
from playproof.core.agent import Driver
from playproof.core.canonical import parse_model
from playproof.core.evidence import Evidence
from playproof.core.game import (
    BuildIdentity,
    Game,
    GameDescriptor,
    Platform,
    VerificationMode,
)
from playproof.core.observation import Observation
from playproof.core.receipts import (
    Receipts,
    ReceiptsSpec,
    receipts_build_digest,
    receipts_contract,
)
from playproof.core.record import ClaimedMilestone, RunRecord, parse_run_record
from playproof.engine import EpisodeConfig, TurnReport, play
from playproof.errors import FormatError, ReceiptError
from playproof.verify._receipts import judge

__all__ = [
    "MAX_SPEC_BYTES",
    "AttestedSession",
    "arun_receipts",
    "credentials_from_env",
    "read_receipts_spec",
]

MAX_SPEC_BYTES = 256 * 1024
"""The largest receipts spec file read."""


def read_receipts_spec(source: Path | str | bytes) -> ReceiptsSpec:
    """A receipts spec from a file path or JSON text; FormatError when it is not one."""
    if isinstance(source, Path):
        data: bytes | str = read_bounded(source, MAX_SPEC_BYTES, "receipts spec")
    else:
        data = source
    return parse_model(ReceiptsSpec, data, limit=MAX_SPEC_BYTES, what="receipts spec")


def credentials_from_env(spec: ReceiptsSpec, env: dict[str, str] | None = None) -> Credentials:
    """The user id and credential the spec names, from the environment (ReceiptError if unset)."""
    environ = os.environ if env is None else env
    user = environ.get(spec.user_env, "")
    secret = environ.get(spec.key_env, "")
    if not USER_ID.match(user):
        raise ReceiptError(
            f"set {spec.user_env} to the user's numeric id (SteamID64 or XUID) before the run"
        )
    if not MIN_SECRET_CHARS <= len(secret) <= MAX_SECRET_CHARS or not secret.isprintable():
        raise ReceiptError(
            f"set {spec.key_env} to the provider credential ({MIN_SECRET_CHARS} to "
            f"{MAX_SECRET_CHARS} printable characters) before the run"
        )
    return Credentials(user=user, secret=secret)


class AttestedSession:
    """The played game, seen by the loop as the receipts target (no per-turn evidence)."""

    def __init__(self, played: Game, spec: ReceiptsSpec) -> None:
        self.played = played
        inner = played.descriptor
        self._descriptor = GameDescriptor(
            id=spec.name,
            vocabulary=inner.vocabulary,
            build=BuildIdentity(
                id=f"receipts:{spec.name}",
                digest=receipts_build_digest(spec, inner.build.digest),
            ),
            platform=Platform(family=spec.provider, modes=(VerificationMode.PLATFORM_ATTESTED,)),
        )

    @property
    def descriptor(self) -> GameDescriptor:
        """The receipts target's identity; the played game's vocabulary."""
        return self._descriptor

    def reset(self, seed: int) -> None:
        """Reset the played game."""
        self.played.reset(seed)

    def step(self, word: str) -> None:
        """Apply one input to the played game."""
        self.played.step(word)

    def observe(self) -> Observation:
        """What the played game shows the player."""
        return self.played.observe()

    def evidence(self) -> Evidence:
        """Nothing: receipts are read before and after the run, never per turn."""
        return Evidence()

    def over(self) -> bool | None:
        """The played game's game-over flag."""
        return self.played.over()

    def close(self) -> None:
        """Close the played game."""
        self.played.close()


async def arun_receipts(
    spec: ReceiptsSpec,
    played: Game,
    driver: Driver,
    config: EpisodeConfig,
    *,
    credentials: Credentials | None = None,
    source: ReceiptsSource | None = None,
    on_turn: Callable[[TurnReport], None] | None = None,
    cancel: asyncio.Event | None = None,
) -> RunRecord:
    """Read the baseline, play ``played`` with ``driver``, read the final, and judge.

    ``config.mode`` must be platform-attested (or None). The record's claims
    are the milestones the receipts earned, at the last turn; its receipts
    section pins every response. The caller closes ``played``.
    """
    if config.mode not in (None, VerificationMode.PLATFORM_ATTESTED):
        raise ReceiptError(f"a receipts target is verified platform-attested, not {config.mode}")
    creds = credentials if credentials is not None else credentials_from_env(spec)
    reader = source if source is not None else ReceiptsSource(spec, creds)
    try:
        baseline_responses, baseline = await reader.read("baseline")
        baseline_at = baseline_responses[-1].received_at
        session = AttestedSession(played, spec)
        contract = receipts_contract(spec)
        record = await play(session, contract, driver, config, cancel=cancel, on_turn=on_turn)
        final_responses, final = await reader.read("final")
    finally:
        if source is None:
            await reader.aclose()
    judged = judge(spec, baseline, final)
    turn = len(record.decisions)
    receipts = Receipts(
        spec=spec,
        user=creds.user,
        played=played.descriptor.id,
        played_digest=played.descriptor.build.digest,
        baseline_at=baseline_at,
        final_at=final_responses[-1].received_at,
        responses=baseline_responses + final_responses,
        judged=judged,
    )
    claimed = tuple(ClaimedMilestone(id=j.id, turn=turn) for j in judged if j.earned)
    finished = record.model_copy(
        update={"claimed": claimed, "identity_claimed": (), "receipts": receipts}
    )
    try:
        return parse_run_record(finished.to_json())  # validated as any reader will
    except FormatError as exc:
        raise ReceiptError(f"the receipts do not fit in a record: {exc}") from exc
