"""Hostile files where playproof reads one: FIFOs, devices, folders and oversized files.

Every file playproof did not write itself goes through the one bounded reader,
which refuses what is not a regular file before a byte is read (a FIFO would
wait forever for a writer, a device never ends) and refuses a file over its
named limit. Each reader below is given each kind of hostile file and must
answer with its own typed error at once.
"""

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from campaigns import KEY, Walker, campaign

from playproof.adapters.ale._game import _read_rom
from playproof.adapters.pyboy._roms import _expected_sum
from playproof.corpus._reward import load_state
from playproof.corpus._task import MAX_TASK_BYTES, load_task
from playproof.corpus._trust import MAX_SIGNATURE_BYTES, read_signature
from playproof.engine import load_ledger
from playproof.errors import FormatError, LedgerError, PlayproofError, SigningKeyError, TargetError
from playproof.sign import MAX_KEY_FILE_BYTES, SigningKey, VerifyingKey

Reader = Callable[[Path], object]


def _in_folder(name: str, read: Callable[[Path], object]) -> Reader:
    """A reader of ``folder/name`` given the path of that file."""

    def reader(path: Path) -> object:
        if path.name != name:
            raise AssertionError(f"the reader wants a file named {name}, not {path.name}")
        return read(path.parent)

    return reader


READERS: dict[str, tuple[str, Reader, type[PlayproofError]]] = {
    "private key": ("signing.pem", SigningKey.load, SigningKeyError),
    "public key": ("signing.pub.pem", VerifyingKey.load, SigningKeyError),
    "ledger": ("ledger.json", lambda p: load_ledger(p, KEY.verifying_key), LedgerError),
    "task file": ("task.json", _in_folder("task.json", load_task), FormatError),
    "reward state": (
        "reward.json",
        lambda p: load_state(p, "d", 3, KEY.verifying_key),
        FormatError,
    ),
    "corpus signature": ("corpus.sig.json", read_signature, FormatError),
    "ROM checksums": (
        "SHA256SUMS",
        _in_folder("SHA256SUMS", lambda f: _expected_sum(f, "game.gb")),
        TargetError,
    ),
    "ALE ROM": ("game.bin", _read_rom, TargetError),
}


def _place(tmp_path: Path, name: str, make: Callable[[Path], None]) -> Path:
    folder = tmp_path / "given"
    folder.mkdir()
    path = folder / name
    make(path)
    return path


@pytest.mark.timeout(20)
@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_fifo_is_refused_before_any_read(tmp_path: Path, reader: str) -> None:
    name, read, error = READERS[reader]
    path = _place(tmp_path, name, os.mkfifo)
    with pytest.raises(error, match="is a FIFO, not a regular file"):
        read(path)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_folder_is_refused(tmp_path: Path, reader: str) -> None:
    name, read, error = READERS[reader]
    path = _place(tmp_path, name, Path.mkdir)
    with pytest.raises(error, match="is a folder, not a regular file"):
        read(path)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("reader", sorted(READERS))
def test_an_endless_device_is_refused(tmp_path: Path, reader: str) -> None:
    name, read, error = READERS[reader]
    path = _place(tmp_path, name, lambda p: p.symlink_to("/dev/zero"))
    with pytest.raises(error, match="is a device, not a regular file"):
        read(path)


@pytest.mark.parametrize(
    ("reader", "limit"),
    [
        ("private key", MAX_KEY_FILE_BYTES),
        ("task file", MAX_TASK_BYTES),
        ("corpus signature", MAX_SIGNATURE_BYTES),
    ],
)
def test_a_file_one_byte_over_its_limit_is_refused_not_cut(
    tmp_path: Path, reader: str, limit: int
) -> None:
    name, read, error = READERS[reader]
    path = _place(tmp_path, name, lambda p: p.write_bytes(b" " * (limit + 1)))
    with pytest.raises(error, match=f"over the {limit}-byte limit"):
        read(path)


def test_a_missing_ledger_still_says_so(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match="the file does not exist"):
        load_ledger(tmp_path / "absent.json", KEY.verifying_key)


def test_a_real_ledger_still_loads_through_the_bounded_reader(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    campaign(Walker(), path, segments=1)
    assert len(load_ledger(path, KEY.verifying_key).decisions) == 7


@pytest.mark.parametrize("reader", ["private key", "public key", "ledger", "ALE ROM"])
def test_a_path_with_a_nul_byte_is_a_typed_error(tmp_path: Path, reader: str) -> None:
    # The operating system cannot name such a file; Python refuses it with a ValueError.
    name, read, error = READERS[reader]
    with pytest.raises(error, match="cannot read"):
        read(tmp_path / f"bad\0{name}")
