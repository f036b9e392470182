"""The shipped CHIP-8 corpus: answers from the suite's pictures, graded through the real jail."""

from __future__ import annotations

import hashlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from typer.testing import CliRunner

from playproof.cli import app
from playproof.corpus import (
    CandidateSpec,
    CorpusManifest,
    FramebufferAnswer,
    _wire,
    generate_answers,
    grade_candidate,
    load_answers,
    load_corpus,
    load_manifest,
    shipped_paths,
)
from playproof.corpus._build import CHIP8_CASES, chip8_picture_bits
from playproof.corpus._catalog import REFERENCE_RESULTS
from playproof.corpus._manifest import load_reference_results
from playproof.corpus._reference import reference_candidate_spec
from playproof.corpus._shipped import corpus_dir
from playproof.corpus.chip8 import candidate
from playproof.corpus.chip8.machine import Chip8

CANDIDATES = Path(__file__).parent / "candidates"
SELECTOR = 0x1FF


def _shipped() -> tuple[Any, Any, Path]:
    manifest_path, answers_path, roms = shipped_paths("chip8")
    manifest = load_manifest(manifest_path)
    return manifest, load_answers(answers_path, manifest), roms


def _bits_by_hand(path: Path) -> bytes:
    """The picture's 64x32 grid, decoded independently of the build: the centre pixel of each
    12x12 cell, lit when its red channel is that of the bright colour (0xFF)."""
    with Image.open(path) as image:
        rgb = image.convert("RGB")
    assert rgb.size == (768, 384)
    return bytes(
        int(rgb.getpixel((12 * x + 6, 12 * y + 6))[0] == 0xFF)  # type: ignore[index]
        for y in range(32)
        for x in range(64)
    )


# -- answers come from the pictures -----------------------------------------------------------


@pytest.mark.parametrize("plan", CHIP8_CASES, ids=lambda p: p.id)
def test_each_answer_is_the_hash_of_the_published_picture(plan: Any) -> None:
    _, answers, roms = _shipped()
    bits = _bits_by_hand(roms / plan.picture)
    answer = answers.answers[plan.id]
    assert isinstance(answer, FramebufferAnswer)
    assert answer.sha256 == hashlib.sha256(bits).hexdigest()
    assert chip8_picture_bits((roms / plan.picture).read_bytes()) == bits
    assert 0 < sum(bits) < len(bits)


def test_the_answers_are_not_the_interpreters_screens() -> None:
    """A screen one frame into the IBM logo test does not pass, so the answers are not
    whatever the reference shows at any frame."""
    _, answers, roms = _shipped()
    chip = Chip8((roms / "bin/2-ibm-logo.ch8").read_bytes())
    chip.run_frames(1, 15)
    assert hashlib.sha256(chip.display).hexdigest() != answers.answers["2-ibm-logo"].sha256


def _png(grid: bytes, scale: int = 12, noise: int = 0) -> bytes:
    image = Image.new("RGB", (64 * scale, 32 * scale), (153, 102, 1))
    for index, on in enumerate(grid):
        if on:
            x, y = index % 64, index // 64
            image.paste((255, 204, 1), (x * scale, y * scale, (x + 1) * scale, (y + 1) * scale))
    for n in range(noise):
        image.putpixel((n, 0), (255, 255, 255))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.parametrize("scale", [1, 3, 12])
def test_a_drawn_grid_decodes_back_to_itself(scale: int) -> None:
    grid = bytes((x * 7 + y * 3) % 5 == 0 for y in range(32) for x in range(64))
    assert chip8_picture_bits(_png(grid, scale)) == grid


def test_a_few_stray_pixels_are_tolerated() -> None:
    grid = bytes(i % 3 == 0 for i in range(2048))
    assert chip8_picture_bits(_png(grid, 12, noise=3)) == grid


# -- the manifest ---------------------------------------------------------------------------


