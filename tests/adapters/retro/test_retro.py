"""The stable-retro adapter and ``retro/airstriker``; every emulator runs in its own worker."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from playproof.adapters.screen import SHADES, decode_png, frame_hash, unscale
from playproof.core.evidence import Evidence
from playproof.core.replay import replay
from playproof.errors import CheckpointError, TargetError, WorkerStartError
from playproof.targets._registry import Target
from playproof.targets.retro import airstriker
from playproof.workers import WorkerGame

FACTORY = "playproof.adapters.retro:make_game"


@pytest.fixture(scope="module")
def target() -> Target:
    return airstriker()


@pytest.fixture(scope="module")
def worker(target: Target) -> Iterator[WorkerGame]:
    with WorkerGame(FACTORY, target.spec.options) as game:
        yield game


@pytest.fixture(scope="module")
def reference_trace(worker: WorkerGame, target: Target) -> tuple[Evidence, ...]:
    result = replay(worker, 0, target.reference, target.contract, trace=True)
    assert [m.id for m in result.verified] == [m.id for m in target.contract.milestones]
    assert result.trace is not None
    return result.trace


def test_two_workers_replay_the_reference_identically(
    target: Target, reference_trace: tuple[Evidence, ...]
) -> None:
    with WorkerGame(FACTORY, target.spec.options) as other:
        assert other.descriptor.build.digest == target.spec.build_digest
        result = replay(other, 0, target.reference, target.contract, trace=True)
    assert result.trace == reference_trace
    assert reference_trace[-1].engine["score"] >= 400
    assert all(e.save_hash is None and e.frame_hash for e in reference_trace)


def test_truncated_reference_verifies_a_strict_subset(worker: WorkerGame, target: Target) -> None:
    cut = target.reference[: len(target.reference) // 2]
    part = {m.id for m in replay(worker, 0, cut, target.contract).verified}
    assert part < {m.id for m in target.contract.milestones}


def test_junk_words_equal_noop(worker: WorkerGame, target: Target) -> None:
    junk = ["fire", "B", "left+right", "b+left", ""] * 20
    first = replay(worker, 0, junk, target.contract, trace=True).trace
    assert first == replay(worker, 0, ["noop"] * len(junk), target.contract, trace=True).trace


def test_checkpoint_restores_in_this_and_another_process(
    worker: WorkerGame, target: Target, reference_trace: tuple[Evidence, ...]
) -> None:
    worker.reset(0)
    for word in target.reference[:150]:
        worker.step(word)
    blob = worker.checkpoint()
    after = target.reference[150:200]
    expected = list(reference_trace[151:201])
    assert [worker.advance(w, observe=False).evidence for w in after] == expected
    worker.restore(blob)
    assert [worker.advance(w, observe=False).evidence for w in after] == expected
    with WorkerGame(FACTORY, target.spec.options) as other:
        other.restore(blob)
        assert [other.advance(w, observe=False).evidence for w in after] == expected
    flipped = bytearray(blob)
    flipped[len(blob) // 2] ^= 0xFF
    for bad in (bytes(flipped), blob[:1000], b"junk"):
        with pytest.raises(CheckpointError):
            worker.restore(bad)


def test_images_hash_to_the_frame_and_the_text_hides_the_frame_counter(
    target: Target, reference_trace: tuple[Evidence, ...]
) -> None:
    options = {**target.spec.options, "image_scale": 2}
    with WorkerGame(FACTORY, options) as shown:
        assert shown.descriptor.build.digest == target.spec.build_digest
        shown.reset(0)
        summary = re.compile(r"^score (\d+) \| lives (\d+)( \| game over)?$")
        for turn, word in enumerate(target.reference[:60], start=1):
            snapshot = shown.advance(word, observe=True)
            assert snapshot.evidence == reference_trace[turn]  # images change no evidence
            assert snapshot.observation is not None
            *screen, last = snapshot.observation.text.split("\n")
            assert all(set(line) <= set(SHADES) for line in screen)
            match = summary.match(last)
            assert match is not None
            assert int(match[1]) == snapshot.evidence.engine["score"]
            assert str(snapshot.evidence.engine["frame"]) not in match.groups()
        assert snapshot.observation is not None
        (image,) = snapshot.observation.images
        assert (image.width, image.height) == (640, 448)
        assert frame_hash(unscale(decode_png(image.raw()), 2)) == snapshot.evidence.frame_hash


def test_unknown_buttons_are_refused(target: Target) -> None:
    options = {**target.spec.options, "buttons": ["up", "nope"]}
    with pytest.raises(WorkerStartError, match="not on this pad"):
        WorkerGame(FACTORY, options)


def test_a_second_emulator_in_one_process_is_refused_clearly() -> None:
    from playproof.adapters.retro import make_game

    first = make_game()
    try:
        with pytest.raises(TargetError, match="one emulator per process"):
            make_game()
    finally:
        first.close()
    make_game().close()  # closing frees the process's emulator


def test_bad_options_are_refused() -> None:
    from playproof.adapters.retro import make_game

    with pytest.raises(TargetError, match="frame_skip"):
        make_game(frame_skip=0)
    with pytest.raises(TargetError, match="no ROM"):
        make_game(game="NoSuchGame-Genesis-v0")
