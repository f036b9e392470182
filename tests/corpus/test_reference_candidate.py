"""The reference candidate's request handling, in-process: memory reads at the edges, errors."""

from __future__ import annotations

import io
from typing import Any

import pytest

from playproof.corpus import load_corpus
from playproof.corpus.reference_candidate import Session, skip_optional_imports


@pytest.fixture
def session(subset: Any) -> Session:
    skip_optional_imports()
    rom = next(iter(load_corpus(subset.manifest, subset.roms).roms.values()))
    loaded = Session(io.BytesIO(rom))
    assert loaded.handle(["LOAD", str(len(rom))]) == b"OK\n"
    assert loaded.handle(["FRAMES", "30"]) == b"OK\n"
    return loaded


@pytest.mark.parametrize(
    ("address", "length"), [(0x0100, 4), (0xA000, 256), (0xFFFF, 1), (0xFF00, 256), (0, 0)]
)
def test_memory_reads_return_exactly_the_bytes_asked_for(
    session: Session, address: int, length: int
) -> None:
    reply = session.handle(["MEM", str(address), str(length)])
    head, _, payload = reply.partition(b"\n")
    assert head == b"DATA %d" % length
    assert len(payload) == length
    memory = session._need().pyboy.memory
    assert payload == bytes(int(memory[address + i]) for i in range(length))


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["MEM", "65535", "2"], b"outside"),
        (["MEM", "65536", "1"], b"outside"),
        (["MEM", "x", "1"], b"not a number"),
    ],
)
def test_bad_memory_requests_are_protocol_faults(
    session: Session, words: list[str], message: bytes
) -> None:
    from playproof.corpus.reference_candidate import ProtocolFault

    with pytest.raises(ProtocolFault, match=message.decode()):
        session.handle(words)
