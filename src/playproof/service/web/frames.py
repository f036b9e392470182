"""Replay frames regenerated on the server from a record's seed and inputs, cached on disk.

The viewer never shows a frame a submitter sent: the server opens the
packaged target the record pins, resets it with the record's seed, applies
the recorded inputs one by one and keeps what a player would have seen after
each one (the screen as PNG for emulator targets, the text observation for
text games). The same replay feeds the contract's milestone tracker, so the
viewer knows the turn at which each milestone was first verified and where
replay parted from the claim.

Frames are cached under ``<cache>/<record digest>/``; the folder is written
under a temporary name and renamed into place, so a cache folder that exists
is complete.

Drawing is bounded for the whole process, whoever asks: at most
``MAX_CONCURRENT_GENERATIONS`` records are drawn at once and at most
``MAX_WAITING_GENERATIONS`` more requests wait (each at most
``GENERATION_WAIT_S``); past that :func:`ensure_frames` raises
:class:`FramesBusy` at once. The cache holds at most ``MAX_CACHE_BYTES`` of
finished records: after each drawing the least recently viewed records are
deleted until the total is under the bound (the record just drawn is kept).
"""

from __future__ import annotations

import base64
import json
import multiprocessing
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from playproof._bounded import read_bounded
from playproof.core.contract import contract_hash
from playproof.core.game import Advancing, Game, Snapshot
from playproof.core.observation import MAX_IMAGE_BYTES, MAX_TEXT_CHARS, Observation
from playproof.core.record import ClaimedMilestone, RunRecord, parse_run_record
from playproof.core.tracker import MilestoneTracker
from playproof.errors import FormatError, PlayproofError, ServiceError
from playproof.targets import Target, get_target

__all__ = [
    "FRAME_IMAGE_SCALE",
    "MAX_CACHE_BYTES",
    "MAX_CONCURRENT_GENERATIONS",
    "MAX_VIEWER_TURNS",
    "MAX_WAITING_GENERATIONS",
    "FrameIndex",
    "FrameUnavailable",
    "FramesBusy",
    "MilestoneMark",
    "cached_events",
    "cached_index",
    "ensure_frames",
    "evict",
    "frame_name",
    "generate_frames",
    "is_policy_bound",
    "packaged_target",
    "read_frame",
]

FRAME_IMAGE_SCALE = 2
"""Emulator screens are shown at twice their size (the ``image_scale`` option)."""
MAX_VIEWER_TURNS = 20_000
"""Runs with more decisions than this get no replay viewer (the cache would be too large)."""
MAX_INDEX_BYTES = 4 << 20
"""The largest frame index the viewer reads back from its cache."""
FRAME_GENERATION_TIMEOUT_S = 900.0
"""The longest drawing one run's frames may take before the child process is stopped."""
MAX_ERROR_CHARS = 1000
MAX_EVENTS_BYTES = 8 << 20
"""The largest events file (a policy-bound run's replayed events) read back from the cache."""
EVENTS_FILE = "events.json"
"""The run events the replay produced, kept for the run page of a policy-bound run."""
_ERROR_FILE = "error.txt"
IMAGE_EXTRAS = frozenset({"ale", "gym", "pyboy", "retro"})
"""Targets of these adapters draw their screen as a PNG when given ``image_scale``."""
SCREEN_HASHING_FAMILIES = frozenset({"ale", "pyboy", "retro"})
"""Platform families whose ``frame_hash`` digests the very screen their PNG is drawn from.

For them two turns with the same frame hash show the same picture, so the
viewer encodes each distinct screen once and links the repeats to it (the
PNG encoder is deterministic). Gymnasium is not here: its frame hash digests
the environment's observation, which need not determine the rendered picture.
"""
ADVANCE_CHUNK = 256
"""Inputs per call when the game applies a batch (a worker round trip each)."""
MAX_CONCURRENT_GENERATIONS = 2
"""Records whose frames are drawn at once in this process (a child process each for workers)."""
MAX_WAITING_GENERATIONS = 4
"""Requests that may wait for a drawing slot; past them the viewer is busy at once."""
GENERATION_WAIT_S = 30.0
"""The longest a request waits for a slot, or for another request drawing the same record."""
BUSY_RETRY_AFTER_S = 30
"""The ``Retry-After`` a busy viewer suggests, in seconds."""
MAX_CACHE_BYTES = 2 << 30
"""The frame cache's bound on finished records (least recently viewed ones are deleted)."""
SIZE_FILE = "bytes.txt"
"""The bytes a cached record's folder holds (hard-linked screens counted once)."""
_TOUCH_EVERY_S = 60.0
"""A viewed record's last-use time is brought forward at most this often."""
_LOCKS_GUARD = threading.Lock()
_LOCKS: dict[str, threading.Lock] = {}
_EVICTION = threading.Lock()


