"""Hostile files named by a candidate's command or lying in its build folder.

The build digest reads every regular file a command names and every file of a
build folder. A FIFO or a device swapped in after the check, a file over the
build bound, a file yielding more than its size said, and a read outliving the
deadline are each a FormatError at once, never a hung or endless grader.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from playproof.corpus import _grading
from playproof.corpus._grading import candidate_digest, tree_digest
from playproof.errors import FormatError

SMALL_BOUND = 64
"""A build bound small enough to pass with a few bytes."""
PROC_FILE = "/proc/self/status"
"""A regular file whose ``stat`` size (0) is below what reading it yields."""


@pytest.fixture
def small_bound(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(_grading, "MAX_BUILD_BYTES", SMALL_BOUND)
    return SMALL_BOUND


def test_a_named_file_over_the_bound_is_refused(tmp_path: Path, small_bound: int) -> None:
    big = tmp_path / "candidate.bin"
    big.write_bytes(b"x" * (small_bound + 1))
    with pytest.raises(FormatError, match="build bound"):
        candidate_digest((str(big),))


def test_a_named_file_at_the_bound_is_hashed(tmp_path: Path, small_bound: int) -> None:
    exact = tmp_path / "candidate.bin"
    exact.write_bytes(b"x" * small_bound)
    before = candidate_digest((str(exact),))
    exact.write_bytes(b"y" * small_bound)
    assert candidate_digest((str(exact),)) != before


def test_a_file_yielding_more_than_its_size_is_refused(small_bound: int) -> None:
    assert Path(PROC_FILE).stat().st_size < small_bound < len(Path(PROC_FILE).read_bytes())
    with pytest.raises(FormatError, match="grew while read"):
        candidate_digest(("cat", PROC_FILE))


def test_a_build_folder_over_the_bound_is_refused(tmp_path: Path, small_bound: int) -> None:
    (tmp_path / "a").write_bytes(b"x" * (small_bound // 2))
    (tmp_path / "b").write_bytes(b"x" * (small_bound // 2 + 1))
    with pytest.raises(FormatError, match="build bound"):
        tree_digest(tmp_path)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_special_file_swapped_in_after_the_check_is_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """The command is checked (``isfile``) and then read: a FIFO or a device in between.

    A FIFO with no writer would block the open forever, ``/dev/zero`` would
    never end; both are refused before a byte is read.
    """
    if kind == "fifo":
        target = tmp_path / "pipe"
        os.mkfifo(target)
    else:
        target = Path("/dev/zero")
    monkeypatch.setattr(os.path, "isfile", lambda _path: True)  # the check _grading makes
    with pytest.raises(FormatError, match="not a regular file"):
        candidate_digest((str(target),))


def test_a_digest_past_its_deadline_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    named = tmp_path / "candidate.bin"
    named.write_bytes(b"x" * 10)
    monkeypatch.setattr(_grading, "HASH_DEADLINE_S", -1.0)
    with pytest.raises(FormatError, match="took over"):
        candidate_digest((str(named),))
    with pytest.raises(FormatError, match="took over"):
        tree_digest(tmp_path)
