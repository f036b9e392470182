"""Hostile input to CHIP-8 grading: bad screens from a candidate, bad manifests, bad pictures."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image
from pydantic import ValidationError

from playproof.corpus import (
    CandidateSpec,
    grade_candidate,
    load_answers,
    load_corpus,
    load_manifest,
)
from playproof.corpus._build import chip8_picture_bits
from playproof.corpus._manifest import CorpusManifest
from playproof.corpus._shipped import shipped_paths
from playproof.errors import FormatError

CANDIDATES = Path(__file__).parents[1] / "corpus" / "candidates"


def _shipped() -> tuple[Any, Any, Path]:
    manifest_path, answers_path, roms = shipped_paths("chip8")
    manifest = load_manifest(manifest_path)
    return manifest, load_answers(answers_path, manifest), roms


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("not-a-bit", "not 0 or 1"),
        ("short", "expected 2048"),
        ("oversized", "over the 2048-byte bound"),
    ],
)
def test_a_screen_that_is_not_2048_bits_is_a_protocol_error(mode: str, reason: str) -> None:
    manifest, answers, roms = _shipped()
    spec = CandidateSpec(
        command=(sys.executable, str(CANDIDATES / "chip8_hostile.py")),
        read_only=(CANDIDATES,),
        runtime="python",
        env={"CHIP8_MODE": mode},
    )
    run = grade_candidate(load_corpus(manifest, roms), answers, spec)
    assert run.grade.passed == 0
    assert all(o.outcome == "protocol-error" for o in run.observations)
    assert reason in run.grade.results[0].reason


def _manifest_dict() -> dict[str, Any]:
    manifest, _, _ = _shipped()
    data: dict[str, Any] = manifest.model_dump(mode="json")
    return data


def test_a_chip8_case_without_its_setup_is_refused() -> None:
    data = _manifest_dict()
    del data["cases"][0]["chip8"]
    with pytest.raises(ValidationError, match="needs mode 'frames' and a chip8 setup"):
        CorpusManifest.model_validate(data)


def test_a_chip8_setup_on_a_game_boy_corpus_is_refused() -> None:
    data = _manifest_dict()
    data["platform"] = "dmg"
    with pytest.raises(ValidationError, match="chip8 setup on platform 'dmg'"):
        CorpusManifest.model_validate(data)


def test_key_events_out_of_order_or_after_the_budget_are_refused() -> None:
    data = _manifest_dict()
    keys = data["cases"][7]["chip8"]["keys"]
    keys.reverse()
    with pytest.raises(ValidationError, match="not in frame order"):
        CorpusManifest.model_validate(data)
    keys.reverse()
    keys[-1]["frame"] = data["cases"][7]["budget_frames"] + 1
    with pytest.raises(ValidationError, match="after its budget"):
        CorpusManifest.model_validate(data)


@pytest.mark.parametrize(
    ("field", "value"),
    [("address", 0x1000), ("value", 256), ("address", -1)],
)
def test_pokes_outside_memory_or_a_byte_are_refused(field: str, value: int) -> None:
    data = _manifest_dict()
    data["cases"][4]["chip8"]["poke"][0][field] = value
    with pytest.raises(ValidationError):
        CorpusManifest.model_validate(data)


def _picture(size: tuple[int, int], paint: Any = None) -> bytes:
    image = Image.new("RGB", size, (153, 102, 1))
    if paint is not None:
        paint(image)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.parametrize("size", [(768, 385), (100, 50), (32, 64), (63, 32)])
def test_a_picture_that_is_not_a_whole_scale_of_64x32_is_refused(size: tuple[int, int]) -> None:
    with pytest.raises(FormatError, match="not the 64x32 display"):
        chip8_picture_bits(_picture(size))


def test_a_half_lit_cell_is_refused() -> None:
    def half(image: Image.Image) -> None:
        image.paste((255, 204, 1), (0, 0, 6, 12))
        image.paste((255, 204, 1), (100, 100, 112, 112))

    with pytest.raises(FormatError, match=r"display cell \(0, 0\) is 72 of 144"):
        chip8_picture_bits(_picture((768, 384), half))


def test_a_picture_of_many_colours_is_refused() -> None:
    def noise(image: Image.Image) -> None:
        for x in range(768):
            for y in range(0, 384, 2):
                image.putpixel((x, y), (x % 256, y % 256, 7))

    with pytest.raises(FormatError, match="not a two-colour screenshot"):
        chip8_picture_bits(_picture((768, 384), noise))


@given(st.binary(max_size=200))
def test_garbage_bytes_are_a_format_error(data: bytes) -> None:
    with pytest.raises(FormatError):
        chip8_picture_bits(data)


def test_a_picture_wider_than_the_bound_is_refused_before_decoding() -> None:
    with pytest.raises(FormatError, match="over the bound"):
        chip8_picture_bits(_picture((64 * 33, 32 * 33)))