class FrameUnavailable(ServiceError):
    """The server cannot regenerate this run's frames; the message says why."""


class FramesBusy(FrameUnavailable):
    """Too many frame drawings are running or waiting; ``retry_after`` seconds is a fair wait."""

    def __init__(self, message: str, retry_after: int = BUSY_RETRY_AFTER_S) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _busy() -> FramesBusy:
    return FramesBusy(
        "the replay viewer is busy drawing other runs' frames (it draws "
        f"{MAX_CONCURRENT_GENERATIONS} at a time): try again in {BUSY_RETRY_AFTER_S} seconds"
    )


class _Gate:
    """A process-wide bound on frame drawing: ``slots`` draw at once, ``queue`` more may wait."""

    def __init__(self, slots: int, queue: int) -> None:
        self.slots, self.queue = slots, queue
        self._changed = threading.Condition()
        self._admitted = 0  # drawing, or waiting for a slot or for the record's lock
        self._running = 0

    @contextmanager
    def admitted(self) -> Iterator[None]:
        """Count this request in, or raise :class:`FramesBusy` when the queue is full."""
        with self._changed:
            if self._admitted >= self.slots + self.queue:
                raise _busy()
            self._admitted += 1
        try:
            yield
        finally:
            with self._changed:
                self._admitted -= 1

    @contextmanager
    def slot(self, deadline: float) -> Iterator[None]:
        """Draw in one of the slots; :class:`FramesBusy` when none frees before ``deadline``."""
        with self._changed:
            free = self._changed.wait_for(
                lambda: self._running < self.slots, timeout=max(0.0, deadline - time.monotonic())
            )
            if not free:
                raise _busy()
            self._running += 1
        try:
            yield
        finally:
            with self._changed:
                self._running -= 1
                self._changed.notify_all()


_GATE = _Gate(MAX_CONCURRENT_GENERATIONS, MAX_WAITING_GENERATIONS)


class MilestoneMark(BaseModel):
    """A milestone and the turn at which it was first reached (0 = right after reset)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    turn: Annotated[int, Field(ge=0)]


class FrameIndex(BaseModel):
    """What the cache holds for one record: frames ``0..turns`` and the milestone turns.

    ``verified`` are the milestones the server's replay reached; ``claimed``
    the record's first claim of each milestone of the packaged contract (a
    record may repeat a claim or name made-up milestones any number of times;
    the index stays as small as the contract). ``diverged_at`` is the first
    turn at which replay and every claim of the record disagree (None when
    replay agrees with them all).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    record_digest: str
    kind: Literal["image", "text"]
    turns: Annotated[int, Field(ge=0)]
    verified: tuple[MilestoneMark, ...]
    claimed: tuple[MilestoneMark, ...]
    diverged_at: int | None
    divergence: str | None
    events: bool = False
    """True when the replay's run events are cached too (policy-bound targets)."""

    @property
    def media_type(self) -> str:
        """The media type of every frame file."""
        return "image/png" if self.kind == "image" else "text/plain; charset=utf-8"


