"""A desktop helper's output is read in a process holding over 1024 open descriptors.

``select`` refuses a descriptor numbered 1024 or above; a long-running process (or one
with many games open) gets pipes numbered that high.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from pathlib import Path

import pytest

from playproof.adapters.desktop._process import run_helper

HIGH = 1100
"""Every descriptor up to this number is held, so the helper's pipes are numbered above."""


@pytest.fixture
def low_descriptors_taken() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = HIGH + 500
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"the descriptor limit ({hard}) is below {needed}")
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    held: list[int] = []
    try:
        # A new descriptor takes the lowest free number: once one is numbered HIGH,
        # every number below it is taken.
        while not held or held[-1] < HIGH:
            held.append(os.open(os.devnull, os.O_RDONLY))
        yield
    finally:
        for handle in held:
            os.close(handle)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_helper_is_read_when_its_pipe_is_numbered_above_1024(
    tmp_path: Path, low_descriptors_taken: None
) -> None:
    probe = os.open(os.devnull, os.O_RDONLY)
    os.close(probe)
    assert probe > 1024  # so the helper's stdout pipe is numbered above 1024 too
    out = run_helper(
        ["/bin/sh", "-c", "printf 'seen\\n'"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        timeout_s=60.0,
        what="test helper",
    )
    assert out == b"seen\n"
