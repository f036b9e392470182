"""The worker wire format: length-prefixed JSON frames and the message shapes both sides use.

A frame is a 12-byte header (a 4-byte big-endian body length, then an 8-byte
big-endian sequence number) followed by that many bytes of UTF-8 JSON. Both
sides check the length against :data:`MAX_MESSAGE_BYTES` before allocating
anything for the body. Binary blobs travel as canonical base64.

The parent numbers its requests (``init`` is 0, then 1, 2, ...) and the child
answers each with exactly one response carrying the same number:
``{"status": "ok", "result": ...}`` or ``{"status": "error", "error": {...}}``.
The parent refuses an answer numbered otherwise (a stale, replayed or skipped
reply). The child opens the conversation with a readiness message, numbered
like the ``init`` it answers, once its game exists.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Mapping
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from playproof.core.contract import Contract
from playproof.core.evidence import Evidence
from playproof.core.game import MAX_SEED, GameDescriptor, ReplayResult, Snapshot
from playproof.core.observation import Observation
from playproof.errors import (
    CheckpointError,
    ContractError,
    FormatError,
    ModeError,
    NotSupportedError,
    ObservationError,
    PlayproofError,
    TargetError,
    WorkerError,
)

__all__ = [
    "BLOB_RESPONSE",
    "EVIDENCE_RESPONSE",
    "HEADER",
    "INIT_SEQUENCE",
    "MAX_ADVANCE_BATCH",
    "MAX_ERROR_CHARS",
    "MAX_MESSAGE_BYTES",
    "NONE_RESPONSE",
    "OBSERVATION_RESPONSE",
    "OVER_RESPONSE",
    "PROTOCOL_VERSION",
    "READY",
    "REPLAY_RESPONSE",
    "REQUEST",
    "SNAPSHOTS_RESPONSE",
    "SNAPSHOT_RESPONSE",
    "Advance",
    "AdvanceMany",
    "Capabilities",
    "ErrorInfo",
    "Failure",
    "Init",
    "Query",
    "Ready",
    "Replay",
    "Request",
    "Reset",
    "Restore",
    "Step",
    "Success",
    "as_failure",
    "decode_blob",
    "describe_exception",
    "encode_blob",
    "raise_error",
    "response_adapter",
]

PROTOCOL_VERSION = 3
"""Bumped whenever a message shape changes; the child refuses a different version."""
MAX_MESSAGE_BYTES = 64 << 20
"""Largest frame body either side accepts or sends (64 MiB)."""
MAX_ERROR_CHARS = 4000
"""Error messages crossing the wire are cut to this many characters."""
HEADER = struct.Struct(">IQ")
"""Frame header: body length, then the sequence number of the request it is or answers."""
INIT_SEQUENCE = 0
"""Sequence number of the ``init`` request and of the readiness message answering it."""
MAX_ADVANCE_BATCH = 256
"""Most words one ``advance-many`` request carries (observations may hold images)."""

_Strict = ConfigDict(frozen=True, extra="forbid", strict=True)
Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]


class Init(BaseModel):
    """First parent message: which factory to call, with which options."""

    model_config = _Strict
    op: Literal["init"] = "init"
    protocol: int = PROTOCOL_VERSION
    factory: Annotated[str, Field(pattern=r"^[\w.]+:[\w.]+$", max_length=512)]
    options: dict[str, Any] = Field(default_factory=dict)


class Reset(BaseModel):
    """Reset the game with a seed."""

    model_config = _Strict
    op: Literal["reset"] = "reset"
    seed: Seed


class Step(BaseModel):
    """Apply one input word."""

    model_config = _Strict
    op: Literal["step"] = "step"
    word: str


class Advance(BaseModel):
    """Apply one input word and answer with the resulting snapshot."""

    model_config = _Strict
    op: Literal["advance"] = "advance"
    word: str
    observe: bool


class AdvanceMany(BaseModel):
    """Apply several input words in order; answer with every resulting snapshot."""

    model_config = _Strict
    op: Literal["advance-many"] = "advance-many"
    words: Annotated[tuple[str, ...], Field(max_length=MAX_ADVANCE_BATCH)]
    observe: bool


class Query(BaseModel):
    """A request without arguments (observe, evidence, over, checkpoint, quit)."""

    model_config = _Strict
    op: Literal["observe", "evidence", "over", "checkpoint", "quit"]


class Restore(BaseModel):
    """Restore a checkpoint blob (base64)."""

    model_config = _Strict
    op: Literal["restore"] = "restore"
    blob: str


class Replay(BaseModel):
    """Replay a whole input log inside the child."""

    model_config = _Strict
    op: Literal["replay"] = "replay"
    seed: Seed
    inputs: tuple[str, ...]
    contract: Contract
    trace: bool = False


Request = Annotated[
    Init | Reset | Step | Advance | AdvanceMany | Query | Restore | Replay,
    Field(discriminator="op"),
]


class Capabilities(BaseModel):
    """Optional capabilities of the game inside the child."""

    model_config = _Strict
    checkpoint: bool


class Ready(BaseModel):
    """The child's readiness message: its game exists and answers requests."""

    model_config = _Strict
    status: Literal["ready"] = "ready"
    protocol: int
    descriptor: GameDescriptor
    capabilities: Capabilities


