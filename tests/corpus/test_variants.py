"""Per-grading ROM variants: the reference passes them, replayed or derived replies do not.

Every grading here uses a fixed seed so the variants are the same on every run;
in real gradings the seed comes from ``secrets``. Each cheat is measured twice,
without variants (it passes) and with them (it scores 0).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import playproof.cli._corpus  # noqa: F401  (registers the commands)
from playproof.cli._app import app
from playproof.corpus import (
    CandidateSpec,
    Corpus,
    CorpusAnswers,
    CorpusManifest,
    JailLimits,
    RunOutcome,
    _variants,
    grade_candidate,
    load_answers,
    load_corpus,
    load_manifest,
    reference_candidate_spec,
    run_corpus,
    shipped_paths,
)
from playproof.corpus import reference_candidate as dmg_reference
from playproof.corpus._build import CHIP8_CASES, chip8_picture_bits
from playproof.corpus._grader import ReferenceRegistersAnswer, grade_case
from playproof.corpus._jail import python_paths
from playproof.corpus._manifest import RegistersAnswer
from playproof.corpus._patching import HEADER
from playproof.corpus._runner import CaseObservation
from playproof.corpus._trials import TrialWorker
from playproof.corpus._variants import (
    VARIANT_MARK,
    VariantPlan,
    default_variants,
    load_symbols,
    make_variants,
    run_with_variants,
    variant_answer,
    variant_corpus,
)
from playproof.corpus._variants_chip8 import chip8_screen
from playproof.corpus._variants_dmg import CONDITION_BIT, dmg_frame
from playproof.corpus._variants_mooneye import MOONEYE_FAIL
from playproof.corpus.chip8 import candidate as chip8_reference
from playproof.sign import Envelope, SigningKey

CANDIDATES = Path(__file__).parent / "candidates"
SEED = bytes(range(32))
OTHER_SEED = bytes(range(1, 33))
FIBONACCI = {"B": 3, "C": 5, "D": 8, "E": 13, "H": 21, "L": 34}
QUICK_MOONEYE = (
    "acceptance/add_sp_e_timing",
    "acceptance/bits/reg_f",
    "acceptance/instr/daa",
    "acceptance/boot_regs-dmgABC",
)
"""Two with ``regs_assert`` checks, one without, one the reference fails (all quick)."""
REFERENCE_FAILS = "acceptance/boot_regs-dmgABC"
REFERENCE_FAILS_ALL = {
    "acceptance/boot_div-dmgABCmgb",
    "acceptance/boot_hwio-dmgABCmgb",
    REFERENCE_FAILS,
    "acceptance/serial/boot_sclk_align-dmgABCmgb",
}
"""The Mooneye cases PyBoy fails (it runs its own boot ROM)."""


def _shipped(name: str) -> tuple[CorpusManifest, CorpusAnswers, Path]:
    manifest_path, answers_path, roms = shipped_paths(name)
    manifest = load_manifest(manifest_path)
    return manifest, load_answers(answers_path, manifest), roms


def _subset(name: str, ids: tuple[str, ...]) -> tuple[Corpus, CorpusAnswers, Path]:
    manifest, answers, roms = _shipped(name)
    cases = tuple(c for c in manifest.cases if c.id in ids)
    small = manifest.model_copy(
        update={"corpus_id": f"{name}-quick", "cases": cases, "denominator": len(cases)}
    )
    small = CorpusManifest.model_validate(small.model_dump())
    small_answers = CorpusAnswers(
        corpus_id=small.corpus_id,
        manifest_digest=small.digest,
        reference=answers.reference,
        answers={c.id: answers.answers[c.id] for c in cases},
    )
    return load_corpus(small, roms), small_answers, roms


def _whole(name: str) -> tuple[Corpus, CorpusAnswers, Path]:
    manifest, answers, roms = _shipped(name)
    return load_corpus(manifest, roms), answers, roms


def _plan(corpus: Corpus, roms: Path, per_case: int = 1, seed: bytes = SEED) -> VariantPlan:
    return VariantPlan(seed=seed, per_case=per_case, symbols=load_symbols(roms, corpus.manifest))


def _reference(corpus: Corpus, roms: Path) -> CandidateSpec:
    return dataclasses.replace(
        reference_candidate_spec(corpus.manifest.platform), hidden=(roms.resolve(),)
    )


def _cheat(name: str, folder: Path | None = None, **env: str) -> CandidateSpec:
    return CandidateSpec(
        command=(sys.executable, str(CANDIDATES / f"{name}.py")),
        read_only=(CANDIDATES, *([folder] if folder else [])),
        runtime="python",
        env=env,
    )


def _shifted(platform: str, shift: int = 3) -> CandidateSpec:
    module = chip8_reference if platform == "chip8" else dmg_reference
    script = Path(module.__file__ or "").resolve()
    loop = Path(dmg_reference.__file__ or "").resolve()  # the CHIP-8 reference imports it
    return CandidateSpec(
        command=(sys.executable, str(CANDIDATES / "shifted.py")),
        read_only=(*python_paths(), CANDIDATES, script.parent, loop),
        env={"REFERENCE_SCRIPT": str(script), "SHIFT": str(shift)},
        runtime="grader",  # an honest emulator made from the reference itself
    )


def _share(folder: Path) -> None:
    folder.chmod(0o755)  # the jail may run the candidate under another uid
    for path in folder.iterdir():
        path.chmod(0o644)


# -- how variants are made ---------------------------------------------------------------------


def test_the_same_seed_makes_the_same_variants_and_another_seed_others() -> None:
    corpus, _, roms = _whole("chip8")
    first = make_variants(corpus, _plan(corpus, roms))
    again = make_variants(corpus, _plan(corpus, roms))
    other = make_variants(corpus, _plan(corpus, roms, seed=OTHER_SEED))
    assert [v.sha256 for v in first] == [v.sha256 for v in again]
    assert len(first) == len(other) == corpus.manifest.denominator
    assert {v.sha256 for v in first}.isdisjoint({v.sha256 for v in other})


def test_every_variant_differs_from_its_rom_only_where_it_says_and_never_in_a_header() -> None:
    for name in ("chip8", "mooneye", "dmg-acid2"):
        corpus, _, roms = _whole(name)
        for variant in make_variants(corpus, _plan(corpus, roms)):
            rom = corpus.roms[variant.case_id]
            changed = {at for at in range(len(rom)) if rom[at] != variant.rom[at]}
            assert changed
            assert changed <= {offset for offset, _ in variant.patches}
            if corpus.manifest.platform == "dmg":
                assert not changed & set(HEADER)


def test_chip8_variants_draw_another_picture_than_the_published_one() -> None:
    corpus, answers, roms = _whole("chip8")
    variants = make_variants(corpus, _plan(corpus, roms))
    assert {v.kind for v in variants} == {"chip8-sprite"}
    for variant in variants:
        case = corpus.manifest.case(variant.case_id)
        screen = chip8_screen(variant.rom, case)
        assert hashlib.sha256(screen).hexdigest() != answers.answers[case.id].sha256  # type: ignore[union-attr]


# -- the reference passes every variant --------------------------------------------------------


def test_the_reference_passes_every_chip8_case_and_variant() -> None:
    corpus, answers, roms = _whole("chip8")
    run = grade_candidate(
        corpus, answers, _reference(corpus, roms), variants=_plan(corpus, roms, per_case=2)
    )
    assert (run.grade.passed, run.grade.denominator) == (8, 8)
    assert len(run.record.variants) == 16
    assert all(pin.passed for pin in run.record.variants)
    assert run.record.variant_seed_sha256 == hashlib.sha256(SEED).hexdigest()
    assert [o.case_id for o in run.observations] == [c.id for c in corpus.manifest.cases]


def test_the_reference_passes_the_dmg_acid2_variant() -> None:
    corpus, answers, roms = _whole("dmg-acid2")
    plan = _plan(corpus, roms)
    (variant,) = make_variants(corpus, plan)
    assert variant.kind == "dmg-tile"
    run = grade_candidate(corpus, answers, _reference(corpus, roms), variants=plan)
    assert run.grade.passed == 1
    assert [pin.passed for pin in run.record.variants] == [True]


def test_the_reference_passes_mooneye_variants_of_both_kinds() -> None:
    corpus, answers, roms = _subset("mooneye", QUICK_MOONEYE)
    plan = _plan(corpus, roms, per_case=2)
    run = grade_candidate(
        corpus, answers, _reference(corpus, roms), variants=plan, cases_per_process=4
    )
    assert run.grade.passing == set(QUICK_MOONEYE) - {REFERENCE_FAILS}
    assert all(pin.passed for pin in run.record.variants)
    # A case the reference fails gets only changed checks, which every emulator fails: a
    # moved signal or an inverted branch would be graded against the reference's failure,
    # and an emulator better than the reference would fail it.
    assert {p.kind for p in run.record.variants if p.case_id == REFERENCE_FAILS} == {
        "mooneye-check"
    }
    kinds = {(pin.case_id, pin.kind) for pin in run.record.variants}
    # An inverted branch that fails comes first, a changed check only where none qualifies.
    assert ("acceptance/add_sp_e_timing", "dmg-branch") in kinds
    assert ("acceptance/add_sp_e_timing", "mooneye-signal") in kinds
    assert ("acceptance/instr/daa", "dmg-branch") in kinds
    assert ("acceptance/instr/daa", "mooneye-check") not in kinds  # no regs_assert there


def test_a_changed_checked_value_makes_the_reference_fail_and_a_changed_signal_moves_it() -> None:
    corpus, answers, roms = _subset("mooneye", QUICK_MOONEYE)
    variants = make_variants(corpus, _plan(corpus, roms, per_case=2))
    # A moved signal comes with a quiet inverted branch (seven patches), where one is found.
    moved = [v for v in variants if v.kind == "mooneye-signal"]
    assert moved
    assert all(len(v.patches) == 7 for v in moved)
    extra = variant_corpus(corpus, variants)
    seen = run_corpus(extra, _reference(corpus, roms), cases_per_process=8).observations
    for variant, observation in zip(variants, seen, strict=True):
        answer = variant_answer(answers.answers[variant.case_id], observation)
        assert answer is not None
        registers = answer.registers  # type: ignore[union-attr]
        if variant.kind != "mooneye-signal" or variant.case_id == REFERENCE_FAILS:
            assert set(registers.values()) == {MOONEYE_FAIL}, variant.variant_id
        else:
            assert registers != FIBONACCI
            assert set(registers.values()) != {MOONEYE_FAIL}


# -- cheats: measured without variants, then with them ----------------------------------------


def test_the_fibonacci_cheat_passes_without_variants_and_scores_zero_with_them() -> None:
    corpus, answers, roms = _subset("mooneye", QUICK_MOONEYE)
    cheat = _cheat("fibonacci")
    plain = grade_candidate(corpus, answers, cheat, cases_per_process=4)
    assert plain.grade.passed == 4
    varied = grade_candidate(
        corpus, answers, cheat, cases_per_process=4, variants=_plan(corpus, roms)
    )
    assert varied.grade.passed == 0
    assert "variant" in varied.grade.results[0].reason


def test_registers_without_the_serial_bytes_pass_originals_and_no_varied_mooneye_case() -> None:
    """The serial bytes sent before the breakpoint are a second observation on variants."""
    corpus, answers, roms = _subset("mooneye", QUICK_MOONEYE)
    script = Path(dmg_reference.__file__ or "").resolve()
    mute = CandidateSpec(
        command=(sys.executable, str(CANDIDATES / "mute_serial.py")),
        read_only=(*python_paths(), CANDIDATES, script.parent),
        env={"REFERENCE_SCRIPT": str(script)},
        runtime="grader",  # the reference itself, which runs every ROM for real
    )
    plain = grade_candidate(corpus, answers, mute, cases_per_process=4)
    assert plain.grade.passing == set(QUICK_MOONEYE) - {REFERENCE_FAILS}
    varied = grade_candidate(
        corpus, answers, mute, cases_per_process=4, variants=_plan(corpus, roms)
    )
    assert varied.grade.passed == 0
    reasons = [r.reason for r in varied.grade.results if r.case_id != REFERENCE_FAILS]
    assert all("serial bytes" in reason for reason in reasons), reasons


def test_a_variant_answer_holds_the_serial_bytes_only_when_they_echo_the_registers() -> None:
    original = RegistersAnswer(registers=FIBONACCI)
    registers = {"A": 1, "F": 0, "B": 9, "C": 8, "D": 7, "E": 6, "H": 5, "L": 4, "PC": 0, "SP": 0}
    echoed = CaseObservation(
        case_id="x",
        outcome="ok",
        at_breakpoint=True,
        registers=registers,
        serial=bytes([9, 8, 7, 6, 5, 4]).decode("latin-1"),
    )
    answer = variant_answer(original, echoed)
    assert isinstance(answer, ReferenceRegistersAnswer)
    assert answer.serial == "\t\x08\x07\x06\x05\x04"
    assert grade_case(answer, echoed, "x").passed
    silent = echoed.model_copy(update={"serial": ""})
    failed = grade_case(answer, silent, "x")
    assert not failed.passed
    assert "serial bytes" in failed.reason
    # A run whose serial output is not the registers (an odd path through the test)
    # gives the registers alone: serial handling it does not test is not graded.
    odd = echoed.model_copy(update={"serial": "\x09\x09"})
    plain = variant_answer(original, odd)
    assert plain is not None
    assert not isinstance(plain, ReferenceRegistersAnswer)
    assert grade_case(plain, silent, "x").passed


def test_a_variant_the_reference_did_not_finish_beside_the_candidate_is_run_again_alone() -> None:
    """A candidate that loads the machine could make the reference time out on a variant,
    which would then go ungraded; such a variant is run again once the candidate is done."""
    corpus, answers, roms = _subset("mooneye", QUICK_MOONEYE)
    cheat = _cheat("fibonacci")
    calls: list[tuple[str, ...]] = []

    def starved(target: Corpus, spec: CandidateSpec, **options: Any) -> RunOutcome:
        outcome = run_corpus(target, spec, **options)
        ids = tuple(c.id for c in target.manifest.cases)
        if spec is cheat:
            return outcome
        calls.append(ids)
        if len(calls) > 1:
            return outcome
        starved_one = outcome.observations[0].model_copy(update={"outcome": "timeout"})
        return dataclasses.replace(outcome, observations=[starved_one, *outcome.observations[1:]])

    varied = run_with_variants(
        corpus,
        answers,
        cheat,
        _plan(corpus, roms),
        jobs=2,
        cases_per_process=4,
        limits=JailLimits(),
        isolation="auto",
        on_case=None,
        runner=starved,
    )
    assert len(calls) == 2
    assert calls[1] == calls[0][:1]  # only the starved one, again
    assert len(varied.pins) == len(calls[0])  # every variant graded
    assert varied.grade.passed == 0


def test_reading_the_signal_from_the_rom_scores_zero_with_the_default_two_variants() -> None:
    """The signal reader passes every ROM whose test passes; a variant that must fail stops
    it: a changed check where ``regs_assert`` has one, else an inverted branch (``daa``)."""
    cases = ("acceptance/add_sp_e_timing", "acceptance/bits/reg_f", "acceptance/instr/daa")
    corpus, answers, roms = _subset("mooneye", cases)
    assert default_variants(corpus.manifest) == 2
    cheat = _cheat("signal_reader")
    assert grade_candidate(corpus, answers, cheat).grade.passed == 3
    plan = _plan(corpus, roms, per_case=2)
    varied = grade_candidate(corpus, answers, cheat, variants=plan)
    assert varied.grade.passed == 0
    kinds = {(pin.case_id, pin.kind) for pin in varied.record.variants}
    assert ("acceptance/instr/daa", "dmg-branch") in kinds
    assert ("acceptance/instr/daa", "mooneye-signal") in kinds


@pytest.mark.parametrize("rule", ["pass", "fail"])
def test_diffing_against_the_public_roms_passes_no_case_the_reference_passes(
    tmp_path: Path, rule: str
) -> None:
    """A candidate holding the public originals sees what each variant changed. A moved
    signal comes with a quiet inverted branch, and a failing inverted branch comes first, so
    "signal and branch changed" is a pass or a fail by execution only: either guess loses.
    Only the case the reference fails (changed checks alone) still falls to it."""
    corpus, answers, roms = _subset("mooneye", QUICK_MOONEYE)
    originals = tmp_path / "originals"
    originals.mkdir()
    for number, case in enumerate(corpus.manifest.cases):
        (originals / f"{number}.gb").write_bytes(corpus.roms[case.id])
    _share(originals)
    cheat = _cheat("rom_diff", originals, MOONEYE_ROMS=str(originals), DIFF_RULE=rule)
    assert grade_candidate(corpus, answers, cheat, cases_per_process=4).grade.passed == 4
    plan = _plan(corpus, roms, per_case=2)
    varied = grade_candidate(corpus, answers, cheat, cases_per_process=4, variants=plan)
    assert varied.grade.passing <= {REFERENCE_FAILS}
    quiet = [p for p in varied.record.variants if p.kind == "mooneye-signal"]
    assert quiet  # and the reference passes them (test_the_reference_passes_mooneye_variants)


@pytest.mark.slow
def test_every_mooneye_case_gets_a_variant_that_must_fail_and_one_that_moves_the_signal() -> None:
    """With both, neither the Fibonacci answer, nor the signal read out of the ROM, nor a
    fail answer to every unknown ROM passes any case (each stopped in the quick tests)."""
    corpus, _, roms = _whole("mooneye")
    plan = _plan(corpus, roms, per_case=default_variants(corpus.manifest))
    variants = make_variants(corpus, plan, jobs=2)
    failing = {v.case_id for v in variants if v.kind in ("mooneye-check", "dmg-branch")}
    moved = {v.case_id for v in variants if v.kind == "mooneye-signal"}
    everything = {c.id for c in corpus.manifest.cases}
    # The four boot tests the reference fails get only changed checks (where they have one):
    # their other variants would be graded against the reference's failure.
    assert failing == everything - {"acceptance/boot_hwio-dmgABCmgb"}
    assert moved == everything - REFERENCE_FAILS_ALL
    assert {v.kind for v in variants if v.case_id in REFERENCE_FAILS_ALL} == {"mooneye-check"}


def test_replaying_chip8_pictures_scores_zero_with_variants(tmp_path: Path) -> None:
    corpus, answers, roms = _whole("chip8")
    for plan, case in zip(CHIP8_CASES, corpus.manifest.cases, strict=True):
        bits = chip8_picture_bits((roms / plan.picture).read_bytes())
        (tmp_path / f"{case.sha256}-{plan.selector or 0}").write_bytes(bits)
        (tmp_path / f"rom-{case.sha256}").write_bytes(corpus.roms[case.id])
    _share(tmp_path)
    cheat = _cheat("chip8_replay", tmp_path, CHIP8_SCREENS=str(tmp_path), CHIP8_NEAREST="1")
    assert grade_candidate(corpus, answers, cheat).grade.passed == 8
    varied = grade_candidate(corpus, answers, cheat, variants=_plan(corpus, roms))
    assert varied.grade.passed == 0


def test_a_frame_cache_keyed_on_the_rom_digest_scores_zero_with_variants(tmp_path: Path) -> None:
    corpus, answers, roms = _whole("dmg-acid2")
    (case,) = corpus.manifest.cases
    rom = corpus.roms[case.id]
    (tmp_path / case.sha256).write_bytes(dmg_frame(rom, case.budget_frames)[0])
    (tmp_path / f"rom-{case.sha256}").write_bytes(rom)
    _share(tmp_path)
    cheat = _cheat("frame_cache", tmp_path, FRAME_CACHE=str(tmp_path))
    assert grade_candidate(corpus, answers, cheat).grade.passed == 1
    varied = grade_candidate(corpus, answers, cheat, variants=_plan(corpus, roms))
    assert varied.grade.passed == 0
    assert [pin.passed for pin in varied.record.variants] == [False]


# -- honest emulators that count frames differently still pass --------------------------------


@pytest.mark.parametrize("name", ["chip8", "dmg-acid2"])
def test_an_emulator_a_few_frames_off_passes_originals_and_variants(name: str) -> None:
    corpus, answers, roms = _whole(name)
    run = grade_candidate(
        corpus, answers, _shifted(corpus.manifest.platform), variants=_plan(corpus, roms)
    )
    assert run.grade.passed == run.grade.denominator
    assert all(pin.passed for pin in run.record.variants)


# -- the record and verify-grade ---------------------------------------------------------------


def _grade_cli(tmp_path: Path, *extra: str) -> tuple[Path, list[str]]:
    record = tmp_path / "grade.json"
    keys = ["--key-dir", str(tmp_path / "keys")]
    result = CliRunner().invoke(
        app,
        [
            "grade",
            "--corpus",
            "chip8",
            "--candidate",
            "reference",
            "--out",
            str(record),
            *keys,
            *extra,
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stdout
    assert "8 ROM variants graded" in result.stdout
    return record, keys


def _statement(record: Path) -> str:
    envelope = Envelope.model_validate_json(record.read_text())
    return envelope.payload_bytes().decode()


def _verify(record: Path, keys: list[str], *extra: str) -> tuple[int, dict[str, Any]]:
    manifest = shipped_paths("chip8")[0]
    result = CliRunner().invoke(
        app,
        ["verify-grade", str(record), "--manifest", str(manifest), *keys, "--json", *extra],
        catch_exceptions=False,
    )
    return result.exit_code, json.loads(result.stdout)


def test_the_record_binds_the_variants_and_a_revealed_seed_reproduces_them(
    tmp_path: Path,
) -> None:
    record, keys = _grade_cli(tmp_path, "--variant-seed", SEED.hex())
    text = _statement(record)
    assert SEED.hex() not in text  # the seed is never written, only its SHA-256
    assert hashlib.sha256(SEED).hexdigest() in text
    code, report = _verify(record, keys, "--variant-seed", SEED.hex())
    checks = {c["id"]: c for c in report["checks"]}
    assert code == 0, report
    assert checks["variants-reproduced"]["passed"]
    assert "8 variants bound by digest" in checks["grade-consistent"]["reason"]
    code, report = _verify(record, keys, "--variant-seed", OTHER_SEED.hex())
    assert code != 0
    assert "not the one the record commits to" in json.dumps(report)


def test_grading_without_a_seed_draws_a_secret_one_each_time(tmp_path: Path) -> None:
    first, _ = _grade_cli(tmp_path / "a")
    second, _ = _grade_cli(tmp_path / "b")

    def commitment(path: Path) -> str:
        return str(json.loads(_statement(path))["predicate"]["variant_seed_sha256"])

    assert commitment(first) != commitment(second)
    assert VARIANT_MARK not in _statement(first)  # results name the cases only


BRANCH_CASES = (
    "cpu_instrs/individual/02-interrupts",  # serial, compares with constants
    "instr_timing/instr_timing",  # serial, a timing test
    "dmg_sound/rom_singles/01-registers",  # the status block
)
"""Blargg cases with no CRC site: only an inverted branch varies them."""


CUT_OFF_CASES = (
    "dmg_sound/rom_singles/12-wave write while on",
    "mem_timing-2/rom_singles/01-read_timing",
    "mem_timing-2/rom_singles/03-modify_timing",
)
"""Status-block tests whose failure listing fills the 256-byte block, so the "Failed" line
is cut off: a failure is told by the status alone."""


@pytest.mark.parametrize(
    ("cases", "cheat_passes"),
    [(BRANCH_CASES, set(BRANCH_CASES)), (CUT_OFF_CASES, set(CUT_OFF_CASES[1:]))],
    ids=["no-crc-site", "cut-off-listing"],
)
def test_blargg_cases_without_crc_sites_get_an_inverted_branch_the_reference_fails(
    cases: tuple[str, ...], cheat_passes: set[str]
) -> None:
    corpus, answers, roms = _subset("blargg", cases)
    plan = _plan(corpus, roms)
    variants = make_variants(corpus, plan)
    assert sorted(v.case_id for v in variants) == sorted(cases)
    assert {v.kind for v in variants} == {"dmg-branch"}
    # Searched two cases at a time, each with its own trial child: the same variants.
    assert make_variants(corpus, plan, jobs=2) == variants
    run = grade_candidate(
        corpus, answers, _reference(corpus, roms), variants=plan, cases_per_process=4
    )
    assert run.grade.passed == 3
    assert [pin.passed for pin in run.record.variants] == [True] * 3
    cheat = _cheat("name_passed")
    plain = grade_candidate(corpus, answers, cheat, cases_per_process=4)
    assert plain.grade.passing == cheat_passes
    varied = grade_candidate(corpus, answers, cheat, cases_per_process=4, variants=plan)
    assert varied.grade.passed == 0
    for result in varied.grade.results:
        if result.case_id in cheat_passes:  # failed by its variant alone
            assert "dmg-branch variant" in result.reason


def test_a_try_that_hangs_the_reference_is_given_up_and_rejected() -> None:
    """An inverted branch can run into an illegal opcode, on which PyBoy spins inside one
    frame; the try runs in a child process that is killed, and the next try gets a new one."""
    spin = bytearray(0x8000)
    spin[0x100:0x104] = bytes([0x00, 0xC3, 0x50, 0x01])  # NOP; JP 0x150
    spin[0x150] = 0xDB  # an illegal opcode: PyBoy never finishes the frame
    with TrialWorker() as trials:
        assert trials.run("mooneye", bytes(spin), 10, 10) is None
        rom = corpus_rom("mooneye", "acceptance/instr/daa")
        registers, frames = trials.run("mooneye", rom, 600, 600)
    assert registers == list(FIBONACCI.values())
    assert frames < 600


def corpus_rom(name: str, case_id: str) -> bytes:
    corpus, _, _ = _whole(name)
    return corpus.roms[case_id]


# -- Blargg: an expected CRC changed -----------------------------------------------------------

CRC_CASES = (
    "cpu_instrs/individual/01-special",  # the CRC check's arguments (serial)
    "cpu_instrs/individual/04-op r,imm",  # an entry of the expected-CRC table (serial)
    "dmg_sound/rom_singles/08-len ctr during power",  # the CRC check's arguments (status block)
)
VARIED_BLARGG = {
    *CRC_CASES,
    *(
        f"cpu_instrs/individual/{name}"
        for name in (
            "03-op sp,hl",
            "05-op rp",
            "06-ld r,r",
            "07-jr,jp,call,ret,rst",
            "08-misc instrs",
            "09-op r,r",
            "10-bit ops",
            "11-op a,(hl)",
        )
    ),
    "cgb_sound/rom_singles/06-overflow on trigger",
    "dmg_sound/rom_singles/06-overflow on trigger",
    "dmg_sound/rom_singles/09-wave read while on",
}
"""The 14 of 43 Blargg cases with a CRC site the reference confirms."""


def _text(answer: Any) -> str:
    return str(answer.transcript if answer.criterion == "serial" else answer.text)


@pytest.fixture
def crc_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blargg cases get only ``blargg-crc`` variants (the seed may otherwise pick a branch)."""
    kinds = _variants._kinds

    def only(platform: str, case: Any, symbols: str | None) -> list[list[str]]:
        if case.mode != "until-result":
            return kinds(platform, case, symbols)
        return [["blargg-crc"]]

    monkeypatch.setattr(_variants, "_kinds", only)


