"""The campaign ledger: a validated JSON document a long run is saved to and resumed from.

It holds the target pin, the actor, the seed and limits, every decision (as
columns: inputs, costs and latencies in turn order; the segment of each
follows from the segments' turn ranges), the segments (with a digest of their
inputs, their spend and the chain head at their end), the analyst's and the
steering hook's answers, the guidance in effect, the spend and the verified
milestones. Columns keep a ledger of millions of decisions small and quick to
load: resuming costs little more than replaying its inputs.

Every save is signed: the file is the ledger's compact JSON with one last
member, ``"signature": {"keyid": ..., "sig": ...}``, an Ed25519 signature by
the campaign's key over :data:`LEDGER_SIGNING_CONTEXT` followed by the SHA-256
digest of the exact bytes of the file without that member (see
:func:`signed_message`). :func:`load_ledger` checks it against the one key it
trusts before it parses anything, so an edit anywhere (an input, a cost, a
latency, a note, even white space) is refused, however carefully the digests,
spend and chain heads were redone.

:func:`save_ledger` writes atomically (a temporary file in the same folder,
fsync, rename, fsync of the folder), so a crash at any point leaves either
the previous ledger or the new one. A temporary file left by a killed save is
named ``.<ledger name>.<16 hex digits>.tmp`` and is removed by the next save
or load of that ledger (a save in progress holds a lock on its file, so only
files of dead saves go). :func:`load_ledger` refuses a missing, oversized,
unsigned, foreign-signed, altered or malformed file, and
:func:`ledger_problems` / :func:`run_mismatches` name every way a ledger
disagrees with itself or with the run it claims to continue.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import math
import os
import re
import secrets
import stat
from collections.abc import Iterator, Sequence
from enum import StrEnum
from functools import reduce
from operator import add
from pathlib import Path
from typing import Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import to_json

from playproof._atomic import sync_folder
from playproof._bounded import read_bounded
from playproof.core.canonical import canonical_strings, parse_json
from playproof.core.chain import (
    MAX_INPUT_BYTES,
    ChainLinker,
    Decision,
    first_too_large,
    genesis_hash,
)
from playproof.core.game import MAX_SEED
from playproof.core.record import Actor, ClaimedMilestone, Limits, StopReason, TargetPin
from playproof.errors import FormatError, LedgerError

__all__ = [
    "LEDGER_SCHEMA",
    "LEDGER_SIGNING_CONTEXT",
    "MAX_GUIDANCE_CHARS",
    "MAX_LEDGER_BYTES",
    "MAX_SUMMARY_CHARS",
    "MAX_UNSIGNED_PARSE_BYTES",
    "Analysis",
    "AnalysisEntry",
    "Ledger",
    "LedgerDecisions",
    "LedgerSegment",
    "LedgerSignature",
    "LedgerSigner",
    "LedgerVerifier",
    "Recommendation",
    "SegmentStatus",
    "SignedLedger",
    "Steer",
    "SteeringEntry",
    "inputs_digest",
    "hold_ledger",
    "ledger_body",
    "ledger_content_problems",
    "ledger_problems",
    "ledger_structure_problems",
    "load_ledger",
    "run_mismatches",
    "remove_stale_temporaries",
    "save_ledger",
    "signed_message",
    "still_saved",
]

LEDGER_SCHEMA = "playproof/ledger/v3"
LEDGER_SIGNING_CONTEXT = b"playproof/ledger/v3 sha256\n"
"""What the signed message starts with, so a ledger signature means nothing elsewhere."""
MAX_LEDGER_BYTES = 512 << 20
"""The largest ledger file read (about five million decisions)."""
MAX_GUIDANCE_CHARS = 4000
"""The longest guidance a hook may leave for the driver."""
MAX_SUMMARY_CHARS = 4000
"""The longest analyst summary kept."""
MAX_UNSIGNED_PARSE_BYTES = 256 << 10
"""The largest file without a signature that is parsed to say what is wrong with it.