def test_the_manifest_covers_the_chip8_tests_and_says_what_is_left_out() -> None:
    manifest, _, _ = _shipped()
    assert manifest.platform == "chip8"
    assert [c.id for c in manifest.cases] == [p.id for p in CHIP8_CASES]
    quirks = manifest.case("5-quirks/chip8")
    assert quirks.chip8 is not None
    assert [(p.address, p.value) for p in quirks.chip8.poke] == [(SELECTOR, 1)]
    left_out = {e.file: e.reason for e in manifest.excluded}
    assert "SUPER-CHIP" in left_out["bin/8-scrolling.ch8"]
    assert "XO-CHIP" in left_out["bin/5-quirks.ch8"]
    assert "sound" in left_out["bin/7-beep.ch8"]
    assert load_reference_results(shipped_paths("chip8")[0].parent / REFERENCE_RESULTS, manifest)


def test_game_boy_manifests_keep_their_digest() -> None:
    """A DMG case serialises without a ``chip8`` key, so the answers bound to the shipped
    Game Boy manifests still match them."""
    for name in ("blargg", "dmg-acid2", "mooneye"):
        manifest_path, answers_path, _ = shipped_paths(name)
        manifest = load_manifest(manifest_path)
        load_answers(answers_path, manifest)  # refuses answers bound to another digest
        assert "chip8" not in manifest.cases[0].model_dump()


# -- protocol constants and the candidate in-process -----------------------------------------


def test_the_candidate_copies_of_the_wire_constants_are_equal() -> None:
    assert candidate.MAX_DATA_BYTES == _wire.MAX_DATA_BYTES
    assert candidate.CHIP8_KEYS == _wire.CHIP8_KEYS
    assert candidate.MAX_PROGRAM_BYTES == _wire.CHIP8_MAX_PROGRAM_BYTES


def test_the_candidate_session_answers_chip8_requests() -> None:
    rom = (corpus_dir("chip8") / "bin/2-ibm-logo.ch8").read_bytes()
    session = candidate.Session(io.BytesIO(rom))
    assert session.handle(["PLATFORM", "chip8", "20"]) == b"OK\n"
    assert session.handle(["LOAD", str(len(rom))]) == b"OK\n"
    assert session.handle(["POKE", "511", "3"]) == b"OK\n"
    assert session.handle(["FRAMES", "30"]) == b"OK\n"
    head, _, screen = session.handle(["SCREEN"]).partition(b"\n")
    assert head == b"DATA 2048"
    assert set(screen) == {0, 1}
    regs = session.handle(["REGS"]).decode().split()
    assert regs[0] == "OK"
    assert {f.split("=")[0] for f in regs[1:]} >= {"V0", "VF", "I", "PC", "DT"}
    head, _, memory = session.handle(["MEM", "511", "3"]).partition(b"\n")
    assert memory == bytes([3]) + rom[:2]
    assert session.handle(["PRESS", "F"]) == b"OK\n"
    for words in (["PRESS", "g"], ["PLATFORM", "dmg"], ["POKE", "4096", "0"], ["LOAD", "4000"]):
        with pytest.raises(candidate.ProtocolFault):
            session.handle(words)


# -- graded through the runner and the jail --------------------------------------------------


def test_the_reference_passes_every_case_in_the_jail() -> None:
    manifest, answers, roms = _shipped()
    run = grade_candidate(load_corpus(manifest, roms), answers, reference_candidate_spec("chip8"))
    assert (run.grade.passed, run.grade.denominator) == (8, 8)
    frames = [o.frames for o in run.observations]
    assert frames == [c.budget_frames for c in manifest.cases]


def test_the_game_boy_reference_cannot_run_chip8_cases() -> None:
    manifest, answers, roms = _shipped()
    small = CorpusManifest.model_validate(
        {**manifest.model_dump(), "cases": manifest.cases[:1], "excluded": (), "denominator": 1}
    )
    small_answers = answers.model_copy(
        update={
            "manifest_digest": small.digest,
            "answers": {"1-chip8-logo": answers.answers["1-chip8-logo"]},
        }
    )
    run = grade_candidate(load_corpus(small, roms), small_answers, reference_candidate_spec("dmg"))
    assert run.grade.passed == 0
    assert "PLATFORM" in run.grade.results[0].reason


