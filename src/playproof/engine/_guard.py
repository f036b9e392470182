"""The rollback guard of a campaign: a note of its last save, kept where its key is.

Every save of a ledger is signed by the campaign's key, so every older copy of
the ledger carries a valid signature too; the signature alone cannot tell the
latest save from a copy put back between two calls. The guard is a small JSON
document per campaign (:class:`CampaignState`), written atomically in a folder
the caller keeps out of the agent's reach (the command line uses
``<key dir>/campaigns``) after every save of the ledger: the campaign's id,
how many decisions and segments that save held, the chain head at its last
decision, and whether the hooks had answered after its last segment.

On resume the ledger must extend that state (see :func:`rollback_problems`):
a ledger older than the last save, or one that went another way from it, is
refused. A ledger ahead of the state (the process died between the ledger's
save and the state's write; the ledger is always durable first) extends it
and is accepted. Without a state (a campaign started before the guard, or
another key folder) a resume goes on as before and the state is written from
then on.

While a call plays, it holds a lock on ``<campaign id>.lock`` in the guard
folder, so two copies of one campaign's ledger (under two file names) cannot
be played at the same time.

The guard protects against whoever can write the ledger's folder but not the
guard's: someone who can write the guard folder can remove a state as easily
as put back a ledger.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from playproof._atomic import write_atomic
from playproof._bounded import read_bounded
from playproof.core.canonical import digest, parse_model
from playproof.core.record import Actor, TargetPin
from playproof.engine._ledger import Ledger
from playproof.errors import FormatError, LedgerError

__all__ = [
    "CAMPAIGN_STATE_SCHEMA",
    "MAX_CAMPAIGN_STATE_BYTES",
    "CampaignState",
    "campaign_id",
    "hold_campaign",
    "open_guard",
    "read_state",
    "rollback_problems",
    "state_of",
    "write_state",
]

CAMPAIGN_STATE_SCHEMA = "playproof/campaign-state/v1"
MAX_CAMPAIGN_STATE_BYTES = 4096
"""The largest campaign state file read (a state is about 400 bytes)."""
_ID_CONTEXT = "playproof/campaign-id/v1"
"""What a campaign id's digest starts from, so it means nothing elsewhere."""

Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Stamp = Annotated[str, Field(min_length=1, max_length=64)]


class CampaignState(BaseModel):
    """A campaign's last save as its rollback guard keeps it: a resume must extend it.

    Written after every save of the campaign's ledger to ``<campaign>.json``
    in the guard folder (out of the agent's reach).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["playproof/campaign-state/v1"] = Field(
        "playproof/campaign-state/v1", alias="schema"
    )
    campaign: Sha256Hex
    """The campaign id (:func:`campaign_id`); also the state file's name."""
    decisions: Annotated[int, Field(ge=0)]
    """Decisions the last save held."""
    segments: Annotated[int, Field(ge=0)]
    """Segments the last save held."""
    chain_head: Sha256Hex
    """The chain head after the last saved decision (the genesis head when there is none)."""
    consulted: bool
    """True when the hooks had answered after the last saved segment."""
    saved_at: Stamp
    """The ``updated_at`` of the last save (shown in messages, not compared)."""

    @model_validator(mode="after")
    def _coherent(self) -> CampaignState:
        if (self.decisions == 0) != (self.segments == 0) or self.segments > self.decisions:
            raise ValueError(
                f"{self.decisions} decisions cannot fill {self.segments} segments "
                "(every segment holds at least one decision)"
            )
        if self.consulted and self.segments == 0:
            raise ValueError("the hooks cannot have answered after no segment")
        return self


def campaign_id(target: TargetPin, actor: Actor, seed: int, started_at: str, key_id: str) -> str:
    """The id of a campaign: a digest of what stays fixed for its whole life.

    The target pin's fields a resume checks (name, game, build, contract,
    platform, mode), the actor, the seed, the campaign's start time and the
    key that signs its ledger. Two campaigns of one target and seed started
    at different times have different ids.
    """
    return digest(
        {
            "context": _ID_CONTEXT,
            "target": {
                "name": target.name,
                "game_id": target.game_id,
                "build_digest": target.build_digest,
                "contract_hash": target.contract_hash,
                "platform": target.platform,
                "verification_mode": target.verification_mode.value,
            },
            "actor": {"kind": actor.kind, "id": actor.id},
            "seed": seed,
            "started_at": started_at,
            "key": key_id,
        }
    )


def state_of(ledger: Ledger, key_id: str) -> CampaignState:
    """The state the guard keeps for a save of ``ledger`` signed by the key ``key_id``."""
    segments = ledger.segments
    return CampaignState(
        campaign=campaign_id(ledger.target, ledger.actor, ledger.seed, ledger.started_at, key_id),
        decisions=len(ledger.decisions),
        segments=len(segments),
        chain_head=ledger.chain_head,
        consulted=bool(segments) and segments[-1].consulted,
        saved_at=ledger.updated_at,
    )