Anyone can write an unsigned file, and parsing JSON takes many times its size
in memory (a list of empty objects, 25 times); a larger one is refused on its
missing signature, naming an older ledger format when the file starts with
its ``schema`` member.
"""

Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Stamp = Annotated[str, Field(min_length=1, max_length=64)]
Guidance = Annotated[str, Field(max_length=MAX_GUIDANCE_CHARS)]
Money = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Ed25519Signature = Annotated[str, Field(pattern=r"^[A-Za-z0-9+/]{86}==$")]

_SIGNATURE_TAIL = re.compile(
    rb',"signature":\{"keyid":"([0-9a-f]{64})","sig":"([A-Za-z0-9+/]{86}==)"\}\}\Z'
)
_SIGNATURE_TAIL_BYTES = 200
"""Longer than the signature member a save appends (keyid, base64 signature, punctuation)."""
_STAMP_TAIL_BYTES = 1024
"""More than the ``updated_at`` member before the signature can take (a stamp: 64 characters)."""
_SCHEMA_HEAD = re.compile(rb'\A\s{0,64}\{\s{0,64}"schema"\s{0,64}:\s{0,64}"([^"\\]{1,60})"')
"""The ``schema`` member a ledger file starts with (every playproof ledger starts so)."""
_SCHEMA_HEAD_BYTES = 512
"""Bytes searched for that member: the regular expression cannot reach past them."""
_TEMPORARY_TOKEN_BYTES = 8
_TEMPORARY_ATTEMPTS = 8
"""Fresh temporary names tried before a save gives up (each loss is a concurrent clean-up)."""


class LedgerVerifier(Protocol):
    """The one key a resumed ledger must be signed by (``playproof.sign.VerifyingKey``)."""

    @property
    def key_id(self) -> str:
        """SHA-256 hex of the raw public key."""
        ...

    def verify(self, signature: bytes, data: bytes) -> bool:
        """True iff ``signature`` is this key's signature over ``data``."""
        ...


class LedgerSigner(Protocol):
    """The campaign's key, which signs every save (``playproof.sign.SigningKey``)."""

    @property
    def key_id(self) -> str:
        """The key id of the matching public key."""
        ...

    @property
    def verifying_key(self) -> LedgerVerifier:
        """The public key a resume checks the ledger against."""
        ...

    def sign(self, data: bytes) -> bytes:
        """The 64-byte Ed25519 signature over ``data``."""
        ...


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Recommendation(StrEnum):
    """What an analyst recommends after a segment."""

    CONTINUE = "continue"
    STEER = "steer"
    STOP = "stop"


class Analysis(_Frozen):
    """An analyst's answer: a summary, a recommendation, optional guidance and progress score.

    ``steer`` must carry guidance (blank clears the guidance in effect);
    ``continue`` keeps the guidance in effect unless it carries new guidance.
    """

    summary: Annotated[str, Field(max_length=MAX_SUMMARY_CHARS)]
    recommendation: Recommendation = Recommendation.CONTINUE
    guidance: Guidance | None = None
    progress: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None = None

    @model_validator(mode="after")
    def _steer_has_guidance(self) -> Analysis:
        if self.recommendation is Recommendation.STEER and self.guidance is None:
            raise ValueError("recommendation 'steer' needs guidance (blank clears it)")
        return self


class AnalysisEntry(_Frozen):
    """An analyst's answer after one segment."""

    segment: Annotated[int, Field(ge=0)]
    analysis: Analysis


class Steer(_Frozen):
    """A steering note (human or program): guidance for the driver (blank clears it), or stop."""

    note: Guidance = ""
    stop: bool = False


class SteeringEntry(_Frozen):
    """A steering note left after one segment."""

    segment: Annotated[int, Field(ge=0)]
    steer: Steer


class SegmentStatus(StrEnum):
    """How a segment ended."""

    COMPLETE = "complete"
    """A stop rule (segment limit, turn limit, budget, game over) ended it."""
    INTERRUPTED = "interrupted"
    """Cancellation, Ctrl-C or an error ended it; the next call resumes after it."""


