"""Read and verify every record of a matrix folder, for the report.

Every record file is read bounded and its signature checked against the
trusted keys. A record is then verified by replay, on the executor, unless a
verification stored beside it (``<cell id>.verification.json``) names the
same record digest and carries a MAC under this user's cache key (see
:func:`cache_key`): then that stored verification stands. Nothing signs the
file, and whoever hands over a folder writes what is in it, so a stored
verification this user's own replays did not write (another machine's, or
an edited one) is replayed again. Replays are stored that way for the next
report. A record that fails any check, is no matrix
record, sits under another cell's file name, or (when the folder keeps the
spec it was last run with) is no cell of that spec or was made under another
configuration is rejected with its reasons, and so is a kept spec that
cannot be read; nothing is dropped silently.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from playproof._api import verify_record
from playproof._bounded import read_bounded
from playproof.core.canonical import canonical_json, parse_json
from playproof.core.record import RunRecord
from playproof.core.report import VerificationReport
from playproof.errors import FormatError, RunError
from playproof.matrix._executor import abandon, open_executor
from playproof.matrix._spec import MAX_SPEC_BYTES, Cell, MatrixSpec
from playproof.matrix._store import (
    CONFIG_OPTION,
    RECORD_SUFFIX,
    SPEC_FILE,
    cell_of,
    write_atomic,
)
from playproof.sign import MAX_ENVELOPE_BYTES, VerifyingKey, record_digest, verify_envelope

__all__ = [
    "MAX_RECORD_FILES",
    "MAX_STORED_VERIFICATION_BYTES",
    "VERIFICATION_SUFFIX",
    "Collected",
    "Rejected",
    "StoredVerification",
    "VerifiedCell",
    "collect",
]

MAX_RECORD_FILES = 100_000
"""The most record files one report reads."""
MAX_STORED_VERIFICATION_BYTES = 1 << 20
"""The largest stored verification read."""
VERIFICATION_SUFFIX = ".verification.json"
VERIFICATION_SCHEMA = "playproof/matrix-verification/v1"
_NOT_RECORDS = frozenset({SPEC_FILE, "report.json"})
"""Files a matrix folder may hold beside its records (the spec; a report written into it)."""
REPLAY_TIMEOUT_S = 3600.0
"""Seconds one replay may take before the report gives up."""


class StoredVerification(BaseModel):
    """A verification kept beside a record: valid only for the record digest it names."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_: Literal["playproof/matrix-verification/v1"] = Field(
        "playproof/matrix-verification/v1", alias="schema"
    )
    record_digest: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    report: VerificationReport
    mac: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] | None = None
    """HMAC-SHA256 of the digest and the report under the writer's cache key (None: none
    kept, and such a file is never trusted)."""


@dataclass(frozen=True)
class VerifiedCell:
    """A record that verified clean, with what replay recomputed."""

    file: str
    cell: Cell
    record: RunRecord
    report: VerificationReport
    source: Literal["replay", "stored"]


@dataclass(frozen=True)
class Rejected:
    """A record file left out of every score, and why."""

    file: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Collected:
    """The clean cells, the rejected files, and the cells the spec names that have no record."""

    cells: list[VerifiedCell]
    rejected: list[Rejected]
    missing: list[str]
    spec: MatrixSpec | None


def _record_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise FormatError(f"{folder} is not a folder of matrix records; give the --out of a run")
    found = []
    for path in folder.iterdir():
        name = path.name
        if name.startswith(".") or name in _NOT_RECORDS or name.endswith(VERIFICATION_SUFFIX):
            continue
        if name.endswith(RECORD_SUFFIX):
            found.append(path)
            if len(found) > MAX_RECORD_FILES:
                raise FormatError(f"{folder} holds over {MAX_RECORD_FILES} record files")
    return sorted(found)


def _stored_spec(folder: Path) -> tuple[MatrixSpec | None, str | None]:
    """The spec the folder was last run with (None without one), and why it cannot be read."""
    path = folder / SPEC_FILE
    if not os.path.lexists(path):
        return None, None
    try:
        raw = parse_json(
            read_bounded(path, MAX_SPEC_BYTES, "matrix spec"), limit=MAX_SPEC_BYTES, what=SPEC_FILE
        )
        return MatrixSpec.model_validate(raw), None
    except FormatError as exc:
        return None, str(exc)
    except ValidationError as exc:
        return None, f"{SPEC_FILE} is not a matrix spec ({exc.error_count()} problems)"


CACHE_KEY_FILE = Path("playproof") / "matrix-verification.key"
"""Under the user's cache folder (``$XDG_CACHE_HOME``, else ``~/.cache``): the MAC key."""


