"""The PyBoy game session on pp-collect: determinism, inputs, checkpoints, observation."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence

import numpy as np
import pytest
from PIL import Image as PILImage

from playproof.adapters.pyboy import VOCABULARY, PyBoyGame, make_game
from playproof.adapters.pyboy.rom.pp_collect import PUBLIC, options
from playproof.core.contract import Contract, parse_contract
from playproof.core.evidence import Evidence
from playproof.core.game import Checkpointing, Game
from playproof.core.replay import replay_in_session
from playproof.errors import CheckpointError, FormatError, TargetError

NEVER = parse_contract(
    {
        "game": "pp-collect",
        "milestones": [
            {"id": "never", "check": {"kind": "state", "key": "score", "op": ">=", "value": 999}}
        ],
    }
)
WALK = ["start", "right", "right", "down", "down", "left", "up", "a", "b", "select"] * 3


def trace(
    game: PyBoyGame, seed: int, inputs: Sequence[str], contract: Contract = NEVER
) -> tuple[Evidence, ...]:
    result = replay_in_session(game, seed, inputs, contract, trace=True)
    assert result.trace is not None
    return result.trace


def test_descriptor_and_protocols(game: PyBoyGame) -> None:
    assert isinstance(game, Game)
    assert isinstance(game, Checkpointing)
    assert game.descriptor.vocabulary == VOCABULARY
    assert game.descriptor.platform.family == "pyboy"
    assert game.descriptor.id == "pp-collect"


def test_memory_is_exposed_for_discovery_and_matches_the_evidence(game: PyBoyGame) -> None:
    from playproof.core.game import MemoryExposing

    assert isinstance(game, MemoryExposing)
    game.reset(3)
    for word in ["right", "right", "a", "noop"]:
        game.step(word)
    areas = game.memory()
    assert {name: (base, len(data)) for name, (base, data) in areas.items()} == {
        "wram": (0xC000, 0x2000),
        "hram": (0xFF80, 0x7F),
    }
    engine, wram = game.evidence().engine, areas["wram"][1]
    for name, channel in options()["channels"].items():
        at = channel["address"] - 0xC000
        value = wram[at] if channel["size"] == 1 else wram[at] | wram[at + 1] << 8
        assert engine[name] == value, name
    assert len(game.rom_sha256) == 64


def test_fresh_and_reused_sessions_agree(game: PyBoyGame) -> None:
    trace(game, 9, ["start", *["right"] * 20, *["noop"] * 30])  # leave the session somewhere else
    reused = trace(game, 3, WALK)
    fresh_game = make_game(**options())
    try:
        fresh = trace(fresh_game, 3, WALK)
    finally:
        fresh_game.close()
    assert reused == fresh
    assert len({e.frame_hash for e in fresh}) > 5


def test_the_seed_fixes_the_coin_sequence(game: PyBoyGame) -> None:
    coins = set()
    for seed in (0, 1, 2, 3):
        evidence = trace(game, seed, ["start"])[-1]
        coins.add((evidence.engine["cx"], evidence.engine["cy"]))
        assert trace(game, seed, ["start"])[-1] == evidence
    assert len(coins) > 1


def test_junk_words_equal_noop(game: PyBoyGame) -> None:
    junk = ["jump", "", "A", "Start", " left", "up+a", "\x00", "noop!", "select ", "b" * 300]
    assert trace(game, 0, ["start", *junk]) == trace(game, 0, ["start", *["noop"] * len(junk)])


def test_buttons_move_and_time_passes(game: PyBoyGame) -> None:
    before, after_start, after_right, after_noop = trace(game, 0, ["start", "right", "noop"])
    assert before.engine["state"] == 0
    assert after_start.engine["state"] == 1
    assert after_right.engine["px"] == after_start.engine["px"] + 1
    assert after_noop.engine["px"] == after_right.engine["px"]
    assert after_noop.engine["frames"] - after_right.engine["frames"] == 8


def test_lives_run_out_into_game_over(game: PyBoyGame) -> None:
    snapshots = trace(game, 0, ["start", *["noop"] * 260])
    lives = [e.engine["lives"] for e in snapshots[1:]]
    assert lives[0] == 3
    assert lives[-1] == 0
    assert sorted(set(lives), reverse=True) == [3, 2, 1, 0]
    assert game.over() is True
    assert all(e.engine["score"] == 0 for e in snapshots)


def test_checkpoint_then_restore_reproduces_the_next_inputs(game: PyBoyGame) -> None:
    trace(game, 4, WALK[:7])
    blob = game.checkpoint()
    suffix = ["right", "down", "noop", "left", "up", "right"] * 4

    def run() -> list[Evidence]:
        out = []
        for word in suffix:
            game.step(word)
            out.append(game.evidence())
        return out

    first = run()
    game.restore(blob)
    assert run() == first
    other = make_game(**options())
    try:
        other.restore(blob)
        again = []
        for word in suffix:
            other.step(word)
            again.append(other.evidence())
    finally:
        other.close()
    assert again == first


def test_corrupt_checkpoints_are_typed_errors(game: PyBoyGame) -> None:
    game.reset(0)
    game.step("start")
    blob = game.checkpoint()
    expected = game.evidence()
    flipped = bytearray(blob)
    flipped[len(blob) // 2] ^= 0x40
    other_build = make_game(**options(), frames_per_input=6, press_frames=3)
    try:
        foreign = other_build.checkpoint()
    finally:
        other_build.close()
    for bad in (b"", b"PPGB\x01", blob[:-10], bytes(flipped), b"x" * 100, foreign):
        with pytest.raises(CheckpointError):
            game.restore(bad)
    assert game.evidence() == expected  # a refused blob changes nothing


def _decode(png: bytes, scale: int) -> bytes:
    pixels = np.asarray(PILImage.open(io.BytesIO(png)).convert("RGBA"))
    return pixels[::scale, ::scale].tobytes()


def test_png_pixels_hash_to_the_frame_hash() -> None:
    scaled = make_game(**options(), image_scale=3)
    try:
        scaled.reset(0)
        for word in ["noop", "start", "right", "down"]:
            scaled.step(word)
            observation = scaled.observe()
            (image,) = observation.images
            assert (image.width, image.height) == (480, 432)
            assert image.raw().startswith(b"\x89PNG\r\n\x1a\n")
            digest = hashlib.sha256(_decode(image.raw(), 3)).hexdigest()
            assert digest == scaled.evidence().frame_hash
    finally:
        scaled.close()


def test_evidence_is_identical_with_images_on_and_off(game: PyBoyGame) -> None:
    imaging = make_game(**options(), image_scale=1)
    try:
        imaging.reset(2)
        with_images = [imaging.evidence()]
        for word in WALK:
            imaging.step(word)
            assert imaging.observe().images
            with_images.append(imaging.evidence())
    finally:
        imaging.close()
    assert tuple(with_images) == trace(game, 2, WALK)
    assert not game.observe().images


def test_text_shows_the_screen_and_public_numbers_only(game: PyBoyGame) -> None:
    game.reset(0)
    seen: dict[str, list[int]] = {}
    for word in ["start", *["right", "down", "noop", "left"] * 80]:
        game.step(word)
        text = game.observe().text
        engine = game.evidence().engine
        lines = text.splitlines()
        assert len(lines) == 19
        assert all(len(line) == 20 for line in lines[:18])
        assert lines[18] == " ".join(f"{name} {engine[name]}" for name in PUBLIC)
        # The privileged counters change every input; their values never show.
        for secret in ("frames", "rng"):
            assert secret not in text
            if engine[secret] >= 1000:
                assert str(engine[secret]) not in text
        seen.setdefault(text, []).append(engine["frames"])
    # Equal texts at different frame counts: the text does not depend on the counter.
    assert any(len(set(frames)) > 1 for frames in seen.values())
    assert "GAME OVER" in text


def test_shade_text_for_any_rom() -> None:
    shaded = make_game(**{**options(), "text": "shade", "charset": ""})
    try:
        shaded.step("start")
        lines = shaded.observe().text.splitlines()
    finally:
        shaded.close()
    assert lines[1] == "%" * 20  # the wall row
    assert set(lines[5][1:-1]) <= {" ", "=", "*", "+", "-", ":", "."}


@pytest.mark.parametrize(
    ("override", "match"),
    [
        ({"rom_path": "x.gb"}, "exactly one of rom"),
        ({"public": ["nope"]}, "unknown channel"),
        ({"channels": {"x": {"address": 0x8000}}}, "outside WRAM"),
        ({"channels": {"x": {"address": 0xDFFF, "size": 2}}}, "outside WRAM"),
        ({"channels": {f"c{i}": {"address": 0xC000 + i} for i in range(33)}}, "over 32"),
        ({"channels": {"Bad-Name": {"address": 0xC000}}}, "pattern"),
        ({"frames_per_input": 4, "press_frames": 4}, "released"),
        ({"image_scale": 9}, "image_scale"),
        ({"rom_sha256": "0" * 64}, "SHA-256"),
        ({"text": "tiles", "charset": ""}, "charset"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_bad_options_are_target_errors(override: dict[str, object], match: str) -> None:
    with pytest.raises(TargetError, match=match):
        make_game(
            **{
                **options(),
                "channels": {},
                "public": [],
                "over_channel": None,
                "seed_channel": None,
                "ready_channel": None,
                **override,
            }
        )


def test_seed_out_of_range_is_refused(game: PyBoyGame) -> None:
    for seed in (-1, 2**53):
        with pytest.raises(FormatError):
            game.reset(seed)


def test_over_is_none_without_an_over_channel() -> None:
    plain = make_game(rom="pp-collect")
    try:
        assert plain.over() is None
        assert plain.evidence().engine == {}
        assert plain.descriptor.build.digest != make_game_digest()
    finally:
        plain.close()


def make_game_digest() -> str:
    session = make_game(**options())
    try:
        return session.descriptor.build.digest
    finally:
        session.close()