class LedgerDecisions(_Frozen):
    """Every decision in turn order, as three columns: position ``i`` is turn ``i + 1``.

    Each decision is what the run record carries (input, measured cost or
    None, latency); the segment that took it follows from the segments' turn
    ranges.
    """

    inputs: tuple[Annotated[str, Field(min_length=1, max_length=MAX_INPUT_BYTES)], ...] = ()
    costs_usd: tuple[Money | None, ...] = ()
    latencies_ms: tuple[Money, ...] = ()

    @model_validator(mode="after")
    def _aligned(self) -> LedgerDecisions:
        sizes = (len(self.inputs), len(self.costs_usd), len(self.latencies_ms))
        if len(set(sizes)) != 1:
            raise ValueError(
                "inputs, costs_usd and latencies_ms hold {}, {} and {} entries; "
                "every decision has all three".format(*sizes)
            )
        return self

    def __len__(self) -> int:
        return len(self.inputs)

    def rows(self) -> Iterator[tuple[int, str, float | None, float]]:
        """``(turn, input, cost_usd, latency_ms)`` for every decision, in turn order."""
        return zip(
            range(1, len(self.inputs) + 1),
            self.inputs,
            self.costs_usd,
            self.latencies_ms,
            strict=True,
        )


class LedgerSegment(_Frozen):
    """One stretch of play: its turns, how it ended, and digests of what it decided."""

    index: Annotated[int, Field(ge=0)]
    first_turn: Annotated[int, Field(ge=1)]
    last_turn: Annotated[int, Field(ge=1)]
    status: SegmentStatus
    stop_reason: StopReason | None
    stopped_by: Literal["analyst", "steering"] | None = None
    consulted: bool = False
    """True once the hooks have answered after this segment."""
    guidance: Guidance | None
    inputs_digest: Sha256Hex
    spent_usd: Money
    chain_head: Sha256Hex
    new_milestones: tuple[str, ...]
    started_at: Stamp
    finished_at: Stamp


class Ledger(_Frozen):
    """A campaign as saved between segments (see the module docstring)."""

    schema_: Literal["playproof/ledger/v3"] = Field("playproof/ledger/v3", alias="schema")
    target: TargetPin
    actor: Actor
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)]
    limits: Limits
    segment_turns: Annotated[int, Field(ge=1)]
    decisions: LedgerDecisions
    segments: tuple[LedgerSegment, ...]
    analyses: tuple[AnalysisEntry, ...] = ()
    steering: tuple[SteeringEntry, ...] = ()
    guidance: Guidance | None = None
    """The guidance the next segment's driver will see."""
    spent_usd: Money
    unmeasured_decisions: Annotated[int, Field(ge=0)]
    chain_head: Sha256Hex
    verified: tuple[ClaimedMilestone, ...]
    finished: bool = False
    stop_reason: StopReason | None = None
    game_over: bool = False
    started_at: Stamp
    updated_at: Stamp

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    def __repr__(self) -> str:
        # Short on purpose: a ledger can hold millions of decisions.
        return (
            f"Ledger(target={self.target.name or self.target.game_id!r}, seed={self.seed}, "
            f"decisions={len(self.decisions)}, segments={len(self.segments)}, "
            f"finished={self.finished})"
        )

    def __str__(self) -> str:
        return repr(self)

    def record_decisions(self) -> tuple[Decision, ...]:
        """The decisions as the run record carries them (no segment)."""
        return tuple(
            Decision.model_construct(turn=turn, input=word, cost_usd=cost, latency_ms=latency)
            for turn, word, cost, latency in self.decisions.rows()
        )


class LedgerSignature(_Frozen):
    """The last member of a ledger file: who signed it and the base64 Ed25519 signature."""

    keyid: Sha256Hex
    sig: Ed25519Signature


class SignedLedger(Ledger):
    """A ledger file as saved: the ledger, then its signature (see the module docstring).

    The signature covers :data:`LEDGER_SIGNING_CONTEXT` and the SHA-256 digest
    of the file's bytes without the ``signature`` member; :func:`load_ledger`
    checks it on the raw bytes and gives back the :class:`Ledger`.
    """

    signature: LedgerSignature