def frame_name(turn: int, kind: str) -> str:
    """The cache file name of frame ``turn``."""
    return f"{turn:07d}.{'png' if kind == 'image' else 'txt'}"


def _lock_for(digest: str) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(digest, threading.Lock())


def _packaged(record: RunRecord) -> Target:
    name = record.target.name
    if not name:
        raise FrameUnavailable(
            "this run played an ad-hoc target: the server replays only packaged targets"
        )
    try:
        target = get_target(name)
    except PlayproofError as exc:
        raise FrameUnavailable(f"this server cannot open target {name}: {exc}") from exc
    if target.spec.build_digest != record.target.build_digest:
        raise FrameUnavailable(
            f"the record pins build {record.target.build_digest[:16]}... of {name}; this "
            f"server has build {target.spec.build_digest[:16]}..."
        )
    return target


def packaged_target(record: RunRecord) -> Target | None:
    """The packaged target of the record's build here, or None (ad-hoc, unknown, other build)."""
    try:
        return _packaged(record)
    except FrameUnavailable:
        return None


def _open_for_frames(target: Target) -> tuple[Game, Literal["image", "text"]]:
    # Emulator targets draw their screen when asked; text games such as 2048
    # and policy-bound targets are shown by their text observation. The game
    # runs in this process: ensure_frames puts a worker target's whole
    # generation in a child process instead, which is faster than one worker
    # round trip per batch of screens and isolates a crash just the same.
    try:
        if target.spec.extra in IMAGE_EXTRAS:
            return target.open(worker=False, image_scale=FRAME_IMAGE_SCALE), "image"
        return target.open(worker=False), "text"
    except PlayproofError as exc:  # e.g. the target's extra is not installed on this server
        raise FrameUnavailable(f"this server cannot open target {target.name}: {exc}") from exc


def _frame_bytes(observation: Observation | None, kind: str) -> bytes:
    if observation is None:
        raise FrameUnavailable("the game returned no observation to draw")
    if kind == "text":
        return observation.text[:MAX_TEXT_CHARS].encode("utf-8")
    if not observation.images:
        raise FrameUnavailable("the game drew no screen image")
    return base64.b64decode(observation.images[0].data)


def _snapshots(game: Game, inputs: tuple[str, ...], seen: set[str]) -> Iterator[Snapshot]:
    """The snapshot after each input; no observation when its frame hash is in ``seen``."""
    if isinstance(game, Advancing):
        for start in range(0, len(inputs), ADVANCE_CHUNK):
            yield from game.advance_many(inputs[start : start + ADVANCE_CHUNK], observe=True)
        return
    for word in inputs:
        game.step(word)
        evidence = game.evidence()
        repeat = evidence.frame_hash is not None and evidence.frame_hash in seen
        observation = None if repeat else game.observe()
        yield Snapshot(evidence=evidence, over=game.over(), observation=observation)


def _divergence(
    verified: tuple[MilestoneMark, ...], claimed: Sequence[ClaimedMilestone]
) -> tuple[int | None, str | None]:
    reached = {mark.id: mark.turn for mark in verified}
    found: list[tuple[int, str]] = []
    for claim in claimed:
        turn = reached.get(claim.id)
        if turn is None:
            found.append(
                (claim.turn, f"{claim.id} is claimed at turn {claim.turn}; replay never reaches it")
            )
        elif turn != claim.turn:
            first = min(turn, claim.turn)
            found.append(
                (
                    first,
                    f"{claim.id} is claimed at turn {claim.turn}; replay reaches it at turn {turn}",
                )
            )
    claimed_ids = {c.id for c in claimed}
    for mark in verified:
        if mark.id not in claimed_ids:
            found.append(
                (
                    mark.turn,
                    f"replay reaches {mark.id} at turn {mark.turn}; the record does not claim it",
                )
            )
    if not found:
        return None, None
    turn, why = min(found)
    return turn, why