class ErrorInfo(BaseModel):
    """An exception raised inside the child, by class name."""

    model_config = _Strict
    type: Annotated[str, Field(max_length=128)]
    message: Annotated[str, Field(max_length=MAX_ERROR_CHARS)]
    violations: tuple[str, ...] | None = None


class Failure(BaseModel):
    """A request failed inside the child; the worker stays usable."""

    model_config = _Strict
    status: Literal["error"] = "error"
    error: ErrorInfo


T = TypeVar("T")


class Success(BaseModel, Generic[T]):
    """A request succeeded; ``result`` depends on the request."""

    model_config = _Strict
    status: Literal["ok"] = "ok"
    result: T


def response_adapter(result: Any) -> TypeAdapter[Any]:
    """A validator for the response to a request whose result has type ``result``."""
    return TypeAdapter(Annotated[Success[result] | Failure, Field(discriminator="status")])


READY = TypeAdapter(Annotated[Ready | Failure, Field(discriminator="status")])
REQUEST: TypeAdapter[Init | Reset | Step | Advance | AdvanceMany | Query | Restore | Replay] = (
    TypeAdapter(Request)
)
# Result shapes, used by the child to encode and by the parent to decode.
NONE_RESPONSE = response_adapter(None)
OBSERVATION_RESPONSE = response_adapter(Observation)
EVIDENCE_RESPONSE = response_adapter(Evidence)
OVER_RESPONSE = response_adapter(bool | None)
SNAPSHOT_RESPONSE = response_adapter(Snapshot)
SNAPSHOTS_RESPONSE = response_adapter(tuple[Snapshot, ...])
BLOB_RESPONSE = response_adapter(str)
REPLAY_RESPONSE = response_adapter(ReplayResult)


def encode_blob(blob: bytes) -> str:
    """Bytes as canonical base64 text."""
    return base64.b64encode(blob).decode("ascii")


def decode_blob(text: str) -> bytes:
    """Canonical base64 text back to bytes; anything else is a CheckpointError."""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise CheckpointError(f"checkpoint blob is not base64: {exc}") from exc


# Game-level errors that cross the boundary as themselves; anything else arrives
# as a WorkerError naming the original class (never an arbitrary class by name).
_ALLOWED: Mapping[str, type[PlayproofError]] = {
    cls.__name__: cls
    for cls in (
        CheckpointError,
        FormatError,
        ObservationError,
        TargetError,
        ModeError,
        NotSupportedError,
        WorkerError,
    )
}


def describe_exception(exc: BaseException) -> ErrorInfo:
    """The wire form of an exception raised by the game inside the child."""
    name = type(exc).__name__
    if isinstance(exc, ContractError):
        return ErrorInfo(
            type="ContractError",
            message=str(exc)[:MAX_ERROR_CHARS],
            violations=tuple(v[:MAX_ERROR_CHARS] for v in exc.violations[:100]),
        )
    if isinstance(exc, PlayproofError) and _ALLOWED.get(name) is type(exc):
        return ErrorInfo(type=name, message=str(exc)[:MAX_ERROR_CHARS])
    return ErrorInfo(type="WorkerError", message=f"the game raised {name}: {exc}"[:MAX_ERROR_CHARS])


def raise_error(info: ErrorInfo) -> None:
    """Re-raise a child-side error in the parent as the matching playproof error."""
    if info.type == "ContractError" and info.violations is not None:
        raise ContractError(info.violations)
    cls = _ALLOWED.get(info.type)
    if cls is None:
        raise WorkerError(f"{info.type}: {info.message}")
    raise cls(info.message)


def as_failure(exc: BaseException) -> Failure:
    """A failure response carrying ``exc``."""
    return Failure(error=describe_exception(exc))
