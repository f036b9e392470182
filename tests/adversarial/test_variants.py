"""Hostile input to variant grading: forged records, bad seeds, symbol files, odd ROMs.

Each test is a regression test for a way the variant machinery could be
fooled or crash: a record claiming a case passed although its variant failed,
a variant naming no case, a case id that looks like a variant's, a symbol
file that leads out of the corpus or is huge, a ROM that holds the Mooneye
signal twice, a reference run that gives no answer.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from playproof.corpus import (
    CaseObservation,
    CaseResult,
    Corpus,
    CorpusCase,
    CorpusManifest,
    FramebufferAnswer,
    Grade,
    GradeRecord,
    MemoryAnswer,
    RegistersAnswer,
    SerialAnswer,
    sign_grade,
    verify_grade,
)
from playproof.corpus._grader import STATUS_TEXT_AT
from playproof.corpus._patching import HEADER, NoVariant
from playproof.corpus._runner import RESULT_BLOCK_BYTES
from playproof.corpus._variants import (
    MAX_SYMBOL_BYTES,
    VARIANT_MARK,
    Variant,
    VariantPin,
    VariantPlan,
    combine,
    load_symbols,
    make_variants,
    merged_corpus,
    parse_seed,
    variant_answer,
)
from playproof.corpus._variants_blargg import PointerTrace, _clean_failure, check_sites
from playproof.corpus._variants_mooneye import (
    MOONEYE_SIGNAL,
    assert_sites,
    mooneye_check,
    mooneye_signal,
)
from playproof.errors import FormatError
from playproof.sign import IN_TOTO_PAYLOAD_TYPE, SigningKey
from playproof.sign._dsse import sign_payload

SHA = "ab" * 32
SEED_HASH = "cd" * 32
SYMBOLS = "01:ff8c hram.regs_assert.reg_b\n01:ff8d hram.regs_assert.reg_e\n"


def _record(**changes: Any) -> dict[str, Any]:
    now = datetime.now(UTC).isoformat()
    data: dict[str, Any] = {
        "corpus_id": "x",
        "corpus_version": "1",
        "corpus_digest": SHA,
        "candidate": {"command": ["c"], "build_digest": SHA},
        "isolation": "rlimits",
        "limits": {},
        "results": [
            {"case_id": "a", "passed": True, "reason": "ok"},
            {"case_id": "b", "passed": False, "reason": "no"},
        ],
        "passed": 1,
        "denominator": 2,
        "started_at": now,
        "finished_at": now,
        "variants": [{"case_id": "a", "kind": "dmg-tile", "sha256": SHA, "passed": True}],
        "variant_seed_sha256": SEED_HASH,
    }
    data.update(changes)
    return data


def test_a_consistent_record_with_variants_reads() -> None:
    record = GradeRecord.model_validate(_record())
    assert record.variants[0].case_id == "a"
    assert record.sandbox is None  # as in a record written before the layout was kept
    layout = GradeRecord.model_validate(_record(isolation="bubblewrap", sandbox="per-process"))
    assert layout.sandbox == "per-process"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"variants": [{"case_id": "a", "kind": "dmg-tile", "sha256": SHA, "passed": False}]},
            "passes although a variant of it failed",
        ),
        (
            {"variants": [{"case_id": "z", "kind": "dmg-tile", "sha256": SHA, "passed": True}]},
            "no graded case",
        ),
        ({"variant_seed_sha256": None}, "commits to no variant seed"),
        (
            {"variants": [{"case_id": "a", "kind": "other", "sha256": SHA, "passed": True}]},
            "kind",
        ),
        ({"sandbox": "per-slot"}, "under rlimits names a per-slot sandbox"),
        ({"isolation": "bubblewrap", "sandbox": "communal"}, "sandbox"),
    ],
)
def test_a_record_whose_variants_do_not_follow_its_results_is_refused(
    changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        GradeRecord.model_validate(_record(**changes))


def test_verify_grade_rejects_a_signed_record_that_hides_a_failed_variant() -> None:
    key = SigningKey.generate()
    honest = GradeRecord.model_validate(_record())
    envelope = sign_grade(honest, key)
    report, _ = verify_grade(envelope.to_json(), key.verifying_key)
    assert report.clean
    statement = json.loads(envelope.payload_bytes())
    statement["predicate"]["variants"][0]["passed"] = False  # the case still says "passed"
    forged = sign_payload(IN_TOTO_PAYLOAD_TYPE, json.dumps(statement).encode(), [key])
    report, record = verify_grade(forged.to_json(), key.verifying_key)
    assert record is None
    assert not report.clean
    assert not {c.id: c for c in report.checks}["grade-consistent"].passed


@pytest.mark.parametrize("text", ["xyz", "00" * 8, "", "0" * 33])
def test_a_bad_seed_is_refused(text: str) -> None:
    with pytest.raises(FormatError, match="variant-seed"):
        parse_seed(text)


def test_a_plan_refuses_a_short_seed_or_too_many_variants() -> None:
    with pytest.raises(FormatError, match="16 bytes"):
        VariantPlan(seed=b"short")
    with pytest.raises(FormatError, match="variants per case"):
        VariantPlan(per_case=99)
    assert VariantPlan().seed != VariantPlan().seed  # drawn from secrets each time


def _corpus(case_id: str) -> Corpus:
    case = CorpusCase(id=case_id, file="a.gb", sha256=SHA, suite="s", budget_frames=1)
    manifest = CorpusManifest(corpus_id="x", version="1", cases=(case,), denominator=1)
    return Corpus(manifest=manifest, roms={case_id: b"\0" * 0x200})


def test_a_case_id_that_looks_like_a_variant_is_refused() -> None:
    corpus = _corpus(f"a{VARIANT_MARK}0")
    with pytest.raises(FormatError, match="marks variants"):
        merged_corpus(corpus, [], bytes(32))


def test_a_symbol_file_leading_out_of_the_corpus_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.sym"
    outside.write_text(SYMBOLS)
    roms = tmp_path / "roms"
    roms.mkdir()
    (roms / "a.sym").symlink_to(outside)
    with pytest.raises(FormatError, match="leads out of the corpus"):
        load_symbols(roms, _corpus("a").manifest)


def test_an_oversized_symbol_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.sym").write_bytes(b"x" * (MAX_SYMBOL_BYTES + 1))
    with pytest.raises(FormatError):
        load_symbols(tmp_path, _corpus("a").manifest)


def test_a_rom_with_the_signal_twice_or_not_at_all_gets_no_signal_variant() -> None:
    rom = bytes(0x150) + MOONEYE_SIGNAL + bytes(10) + MOONEYE_SIGNAL
    with pytest.raises(NoVariant):
        mooneye_signal(rom, random.Random(1))
    with pytest.raises(NoVariant):
        mooneye_signal(bytes(0x400), random.Random(1))
    inside_header = bytes(0x120) + MOONEYE_SIGNAL + bytes(0x100)
    with pytest.raises(NoVariant):  # a signal in the header is never patched
        mooneye_signal(inside_header, random.Random(1))


@settings(max_examples=60, deadline=None)
@given(
    st.binary(max_size=200),
    st.binary(max_size=200),
    st.integers(0, 2**32),
    st.text(max_size=300),
)
def test_mooneye_patches_stay_out_of_the_header_on_any_rom(
    before: bytes, after: bytes, seed: int, symbols: str
) -> None:
    rom = bytes(0x150) + before + MOONEYE_SIGNAL + after + bytes([0x3E, 7, 0xE0, 0x8C])
    sites = assert_sites(rom, symbols + SYMBOLS)
    assert all(HEADER.stop <= at < len(rom) for at in sites)
    for make in (
        lambda: mooneye_signal(rom, random.Random(seed)),
        lambda: mooneye_check(rom, symbols + SYMBOLS, random.Random(seed)),
    ):
        try:
            altered, patches = make()
        except NoVariant:
            continue  # e.g. the random bytes hold a second signal
        assert len(altered) == len(rom)
        changed = {at for at in range(len(rom)) if altered[at] != rom[at]}
        assert changed
        assert changed <= {offset for offset, _ in patches}
        assert not changed & set(HEADER)


@pytest.mark.parametrize(
    ("answer", "seen"),
    [
        (RegistersAnswer(registers={"B": 3}), CaseObservation(case_id="v", outcome="crash")),
        (
            RegistersAnswer(registers={"B": 3}),
            CaseObservation(case_id="v", outcome="ok", registers={"B": 1}, at_breakpoint=False),
        ),
        (FramebufferAnswer(sha256=SHA), CaseObservation(case_id="v", outcome="ok")),
        (
            SerialAnswer(transcript="x Passed"),
            CaseObservation(case_id="v", outcome="ok", serial="?"),
        ),
        (
            MemoryAnswer(text="Passed"),
            CaseObservation(case_id="v", outcome="ok", memory="00" * 256),
        ),
        (FramebufferAnswer(sha256=SHA), CaseObservation(case_id="v", outcome="timeout")),
    ],
)
def test_a_reference_run_without_a_usable_result_grades_no_variant(
    answer: Any, seen: CaseObservation
) -> None:
    assert variant_answer(answer, seen) is None


def test_an_ungraded_variant_leaves_the_case_as_the_original_graded_it() -> None:
    base = Grade(
        results=[CaseResult(case_id="a", passed=True, reason="ok")], passed=1, denominator=1
    )
    variants = [
        Variant("a", 0, "dmg-tile", b"\1", ((0x200, 1),)),
        Variant("a", 1, "dmg-tile", b"\2", ((0x200, 2),)),
    ]
    wrong = CaseObservation(case_id=variants[1].variant_id, outcome="ok", screen_sha256="ee" * 32)
    outcome = combine(
        base,
        variants,
        {variants[0].variant_id: None, variants[1].variant_id: FramebufferAnswer(sha256=SHA)},
        {wrong.case_id: wrong},
    )
    assert outcome.grade.passed == 0
    assert "dmg-tile variant" in outcome.grade.results[0].reason
    assert VARIANT_MARK not in outcome.grade.results[0].reason
    assert outcome.pins == (
        VariantPin(case_id="a", kind="dmg-tile", sha256=variants[1].sha256, passed=False),
    )
    alone = combine(base, variants[:1], {variants[0].variant_id: None}, {})
    assert alone.grade == base
    assert alone.pins == ()


# -- Blargg CRC sites found without symbols ----------------------------------------------------


def _crc_check(bc: int, de: int, target: int) -> bytes:
    """``LD BC,bc; LD DE,de; CALL target``."""
    return (
        bytes([0x01])
        + bc.to_bytes(2, "little")
        + bytes([0x11])
        + de.to_bytes(2, "little")
        + bytes([0xCD])
        + target.to_bytes(2, "little")
    )


def test_only_crc_checks_calling_into_work_ram_outside_the_header_are_sites() -> None:
    header = bytes(0x120) + _crc_check(0x1234, 0x5678, 0xC1F9)  # inside the header
    copy = _crc_check(0x0100, 0x9000, 0x2411)  # a routine in bank 0: a copy, not a check
    check = _crc_check(0x9560, 0x7275, 0xC1F9)
    rom = header + bytes(0x150 - len(header)) + copy + check
    at = 0x150 + len(copy)
    assert check_sites(rom) == [((at + 1, at + 2, at + 4, at + 5), "6A9F8D8A")]


def _walk(trace: PointerTrace, ram: bytearray, at: int, values: list[int]) -> None:
    """Feed the trace one frame per value of the RAM word at ``at`` (0xC000-based)."""
    trace.add(bytes(ram))
    for value in values:
        ram[at - 0xC000 : at - 0xC000 + 2] = value.to_bytes(2, "little")
        trace.add(bytes(ram))


def _table_rom(table: bytes) -> tuple[bytes, bytearray]:
    """A ROM whose bank copied to work RAM holds ``table`` at 0x4100 (0xC100 in RAM)."""
    rom = bytearray(0x8000)
    rom[0x4100 : 0x4100 + len(table)] = table
    ram = bytearray(0x2000)
    ram[0x100 : 0x100 + len(table)] = table
    return bytes(rom), ram


TABLE = random.Random(7).randbytes(40)


def test_a_word_walking_a_table_in_steps_of_four_gives_its_entries() -> None:
    rom, ram = _table_rom(TABLE)
    trace = PointerTrace()
    _walk(trace, ram, 0xD81E, [0xC104, 0xC108, 0xC110, 0xC114])
    entries = [offsets for offsets, proof in trace.table_sites(rom)]
    # The last value may already point past the table: it is left out.
    assert entries == [tuple(range(at, at + 4)) for at in (0x4104, 0x4108, 0x4110)]


@pytest.mark.parametrize(
    "values",
    [
        [0xC104, 0xC107, 0xC10B, 0xC10F],  # a step of three: not a table of CRCs
        [0xC110, 0xC10C, 0xC108],  # walking down
        [0xC104, 0xC108],  # too few steps to trust
        [0x0800, 0x1000, 0x1800, 0x2000],  # not an address in work RAM
        [0xDFF0, 0xDFF4, 0xDFF8, 0xDFFC],  # a table would run past work RAM
    ],
)
def test_other_walks_give_no_table(values: list[int]) -> None:
    rom, ram = _table_rom(TABLE)
    trace = PointerTrace()
    _walk(trace, ram, 0xD81E, values)
    assert trace.table_sites(rom) == []


def test_a_table_whose_bytes_are_not_once_in_the_rom_gives_no_sites() -> None:
    rom, ram = _table_rom(TABLE)
    twice = rom[:0x6000] + TABLE + rom[0x6000 + len(TABLE) :]
    for image in (twice, bytes(len(rom))):  # found twice, or not at all
        trace = PointerTrace()
        _walk(trace, bytearray(ram), 0xD81E, [0xC104, 0xC108, 0xC10C, 0xC110])
        assert trace.table_sites(image) == []


def test_a_rom_the_reference_cannot_load_gets_no_crc_variant() -> None:
    """The search runs PyBoy in the grader's process; a ROM it refuses (512 bytes, not whole
    16 KiB banks) leaves the case without a variant instead of breaking the grading."""
    corpus = _corpus("odd")
    assert corpus.manifest.cases[0].mode == "until-result"
    assert make_variants(corpus, VariantPlan(seed=bytes(32))) == []


def test_a_blargg_failure_is_clean_only_when_the_test_itself_reported_it() -> None:
    """A clean failure shows "Failed" in plain text, or is a status-block listing cut off at
    the block's end; never a pass, a run still going, a status past 0x7F or stray bytes."""
    filled = "x" * (RESULT_BLOCK_BYTES - STATUS_TEXT_AT)
    assert _clean_failure("01-test\n\nFailed\n\0")
    assert _clean_failure(f"\x000x01 {filled}")  # the listing fills the block: the status says
    assert not _clean_failure(f"\x000x01 {filled[1:]}")  # room was left and no "Failed" came
    assert not _clean_failure(f"\x000x80 {filled}")  # still running
    assert not _clean_failure(f"\x000xff {filled}")
    assert not _clean_failure(f"\x000x00 {filled}")
    assert not _clean_failure(f"listing\x000x01 {filled}")  # a serial test never reports this way
    assert not _clean_failure("Failed\nPassed\n\0")
    assert not _clean_failure("Fail\x07ed\n\0")