def inputs_digest(inputs: Sequence[str]) -> str:
    """SHA-256 of the canonical JSON list of ``inputs`` (a segment's input digest)."""
    return hashlib.sha256(canonical_strings(inputs)).hexdigest()


def _temporary_pattern(path: Path) -> re.Pattern[str]:
    """The names of ``path``'s temporary files and its lock file (and of no other file)."""
    token = rf"[0-9a-f]{{{2 * _TEMPORARY_TOKEN_BYTES}}}\.tmp"
    return re.compile(rf"\.{re.escape(path.name)}\.(?:{token}|lock)")


def _lock_path(path: Path) -> Path:
    """The lock file of the ledger ``path`` (see :func:`hold_ledger`)."""
    return path.with_name(f".{path.name}.lock")


def _same_file(fd: int, path: Path) -> bool:
    """True when ``path`` still names the file open as ``fd``."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Remove the temporary files that killed saves of ``path`` left; return what was removed.

    Only names :func:`save_ledger` gives ``path``'s temporary files are
    considered, and a file whose save is still running (it holds a lock on it)
    is left alone; so is the lock file of a campaign still playing (see
    :func:`hold_ledger`), while one a killed campaign left goes.
    """
    pattern = _temporary_pattern(path)
    removed: list[Path] = []
    try:
        with os.scandir(path.parent) as listing:
            entries = [e for e in listing if pattern.fullmatch(e.name)]
    except OSError:  # no folder yet, or one we may not list: nothing of ours to remove
        return removed
    for entry in entries:
        if not entry.is_file(follow_symlinks=False):
            continue
        candidate = path.parent / entry.name
        try:
            fd = os.open(candidate, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a save in progress
            if _same_file(fd, candidate):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(candidate)
                    removed.append(candidate)
        finally:
            os.close(fd)
    return removed


def _open_temporary(path: Path) -> tuple[Path, int]:
    """Create and lock a fresh temporary file next to ``path``; (its path, its descriptor)."""
    for _ in range(_TEMPORARY_ATTEMPTS):
        token = secrets.token_hex(_TEMPORARY_TOKEN_BYTES)
        temporary = path.with_name(f".{path.name}.{token}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temporary, flags, 0o666)
        # The lock tells a concurrent clean-up that this file is live; one that
        # removed it between the creation and the lock is noticed here.
        fcntl.flock(fd, fcntl.LOCK_EX)
        if _same_file(fd, temporary):
            return temporary, fd
        os.close(fd)
    raise LedgerError(
        str(path),
        [
            f"could not keep a temporary file next to it in {_TEMPORARY_ATTEMPTS} attempts; "
            "is another process saving or cleaning the same ledger?"
        ],
    )


@contextlib.contextmanager
def hold_ledger(path: Path) -> Iterator[Path]:
    """Hold the lock that lets one campaign at a time play from ``path``; yield the lock file.

    The lock is an exclusive ``flock`` on ``.<ledger name>.lock`` next to the
    ledger (the ledger itself is replaced at every save, so it cannot carry
    one). It is released, and the file removed, when the block ends; the lock
    of a killed campaign ends with its process, and its file is removed by the
    next save or load of the ledger. Another holder is a LedgerError.
    """
    lock = _lock_path(path)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LedgerError(str(path), [f"cannot make its folder: {exc.strerror or exc}"]) from exc
    # Every save writes ``.<name>.<token>.tmp`` first: a name too long for that would
    # fail the first save, after a segment was played and paid for. Refused now.
    longest = len(f".{path.name}.{'0' * 2 * _TEMPORARY_TOKEN_BYTES}.tmp".encode())
    try:
        allowed = os.pathconf(path.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        allowed = 255
    if longest > allowed:
        most = allowed - longest + len(path.name.encode())
        raise LedgerError(str(path), [f"its name is too long to save it: at most {most} bytes"])
    for _ in range(_TEMPORARY_ATTEMPTS):
        try:
            fd = os.open(lock, flags, 0o666)
        except OSError as exc:
            raise LedgerError(
                str(path), [f"cannot open its lock file {lock.name}: {exc.strerror or exc}"]
            ) from exc
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise LedgerError(str(path), [f"its lock file {lock.name} is not a regular file"])
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LedgerError(
                str(path),
                [
                    f"another campaign is playing from it (it holds {lock.name}): two "
                    "campaigns saving one ledger would overwrite each other's segments; "
                    "let that one pause or finish, then resume"
                ],
            ) from None
        except BaseException:
            os.close(fd)
            raise
        # A clean-up may have removed a stale lock file between the open and the lock.
        if _same_file(fd, lock):
            break
        os.close(fd)
    else:
        raise LedgerError(str(path), [f"could not keep its lock file {lock.name}"])
    try:
        yield lock
    finally:
        try:
            if _same_file(fd, lock):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(lock)
        finally:
            os.close(fd)


def still_saved(path: Path, ledger: Ledger) -> bool:
    """True unless the file ``path`` was saved again after ``ledger`` was read from it.

    Every save ends the file with its ``updated_at`` (a microsecond time stamp)
    just before the signature member, so the file's last bytes tell whether a
    later save replaced it; nothing else is read. A file gone since is no newer
    save (nothing of it can be lost).
    """
    stamp = re.escape(to_json(ledger.updated_at))
    expected = re.compile(
        rb'"updated_at"\s{0,64}:\s{0,64}' + stamp + rb'\s{0,64},\s{0,64}"signature"'
    )
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        size = os.fstat(fd).st_size
        start = max(size - _SIGNATURE_TAIL_BYTES - _STAMP_TAIL_BYTES, 0)
        tail = os.pread(fd, size - start, start)
    except OSError:
        return False
    finally:
        os.close(fd)
    return expected.search(tail) is not None


def ledger_body(ledger: Ledger) -> bytes:
    """The bytes a ledger file holds before its signature member (compact JSON)."""
    return Ledger.__pydantic_serializer__.to_json(ledger, by_alias=True, exclude={"signature"})


def signed_message(body: bytes) -> bytes:
    """What a ledger's signature signs: the context, then the SHA-256 digest of ``body``.

    Signing the digest rather than the body keeps a save's signing cost at one
    SHA-256 pass (Ed25519 would hash the body twice with SHA-512).
    """
    return LEDGER_SIGNING_CONTEXT + hashlib.sha256(body).digest()


def save_ledger(ledger: Ledger, path: Path, key: LedgerSigner) -> Path:
    """Sign ``ledger`` with ``key`` and write it to ``path`` atomically.

    A crash leaves the old file or the new one; temporary files of earlier
    killed saves of ``path`` are removed first. A save the system refuses (a
    full disk, a folder in the ledger's place) is a LedgerError.
    """
    try:
        return _save(ledger, path, key)
    except OSError as exc:
        raise LedgerError(str(path), [f"cannot save it: {exc.strerror or exc}"]) from exc


def _save(ledger: Ledger, path: Path, key: LedgerSigner) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    body = ledger_body(ledger)
    signature = LedgerSignature(
        keyid=key.key_id,
        sig=base64.b64encode(key.sign(signed_message(body))).decode("ascii"),
    )
    member = LedgerSignature.__pydantic_serializer__.to_json(signature)
    temporary, fd = _open_temporary(path)
    try:
        try:
            with os.fdopen(os.dup(fd), "wb") as handle:
                handle.write(body[:-1])
                handle.write(b',"signature":')
                handle.write(member)
                handle.write(b"}")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
    finally:
        os.close(fd)
    sync_folder(path.parent)  # the rename is durable only once the folder's entry is on disk
    return path


def load_ledger(path: Path, key: LedgerVerifier, *, consistent: bool = True) -> Ledger:
    """Read, authenticate and validate a ledger; LedgerError names what is wrong.

    Refused: a missing, oversized or malformed file, one without a signature
    (an older format names itself), one signed by another key than ``key``,
    and one whose signature does not verify (edited after it was saved). With
    ``consistent`` (the default) a ledger that disagrees with itself is
    refused too (see :func:`ledger_problems`). Temporary files of killed
    saves of ``path`` are removed.
    """
    remove_stale_temporaries(path)
    body = _authenticated_body(_read_ledger_file(path), path, key)
    ledger = _saved_form(body)
    if ledger is None:
        ledger = _strict_parse(body, path)
    problems = ledger_problems(ledger) if consistent else []
    if problems:
        raise LedgerError(str(path), problems)
    return ledger


def _read_ledger_file(path: Path) -> bytes:
    """The bytes of the ledger file ``path``, read with the size and time bounds of any file.

    A FIFO, a device or a folder given as the ledger is refused before a byte is read.
    """
    try:
        return read_bounded(path, MAX_LEDGER_BYTES, "ledger file")
    except FormatError as exc:
        if isinstance(exc.__cause__, FileNotFoundError):
            raise LedgerError(str(path), ["the file does not exist"]) from exc
        raise LedgerError(str(path), [str(exc)]) from exc


def _authenticated_body(data: bytes, path: Path, key: LedgerVerifier) -> bytes:
    """The file without its signature member, once the signature checks out under ``key``."""
    if len(data) > MAX_LEDGER_BYTES:
        raise LedgerError(str(path), [f"the file is over {MAX_LEDGER_BYTES} bytes"])
    tail = _SIGNATURE_TAIL.search(data, max(len(data) - _SIGNATURE_TAIL_BYTES, 0))
    if tail is None:
        raise LedgerError(str(path), [_unsigned_problem(data, path)])
    keyid = tail.group(1).decode("ascii")
    if keyid != key.key_id:
        raise LedgerError(
            str(path),
            [
                f"it is signed by key {keyid[:16]}..., not by the trusted key "
                f"{key.key_id[:16]}...; resume with the key that started the campaign"
            ],
        )
    # The pattern admits only base64 of 64 bytes; the round trip refuses the
    # spellings that differ in the unused low bits of the last character.
    encoded = tail.group(2)
    signature = base64.b64decode(encoded, validate=True)
    body = data[: tail.start()] + b"}"
    if base64.b64encode(signature) != encoded or not key.verify(signature, signed_message(body)):
        raise LedgerError(
            str(path),
            [
                f"its signature does not verify under key {keyid[:16]}...: the file was "
                "changed after playproof saved it (nothing in it can be trusted)"
            ],
        )
    return body


def _unsigned_problem(data: bytes, path: Path) -> str:
    """What to say about a file without a signature member: bad JSON, an old format, or edited.

    Only a file of at most :data:`MAX_UNSIGNED_PARSE_BYTES` is parsed; of a
    larger one only the ``schema`` member it starts with is read.
    """
    if len(data) <= MAX_UNSIGNED_PARSE_BYTES:
        raw = _parsed(data, path)
        schema = str(raw.get("schema"))[:60] if isinstance(raw, dict) else ""
    else:
        head = _SCHEMA_HEAD.match(data[:_SCHEMA_HEAD_BYTES])
        schema = head.group(1).decode("utf-8", "replace") if head is not None else ""
    if schema.startswith("playproof/ledger/") and schema != LEDGER_SCHEMA:
        return (
            f"the ledger format is {schema}, this playproof reads {LEDGER_SCHEMA} only "
            "(ledgers signed at every save); unsigned ledgers are not trusted: start the "
            "campaign again, or finish it with the playproof version that started it"
        )
    return (
        "it carries no signature (a ledger playproof saves ends with the signature of the "
        "campaign's key): it was edited or not written by playproof"
    )


def _saved_form(data: bytes) -> Ledger | None:
    """The ledger when ``data`` is exactly what :func:`ledger_body` gives for it, else None.

    Pydantic's JSON parser keeps the last of repeated keys, so a document it
    accepts is only taken when re-serializing the result gives back the same
    bytes: the serializer writes each key once and no NaN, so such a document
    has neither, and the strict parse would have read the same ledger. Anything
    else (other formatting, errors) goes through :func:`_strict_parse`.
    """
    if len(data) > MAX_LEDGER_BYTES:
        return None
    try:
        ledger = Ledger.model_validate_json(data, strict=True)
    except ValidationError:
        return None
    return ledger if ledger_body(ledger) == data else None


def _parsed(data: bytes, path: Path) -> object:
    """``data`` parsed refusing NaN and repeated keys; LedgerError when it is not such JSON."""
    try:
        return parse_json(data, limit=MAX_LEDGER_BYTES, what="the file")
    except FormatError as exc:
        raise LedgerError(str(path), [str(exc)]) from exc


def _strict_parse(data: bytes, path: Path) -> Ledger:
    """Parse refusing NaN and repeated keys, then validate; LedgerError names the problems."""
    _parsed(data, path)
    try:
        # Strict, as the published schema: no "0" for a number, no 1.0 for a turn.
        return Ledger.model_validate_json(data, strict=True)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in err['loc']) or 'document'}: {err['msg']}"
            for err in exc.errors()[:20]
        ]
        raise LedgerError(str(path), ["not a playproof ledger", *problems]) from exc


