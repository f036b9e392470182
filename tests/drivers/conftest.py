"""Shared fixtures of the driver tests: a marker that finds every agent process a test started."""

import gc
import time
import uuid
from collections.abc import Iterator

import pytest
from leftovers import tagged_processes


def leftovers(marker: str) -> list[int]:
    """Live processes (children, grandchildren) started with this test's marker."""
    return tagged_processes("PLAYPROOF_TEST_MARKER", marker)


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
