"""The matrix folder: one signed record per cell, written atomically, read bounded.

A cell's record is ``<cell id>.json`` (a DSSE envelope). It is written to a
temporary file in the same folder, flushed to disk and renamed over the final
name, so a killed run leaves either the whole record or none. The cell's
identity travels inside the signed record (``provenance.settings.options``:
``matrix_agent``, ``matrix_repetition``, ``matrix_config``), so a record that
was renamed, or made under another configuration, is recognised.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from playproof._atomic import write_atomic
from playproof._bounded import read_bounded
from playproof.core.record import RunRecord
from playproof.errors import FormatError, RunError
from playproof.matrix._spec import Cell, MatrixSpec
from playproof.sign import MAX_ENVELOPE_BYTES, VerifyingKey, verify_envelope

__all__ = [
    "CONFIG_OPTION",
    "LOCK_FILE",
    "PROFILE_OPTION",
    "RECORD_SUFFIX",
    "REPETITION_OPTION",
    "SPEC_FILE",
    "cell_of",
    "finished_record",
    "hold_folder",
    "record_path",
    "remove_stale_temporaries",
    "write_atomic",
]

RECORD_SUFFIX = ".json"
SPEC_FILE = "matrix.spec.json"
"""The spec a run was started with, kept beside the records (lists missing cells)."""
PROFILE_OPTION = "matrix_agent"
REPETITION_OPTION = "matrix_repetition"
CONFIG_OPTION = "matrix_config"
LOCK_FILE = ".matrix.lock"
"""Held (``flock``) by the run playing into the folder (see :func:`hold_folder`)."""


def record_path(folder: Path, cell: Cell) -> Path:
    """Where ``cell``'s signed record lives."""
    return folder / f"{cell.id}{RECORD_SUFFIX}"


@contextlib.contextmanager
def hold_folder(folder: Path) -> Iterator[Path]:
    """Hold the lock that lets one run at a time play into ``folder``; yield the lock file.

    An exclusive ``flock`` on ``<folder>/.matrix.lock``, released when the
    block ends or the process dies (the file stays; only the lock matters).
    Another run holding it is a RunError: two runs on one folder would play,
    and pay for, the same cells twice.
    """
    lock = folder / LOCK_FILE
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(lock, flags, 0o644)
    except OSError as exc:
        raise RunError(f"cannot open the matrix's lock file {lock}: {exc.strerror or exc}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RunError(f"the matrix's lock file {lock} is not a regular file")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunError(
                f"another matrix run is playing into {folder}; let it finish, then rerun "
                "to resume (two runs would play the same cells twice)"
            ) from None
        yield lock
    finally:
        os.close(fd)


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Delete temporary files that a killed writer left behind (its process is gone)."""
    removed = []
    for path in folder.glob(".*.tmp"):
        pid = path.name.removesuffix(".tmp").rpartition(".")[2]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # no process has it, or none can
        return False
    except OSError:
        return True
    return True


def cell_of(record: RunRecord) -> Cell | None:
    """The matrix cell a record says it plays, or None when it is no matrix record."""
    settings = record.provenance.settings
    options = settings.options if settings is not None else {}
    agent = options.get(PROFILE_OPTION)
    repetition = options.get(REPETITION_OPTION)
    name = record.target.name
    if not isinstance(agent, str) or type(repetition) is not int or name is None:
        return None
    try:
        return Cell(agent=agent, target=name, seed=record.seed, repetition=repetition)
    except ValueError:
        return None


def finished_record(
    folder: Path,
    cell: Cell,
    spec: MatrixSpec,
    key: VerifyingKey,
    pin: tuple[str, str] | None = None,
) -> RunRecord | None:
    """The cell's record if one is there, signed by ``key``, for this cell and configuration.

    Anything else (no file, an unreadable or torn file, a bad signature, a
    record of another cell or made under another configuration, or, when
    ``pin`` (build digest, contract hash) is given, of another build or
    contract of the target) is None: the cell is played again and its file
    replaced.
    """
    path = record_path(folder, cell)
    if not path.is_file():
        return None
    try:
        data = read_bounded(path, MAX_ENVELOPE_BYTES, "matrix record")
    except FormatError:
        return None
    verdict = verify_envelope(data, key)
    record = verdict.record
    if not verdict.clean or record is None or cell_of(record) != cell:
        return None
    if pin is not None and (record.target.build_digest, record.target.contract_hash) != pin:
        return None  # played on an older build or contract: not this target's result now
    settings = record.provenance.settings
    stored = settings.options.get(CONFIG_OPTION) if settings is not None else None
    return record if stored == spec.config_digest(spec.profile(cell.agent)) else None