def _segment_problems(ledger: Ledger) -> list[str]:
    problems: list[str] = []
    count = len(ledger.decisions)
    next_turn = 1
    for position, segment in enumerate(ledger.segments):
        if segment.index != position:
            problems.append(
                f"segment at position {position} has index {segment.index}: "
                "a segment was dropped or reordered"
            )
        if segment.first_turn != next_turn:
            problems.append(
                f"segment {segment.index} starts at turn {segment.first_turn}, expected "
                f"{next_turn}: segments are not contiguous"
            )
        if segment.last_turn < segment.first_turn:
            problems.append(f"segment {segment.index} is empty or ends before it starts")
        if segment.stopped_by is not None and position != len(ledger.segments) - 1:
            problems.append(f"segment {segment.index} stopped the campaign but is not the last")
        next_turn = segment.last_turn + 1
    if next_turn - 1 != count:
        problems.append(
            f"segments cover turns 1..{next_turn - 1} but there are {count} decisions: "
            "segments do not cover the decisions"
        )
    return problems


def ledger_content_problems(ledger: Ledger) -> list[str]:
    """Per-segment digests, spend and chain heads against the decisions they cover.

    The totals of the costs and of the latencies must be finite numbers, as
    the decision loop keeps them (it stops a run before either overflows).

    Meaningful once the segments cover the decisions (see
    :func:`ledger_structure_problems`); this is the pass over every decision.
    """
    problems: list[str] = []
    inputs, costs = ledger.decisions.inputs, ledger.decisions.costs_usd
    chain = ChainLinker(
        genesis_hash(
            ledger.target.game_id,
            ledger.target.build_digest,
            ledger.target.contract_hash,
            seed=ledger.seed,
        )
    )
    spent = 0.0
    unmeasured = 0
    for segment in ledger.segments:
        low, high = segment.first_turn - 1, segment.last_turn
        words, prices = inputs[low:high], costs[low:high]
        if inputs_digest(words) != segment.inputs_digest:
            problems.append(
                f"segment {segment.index}: its inputs do not match its digest "
                "(an input was edited, dropped or reordered)"
            )
        segment_spent = 0.0
        for cost in prices:
            if cost is None:
                unmeasured += 1
            else:
                # Summed in turn order, as the loop sums them, so totals compare exactly.
                spent += cost
                segment_spent += cost
        try:
            chain.extend(segment.first_turn, words, prices)
        except UnicodeEncodeError:
            problems.append(f"segment {segment.index}: an input is not valid Unicode")
            return problems
        if segment_spent != segment.spent_usd:
            problems.append(
                f"segment {segment.index}: costs sum to {segment_spent!r}, the segment says "
                f"{segment.spent_usd!r} (a cost was edited)"
            )
        if chain.head != segment.chain_head:
            problems.append(
                f"segment {segment.index}: its decisions do not chain to its recorded head "
                "(a decision, the seed or the target pin was edited)"
            )
    if not math.isfinite(spent):
        problems.append(
            "the costs add up past the largest finite amount (a campaign stops before that)"
        )
    elif spent != ledger.spent_usd:
        problems.append(f"costs sum to {spent!r}, the ledger's spend says {ledger.spent_usd!r}")
    # Summed in turn order, as the loop sums them: the run's total must stay a finite number.
    if not math.isfinite(reduce(add, ledger.decisions.latencies_ms, 0.0)):
        problems.append(
            "the latencies add up past the largest finite amount (a campaign stops before that)"
        )
    if unmeasured != ledger.unmeasured_decisions:
        problems.append(
            f"{unmeasured} decisions have unmeasured costs, the ledger says "
            f"{ledger.unmeasured_decisions}"
        )
    if chain.head != ledger.chain_head:
        problems.append("the decisions do not chain to the ledger's chain head")
    return problems