@pytest.mark.usefixtures("crc_only")
def test_a_changed_expected_crc_makes_the_reference_print_failed() -> None:
    corpus, answers, roms = _subset("blargg", CRC_CASES)
    variants = make_variants(corpus, _plan(corpus, roms))
    assert sorted(v.case_id for v in variants) == sorted(CRC_CASES)
    assert {v.kind for v in variants} == {"blargg-crc"}
    extra = variant_corpus(corpus, variants)
    seen = run_corpus(extra, _reference(corpus, roms), cases_per_process=4).observations
    by_id = {o.case_id: o for o in seen}
    for variant in variants:
        original = answers.answers[variant.case_id]
        answer = variant_answer(original, by_id[variant.variant_id])
        assert answer is not None, variant.variant_id
        assert "Failed" in _text(answer)
        assert "Passed" not in _text(answer)
        assert _text(answer).split("\n")[0] == _text(original).split("\n")[0]  # same test


@pytest.mark.usefixtures("crc_only")
def test_the_reference_passes_blargg_crc_variants() -> None:
    corpus, answers, roms = _subset("blargg", CRC_CASES)
    run = grade_candidate(
        corpus, answers, _reference(corpus, roms), variants=_plan(corpus, roms), cases_per_process=4
    )
    assert run.grade.passed == 3
    assert [pin.passed for pin in run.record.variants] == [True] * 3