def rollback_problems(ledger: Ledger, state: CampaignState) -> list[str]:
    """Why ``ledger`` does not extend the campaign's last save ``state`` (empty when it does).

    It extends it when it holds at least as many decisions and segments, and
    its segment number ``state.segments`` ends exactly at ``state.decisions``
    with the saved chain head (and, when the hooks had answered after that
    segment, they had in this ledger too).
    """
    count, parts = len(ledger.decisions), len(ledger.segments)
    held = f"it holds {_many(count, 'decision')} in {_many(parts, 'segment')}"
    last = (
        f"the campaign's last save ({state.saved_at}) held {_many(state.decisions, 'decision')} "
        f"in {_many(state.segments, 'segment')}"
    )
    advice = (
        "resume from the campaign's latest ledger, or start a new campaign with a new ledger file"
    )
    if state.segments == 0:
        return []  # nothing played yet: every ledger of the campaign extends it
    if count < state.decisions:
        return [f"it is older than the campaign's last save: {held}, {last}; {advice}"]
    segment = ledger.segments[state.segments - 1] if parts >= state.segments else None
    if (
        segment is None
        or segment.last_turn != state.decisions
        or segment.chain_head != state.chain_head
    ):
        return [
            f"it diverges from the campaign's last save: {held}, {last}, and its decisions "
            f"up to turn {state.decisions} are not the saved ones (another copy of the "
            f"ledger was played on); {advice}"
        ]
    if state.consulted and not segment.consulted:
        return [
            f"it is older than the campaign's last save ({state.saved_at}): it holds its "
            f"{_many(state.decisions, 'decision')} in {_many(state.segments, 'segment')}, "
            "but it was saved "
            f"before the hooks answered after segment {segment.index} and the last save "
            f"after; {advice}"
        ]
    return []


def _many(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"


def open_guard(folder: Path, where: str) -> Path:
    """Make the guard folder ``folder`` (mode 0700) unless it exists; LedgerError if it cannot be.

    ``where`` names the ledger in messages.
    """
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise LedgerError(
            where, [f"cannot make the campaign guard folder {folder}: {exc.strerror or exc}"]
        ) from exc
    return folder


def _state_path(folder: Path, campaign: str) -> Path:
    return folder / f"{campaign}.json"


def read_state(folder: Path, campaign: str, where: str) -> CampaignState | None:
    """The saved state of ``campaign`` in the guard folder, or None when there is none.

    The file is read with a size bound; a larger, unreadable or malformed file,
    or one that names another campaign, is a LedgerError (about the ledger
    ``where``) naming the file.
    """
    path = _state_path(folder, campaign)
    what = f"the campaign's last-save state {path}"
    try:
        data = read_bounded(path, MAX_CAMPAIGN_STATE_BYTES, "campaign state")
    except FormatError as exc:
        if isinstance(exc.__cause__, FileNotFoundError):
            return None
        raise LedgerError(where, [f"{what} cannot be used: {exc}"]) from exc
    try:
        state = parse_model(CampaignState, data, limit=MAX_CAMPAIGN_STATE_BYTES, what="it")
    except FormatError as exc:
        raise LedgerError(where, [f"{what} is malformed: {exc}"]) from exc
    if state.campaign != campaign:
        raise LedgerError(
            where, [f"{what} is malformed: it names campaign {state.campaign[:16]}..."]
        )
    return state


def write_state(folder: Path, state: CampaignState, where: str) -> Path:
    """Write ``state`` to its file in the guard folder atomically (mode 0600); return its path."""
    path = _state_path(folder, state.campaign)
    data = CampaignState.__pydantic_serializer__.to_json(state, by_alias=True) + b"\n"
    try:
        write_atomic(path, data, mode=0o600)
    except OSError as exc:
        raise LedgerError(
            where, [f"cannot save the campaign's last-save state {path}: {exc.strerror or exc}"]
        ) from exc
    return path


@contextlib.contextmanager
def hold_campaign(folder: Path, campaign: str, where: str) -> Iterator[None]:
    """Hold the lock that lets one call at a time play ``campaign``, whatever its ledger's name.

    An exclusive ``flock`` on ``<campaign id>.lock`` in the guard folder,
    released when the block ends (the empty file stays). Another holder is a
    LedgerError.
    """
    lock = folder / f"{campaign}.lock"
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(lock, flags, 0o600)
    except OSError as exc:
        raise LedgerError(
            where, [f"cannot open the campaign's lock file {lock}: {exc.strerror or exc}"]
        ) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise LedgerError(where, [f"the campaign's lock file {lock} is not a regular file"])
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LedgerError(
                where,
                [
                    "another call is playing the same campaign (from another copy of its "
                    f"ledger; it holds {lock}); let it pause or finish, then resume from "
                    "its ledger"
                ],
            ) from None
        except OSError as exc:
            raise LedgerError(
                where, [f"cannot lock the campaign's lock file {lock}: {exc.strerror or exc}"]
            ) from exc
        yield
    finally:
        os.close(fd)
