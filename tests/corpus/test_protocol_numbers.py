"""The grader reads a candidate's numbers strictly: digits only, within their width.

``int`` would also take a sign, spaces, ``_`` between digits and (in base 16)
a ``0x`` prefix; the protocol allows none of them, so a reply that uses them
is a protocol error rather than a number the grader guessed at.
"""

from __future__ import annotations

import os
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from playproof.corpus._protocol import CandidateChannel, ProtocolBreach
from playproof.corpus._runner import _regs


def _ask_data(reply: bytes) -> bytes:
    requests_read, requests_write = os.pipe()
    replies_read, replies_write = os.pipe()
    os.write(replies_write, reply)
    os.close(replies_write)
    try:
        with (
            os.fdopen(requests_write, "wb", buffering=0) as stdin,
            os.fdopen(replies_read, "rb", buffering=0) as stdout,
        ):
            channel = CandidateChannel(stdin, stdout, deadline=time.monotonic() + 5)
            return channel.data("SERIAL")
    finally:
        os.close(requests_read)


def test_a_data_length_in_decimal_digits_is_read() -> None:
    assert _ask_data(b"DATA 3\nabc") == b"abc"
    assert _ask_data(b"DATA 0\n") == b""
    assert _ask_data(b"DATA 003\nabc") == b"abc"


@pytest.mark.parametrize("length", ["+3", " 3", "3 ", "0_3", "", "-0", "3.0", "0x3"])
def test_a_data_length_int_would_take_is_a_protocol_error(length: str) -> None:
    with pytest.raises(ProtocolBreach, match="bad DATA length"):
        _ask_data(f"DATA {length}\nabc".encode("ascii"))


def test_registers_in_hex_digits_are_read() -> None:
    line = "A=01 F=b0 B=03 C=05 D=08 E=0d H=15 L=22 SP=fffe PC=c00f"
    assert _regs(line) == {
        "A": 1,
        "F": 0xB0,
        "B": 3,
        "C": 5,
        "D": 8,
        "E": 13,
        "H": 21,
        "L": 34,
        "SP": 0xFFFE,
        "PC": 0xC00F,
    }
    assert _regs("B=3 C=5") == {"B": 3, "C": 5}  # no zero padding, any order, a subset
    assert _regs("PC=C00F") == {"PC": 0xC00F}  # upper case is read too


@pytest.mark.parametrize(
    "field",
    ["B=+3", "B=-3", "B=0_3", "B=0x3", "B=", "B=103", "SP=1fffe", "PC=c0 0f", "B=\t3", "B= 3"],
)
def test_a_register_value_int_would_take_is_a_protocol_error(field: str) -> None:
    with pytest.raises(ProtocolBreach, match="bad register"):
        _regs(f"A=01 {field}")


@given(st.text(alphabet="0123456789abcdefABCDEF+-_xX \t", max_size=6))
def test_a_register_value_is_read_only_as_at_most_two_hex_digits(raw: str) -> None:
    try:
        value = _regs(f"B={raw}")
    except ProtocolBreach:
        assert not (0 < len(raw) <= 2 and all(c in "0123456789abcdefABCDEF" for c in raw)), raw
    else:
        assert 0 < len(raw.strip(" ")) <= 2
        assert value == {"B": int(raw.strip(" "), 16)}