class _FrameWriter:
    """Writes frame files; a screen seen before is linked to its first file, not encoded again."""

    def __init__(self, folder: Path, kind: str, family: str) -> None:
        self.folder, self.kind = folder, kind
        self.reuse = kind == "image" and family in SCREEN_HASHING_FAMILIES
        self.seen: set[str] = set()
        self._first: dict[str, Path] = {}

    def write(self, turn: int, snapshot: Snapshot) -> None:
        path = self.folder / frame_name(turn, self.kind)
        key = snapshot.evidence.frame_hash if self.reuse else None
        earlier = self._first.get(key) if key is not None else None
        if earlier is not None:
            try:
                os.link(earlier, path)
                return
            except OSError:  # a file system without hard links: copy the bytes
                shutil.copyfile(earlier, path)
                return
        path.write_bytes(_frame_bytes(snapshot.observation, self.kind))
        if key is not None:
            self._first[key] = path
            self.seen.add(key)


def is_policy_bound(target: Target) -> bool:
    """True for a target whose game is a policy-bound session (``solana/...``)."""
    return target.spec.factory.startswith("playproof.policy.")


def cached_events(cache: Path, record_digest: str) -> tuple[str, ...] | None:
    """The run events the viewer's replay of a policy-bound run produced, if cached."""
    path = _cache_folder(cache, record_digest) / EVENTS_FILE
    if not path.is_file():
        return None
    try:
        value = json.loads(read_bounded(path, MAX_EVENTS_BYTES, "replayed events"))
    except (FormatError, ValueError):
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    return tuple(value)


def _check_length(record: RunRecord) -> None:
    if len(record.decisions) > MAX_VIEWER_TURNS:
        raise FrameUnavailable(
            f"the run has {len(record.decisions)} decisions; the viewer shows at most "
            f"{MAX_VIEWER_TURNS}"
        )


def generate_frames(record: RunRecord, record_digest: str, folder: Path) -> FrameIndex:
    """Replay ``record`` on its packaged target and write every frame into ``folder``.

    Raises :class:`FrameUnavailable` when the target is not packaged here,
    its build differs from the pinned one or the run is too long to show.
    """
    _check_length(record)
    target = _packaged(record)
    same_contract = contract_hash(target.contract) == record.target.contract_hash
    tracker = MilestoneTracker(target.contract) if same_contract else None
    folder.mkdir(parents=True, exist_ok=True)
    game, kind = _open_for_frames(target)
    writer = _FrameWriter(folder, kind, game.descriptor.platform.family)
    events: list[str] | None = [] if is_policy_bound(target) else None
    try:
        game.reset(record.seed)
        first = Snapshot(evidence=game.evidence(), over=game.over(), observation=game.observe())
        if tracker is not None:
            tracker.observe(first.evidence, 0)
        if events is not None:
            events.extend(first.evidence.events)
        writer.write(0, first)
        turns = 0
        for turns, snapshot in enumerate(_snapshots(game, record.inputs, writer.seen), start=1):
            if tracker is not None:
                tracker.observe(snapshot.evidence, turns)
            if events is not None:
                events.extend(snapshot.evidence.events)
            writer.write(turns, snapshot)
    finally:
        game.close()
    if events is not None:
        (folder / EVENTS_FILE).write_text(json.dumps(events), encoding="utf-8")
    verified = tuple(
        MilestoneMark(id=m.id, turn=m.turn) for m in (tracker.verified if tracker else ())
    )
    known = {milestone.id for milestone in target.contract.milestones}
    first_claims: dict[str, int] = {}
    for claim in record.claimed:
        if claim.id in known:
            first_claims.setdefault(claim.id, claim.turn)
    claimed = tuple(MilestoneMark(id=name, turn=turn) for name, turn in first_claims.items())
    diverged_at, divergence = (
        _divergence(verified, record.claimed)
        if tracker is not None
        else (None, "the record's contract is not the packaged one: milestones are not marked")
    )
    index = FrameIndex(
        record_digest=record_digest,
        kind=kind,
        turns=turns,
        verified=verified,
        claimed=claimed,
        diverged_at=diverged_at,
        divergence=divergence,
        events=events is not None,
    )
    (folder / "index.json").write_text(index.model_dump_json(), encoding="utf-8")
    return index


