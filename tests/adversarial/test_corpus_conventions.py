"""Hostile input to the registers and framebuffer corpora: screens that are no shades,
pictures that are no DMG screen, model suffixes nobody defined."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from PIL import Image

from playproof.corpus import (
    CandidateSpec,
    CorpusAnswers,
    CorpusCase,
    CorpusManifest,
    FramebufferAnswer,
    grade_candidate,
    load_corpus,
    shipped_paths,
)
from playproof.corpus._build import mooneye_applies, picture_sha256
from playproof.errors import FormatError

CANDIDATES = Path(__file__).resolve().parents[1] / "corpus" / "candidates"


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_a_screen_byte_that_is_no_shade_fails_the_case_as_a_protocol_error() -> None:
    manifest_path, _, roms = shipped_paths("dmg-acid2")
    case = CorpusCase(
        id="acid",
        file="dmg-acid2.gb",
        sha256=load_corpus(manifest_path, roms).manifest.cases[0].sha256,
        suite="s",
        mode="frames",
        budget_frames=1,
        result_address=None,
    )
    manifest = CorpusManifest(corpus_id="x", version="1", cases=(case,), denominator=1)
    answers = CorpusAnswers(
        corpus_id="x",
        manifest_digest=manifest.digest,
        reference="test",
        answers={"acid": FramebufferAnswer(sha256="0" * 64)},
    )
    hostile = CandidateSpec(
        command=(sys.executable, str(CANDIDATES / "bad_shade.py")),
        read_only=(CANDIDATES,),
        runtime="python",
    )
    run = grade_candidate(load_corpus(manifest, roms), answers, hostile)
    (seen,) = run.observations
    assert seen.outcome == "protocol-error"
    assert "pixel 23039 has shade 7" in seen.detail
    assert run.grade.passed == 0


@pytest.mark.parametrize(
    ("image", "message"),
    [
        (Image.new("L", (160, 144), 0x80), "not a DMG shade"),
        (Image.new("RGB", (160, 144), (0xFF, 0xAA, 0xFF)), "not a DMG shade"),
        (Image.new("L", (160, 143), 0xFF), "not 160x144"),
        (Image.new("L", (320, 288), 0xFF), "not 160x144"),
    ],
)
def test_a_picture_that_is_no_dmg_screen_is_refused(image: Image.Image, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        picture_sha256(_png(image))


@pytest.mark.parametrize("data", [b"", b"\x89PNG\r\n\x1a\n" + b"\0" * 40, b"not a picture"])
def test_bytes_that_are_no_picture_are_refused(data: bytes) -> None:
    with pytest.raises(FormatError, match="not a readable picture"):
        picture_sha256(data)


@pytest.mark.parametrize("name", ["a-dmgX.gb", "a-GSQ.gb", "a-.gb", "a-nes.gb"])
def test_a_model_suffix_outside_the_naming_rule_is_refused(name: str) -> None:
    with pytest.raises(FormatError, match="unknown model suffix"):
        mooneye_applies(name)