def _limit_problems(ledger: Ledger) -> list[str]:
    problems: list[str] = []
    limits = ledger.limits
    count = len(ledger.decisions)
    if count > limits.max_turns:
        problems.append(f"{count} decisions exceed the {limits.max_turns}-turn limit")
    if limits.budget_usd is not None:
        spent = 0.0
        for turn, cost in enumerate(ledger.decisions.costs_usd, start=1):
            if cost is None:
                problems.append(f"turn {turn} has no measured cost under a budget")
                break
            if spent >= limits.budget_usd:
                problems.append(f"turn {turn} was taken after the budget was spent")
                break
            spent += cost
    oversized = first_too_large(ledger.decisions.inputs)
    if oversized is not None:
        problems.append(f"turn {oversized + 1} has an input over {MAX_INPUT_BYTES} bytes")
    if ledger.finished != (ledger.stop_reason is not None):
        problems.append("a finished ledger names its stop reason, an unfinished one does not")
    return problems


def _hook_problems(ledger: Ledger) -> list[str]:
    problems: list[str] = []
    known = len(ledger.segments)
    for kind, entries in (("analysis", ledger.analyses), ("steering note", ledger.steering)):
        seen: set[int] = set()
        for entry in entries:
            if entry.segment >= known:
                problems.append(f"{kind} for segment {entry.segment}, which does not exist")
            if entry.segment in seen:
                problems.append(f"two of {kind} for segment {entry.segment}")
            seen.add(entry.segment)
    return problems


