"""Batch verification: many signed records, each verified as one task on an executor.

The files are read here (bounded), so the executor's nodes need no shared
folder: each task receives a record's bytes, the transcript beside it (a
trusted-recorder record's ``NAME.transcript.json``, when there is one), the
trusted public keys and the contract given for the batch, and returns the
verification report, exactly what ``playproof verify FILE`` computes for that
one file. Each record is verified by its own mode: replayed, checked against
its transcript, or judged from the receipts it pins. A missing or unreadable
transcript is that record's failure, never the batch's. Reports come back in
the order of the files. When no record finishes within ``BATCH_TIMEOUT_S``,
the records still being verified are rejected as not reproduced in time (the
verdicts already in are kept) and the pool's processes are ended.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

from playproof._api import verify_record, verify_signed
from playproof._bounded import read_bounded
from playproof.adapters.desktop import transcript_path_for
from playproof.core.contract import Contract
from playproof.core.report import CheckResult, VerificationReport
from playproof.core.transcript import MAX_TRANSCRIPT_BYTES
from playproof.errors import FormatError, RunError
from playproof.exec._executors import RetryNotice, abandon, open_executor
from playproof.sign import MAX_ENVELOPE_BYTES, VerifyingKey

__all__ = [
    "BATCH_TIMEOUT_S",
    "MAX_BATCH_FILES",
    "MAX_TRANSCRIPT_FILE_BYTES",
    "BatchVerdict",
    "record_files",
    "verify_many",
]

MAX_BATCH_FILES = 100_000
"""The most record files one batch verification reads."""
BATCH_TIMEOUT_S = 3600.0
"""Seconds the batch waits for any one record to finish before it rejects the unfinished."""
MAX_TRANSCRIPT_FILE_BYTES = 2 * MAX_TRANSCRIPT_BYTES
"""The largest transcript envelope file read beside a record (base64 makes it a third larger)."""
RECORD_SUFFIX = ".json"
SIDE_FILES = (".verification.json", ".spec.json", ".transcript.json")
"""Files a folder of records may hold beside them that are not records."""


@dataclass(frozen=True)
class BatchVerdict:
    """One file and what verifying it concluded."""

    path: Path
    report: VerificationReport


def record_files(paths: Sequence[Path]) -> list[Path]:
    """The files named; each folder gives its ``*.json`` records (sorted, not recursive)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                sorted(
                    child
                    for child in path.iterdir()
                    if child.is_file()
                    and child.name.endswith(RECORD_SUFFIX)
                    and not child.name.startswith(".")
                    and not child.name.endswith(SIDE_FILES)
                )
            )
        else:
            found.append(path)
        if len(found) > MAX_BATCH_FILES:
            raise FormatError(f"over {MAX_BATCH_FILES} record files to verify; split the batch")
    if not found:
        raise FormatError("no record files to verify: name record files or folders holding *.json")
    return found


def _verify_bytes(
    data: bytes,
    key_pems: tuple[bytes, ...],
    unsigned: bool,
    worker: bool | None,
    transcript: bytes | None = None,
    contract: Contract | None = None,
) -> VerificationReport:
    """One task: verify one record's bytes (the keys travel as PEM: they pickle).

    As ``playproof verify FILE``: a trusted-recorder record is checked against
    ``transcript`` with the trusted keys as recorder keys.
    """
    keys = [VerifyingKey.from_pem(pem) for pem in key_pems]
    if unsigned:
        return verify_record(
            data,
            worker=worker,
            contract=contract,
            transcript=transcript,
            recorder_keys=keys if transcript is not None else (),
        )
    return verify_signed(data, keys, worker=worker, contract=contract, transcript=transcript)


def _transcript_beside(path: Path) -> bytes | None:
    """The transcript beside a record file, None when there is none; FormatError if unreadable."""
    beside = transcript_path_for(path)
    if not beside.is_file():
        return None
    return read_bounded(beside, MAX_TRANSCRIPT_FILE_BYTES, "transcript file")


def _unreadable(why: str, check: str = "record-well-formed") -> VerificationReport:
    return VerificationReport.from_checks([CheckResult(id=check, passed=False, reason=why)])


