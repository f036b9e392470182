"""The reference candidate names its interpreter by a normalized absolute path."""

import os
import sys
from pathlib import Path

import pytest

from playproof.corpus._reference import reference_candidate_spec


@pytest.mark.parametrize("platform", ["dmg", "chip8"])
def test_an_interpreter_started_by_a_relative_path_is_named_absolutely(
    platform: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # ``../x/bin/python`` from a folder beside it: the jail starts in another
    # folder, so only a normalized absolute path names the same file there.
    inside = tmp_path / "elsewhere"
    inside.mkdir()
    monkeypatch.chdir(inside)
    relative = os.path.relpath(sys.executable, inside)
    assert relative.startswith("..")
    monkeypatch.setattr(sys, "executable", relative)
    command = reference_candidate_spec(platform).command
    interpreter = command[0]
    assert os.path.isabs(interpreter)
    assert ".." not in Path(interpreter).parts
    # Normalized, not resolved: a virtual environment's link stays the link.
    assert interpreter == os.path.normpath(os.path.join(inside, relative))
