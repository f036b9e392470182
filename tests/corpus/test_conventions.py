"""Corpora whose answers are a suite's own convention: Mooneye (registers) and dmg-acid2 (picture).

The expected answers never come from an emulator: Mooneye's are the Fibonacci
registers at ``LD B,B``, dmg-acid2's the hash of the author's reference picture
(recomputed here from the PNG). The reference candidate is graded like any
other, and the cases it fails stay in the denominator, recorded as such.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image
from typer.testing import CliRunner

import playproof.cli._corpus  # noqa: F401  (registers the commands)
from playproof.cli._app import app
from playproof.corpus import (
    CaseObservation,
    CorpusAnswers,
    CorpusCase,
    CorpusManifest,
    FramebufferAnswer,
    RegistersAnswer,
    corpus_dir,
    grade,
    grade_candidate,
    load_answers,
    load_corpus,
    load_manifest,
    read_sums,
    reference_candidate_spec,
    shipped_paths,
)
from playproof.corpus._build import MOONEYE_PASS, mooneye_applies, picture_sha256
from playproof.corpus._catalog import REFERENCE_RESULTS, list_corpora
from playproof.corpus._manifest import ReferenceResults, load_reference_results
from playproof.corpus._wire import SCREEN_BYTES, SHADE_RGB, screen_rgb
from playproof.errors import FormatError

SHA = "0" * 64
FIBONACCI = {"B": 3, "C": 5, "D": 8, "E": 13, "H": 21, "L": 34}
PICTURE_SHA256 = "2ba8286c29ae381838c71a88614302ce05f2b26102d1ed8dc51e25f83fcccc67"
"""The hash dmg-acid2's SOURCE.md states for its reference picture as RGB bytes."""
REFERENCE_FAILS = {
    "acceptance/boot_div-dmgABCmgb",
    "acceptance/boot_hwio-dmgABCmgb",
    "acceptance/boot_regs-dmgABC",
    "acceptance/serial/boot_sclk_align-dmgABCmgb",
}
"""The Mooneye cases PyBoy fails: they check the state a real boot ROM leaves."""
QUICK_MOONEYE = (
    "acceptance/add_sp_e_timing",
    "acceptance/instr/daa",
    "acceptance/timer/tim00",
    "acceptance/boot_regs-dmgABC",
)
"""Three the reference passes and one of its known failures; each breaks within 100 frames."""


def _shipped(name: str) -> tuple[CorpusManifest, CorpusAnswers, Path]:
    manifest_path, answers_path, roms = shipped_paths(name)
    manifest = load_manifest(manifest_path)
    return manifest, load_answers(answers_path, manifest), roms


def _reference_results(name: str, manifest: CorpusManifest) -> ReferenceResults:
    return load_reference_results(shipped_paths(name)[0].parent / REFERENCE_RESULTS, manifest)


def _picture_hash(path: Path) -> str:
    """The reference picture as R, G, B bytes per pixel, row-major, hashed (independently)."""
    with Image.open(path) as image:
        grey = image.convert("L")
        assert grey.size == (160, 144)
        levels = grey.tobytes()
    assert set(levels) <= {0x00, 0x55, 0xAA, 0xFF}
    return hashlib.sha256(bytes(v for level in levels for v in (level, level, level))).hexdigest()


# -- the grader in registers and framebuffer modes, on synthetic observations ------------------


def _setup() -> tuple[CorpusManifest, CorpusAnswers]:
    cases = (
        CorpusCase(
            id="r", file="r.gb", sha256=SHA, suite="s", mode="until-breakpoint", budget_frames=9
        ),
        CorpusCase(id="f", file="f.gb", sha256=SHA, suite="s", mode="frames", budget_frames=9),
    )
    manifest = CorpusManifest(corpus_id="x", version="1", cases=cases, denominator=2)
    answers = CorpusAnswers(
        corpus_id="x",
        manifest_digest=manifest.digest,
        reference="test",
        answers={
            "r": RegistersAnswer(registers=dict(FIBONACCI)),
            "f": FramebufferAnswer(sha256="ab" * 32),
        },
    )
    return manifest, answers


