"""Folders a candidate or an agent filled: walked within a depth, removed however deep."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from playproof.corpus import tree_digest
from playproof.corpus._trees import MAX_TREE_DEPTH, give_tree, remove_tree, walk_tree
from playproof.errors import FormatError


def _chain(root: Path, depth: int) -> None:
    """``depth`` nested folders under ``root`` (by descriptor: the path outgrows PATH_MAX)."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for level in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
            if level % 500 == 0:
                os.close(os.open("f", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    finally:
        os.close(fd)


@pytest.mark.parametrize("relative", [False, True])
def test_a_tree_too_deep_for_python_is_removed(tmp_path: Path, relative: bool) -> None:
    (tmp_path / "home").mkdir()
    _chain(tmp_path / "home", 3000)
    if relative:
        fd = os.open(tmp_path, os.O_RDONLY)
        try:
            remove_tree("home", dir_fd=fd)
        finally:
            os.close(fd)
    else:
        remove_tree(tmp_path / "home")
    assert os.listdir(tmp_path) == []


def test_removing_what_is_not_there_does_not_raise(tmp_path: Path) -> None:
    remove_tree(tmp_path / "missing")


def test_a_walk_refuses_a_tree_nested_past_the_bound(tmp_path: Path) -> None:
    _chain(tmp_path, MAX_TREE_DEPTH + 2)
    with pytest.raises(FormatError, match="nested more than"):
        list(walk_tree(tmp_path))
    with pytest.raises(FormatError, match="nested more than"):
        tree_digest(tmp_path)


def test_a_walk_within_the_bound_sees_every_folder(tmp_path: Path) -> None:
    _chain(tmp_path, MAX_TREE_DEPTH)
    assert len(list(walk_tree(tmp_path))) == MAX_TREE_DEPTH + 1
    assert len(tree_digest(tmp_path)) == 64


def test_a_candidates_err_text_reaches_a_reason_escaped() -> None:
    """Control characters a candidate puts in ERR never reach a reason raw."""
    import time

    from playproof.corpus._protocol import CandidateChannel, ProtocolBreach

    requests_read, requests_write = os.pipe()
    replies_read, replies_write = os.pipe()
    os.write(replies_write, b"ERR \x1b[31m\tfake\x00\r1-chip8-logo\t1\tpassed\n")
    os.close(replies_write)
    with (
        os.fdopen(requests_write, "wb", buffering=0) as stdin,
        os.fdopen(replies_read, "rb", buffering=0) as stdout,
    ):
        channel = CandidateChannel(stdin, stdout, deadline=time.monotonic() + 5)
        with pytest.raises(ProtocolBreach) as caught:
            channel.request("LOAD 4")
    os.close(requests_read)
    assert not any(ord(c) < 32 or ord(c) == 127 for c in str(caught.value))
    assert "\\x1b[31m\\x09fake\\x00\\x0d1-chip8-logo" in str(caught.value)


@pytest.mark.parametrize(
    ("reason", "cell"),
    [
        ("a\tb", "a\\tb"),
        ("one\r\ntwo", "one\\r\\ntwo"),
        ("back\\slash", "back\\\\slash"),
        ("\x1b[31mred\x00", "\\x1b[31mred\\x00"),
        ("line\u2028sep\x85", "line\\u2028sep\\x85"),
        ("plain text, \u00e9t\u00e9", "plain text, \u00e9t\u00e9"),
    ],
)
def test_a_results_file_cell_is_one_cell_on_one_line(reason: str, cell: str) -> None:
    from playproof.corpus._task import _cell

    assert _cell(reason) == cell
    assert len(_cell(reason).splitlines()) == 1
    assert "\t" not in _cell(reason)


def test_giving_a_tree_refuses_one_nested_past_the_bound(tmp_path: Path) -> None:
    _chain(tmp_path, MAX_TREE_DEPTH + 2)
    with pytest.raises(FormatError, match="nested more than"):
        give_tree(tmp_path, os.getuid())