def _cache_folder(cache: Path, record_digest: str) -> Path:
    if len(record_digest) != 64 or not all(c in "0123456789abcdef" for c in record_digest):
        raise ServiceError("a record digest is 64 lowercase hex digits")
    return cache / record_digest


def cached_index(cache: Path, record_digest: str) -> FrameIndex | None:
    """The frame index of a record already in the cache, or None."""
    index_file = _cache_folder(cache, record_digest) / "index.json"
    if not index_file.is_file():
        return None
    try:
        return FrameIndex.model_validate_json(
            read_bounded(index_file, MAX_INDEX_BYTES, "frame index")
        )
    except (FormatError, ValidationError):
        return None


def _generate_in_child(record: dict[str, object], record_digest: str, folder: str) -> None:
    """The body of the child process: draw the frames, or leave the reason in ``error.txt``."""
    try:
        generate_frames(parse_run_record(record), record_digest, Path(folder))
    except PlayproofError as exc:
        (Path(folder) / _ERROR_FILE).write_text(str(exc)[:MAX_ERROR_CHARS], encoding="utf-8")


def _generate_isolated(record: RunRecord, record_digest: str, folder: Path) -> FrameIndex:
    """Draw the frames in a fresh child process when the target runs in a worker."""
    _check_length(record)  # before a child is spawned for nothing
    target = _packaged(record)
    if target.spec.isolation != "worker":
        return generate_frames(record, record_digest, folder)
    folder.mkdir(parents=True, exist_ok=True)
    child = multiprocessing.get_context("spawn").Process(
        target=_generate_in_child,
        args=(record.to_json(), record_digest, str(folder)),
        daemon=True,
    )
    child.start()
    child.join(FRAME_GENERATION_TIMEOUT_S)
    if child.is_alive():
        child.kill()
        child.join()
        raise FrameUnavailable(
            f"drawing the frames took over {FRAME_GENERATION_TIMEOUT_S:.0f} s and was stopped"
        )
    error = folder / _ERROR_FILE
    if error.is_file():
        reason = read_bounded(error, 4 * MAX_ERROR_CHARS, "frame error").decode("utf-8", "replace")
        raise FrameUnavailable(reason)
    index_file = folder / "index.json"
    if child.exitcode != 0 or not index_file.is_file():
        raise FrameUnavailable(
            f"the replay that draws the frames stopped (exit code {child.exitcode})"
        )
    return FrameIndex.model_validate_json(read_bounded(index_file, MAX_INDEX_BYTES, "frame index"))


def _folder_bytes(folder: Path) -> int:
    """The bytes the files in ``folder`` take (a hard-linked screen counted once)."""
    seen: set[int] = set()
    total = 0
    with os.scandir(folder) as entries:
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            if entry.is_file(follow_symlinks=False) and info.st_ino not in seen:
                seen.add(info.st_ino)
                total += info.st_size
    return total


def _recorded_bytes(folder: Path) -> int:
    try:
        return int((folder / SIZE_FILE).read_text(encoding="ascii"))
    except (OSError, ValueError):  # an entry cached before sizes were kept
        try:
            return _folder_bytes(folder)
        except OSError:
            return 0


def _touch(cache: Path, record_digest: str) -> None:
    """Mark the record's frames as just viewed (for least-recently-used eviction)."""
    index_file = _cache_folder(cache, record_digest) / "index.json"
    try:
        if time.time() - index_file.stat().st_mtime > _TOUCH_EVERY_S:
            os.utime(index_file)
    except OSError:  # evicted meanwhile: the next view draws it again
        pass


