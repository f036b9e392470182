"""Files playproof replaces are never written through a link someone planted.

A record (`run --out`), a corpus document (`corpus answers`) or a task's
reward state goes to a temporary file with a predictable name, then is
renamed over the final name. A link waiting at either name must not carry
the bytes elsewhere: the victim it points to stays as it was.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from playproof._atomic import temporary_for, write_atomic
from playproof.cli._files import write_document
from playproof.corpus._reward import RewardState, load_state, save_state
from playproof.sign import SigningKey


def _plant(tmp_path: Path, at: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    at.symlink_to(victim)
    return victim


@pytest.mark.parametrize("where", ["temporary", "final"])
def test_a_planted_link_is_replaced_not_written_through(tmp_path: Path, where: str) -> None:
    target = tmp_path / "out" / "record.json"
    target.parent.mkdir()
    victim = _plant(tmp_path, temporary_for(target) if where == "temporary" else target)
    write_document(target, {"a": 1})
    assert victim.read_text() == "precious"
    assert not target.is_symlink()
    assert target.read_text() == '{\n  "a": 1\n}\n'
    assert not temporary_for(target).exists()


def test_a_reward_state_is_not_written_through_a_link(tmp_path: Path) -> None:
    path = tmp_path / ".playproof" / "state.json"
    path.parent.mkdir()
    victim = _plant(tmp_path, temporary_for(path))
    grader = SigningKey.generate()
    state = RewardState(corpus_digest="a" * 64, denominator=3)
    save_state(path, state, grader)
    assert victim.read_text() == "precious"
    assert load_state(path, "a" * 64, 3, grader.verifying_key).denominator == 3


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "kept.json"
    target.write_bytes(b"old")
    os.mkdir(temporary_for(target))  # a folder the temporary cannot replace
    with pytest.raises(IsADirectoryError):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old"


def _is_folder(fd: int, folder: Path) -> bool:
    mine, theirs = os.fstat(fd), os.stat(folder)
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)


def test_the_folder_is_fsynced_after_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the folder's fsync, a power loss can undo the rename."""
    target = tmp_path / "state.json"
    target.write_bytes(b"old")
    synced: list[tuple[bool, bytes]] = []
    real_fsync = os.fsync

    def noted_fsync(fd: int) -> None:
        # Noted while the descriptor is open: what it is, and what the file held then.
        synced.append((_is_folder(fd, tmp_path), target.read_bytes()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", noted_fsync)
    write_atomic(target, b"new")
    assert (True, b"new") in synced, synced
    assert synced[-1] == (True, b"new")  # the last sync is the folder's, after the rename


@pytest.mark.parametrize("code", [errno.EINVAL, errno.ENOTSUP])
def test_a_folder_that_cannot_be_fsynced_is_written_anyway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    target = tmp_path / "state.json"
    real_fsync = os.fsync

    def refusing(fd: int) -> None:
        if _is_folder(fd, tmp_path):
            raise OSError(code, os.strerror(code))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", refusing)
    write_atomic(target, b"new")
    assert target.read_bytes() == b"new"


def test_a_folder_fsync_that_fails_is_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "state.json"
    real_fsync = os.fsync

    def failing(fd: int) -> None:
        if _is_folder(fd, tmp_path):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(OSError, match=os.strerror(errno.EIO)) as raised:
        write_atomic(target, b"new")
    assert raised.value.errno == errno.EIO