@pytest.mark.usefixtures("crc_only")
def test_the_name_and_passed_cheat_scores_zero_on_varied_blargg_cases() -> None:
    corpus, answers, roms = _subset("blargg", CRC_CASES)
    cheat = _cheat("name_passed")
    plain = grade_candidate(corpus, answers, cheat, cases_per_process=4)
    # The sound test prints numbers before "Passed", which its name does not give away.
    assert plain.grade.passing == set(CRC_CASES[:2])
    varied = grade_candidate(
        corpus, answers, cheat, cases_per_process=4, variants=_plan(corpus, roms)
    )
    assert varied.grade.passed == 0
    assert "blargg-crc variant" in varied.grade.results[0].reason


@pytest.mark.usefixtures("crc_only")
def test_a_result_cache_keyed_on_the_rom_digest_scores_zero_on_varied_blargg_cases(
    tmp_path: Path,
) -> None:
    corpus, answers, roms = _subset("blargg", CRC_CASES)
    for case in corpus.manifest.cases:
        answer = answers.answers[case.id]
        text = _text(answer).encode("latin-1")
        status = getattr(answer, "status", 0)
        (tmp_path / f"{case.sha256}.serial").write_bytes(text)
        (tmp_path / f"{case.sha256}.mem").write_bytes(bytes([status, 0xDE, 0xB0, 0x61]) + text)
        (tmp_path / f"rom-{case.sha256}").write_bytes(corpus.roms[case.id])
    _share(tmp_path)
    cheat = _cheat("result_cache", tmp_path, RESULT_CACHE=str(tmp_path))
    assert grade_candidate(corpus, answers, cheat, cases_per_process=4).grade.passed == 3
    varied = grade_candidate(
        corpus, answers, cheat, cases_per_process=4, variants=_plan(corpus, roms)
    )
    assert varied.grade.passed == 0
    assert [pin.passed for pin in varied.record.variants] == [False] * 3