def test_matching_registers_and_screen_pass() -> None:
    manifest, answers = _setup()
    seen = [
        CaseObservation(
            case_id="r", outcome="ok", registers={**FIBONACCI, "A": 1}, at_breakpoint=True
        ),
        CaseObservation(case_id="f", outcome="ok", screen_sha256="ab" * 32),
    ]
    result = grade(manifest, answers, seen)
    assert (result.passed, result.denominator) == (2, 2)


@pytest.mark.parametrize(
    ("seen", "reason"),
    [
        (
            CaseObservation(
                case_id="r", outcome="ok", registers={**FIBONACCI, "L": 0x42}, at_breakpoint=True
            ),
            "L=66 (expected 34)",
        ),
        (
            CaseObservation(
                case_id="r",
                outcome="ok",
                registers={n: 0x42 for n in FIBONACCI},
                at_breakpoint=True,
            ),
            "registers differ",
        ),
        (
            CaseObservation(case_id="r", outcome="ok", registers=FIBONACCI, at_breakpoint=False),
            "no LD B,B breakpoint",
        ),
        (CaseObservation(case_id="r", outcome="ok"), "no registers"),
        (CaseObservation(case_id="r", outcome="crash", detail="died"), "crash: died"),
        (CaseObservation(case_id="f", outcome="ok", screen_sha256="cd" * 32), "differs"),
        (CaseObservation(case_id="f", outcome="ok"), "no screen"),
        (CaseObservation(case_id="f", outcome="timeout", screen_sha256="ab" * 32), "timeout"),
        (CaseObservation(case_id="f", outcome="protocol-error", detail="bad"), "protocol-error"),
    ],
)
def test_wrong_or_missing_registers_and_screens_fail(seen: CaseObservation, reason: str) -> None:
    manifest, answers = _setup()
    result = grade(manifest, answers, [seen])
    mine = next(r for r in result.results if r.case_id == seen.case_id)
    assert not mine.passed
    assert reason in mine.reason
    assert result.denominator == 2


@given(st.binary(max_size=64).map(lambda b: bytes(x & 3 for x in b)))
def test_a_screen_hashes_as_three_equal_grey_bytes_per_pixel(shades: bytes) -> None:
    rgb = screen_rgb(shades)
    assert len(rgb) == 3 * len(shades)
    for index, shade in enumerate(shades):
        assert rgb[3 * index : 3 * index + 3] == bytes([SHADE_RGB[shade]] * 3)


@given(st.binary(min_size=1, max_size=64), st.integers(4, 255))
def test_a_byte_that_is_no_shade_is_refused(shades: bytes, bad: int) -> None:
    with pytest.raises(ValueError, match=f"shade {bad}"):
        screen_rgb(bytes(x & 3 for x in shades) + bytes([bad]))


# -- the shipped manifests and their answers ---------------------------------------------------


def test_the_dmg_acid2_answer_is_the_reference_picture() -> None:
    manifest, answers, roms = _shipped("dmg-acid2")
    load_corpus(manifest, roms)
    (case,) = manifest.cases
    assert (case.mode, case.budget_frames, manifest.denominator) == ("frames", 120, 1)
    expected = _picture_hash(roms / "reference-dmg.png")
    assert expected == PICTURE_SHA256
    assert answers.answers[case.id] == FramebufferAnswer(sha256=expected)
    assert picture_sha256((roms / "reference-dmg.png").read_bytes()) == expected


def test_the_mooneye_manifest_covers_every_rom_for_a_dmg_abc() -> None:
    manifest, answers, roms = _shipped("mooneye")
    load_corpus(manifest, roms)
    files = {name for name in read_sums(roms) if name.endswith(".gb")}
    assert len(files) == 75
    assert {c.file for c in manifest.cases} | {e.file for e in manifest.excluded} == files
    assert manifest.denominator == len(manifest.cases) == 66
    assert all(c.mode == "until-breakpoint" for c in manifest.cases)
    # Every answer is the suite's convention, never an emulator's result.
    assert all(a == RegistersAnswer(registers=FIBONACCI) for a in answers.answers.values())
    assert MOONEYE_PASS == FIBONACCI
    left_out = {Path(e.file).stem for e in manifest.excluded}
    assert left_out == {
        "boot_div-S",
        "boot_div2-S",
        "boot_hwio-S",
        "boot_div-dmg0",
        "boot_hwio-dmg0",
        "boot_regs-dmg0",
        "boot_regs-mgb",
        "boot_regs-sgb",
        "boot_regs-sgb2",
    }
    assert all("not a DMG-ABC" in e.reason for e in manifest.excluded)