def _replay(folder: Path, **env: str) -> CandidateSpec:
    return CandidateSpec(
        command=(sys.executable, str(CANDIDATES / "chip8_replay.py")),
        read_only=(CANDIDATES, folder),
        runtime="python",
        env={"CHIP8_SCREENS": str(folder), **env},
    )


def _saved_screens(folder: Path) -> None:
    manifest, _, roms = _shipped()
    for plan, case in zip(CHIP8_CASES, manifest.cases, strict=True):
        selector = plan.selector or 0
        bits = chip8_picture_bits((roms / plan.picture).read_bytes())
        (folder / f"{case.sha256}-{selector}").write_bytes(bits)
    (folder / "dark").write_bytes(bytes(2048))
    (folder / "logo").write_bytes(chip8_picture_bits((roms / CHIP8_CASES[0].picture).read_bytes()))
    folder.chmod(0o755)  # the jail may run the candidate under another uid
    for path in folder.iterdir():
        path.chmod(0o644)


def test_a_candidate_that_prints_a_fixed_screen_fails(tmp_path: Path) -> None:
    _saved_screens(tmp_path)
    manifest, answers, roms = _shipped()
    corpus = load_corpus(manifest, roms)
    dark = grade_candidate(corpus, answers, _replay(tmp_path, CHIP8_FIXED="dark"))
    assert dark.grade.passed == 0
    logo = grade_candidate(corpus, answers, _replay(tmp_path, CHIP8_FIXED="logo"))
    assert logo.grade.passing == {"1-chip8-logo"}


def test_a_candidate_that_replays_the_published_pictures_passes_without_variants(
    tmp_path: Path,
) -> None:
    """The pictures are public: without ROM variants, a candidate that keys saved screens on
    the ROM and the selector passes every case without running anything (test_variants.py
    shows variants bring it to 0)."""
    _saved_screens(tmp_path)
    manifest, answers, roms = _shipped()
    run = grade_candidate(load_corpus(manifest, roms), answers, _replay(tmp_path))
    assert run.grade.passed == run.grade.denominator


# -- the command line ----------------------------------------------------------------------


def test_grade_by_name_signs_a_record_that_verifies(tmp_path: Path) -> None:
    runner = CliRunner()
    record = tmp_path / "grade.json"
    keys = ["--key-dir", str(tmp_path / "keys")]
    result = runner.invoke(
        app,
        ["grade", "--corpus", "chip8", "--candidate", "reference", "--out", str(record), *keys],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stdout
    assert "8 of 8" in result.stdout
    manifest_path = shipped_paths("chip8")[0]
    checked = runner.invoke(
        app,
        ["verify-grade", str(record), "--manifest", str(manifest_path), *keys, "--json"],
        catch_exceptions=False,
    )
    assert checked.exit_code == 0, checked.stdout
    assert json.loads(checked.stdout)["verdict"] == "clean"


def test_corpus_build_rebuilds_the_shipped_files_byte_for_byte(tmp_path: Path) -> None:
    folder = shipped_paths("chip8")[0].parent
    result = CliRunner().invoke(
        app,
        [
            "corpus",
            "build",
            "--kind",
            "chip8",
            "--roms",
            str(corpus_dir("chip8")),
            "--out",
            str(tmp_path),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stdout
    for name in ("manifest.json", "answers.json", REFERENCE_RESULTS):
        assert (tmp_path / name).read_bytes() == (folder / name).read_bytes()


def test_corpus_answers_for_a_chip8_manifest_come_from_the_chip8_reference() -> None:
    manifest, _, roms = _shipped()
    answers = generate_answers(manifest, roms)
    assert answers.reference.startswith("chip8-reference")
    assert set(answers.answers) == {c.id for c in manifest.cases}
