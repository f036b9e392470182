"""The ALE adapter and the packaged ``ale/breakout`` target, against the real emulator."""

from __future__ import annotations

import os
import re
import signal

import pytest

from playproof.adapters.ale import MAX_RAM_CHANNELS, AleGame, make_game
from playproof.adapters.screen import SHADES, decode_png, frame_hash, unscale
from playproof.core.evidence import Evidence
from playproof.core.game import BatchReplaying, Game
from playproof.core.observation import Observation
from playproof.core.replay import replay, replay_in_session
from playproof.errors import CheckpointError, TargetError, WorkerError
from playproof.targets._registry import Target
from playproof.targets.ale import breakout
from playproof.workers import WorkerGame

FACTORY = "playproof.adapters.ale:make_game"


@pytest.fixture(scope="module")
def target() -> Target:
    return breakout()


@pytest.fixture(scope="module")
def game(target: Target) -> AleGame:
    built = make_game(**target.spec.options)
    assert isinstance(built, AleGame)
    return built


def _trace(game: Game, target: Target, inputs: tuple[str, ...] | list[str]) -> tuple[object, ...]:
    result = replay_in_session(game, 0, inputs, target.contract, trace=True)
    assert result.trace is not None
    return result.trace


def test_two_workers_replay_the_reference_identically_and_verify_every_milestone(
    target: Target,
) -> None:
    traces = []
    for _ in range(2):
        with WorkerGame(FACTORY, target.spec.options) as worker:
            assert worker.descriptor.build.digest == target.spec.build_digest
            assert isinstance(worker, BatchReplaying)
            result = replay(worker, 0, target.reference, target.contract, trace=True)
            assert {m.id for m in result.verified} == {m.id for m in target.contract.milestones}
            traces.append(result.trace)
    assert traces[0] is not None
    assert len(traces[0]) == len(target.reference) + 1
    assert traces[0] == traces[1]
    assert all(e.save_hash and e.frame_hash for e in traces[0])