def cache_key() -> bytes | None:
    """This user's key for stored verifications, made (mode 0600) on first use.

    None when it can be neither read nor made (no home folder, a read-only one):
    then nothing stored is trusted and nothing is stored.
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / CACHE_KEY_FILE
    try:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(secrets.token_bytes(32))
        key = read_bounded(path, 64, "matrix cache key")
    except (OSError, FormatError):
        return None
    return key if len(key) == 32 else None


def _mac(key: bytes, digest: str, report: VerificationReport) -> str:
    body = canonical_json(report.model_dump(mode="json"))
    message = b"playproof/matrix-verification/v1\n" + digest.encode("ascii") + b"\n" + body
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _stored(path: Path, digest: str, key: bytes | None) -> VerificationReport | None:
    """The verification beside a record, if there is one, for this very record, kept by us."""
    if key is None or not path.is_file():
        return None
    try:
        data = read_bounded(path, MAX_STORED_VERIFICATION_BYTES, "stored verification")
        stored = StoredVerification.model_validate_json(data)
        expected = _mac(key, stored.record_digest, stored.report)
    except (FormatError, ValidationError):
        return None
    if stored.mac is None or not hmac.compare_digest(stored.mac, expected):
        return None
    return stored.report if stored.record_digest == digest else None


def _spec_problem(spec: MatrixSpec, named: set[str], cell: Cell, record: RunRecord) -> str | None:
    """Why a record does not belong to the spec the folder was last run with (None: it does).

    A rerun with a changed spec replaces the records it replays, but one it has
    not reached yet (killed, or a cell that failed) or one the new spec no longer
    names is still in the folder: it must not be scored as the new spec's.
    """
    if cell.id not in named:
        return f"not a cell of the spec in {SPEC_FILE} (left by a run with another spec)"
    settings = record.provenance.settings
    made_under = settings.options.get(CONFIG_OPTION) if settings is not None else None
    if made_under != spec.config_digest(spec.profile(cell.agent)):
        return (
            f"made under another configuration of agent {cell.agent} than the spec in "
            f"{SPEC_FILE} (rerun the matrix to replay it)"
        )
    return None


def _replay(record: RunRecord, worker: bool | None) -> VerificationReport:
    return verify_record(record, worker=worker)


def _reasons(report: VerificationReport) -> tuple[str, ...]:
    return tuple(f"{c.id}: {c.reason}" for c in report.failed()) or ("rejected",)


def collect(
    folder: Path,
    keys: Sequence[VerifyingKey],
    *,
    executor: str = "local",
    jobs: int | None = None,
    trust_stored: bool = True,
    on_record: Callable[[int, int], None] | None = None,
    address: str | None = None,
    on_retry: Callable[[str], None] | None = None,
) -> Collected:
    """Verify every record in ``folder`` (see the module docstring)."""
    files = _record_files(folder)
    spec, unreadable = _stored_spec(folder)
    named = {c.id for c in spec.cells()} if spec is not None else set()
    key = cache_key()
    pool, _ = open_executor(executor, jobs, address=address, on_retry=on_retry)
    cells: list[VerifiedCell] = []
    rejected: list[Rejected] = []
    if unreadable is not None:
        unchecked = "missing cells and the records' configurations cannot be checked"
        rejected.append(Rejected(SPEC_FILE, (f"{unreadable}: {unchecked}",)))
    replays: dict[Future[VerificationReport], tuple[Path, Cell, RunRecord, str]] = {}
    finished = False
    try:
        for path in files:
            try:
                data = read_bounded(path, MAX_ENVELOPE_BYTES, "matrix record")
            except FormatError as exc:
                rejected.append(Rejected(path.name, (f"record-well-formed: {exc}",)))
                continue
            verdict = verify_envelope(data, keys)
            record = verdict.record
            if not verdict.clean or record is None:
                rejected.append(Rejected(path.name, tuple(verdict.reasons()) or ("rejected",)))
                continue
            cell = cell_of(record)
            if cell is None:
                rejected.append(Rejected(path.name, ("not a matrix record (no cell recorded)",)))
                continue
            if path.name != f"{cell.id}{RECORD_SUFFIX}":
                rejected.append(
                    Rejected(path.name, (f"the record is cell {cell.id}, not this file's cell",))
                )
                continue
            if spec is not None:
                problem = _spec_problem(spec, named, cell, record)
                if problem is not None:
                    rejected.append(Rejected(path.name, (problem,)))
                    continue
            digest = record_digest(record)
            sidecar = path.with_name(f"{cell.id}{VERIFICATION_SUFFIX}")
            report = _stored(sidecar, digest, key) if trust_stored else None
            if report is not None and report.clean:
                cells.append(VerifiedCell(path.name, cell, record, report, "stored"))
                continue
            if report is not None:
                rejected.append(Rejected(path.name, _reasons(report)))
                continue
            in_pool = executor in ("local", "ray")
            future = pool.submit(_replay, record, False if in_pool else None)
            replays[future] = (path, cell, record, digest)
        for done, (future, (path, cell, record, digest)) in enumerate(replays.items(), 1):
            try:
                report = future.result(timeout=REPLAY_TIMEOUT_S)
            except TimeoutError as exc:
                raise RunError(f"replaying {path.name} took over {REPLAY_TIMEOUT_S:.0f} s") from exc
            if key is not None:
                mac = _mac(key, digest, report)
                stored = StoredVerification(record_digest=digest, report=report, mac=mac)
                sidecar = path.with_name(f"{cell.id}{VERIFICATION_SUFFIX}")
                # Only a cache: where it cannot be written (a read-only folder), the next
                # report replays again.
                with contextlib.suppress(OSError):
                    write_atomic(sidecar, stored.model_dump_json(by_alias=True).encode())
            if on_record is not None:
                on_record(done, len(replays))
            if report.clean:
                cells.append(VerifiedCell(path.name, cell, record, report, "replay"))
            else:
                rejected.append(Rejected(path.name, _reasons(report)))
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True, cancel_futures=True)
        else:
            abandon(pool)  # a replay may hang (the timeout): waiting would wait for it forever
    missing: list[str] = []
    if spec is not None:
        present = {c.cell.id for c in cells} | {
            r.file.removesuffix(RECORD_SUFFIX) for r in rejected
        }
        missing = [c.id for c in spec.cells() if c.id not in present]
    cells.sort(key=lambda c: c.file)
    rejected.sort(key=lambda r: r.file)
    return Collected(cells=cells, rejected=rejected, missing=missing, spec=spec)