@pytest.mark.parametrize(
    ("name", "applies"),
    [
        ("acceptance/add_sp_e_timing.gb", True),
        ("acceptance/di_timing-GS.gb", True),
        ("acceptance/boot_div-dmgABCmgb.gb", True),
        ("acceptance/boot_regs-dmgABC.gb", True),
        ("acceptance/boot_regs-dmg0.gb", False),
        ("acceptance/boot_regs-mgb.gb", False),
        ("acceptance/boot_div-S.gb", False),
        ("misc/boot_regs-cgb.gb", False),
        ("misc/bits/unused_hwio-C.gb", False),
        ("misc/boot_regs-A.gb", False),
    ],
)
def test_mooneye_names_say_which_models_a_test_applies_to(name: str, applies: bool) -> None:
    assert mooneye_applies(name) is applies


def test_the_reference_failures_are_recorded_not_dropped() -> None:
    for name in ("mooneye", "dmg-acid2"):
        manifest, _, _ = _shipped(name)
        results = _reference_results(name, manifest)
        assert results.denominator == manifest.denominator
    manifest, _, _ = _shipped("mooneye")
    results = _reference_results("mooneye", manifest)
    failing = {r.case_id for r in results.results if not r.passed}
    assert failing == REFERENCE_FAILS
    assert failing <= {c.id for c in manifest.cases}  # still cases, still counted
    assert results.passed == 62


def test_reference_results_for_another_manifest_are_refused(tmp_path: Path) -> None:
    manifest, _, _ = _shipped("mooneye")
    results = _reference_results("mooneye", manifest)
    other = manifest.model_copy(update={"version": "2"})
    with pytest.raises(FormatError, match="reference results are for manifest"):
        results.check_against(other)
    data = results.model_dump(mode="json")
    data["passed"] = 66
    path = tmp_path / "reference.json"
    path.write_text(json.dumps(data))
    with pytest.raises(FormatError, match="pass count"):
        load_reference_results(path, manifest)


# -- the reference candidate, jailed --------------------------------------------------------


def _subset(case_ids: tuple[str, ...]) -> tuple[Any, CorpusAnswers]:
    manifest, answers, roms = _shipped("mooneye")
    cases = tuple(c for c in manifest.cases if c.id in case_ids)
    small = CorpusManifest(
        corpus_id="mooneye-quick", version="1", cases=cases, denominator=len(cases)
    )
    small_answers = CorpusAnswers(
        corpus_id=small.corpus_id,
        manifest_digest=small.digest,
        reference=answers.reference,
        answers={c.id: answers.answers[c.id] for c in cases},
    )
    return load_corpus(small, roms), small_answers


def test_the_reference_passes_dmg_acid2() -> None:
    manifest, answers, roms = _shipped("dmg-acid2")
    run = grade_candidate(load_corpus(manifest, roms), answers, reference_candidate_spec())
    assert (run.grade.passed, run.grade.denominator) == (1, 1)
    assert run.observations[0].frames == 120


def test_the_reference_stops_at_the_breakpoint_with_the_suites_registers() -> None:
    corpus, answers = _subset(QUICK_MOONEYE)
    run = grade_candidate(corpus, answers, reference_candidate_spec(), cases_per_process=4)
    results = {r.case_id: r for r in run.grade.results}
    seen = {o.case_id: o for o in run.observations}
    assert all(o.at_breakpoint for o in run.observations)
    assert run.grade.passing == set(QUICK_MOONEYE) - REFERENCE_FAILS
    failing = seen["acceptance/boot_regs-dmgABC"]
    assert failing.registers is not None
    assert all(failing.registers[n] == 0x42 for n in FIBONACCI)  # the suite's fail signal
    assert "registers differ" in results["acceptance/boot_regs-dmgABC"].reason