@pytest.mark.slow
def test_every_blargg_case_gets_a_variant_that_must_fail() -> None:
    """A CRC site where the reference confirms one, else an inverted branch."""
    corpus, _, roms = _whole("blargg")
    variants = make_variants(corpus, _plan(corpus, roms), jobs=2)
    assert {v.case_id for v in variants} == {c.id for c in corpus.manifest.cases}
    for variant in variants:
        assert variant.kind in ("blargg-crc", "dmg-branch")
        if variant.kind == "blargg-crc":
            assert variant.case_id in VARIED_BLARGG
        else:
            ((at, value),) = variant.patches
            assert value == corpus.roms[variant.case_id][at] ^ CONDITION_BIT
        assert not {offset for offset, _ in variant.patches} & set(HEADER)


def test_a_record_pinning_thousands_of_variants_of_one_case_fails_its_check_at_once(
    tmp_path: Path,
) -> None:
    """The pins were counted pairwise (24,000 took 48 s) and the plan then refused them raw."""
    from playproof.corpus import CandidatePin, CaseResult, GradeRecord, load_manifest, sign_grade
    from playproof.corpus._variants import VariantPin

    manifest = load_manifest(shipped_paths("chip8")[0])
    case = manifest.cases[0].id
    pins = tuple(
        VariantPin(case_id=case, kind="chip8-sprite", sha256=f"{i:064x}", passed=False)
        for i in range(3000)
    )
    results = [CaseResult(case_id=c.id, passed=False, reason="x") for c in manifest.cases]
    record = GradeRecord(
        corpus_id=manifest.corpus_id,
        corpus_version=manifest.version,
        corpus_digest=manifest.digest,
        candidate=CandidatePin(command=["x"], build_digest="1" * 64),
        isolation="rlimits",
        limits={},
        results=results,
        passed=0,
        denominator=len(results),
        started_at=datetime.now(UTC),
        finished_at=datetime.now(UTC),
        variants=pins,
        variant_seed_sha256=hashlib.sha256(SEED).hexdigest(),
    )
    signer = SigningKey.generate()
    path = tmp_path / "grade.json"
    path.write_bytes(sign_grade(record, signer).to_bytes())
    signer.verifying_key.save(tmp_path / "grader.pub.pem")
    keys = ["--key", str(tmp_path / "grader.pub.pem")]
    code, report = _verify(path, keys, "--variant-seed", SEED.hex())
    checks = {c["id"]: c for c in report["checks"]}
    assert code != 0
    assert not checks["variants-reproduced"]["passed"]
    assert "pins 3000 variants of case" in checks["variants-reproduced"]["reason"]