def ledger_structure_problems(ledger: Ledger) -> list[str]:
    """How the ledger's segments, limits and hook answers disagree with its decisions.

    Cheap checks (no hashing); :func:`ledger_content_problems` checks the
    decisions themselves once these pass.
    """
    return [*_segment_problems(ledger), *_limit_problems(ledger), *_hook_problems(ledger)]


def ledger_problems(ledger: Ledger) -> list[str]:
    """Every way ``ledger`` disagrees with itself (empty when consistent)."""
    segments = _segment_problems(ledger)
    # Digests and chain heads are only meaningful over decisions the segments cover.
    content = ledger_content_problems(ledger) if not segments else []
    return [*segments, *content, *_limit_problems(ledger), *_hook_problems(ledger)]


def run_mismatches(
    ledger: Ledger, *, target: TargetPin, actor: Actor, seed: int, limits: Limits
) -> list[str]:
    """Every way ``ledger`` disagrees with the run it claims to continue (empty when it agrees)."""
    problems: list[str] = []
    mine, theirs = ledger.target, target
    for label, saved, wanted in (
        ("target", mine.name, theirs.name),
        ("game id", mine.game_id, theirs.game_id),
        ("build digest", mine.build_digest, theirs.build_digest),
        ("contract hash", mine.contract_hash, theirs.contract_hash),
        ("platform", mine.platform, theirs.platform),
        ("verification mode", mine.verification_mode.value, theirs.verification_mode.value),
        ("actor", f"{ledger.actor.kind}:{ledger.actor.id}", f"{actor.kind}:{actor.id}"),
        ("seed", ledger.seed, seed),
        ("budget", ledger.limits.budget_usd, limits.budget_usd),
        ("turn limit", ledger.limits.max_turns, limits.max_turns),
        ("stop at game over", ledger.limits.stop_at_game_over, limits.stop_at_game_over),
    ):
        if saved != wanted:
            problems.append(f"the ledger's {label} is {saved!r}, this run's is {wanted!r}")
    return problems
