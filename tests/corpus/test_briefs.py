"""A task's instructions name its corpus's platform and protocol, never another platform's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from playproof.corpus._briefs import PLATFORM_BRIEFS, SHIPPED_PLATFORMS
from playproof.corpus._manifest import load_manifest
from playproof.corpus._shipped import SHIPPED, shipped_paths
from playproof.corpus._task import TaskSpec, init_task
from playproof.errors import FormatError, TargetError

PLATFORM_WORDS = {
    "dmg": ("Game Boy", "DMG", "160x144", "joypad"),
    "chip8": ("CHIP-8", "PLATFORM chip8", "64x32", "keypad"),
}
"""Words the instructions of a task on each platform must hold (and the others must not)."""


def _instructions(folder: Path, spec: TaskSpec) -> str:
    init_task(folder, spec)
    return (folder / "INSTRUCTIONS.md").read_text("utf-8")


def _foreign_words(platform: str) -> list[str]:
    mine = set(PLATFORM_WORDS[platform])
    return [
        word
        for other, words in PLATFORM_WORDS.items()
        if other != platform
        for word in words
        if word not in mine
    ]


def test_every_shipped_corpus_platform_is_known() -> None:
    assert set(SHIPPED_PLATFORMS) == set(SHIPPED)
    for name in SHIPPED:
        assert load_manifest(shipped_paths(name)[0]).platform == SHIPPED_PLATFORMS[name]
    assert set(PLATFORM_WORDS) == set(PLATFORM_BRIEFS)


@pytest.mark.parametrize("corpus", SHIPPED)
def test_the_instructions_name_the_corpus_platform_only(tmp_path: Path, corpus: str) -> None:
    platform = load_manifest(shipped_paths(corpus)[0]).platform
    text = _instructions(tmp_path / "task", TaskSpec(corpus=corpus, candidate=["./emu"]))
    for word in PLATFORM_WORDS[platform]:
        assert word in text, f"{corpus}: the instructions do not say {word!r}"
    for word in _foreign_words(platform):
        assert word not in text, f"{corpus}: the instructions speak of {word!r}"


@pytest.mark.parametrize("corpus", SHIPPED)
def test_a_task_with_its_own_manifest_takes_that_manifest_platform(
    tmp_path: Path, corpus: str
) -> None:
    folder = tmp_path / "task"
    folder.mkdir()
    manifest = shipped_paths(corpus)[0]
    (folder / "mine.json").write_bytes(manifest.read_bytes())
    spec = TaskSpec(corpus="blargg", manifest="mine.json", candidate=["./emu"])
    text = _instructions(folder, spec)
    platform = json.loads(manifest.read_bytes()).get("platform", "dmg")
    assert PLATFORM_BRIEFS[platform].heading in text.splitlines()[0]


def test_a_missing_own_manifest_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    spec = TaskSpec(manifest="absent.json", candidate=["./emu"])
    with pytest.raises(FormatError, match="does not exist"):
        init_task(tmp_path / "task", spec)
    assert not (tmp_path / "task").exists()


def test_an_unknown_corpus_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="no gradable shipped corpus"):
        init_task(tmp_path / "task", TaskSpec(corpus="nes", candidate=["./emu"]))