def test_truncated_reference_verifies_a_strict_subset(game: AleGame, target: Target) -> None:
    full = {m.id for m in replay_in_session(game, 0, target.reference, target.contract).verified}
    cut = target.reference[: len(target.reference) // 3]
    part = {m.id for m in replay_in_session(game, 0, cut, target.contract).verified}
    assert part < full
    assert "score-300" not in part


def test_junk_words_equal_noop(game: AleGame, target: Target) -> None:
    junk = ["jump", "FIRE", "", "noop ", "up"] * 60
    assert _trace(game, target, junk) == _trace(game, target, ["noop"] * len(junk))


def test_checkpoint_restore_reproduces_the_next_inputs(game: AleGame, target: Target) -> None:
    game.reset(0)
    for word in target.reference[:300]:
        game.step(word)
    blob = game.checkpoint()
    after = target.reference[300:400]

    def run() -> list[Evidence]:
        out = []
        for word in after:
            game.step(word)
            out.append(game.evidence())
        return out

    first = run()
    game.restore(blob)
    assert run() == first
    with WorkerGame(FACTORY, target.spec.options) as worker:  # and in another process
        worker.restore(blob)
        assert [worker.advance(w, observe=False).evidence for w in after] == first


def test_corrupt_checkpoints_are_typed_errors(game: AleGame, target: Target) -> None:
    blob = game.checkpoint()
    flipped = bytearray(blob)
    flipped[-100] ^= 0xFF
    other = make_game(rom="breakout").checkpoint()  # another build (no RAM channels)
    for bad in (bytes(flipped), blob[: len(blob) // 2], b"", b"garbage" * 10, other):
        with pytest.raises(CheckpointError):
            game.restore(bad)
    with WorkerGame(FACTORY, target.spec.options) as worker:
        with pytest.raises(CheckpointError):
            worker.restore(bytes(flipped))
        worker.step("fire")  # the worker lives on


def test_png_pixels_hash_to_the_frame_hash_and_images_do_not_change_evidence(
    target: Target,
) -> None:
    options = {**target.spec.options, "image_scale": 2}
    with_images = make_game(**options)
    with_images.reset(0)
    for word in target.reference[:120]:
        with_images.step(word)
    observation = with_images.observe()
    (image,) = observation.images
    assert (image.width, image.height) == (320, 420)
    pixels = unscale(decode_png(image.raw()), 2)
    assert frame_hash(pixels) == with_images.evidence().frame_hash
    plain = make_game(**target.spec.options)
    inputs = target.reference[:400]
    assert _trace(with_images, target, inputs) == _trace(plain, target, inputs)
    assert with_images.descriptor.build == plain.descriptor.build


def test_observation_text_never_shows_evidence_only_channels(game: AleGame, target: Target) -> None:
    game.reset(0)
    summary = re.compile(r"^score (\d+) \| lives (\d+)( \| game over)?$")
    for word in target.reference[:150]:
        game.step(word)
        engine = game.evidence().engine
        *screen, last = game.observe().text.split("\n")
        assert all(set(line) <= set(SHADES) for line in screen)
        match = summary.match(last)
        assert match is not None
        assert (int(match[1]), int(match[2])) == (engine["score"], engine["lives"])
        # the frame counter changes every step and is evidence only
        assert str(engine["frame"]) not in match.groups()


def test_kept_observation_and_evidence_never_go_stale(target: Target) -> None:
    """Both are kept until the console changes: every step that acts, reset and restore."""
    game = make_game(**{**target.spec.options, "image_scale": 1})
    assert isinstance(game, AleGame)

    def check() -> Observation:
        kept, evidence = game.observe(), game.evidence()
        game._seen = game._cached = None  # recompute from the emulator
        assert game.observe() == kept
        assert game.evidence() == evidence
        return kept

    game.reset(0)
    start = check()
    for word in ["fire"] * 160:  # constant fire reaches game over
        game.step(word)
        check()
    assert game.over()
    over = check()
    assert over.text.endswith("| game over")
    kept = game.observe()
    game.step("left")  # a no-op after game over: the kept observation is still right
    assert game.observe() is kept
    game.reset(0)
    assert check() == start
    blob = game.checkpoint()
    game.step("fire")
    played = check()
    game.restore(blob)
    # ALE restores no screen: until the next frame the screen is the one before the restore
    assert check().text.split("\n")[:-1] == played.text.split("\n")[:-1]
    game.step("noop")
    check()
    game.close()


def test_ram_is_exposed_for_discovery_and_matches_the_named_channels(
    game: AleGame, target: Target
) -> None:
    from playproof.core.game import MemoryExposing

    assert isinstance(game, MemoryExposing)
    game.reset(0)
    for word in target.reference[:40]:
        game.step(word)
    base, ram = game.memory()["ram"]
    assert (base, len(ram)) == (0x80, 128)
    engine = game.evidence().engine
    for name, index in target.spec.options["ram"].items():
        assert engine[name] == ram[index]
    assert len(game.rom_sha256) == 64


def test_vocabulary_is_the_minimal_action_set(game: AleGame) -> None:
    assert game.descriptor.vocabulary == ("noop", "fire", "right", "left")
    assert game.descriptor.platform.family == "ale"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"rom": "no_such_rom"}, "no ROM"),
        ({"rom": "breakout", "ram": {"x": 128}}, "ram"),
        ({"rom": "breakout", "ram": {"score": 1}}, "reserved"),
        ({"rom": "breakout", "ram": {"Bad Name": 1}}, "ram"),
        ({"rom": "breakout", "ram": {f"c{i}": i for i in range(MAX_RAM_CHANNELS + 1)}}, "ram"),
        ({"rom": "breakout", "frame_skip": 0}, "frame_skip"),
        ({"rom": "breakout", "bogus": 1}, "bogus"),
        ({"rom": "breakout", "image_scale": "2"}, "image_scale"),
    ],
)
def test_bad_options_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(TargetError, match=message):
        make_game(**options)


def test_killed_worker_is_a_typed_error(target: Target) -> None:
    worker = WorkerGame(FACTORY, target.spec.options)
    try:
        os.killpg(worker.pid, signal.SIGKILL)
        with pytest.raises(WorkerError):
            replay(worker, 0, target.reference, target.contract)
    finally:
        worker.close()