def _is_digest(name: str) -> bool:
    return len(name) == 64 and all(c in "0123456789abcdef" for c in name)


def evict(cache: Path, keep: str | None = None, limit: int | None = None) -> int:
    """Delete the least recently viewed records' frames until the cache holds ``limit`` bytes.

    ``keep`` (the record just drawn) is never deleted; scratch folders left by
    a drawing that died with the server are. Returns the bytes the cached
    records hold afterwards.
    """
    bound = MAX_CACHE_BYTES if limit is None else limit
    with _EVICTION:
        found: list[tuple[float, str, int]] = []
        total = 0
        try:
            listing = list(os.scandir(cache))
        except OSError:
            return 0
        for entry in listing:
            if not entry.is_dir(follow_symlinks=False):
                continue
            if entry.name.startswith((".partial-", ".evicted-")):
                try:  # a live drawing adds a file far more often than this
                    stale = time.time() - entry.stat().st_mtime > FRAME_GENERATION_TIMEOUT_S
                except OSError:
                    continue
                if stale:
                    shutil.rmtree(entry.path, ignore_errors=True)
                continue
            if not _is_digest(entry.name):
                continue
            folder = Path(entry.path)
            try:
                used = (folder / "index.json").stat().st_mtime
            except OSError:
                used = 0.0  # an incomplete entry: the first to go
            size = _recorded_bytes(folder)
            found.append((used, entry.name, size))
            total += size
        for _used, name, size in sorted(found):
            if total <= bound:
                break
            if name == keep:
                continue
            doomed = cache / f".evicted-{name}-{uuid.uuid4().hex}"
            try:
                os.replace(cache / name, doomed)
            except OSError:
                continue
            shutil.rmtree(doomed, ignore_errors=True)
            total -= size
        return total


def ensure_frames(
    cache: Path, record: RunRecord, record_digest: str, *, need_events: bool = False
) -> FrameIndex:
    """The record's frames, generated once (one generation per record at a time).

    ``need_events``: a cache entry made before run events were kept is made again.
    Raises :class:`FramesBusy` when the process-wide bound on drawing is
    reached (nothing is drawn), :class:`FrameUnavailable` when the frames
    cannot be drawn here.
    """
    found = cached_index(cache, record_digest)
    if found is not None and (found.events or not need_events):
        _touch(cache, record_digest)
        return found
    with _GATE.admitted():
        deadline = time.monotonic() + GENERATION_WAIT_S
        lock = _lock_for(record_digest)
        if not lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise _busy()
        try:
            found = cached_index(cache, record_digest)
            if found is not None and (found.events or not need_events):
                return found
            final = _cache_folder(cache, record_digest)
            scratch = cache / f".partial-{record_digest}-{uuid.uuid4().hex}"
            with _GATE.slot(deadline):
                try:
                    index = _generate_isolated(record, record_digest, scratch)
                    (scratch / SIZE_FILE).write_text(str(_folder_bytes(scratch)), encoding="ascii")
                    if final.exists():  # an older, unreadable cache entry
                        shutil.rmtree(final, ignore_errors=True)
                    os.replace(scratch, final)
                finally:
                    shutil.rmtree(scratch, ignore_errors=True)
            evict(cache, keep=record_digest)
            return index
        finally:
            lock.release()


def read_frame(cache: Path, index: FrameIndex, turn: int) -> bytes:
    """The bytes of frame ``turn`` (0..turns) from the cache."""
    if not 0 <= turn <= index.turns:
        raise ServiceError(f"turn {turn} is outside 0..{index.turns}")
    path = _cache_folder(cache, index.record_digest) / frame_name(turn, index.kind)
    limit = MAX_IMAGE_BYTES if index.kind == "image" else 4 * MAX_TEXT_CHARS
    return read_bounded(path, limit, "cached frame")
