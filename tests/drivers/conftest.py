"""Shared fixtures of the driver tests: a marker that finds every agent process a test started."""

import gc
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


def leftovers(marker: str) -> list[int]:
    """Live processes (children, grandchildren) started with this test's marker."""
    needle = f"PLAYPROOF_TEST_MARKER={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique tag for agent processes; the test fails if any outlives it."""
    tag = uuid.uuid4().hex
    yield tag
    gc.collect()  # an unclosed pipe or transport then warns (an error) in this very test
    # SIGKILL is delivered asynchronously: give the kernel a moment before judging.
    for _ in range(100):
        if not leftovers(tag):
            break
        time.sleep(0.02)
    assert leftovers(tag) == [], "an agent process outlived the test"