@pytest.mark.slow
def test_the_whole_mooneye_corpus_grades_as_recorded() -> None:
    manifest, answers, roms = _shipped("mooneye")
    run = grade_candidate(
        load_corpus(manifest, roms),
        answers,
        reference_candidate_spec(),
        jobs=2,
        cases_per_process=8,
    )
    recorded = _reference_results("mooneye", manifest)
    assert run.grade.passing == {r.case_id for r in recorded.results if r.passed}
    assert (run.grade.passed, run.grade.denominator) == (62, 66)


def test_a_candidate_that_only_reports_the_fibonacci_registers_passes_without_variants(
    cheat: Any,
) -> None:
    """The registers convention is public: without ROM variants, a candidate that never runs
    the ROM passes every Mooneye case (test_variants.py shows variants bring it to 0)."""
    corpus, answers = _subset(QUICK_MOONEYE)
    run = grade_candidate(corpus, answers, cheat("fibonacci"), cases_per_process=4)
    assert run.grade.passed == run.grade.denominator == len(QUICK_MOONEYE)


# -- corpus list ----------------------------------------------------------------------------


def test_corpus_list_names_every_corpus_with_its_counts_and_pin() -> None:
    result = CliRunner().invoke(app, ["corpus", "list", "--json"], catch_exceptions=False)
    assert result.exit_code == 0
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert set(rows) == {"blargg", "chip8", "dmg-acid2", "mooneye"}
    assert (rows["mooneye"]["denominator"], rows["mooneye"]["excluded"]) == (66, 9)
    assert rows["mooneye"]["reference_passed"] == 62
    assert (rows["dmg-acid2"]["denominator"], rows["dmg-acid2"]["reference_passed"]) == (1, 1)
    assert (rows["blargg"]["denominator"], rows["blargg"]["roms"]) == (43, 58)
    assert (rows["chip8"]["denominator"], rows["chip8"]["excluded"]) == (8, 4)
    assert (rows["chip8"]["roms"], rows["chip8"]["reference_passed"]) == (8, 8)
    assert (rows["chip8"]["platform"], rows["chip8"]["licence"]) == ("chip8", "GPL-3.0-only")
    text = CliRunner().invoke(app, ["corpus", "list"], catch_exceptions=False).stdout
    assert "66 cases graded of 75 ROMs (9 left out); the reference passes 62" in text


@pytest.mark.parametrize("entry", list_corpora(), ids=lambda e: e.name)
def test_the_listed_licence_and_pin_are_those_source_md_states(entry: Any) -> None:
    source = (corpus_dir(entry.name) / "SOURCE.md").read_text(encoding="utf-8")
    repository, commit = entry.source.split("@")
    assert f"{repository} at commit" in " ".join(source.split())
    assert commit in source
    spdx = {"MIT": "MIT licence", "GPL-3.0-only": "GPL-3.0"}
    assert spdx.get(entry.licence, "freely redistributable") in " ".join(source.split())


def test_screen_bytes_of_a_whole_frame() -> None:
    assert len(screen_rgb(bytes(SCREEN_BYTES))) == 160 * 144 * 3
    assert (
        hashlib.sha256(screen_rgb(bytes(SCREEN_BYTES))).hexdigest()
        == hashlib.sha256(b"\xff" * (160 * 144 * 3)).hexdigest()
    )


def test_picture_hash_matches_a_known_picture() -> None:
    image = Image.new("L", (160, 144), 0xAA)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    expected = hashlib.sha256(b"\xaa" * (160 * 144 * 3)).hexdigest()
    assert picture_sha256(buffer.getvalue()) == expected


@pytest.mark.parametrize("kind", ["dmg-acid2", "mooneye"])
def test_corpus_build_rebuilds_the_shipped_files(kind: str, tmp_path: Path) -> None:
    manifest_path = shipped_paths(kind)[0]
    result = CliRunner().invoke(
        app,
        [
            "corpus",
            "build",
            "--kind",
            kind,
            "--roms",
            str(corpus_dir(kind)),
            "--out",
            str(tmp_path),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stdout
    for name in ("manifest.json", "answers.json", REFERENCE_RESULTS):
        built = json.loads((tmp_path / name).read_text(encoding="utf-8"))
        assert built == json.loads((manifest_path.parent / name).read_text(encoding="utf-8"))