def verify_many(
    paths: Sequence[Path],
    keys: Sequence[VerifyingKey],
    *,
    executor: str = "local",
    jobs: int | None = None,
    address: str | None = None,
    unsigned: bool = False,
    contract: Contract | None = None,
    progress: Callable[[int, int], None] | None = None,
    on_retry: RetryNotice | None = None,
) -> list[BatchVerdict]:
    """Verify every file (folders expanded) on ``executor``; one verdict per file, in order.

    A file that cannot be read is a rejected verdict, not an error: the
    others go on. On the local pool games run in-process (each pool process
    is already its own crash boundary). If a pool process dies (a game that
    crashes its process, the kernel's OOM killer), the verdicts already in are
    kept and the unfinished records go once more to a fresh pool, each game now
    in a worker child of its own, so a crashing game rejects its record alone.
    Each record's transcript is the ``NAME.transcript.json`` beside it;
    ``contract`` is the verifier's copy for every record in the batch (as
    ``verify --contract`` for one record).
    """
    files = record_files(paths)
    pems = tuple(key.to_pem() for key in keys)
    verdicts: list[BatchVerdict | None] = [None] * len(files)
    inputs: dict[int, tuple[bytes, bytes | None]] = {}
    for index, path in enumerate(files):
        try:
            data = read_bounded(path, MAX_ENVELOPE_BYTES, "record file")
        except FormatError as exc:
            verdicts[index] = BatchVerdict(path, _unreadable(str(exc)))
            continue
        try:
            inputs[index] = (data, _transcript_beside(path))
        except FormatError as exc:
            verdicts[index] = BatchVerdict(path, _unreadable(str(exc), "transcript-signed"))
    done_count = len(files) - len(inputs)
    if progress is not None and done_count:
        progress(done_count, len(files))
    # Games in-process on a pool; in a worker child where the executor is this process.
    worker: bool | None = None if executor == "serial" else False
    while inputs:
        pool, _ = open_executor(executor, jobs, address=address, on_retry=on_retry)
        hung = True  # until every task is known to have finished
        try:
            futures = {
                pool.submit(_verify_bytes, data, pems, unsigned, worker, transcript, contract): i
                for i, (data, transcript) in inputs.items()
            }
            broken, hung = _collect(futures, files, verdicts, inputs, len(files), progress)
        finally:
            if hung:
                # Tasks hung, or an error (an interrupt, a progress callback that raised)
                # left some running, perhaps hung: waiting could wait for them forever.
                abandon(pool)
            else:
                pool.shutdown(wait=True, cancel_futures=True)
        if broken is None:
            break
        if worker is None:
            raise RunError(
                f"a pool process died again ({broken}) with {len(inputs)} of {len(files)} "
                "records unverified, each game in a worker child of its own; "
                "try --executor serial or fewer --jobs"
            )
        worker = None  # once more, each game in a child of its own
    return [v for v in verdicts if v is not None]


def _collect(
    futures: dict[Future[VerificationReport], int],
    files: list[Path],
    verdicts: list[BatchVerdict | None],
    inputs: dict[int, tuple[bytes, bytes | None]],
    total: int,
    progress: Callable[[int, int], None] | None,
) -> tuple[BrokenProcessPool | None, bool]:
    """Take each verdict as it finishes (and its record out of ``inputs``).

    Returns the error when the pool broke (the unfinished records stay in
    ``inputs``), else None; and whether tasks hung. Any other failure of a
    task rejects that record, and so does a task still unfinished once no
    record finished within BATCH_TIMEOUT_S.
    """
    pending = set(futures)
    broken: BrokenProcessPool | None = None
    while pending:
        done, pending = wait(pending, timeout=BATCH_TIMEOUT_S, return_when=FIRST_COMPLETED)
        if not done:
            why = f"not reproduced: its verification did not finish within {BATCH_TIMEOUT_S:g} s"
            for future in pending:
                index = futures[future]
                verdicts[index] = BatchVerdict(files[index], _unreadable(why, "claims-reproduced"))
                del inputs[index]
            if progress is not None:
                progress(total - len(inputs), total)
            return broken, True
        for future in done:
            index = futures[future]
            try:
                report = future.result()
            except BrokenProcessPool as exc:
                broken = exc
                continue
            except Exception as exc:  # this record's failure; the others go on
                why = f"not reproduced: its verification task failed ({type(exc).__name__}: {exc})"
                report = _unreadable(why[:500], "claims-reproduced")
            verdicts[index] = BatchVerdict(files[index], report)
            del inputs[index]
            if progress is not None:
                progress(total - len(inputs), total)
    return broken, False
