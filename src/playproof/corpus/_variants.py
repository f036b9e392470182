"""Per-grading ROM variants whose correct result only running them reveals.

A public pass convention (print "Passed", the Fibonacci registers, a known
picture) can be replied without emulating anything. So each grading, from a
secret seed, also sends the candidate altered copies of some cases' ROMs:

- ``chip8-sprite``: one byte of sprite data a CHIP-8 test draws (found by
  tracing the reference interpreter: bytes ``Dxyn`` reads and the program never
  executes) gets some bits flipped, so the final screen is another picture;
- ``dmg-tile``: one byte of tile data a Game Boy ``frames`` case shows (a
  16-byte tile found verbatim in the ROM after it was copied to VRAM) gets some
  bits flipped, so the frame is another picture;
- ``mooneye-signal``: the six immediates Mooneye's exit routine loads into
  B, C, D, E, H, L on success (``LD B,3``, ``LD C,5`` ... ``LD L,34``) become
  other numbers, so a passing run ends with registers nobody published; and,
  where the reference shows one to be quiet (the test still passes, at the
  same frame), one conditional branch is inverted as well, so that a diff
  against the public original does not tell this pass from a ``dmg-branch``
  fail;
- ``mooneye-check``: a value the test checks a register against (an
  ``LD A,n`` stored into ``hram.regs_assert``, located with the corpus's
  ``.sym`` file) changes, and the success signal too, so the test must now
  fail (B..L all 0x42 on the reference);
- ``blargg-crc``: one byte of a CRC a Blargg test expects changes, so the test
  must now print "Failed" (with what it computed, or which instructions
  failed). The expected CRCs are found without symbols: the arguments of the
  shell's CRC check (``LD BC,nn; LD DE,nn; CALL nn``) and the entries of an
  expected-CRC table, located by tracing the reference (a RAM word that walks
  the table, in steps of four bytes, as the tests run). A patch is kept only
  when the reference, run in a trial child, now reports "Failed";
- ``dmg-branch``: a conditional jump, call or return right after an
  instruction that sets the flags (a compare, a logical or arithmetic
  operation, a ``BIT``) is inverted (``Z`` and ``NZ``, ``C`` and ``NC`` swap),
  so the test takes its other path. Kept only when the reference then fails
  cleanly: a Blargg test reports a failure in plain text (no "Passed", status
  1..0x7F where it keeps one; "Failed" shown, or a status-block listing that
  fills the block); a Mooneye test (its success signal changed too) ends with
  0x42 in all six registers. This is the kind for tests that compare with
  constants inside their code, where there is no CRC or ``regs_assert``. The
  shipped branch hints (:mod:`playproof.corpus._branch_hints`) are tried first.

The expected answer of every variant is what the platform's reference
candidate reports on it, run by the grader in its own jail; nothing about a
variant comes from a published result. Where the reference's run of a
Mooneye variant sent its six result registers over the serial port before
the breakpoint (as Mooneye's exit routine does), the answer holds those
serial bytes too, a second observation: the candidate must report the same
bytes with the same registers
(:class:`~playproof.corpus._grader.ReferenceRegistersAnswer`). A case passes
only when its original and all its variants match. Patches never touch the cartridge header
(0x100-0x14F); PyBoy does not check the header or global checksums, so they
are left as they are. The seed never leaves the grader; the grade record
carries each variant's ROM digest and the SHA-256 of the seed.

Kinds come in tiers: the kinds whose right answer is a failure (``blargg-crc``,
``mooneye-check``, ``dmg-branch``) and, on Mooneye, the one whose right answer
is a new success signal (``mooneye-signal``). Variant 0 of a case is of the
first tier (on Mooneye an inverted branch before a changed check, which a diff
gives away), variant 1 of the second, so two variants per case (the default on
Mooneye) stop both a candidate that reads the signal out of the ROM and one
that answers "failed" for every ROM it does not know. A Mooneye case the
reference fails gets only ``mooneye-check``: any other variant's answer would
be the reference's failure, which an emulator better than the reference does
not share.

The search for patches runs the reference in trial children
(:mod:`playproof.corpus._trials`), ``jobs`` cases at once; the variants a seed
makes do not depend on ``jobs``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import itertools
import queue
import random
import secrets
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from playproof._bounded import read_bounded
from playproof.core.canonical import sha256_hex
from playproof.core.report import CheckResult
from playproof.corpus._branch_hints import HINTS_SCHEMA, BranchHints
from playproof.corpus._grader import (
    CaseResult,
    Grade,
    ReferenceRegistersAnswer,
    grade,
    grade_case,
    status_text,
)
from playproof.corpus._jail import IsolationChoice, JailLimits
from playproof.corpus._manifest import (
    Answer,
    Corpus,
    CorpusAnswers,
    CorpusCase,
    CorpusManifest,
    FramebufferAnswer,
    MemoryAnswer,
    RegistersAnswer,
    SerialAnswer,
    corpus_file,
)
from playproof.corpus._patching import HEADER, NoVariant, Patches
from playproof.corpus._runner import (
    BLARGG_SIGNATURE,
    CandidateSpec,
    CaseObservation,
    RunOutcome,
    run_corpus,
)
from playproof.corpus._trials import TrialWorker
from playproof.corpus._variants_blargg import blargg_branch, blargg_branch_hints, blargg_crc
from playproof.corpus._variants_chip8 import chip8_sprite
from playproof.corpus._variants_dmg import dmg_tile
from playproof.corpus._variants_mooneye import (
    SERIAL_ECHO,
    mooneye_branch,
    mooneye_branch_hints,
    mooneye_check,
    signal_variant,
)
from playproof.errors import FormatError

__all__ = [
    "MAX_VARIANTS_PER_CASE",
    "SEED_BYTES",
    "Variant",
    "VariantKind",
    "VariantPin",
    "VariantPlan",
    "VariantRun",
    "combine",
    "branch_hints",
    "default_variants",
    "load_symbols",
    "make_variants",
    "new_seed",
    "parse_seed",
    "run_with_variants",
    "variant_answer",
    "verify_variants",
]


SEED_BYTES = 32
"""A variant seed is this many random bytes (from :mod:`secrets` unless one is given)."""
MAX_VARIANTS_PER_CASE = 4
"""Variants one case may get in one grading."""
MAX_SYMBOL_BYTES = 1024 * 1024
"""A ``.sym`` file read to place a Mooneye patch is at most this long."""
VARIANT_MARK = "~variant-"
"""Joins a case id and a variant number in the grader's own bookkeeping (never sent)."""
VariantKind = Literal[
    "chip8-sprite", "dmg-tile", "mooneye-signal", "mooneye-check", "blargg-crc", "dmg-branch"
]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
T = TypeVar("T")


class VariantPin(BaseModel):
    """One variant in a grade record: which case, which kind, its ROM's digest, the verdict."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: Annotated[str, Field(min_length=1, max_length=200)]
    kind: VariantKind
    sha256: Sha256
    passed: bool


@dataclass(frozen=True)
class Variant:
    """An altered copy of one case's ROM; its answer comes from the reference later."""

    case_id: str
    number: int
    kind: VariantKind
    rom: bytes
    patches: Patches
    """(file offset, new byte) pairs; none inside a Game Boy ROM's cartridge header."""

    @property
    def variant_id(self) -> str:
        """The id the grader runs it under (never shown to the candidate)."""
        return f"{self.case_id}{VARIANT_MARK}{self.number}"

    @property
    def sha256(self) -> str:
        """SHA-256 of the altered ROM."""
        return sha256_hex(self.rom)


def new_seed() -> bytes:
    """A fresh secret seed."""
    return secrets.token_bytes(SEED_BYTES)


@dataclass(frozen=True)
class VariantPlan:
    """How a grading varies its corpus: the secret seed, variants per case, symbol files."""

    seed: bytes = field(default_factory=new_seed)
    per_case: int = 1
    symbols: dict[str, str] = field(default_factory=dict)
    """Case id to the text of the ROM's ``.sym`` file (Mooneye), where there is one."""

    def __post_init__(self) -> None:
        if len(self.seed) < 16:
            raise FormatError("a variant seed needs at least 16 bytes (32 hex digits)")
        if not 0 <= self.per_case <= MAX_VARIANTS_PER_CASE:
            raise FormatError(f"variants per case must be 0..{MAX_VARIANTS_PER_CASE}")

    @property
    def seed_sha256(self) -> str:
        """The commitment a grade record carries (the seed itself never leaves the grader)."""
        return hashlib.sha256(self.seed).hexdigest()


def parse_seed(text: str) -> bytes:
    """A seed given as hex (``--variant-seed``), for reproducible gradings and tests."""
    try:
        seed = bytes.fromhex(text.strip())
    except ValueError:
        raise FormatError("--variant-seed must be hex digits (e.g. 64 of them)") from None
    if len(seed) < 16:
        raise FormatError("--variant-seed needs at least 32 hex digits")
    return seed


def load_symbols(root: Path, manifest: CorpusManifest) -> dict[str, str]:
    """The ``.sym`` file beside each case's ROM under ``root``, where one exists (bounded)."""
    found: dict[str, str] = {}
    for case in manifest.cases:
        path = corpus_file(root, str(Path(case.file).with_suffix(".sym")))
        if path.is_file():
            data = read_bounded(path, MAX_SYMBOL_BYTES, "symbol file")
            found[case.id] = data.decode("latin-1")
    return found


def _rng(seed: bytes, case_id: str, number: int) -> random.Random:
    key = hmac.new(seed, f"{case_id}\0{number}".encode(), hashlib.sha256).digest()
    return random.Random(int.from_bytes(key, "big"))


def _kinds(platform: str, case: CorpusCase, symbols: str | None) -> list[list[VariantKind]]:
    """The kinds that fit a case, in tiers: first those whose right answer is a failure (or,
    where there is no such kind, another picture), then Mooneye's moved success signal."""
    if platform == "chip8":
        return [["chip8-sprite"]]
    if case.mode == "frames":
        return [["dmg-tile"]]
    if case.mode == "until-breakpoint":
        # An inverted branch first (not shuffled): a changed check is a kind of change that
        # tells a diffing candidate "fails" by itself, while a moved signal comes with an
        # inverted branch too (``signal_variant``), so only an inverted branch that fails
        # keeps the two apart. A changed check where no branch qualifies.
        failing: list[VariantKind] = ["dmg-branch", "mooneye-check"] if symbols else ["dmg-branch"]
        return [failing, ["mooneye-signal"]]
    if case.mode == "until-result":
        return [["blargg-crc", "dmg-branch"]]
    return []


def default_variants(manifest: CorpusManifest) -> int:
    """Variants per case when none are asked for: 2 where a case has two tiers of kinds
    (Mooneye: one must fail, one moves the success signal), else 1."""
    tiers = (len(_kinds(manifest.platform, case, "")) for case in manifest.cases)
    return 2 if any(count > 1 for count in tiers) else 1


def _one(
    kind: VariantKind,
    case: CorpusCase,
    rom: bytes,
    symbols: str | None,
    rng: random.Random,
    trials: TrialWorker,
) -> tuple[bytes, Patches]:
    if kind == "chip8-sprite":
        return chip8_sprite(case, rom, rng)
    if kind == "dmg-tile":
        return dmg_tile(case, rom, rng)
    if kind == "mooneye-signal":
        return signal_variant(case, rom, rng, trials)
    if kind == "blargg-crc":
        return blargg_crc(case, rom, rng, trials)
    if kind == "dmg-branch":
        if case.mode == "until-breakpoint":
            return mooneye_branch(case, rom, rng, trials)
        return blargg_branch(case, rom, rng, trials)
    return mooneye_check(rom, symbols, rng)


def make_variants(corpus: Corpus, plan: VariantPlan, *, jobs: int = 1) -> list[Variant]:
    """The variants of ``corpus`` this plan's seed picks, in manifest order.

    Each case gets ``plan.per_case`` variants where a kind applies. The seed
    shuffles the kinds within each tier of :func:`_kinds` and deals them out
    tier by tier: variant *n* tries the *n*-th kind dealt first, then the rest
    of its tier, then the others (so ``per_case=2`` gives a Mooneye case one
    variant that must fail and one whose success signal moved). The same seed
    gives the same variants (the search runs the reference deterministically).
    A case no kind fits gets none.

    ``jobs`` cases are searched at once, each with its own trial child (the
    Game Boy searches run the reference there); the variants do not depend on it.
    """
    found = _per_case(
        corpus.manifest.cases, jobs, lambda case, trials: _case_variants(corpus, plan, case, trials)
    )
    return [variant for variants in found for variant in variants]


def _per_case(
    cases: Sequence[CorpusCase], jobs: int, work: Callable[[CorpusCase, TrialWorker], T]
) -> list[T]:
    """``work`` on every case, ``jobs`` at once, each with a trial child of its own; results
    in the order of ``cases``."""
    workers = [TrialWorker() for _ in range(max(1, min(jobs, len(cases))))]
    idle: queue.SimpleQueue[TrialWorker] = queue.SimpleQueue()
    for worker in workers:
        idle.put(worker)

    def one(case: CorpusCase) -> T:
        trials = idle.get()
        try:
            return work(case, trials)
        finally:
            idle.put(trials)

    try:
        if len(workers) == 1:
            return [one(case) for case in cases]
        with ThreadPoolExecutor(max_workers=len(workers)) as pool:
            return list(pool.map(one, cases))
    finally:
        for worker in workers:
            worker.close()


def branch_hints(corpus: Corpus, *, jobs: int = 2, reference: str) -> BranchHints:
    """Try every inverted branch of every Blargg and Mooneye case the reference passes and
    list those that make it fail cleanly (``tools/branch_hints.py`` writes the shipped files).

    Slow on purpose (one reference run per branch: minutes for a corpus); a grading then
    tries the listed branches first.
    """

    def qualifying(case: CorpusCase, trials: TrialWorker) -> tuple[str, tuple[int, ...]]:
        rom = corpus.roms[case.id]
        search = {"until-result": blargg_branch_hints, "until-breakpoint": mooneye_branch_hints}
        try:
            sites = search[case.mode](case, rom, trials) if case.mode in search else []
        except NoVariant:
            sites = []
        return sha256_hex(rom), tuple(sorted(sites))

    found = _per_case(corpus.manifest.cases, jobs, qualifying)
    return BranchHints.model_validate(
        {
            "schema": HINTS_SCHEMA,
            "corpus_id": corpus.manifest.corpus_id,
            "reference": reference,
            "roms": {digest: sites for digest, sites in found if sites},
        }
    )


def _case_variants(
    corpus: Corpus, plan: VariantPlan, case: CorpusCase, trials: TrialWorker
) -> list[Variant]:
    made: list[Variant] = []
    platform = corpus.manifest.platform
    symbols = plan.symbols.get(case.id)
    tiers = [list(tier) for tier in _kinds(platform, case, symbols)]
    shuffler = _rng(plan.seed, case.id, -1)
    for tier in tiers:
        shuffler.shuffle(tier)
    if case.mode == "until-breakpoint":
        tiers[0].sort(key=lambda kind: kind != "dmg-branch")  # see _kinds
    dealt = [k for group in itertools.zip_longest(*tiers) for k in group if k is not None]
    rom = corpus.roms[case.id]
    for number in range(plan.per_case if dealt else 0):
        rng = _rng(plan.seed, case.id, number)
        first = dealt[number % len(dealt)]
        tier = next(t for t in tiers if first in t)
        tries = [first, *(k for k in tier if k != first), *(k for k in dealt if k not in tier)]
        for kind in tries:
            try:
                altered, patch = _one(kind, case, rom, symbols, rng, trials)
            except NoVariant:
                continue
            # Only a Game Boy ROM has a cartridge header; a CHIP-8 sprite may lie there.
            if platform == "dmg" and any(offset in HEADER for offset, _ in patch):
                raise AssertionError("a variant patched the cartridge header")
            made.append(Variant(case.id, number, kind, altered, patch))
            break
    return made


def variant_corpus(corpus: Corpus, variants: Sequence[Variant]) -> Corpus:
    """The variants as a corpus of their own (ids and digests of the altered ROMs)."""
    cases = tuple(
        corpus.manifest.case(v.case_id).model_copy(update={"id": v.variant_id, "sha256": v.sha256})
        for v in variants
    )
    manifest = corpus.manifest.model_copy(
        update={"cases": cases, "denominator": len(cases), "excluded": ()}
    )
    return Corpus(manifest=manifest, roms={v.variant_id: v.rom for v in variants})


def merged_corpus(corpus: Corpus, variants: Sequence[Variant], seed: bytes) -> Corpus:
    """Originals and variants in one corpus, in an order the seed shuffles (the runner then
    sorts by budget, stably), so a variant's position says nothing."""
    if any(VARIANT_MARK in case.id for case in corpus.manifest.cases):
        raise FormatError(f"a case id holds {VARIANT_MARK!r}, which marks variants")
    extra = variant_corpus(corpus, variants)
    cases = [*corpus.manifest.cases, *extra.manifest.cases]
    random.Random(hmac.new(seed, b"order", hashlib.sha256).digest()).shuffle(cases)
    manifest = corpus.manifest.model_copy(update={"cases": tuple(cases), "denominator": len(cases)})
    return Corpus(manifest=manifest, roms={**corpus.roms, **extra.roms})


def variant_answer(original: Answer, seen: CaseObservation) -> Answer | None:
    """The answer of a variant: what the reference reported on it, in the case's criterion.

    None when the reference's run gives no usable answer (it crashed, reached no
    breakpoint, printed no result); such a variant is not graded.
    """
    if seen.outcome != "ok":
        return None
    if isinstance(original, RegistersAnswer):
        if not seen.at_breakpoint or seen.registers is None:
            return None
        registers = {n: seen.registers.get(n, 0) for n in original.registers}
        sent = (seen.serial or "").encode("latin-1")
        if sent == bytes(seen.registers.get(n, 0) for n in SERIAL_ECHO):
            # The exit routine ran as Mooneye's do (its six registers sent over the serial
            # port before the breakpoint): those bytes are a second observation.
            return ReferenceRegistersAnswer(registers=registers, serial=seen.serial or "")
        return RegistersAnswer(registers=registers)
    if isinstance(original, FramebufferAnswer):
        return FramebufferAnswer(sha256=seen.screen_sha256) if seen.screen_sha256 else None
    if isinstance(original, MemoryAnswer):
        if seen.memory is None:
            return None
        block = bytes.fromhex(seen.memory)
        if block[1:4] != BLARGG_SIGNATURE:
            return None
        return MemoryAnswer(status=block[0], text=status_text(block))
    transcript = seen.serial or ""
    for marker in (original.pass_marker, "Failed"):
        if marker in transcript:
            return SerialAnswer(transcript=transcript, pass_marker=marker)
    return None


@dataclass(frozen=True)
class VariantOutcome:
    """The grade over originals and variants, and each graded variant's pin."""

    grade: Grade
    pins: tuple[VariantPin, ...]


def combine(
    base: Grade,
    variants: Sequence[Variant],
    answers: dict[str, Answer | None],
    observations: dict[str, CaseObservation],
) -> VariantOutcome:
    """A case passes only when it and every graded variant of it match.

    ``answers`` maps variant ids to the reference's answer (None: not graded).
    """
    pins: list[VariantPin] = []
    failed: dict[str, str] = {}
    for variant in variants:
        answer = answers.get(variant.variant_id)
        if answer is None:
            continue
        result = grade_case(answer, observations.get(variant.variant_id), variant.variant_id)
        pins.append(
            VariantPin(
                case_id=variant.case_id,
                kind=variant.kind,
                sha256=variant.sha256,
                passed=result.passed,
            )
        )
        if not result.passed:
            failed.setdefault(
                variant.case_id, f"a {variant.kind} variant of this ROM differs: {result.reason}"
            )
    results = [
        CaseResult(case_id=r.case_id, passed=False, reason=failed[r.case_id][:200])
        if r.passed and r.case_id in failed
        else r
        for r in base.results
    ]
    grade = Grade(
        results=results, passed=sum(r.passed for r in results), denominator=base.denominator
    )
    return VariantOutcome(grade=grade, pins=tuple(pins))


@dataclass(frozen=True)
class VariantRun:
    """The candidate's run over originals and variants, graded: what a record needs."""

    outcome: RunOutcome
    """The candidate's run; its observations are the original cases' only."""
    grade: Grade
    pins: tuple[VariantPin, ...]
    reference_seconds: float
    """Wall time of the reference's run on the variants (alongside the candidate's)."""


def run_with_variants(
    corpus: Corpus,
    answers: CorpusAnswers,
    candidate: CandidateSpec,
    plan: VariantPlan,
    *,
    jobs: int,
    cases_per_process: int,
    limits: JailLimits,
    isolation: IsolationChoice,
    on_case: Callable[[CaseObservation], None] | None,
    runner: Callable[..., RunOutcome] = run_corpus,
) -> VariantRun:
    """Run ``candidate`` on the cases and this plan's variants, the reference on the variants
    (in its own jail, at the same time), and grade: a case passes only with all its variants.

    ``runner`` runs a corpus as ``run_corpus`` does (``_dispatch.run_corpus_on`` bound
    to an executor spreads the cases over a cluster).
    """
    from playproof.corpus._reference import reference_candidate_spec

    made = make_variants(corpus, plan, jobs=jobs)
    merged = merged_corpus(corpus, made, plan.seed)
    reference = dataclasses.replace(
        reference_candidate_spec(corpus.manifest.platform),
        hidden=candidate.hidden,
        secret=candidate.secret,
    )

    def originals_only(seen: CaseObservation) -> None:
        if on_case is not None and VARIANT_MARK not in seen.case_id:
            on_case(seen)

    if not made:  # no kind fits these cases: nothing for the reference to run
        outcome = runner(
            corpus,
            candidate,
            jobs=jobs,
            cases_per_process=cases_per_process,
            limits=limits,
            isolation=isolation,
            on_case=on_case,
        )
        base = grade(corpus.manifest, answers, outcome.observations)
        return VariantRun(outcome=outcome, grade=base, pins=(), reference_seconds=0.0)
    with ThreadPoolExecutor(max_workers=1) as pool:
        expected = pool.submit(
            runner,
            variant_corpus(corpus, made),
            reference,
            jobs=jobs,
            cases_per_process=cases_per_process,
            limits=limits,
            isolation=isolation,
        )
        outcome = runner(
            merged,
            candidate,
            jobs=jobs,
            cases_per_process=cases_per_process,
            limits=limits,
            isolation=isolation,
            on_case=originals_only,
        )
        truth = expected.result()
    seen_variants = {o.case_id: o for o in outcome.observations if VARIANT_MARK in o.case_id}
    originals = [o for o in outcome.observations if VARIANT_MARK not in o.case_id]
    by_id = {o.case_id: o for o in originals}
    originals = [by_id[c.id] for c in corpus.manifest.cases]
    reference_seconds = truth.wall_seconds
    reference_seen = {o.case_id: o for o in truth.observations}
    # The reference ran beside the candidate, which could starve it of time or memory.
    # A variant it did not finish cleanly is run again alone, now that the candidate is done,
    # so a candidate cannot drop a variant from its grade by loading the machine.
    again = [v for v in made if _unfinished(reference_seen.get(v.variant_id))]
    if again:
        rerun = runner(
            variant_corpus(corpus, again),
            reference,
            jobs=jobs,
            cases_per_process=cases_per_process,
            limits=limits,
            isolation=isolation,
        )
        reference_seconds += rerun.wall_seconds
        reference_seen.update({o.case_id: o for o in rerun.observations})
    variant_answers = {
        case_id: variant_answer(answers.answers[case_id.split(VARIANT_MARK)[0]], o)
        for case_id, o in reference_seen.items()
    }
    base = grade(corpus.manifest, answers, originals)
    combined = combine(base, made, variant_answers, seen_variants)
    return VariantRun(
        outcome=dataclasses.replace(outcome, observations=originals),
        grade=combined.grade,
        pins=combined.pins,
        reference_seconds=reference_seconds,
    )


def _unfinished(seen: CaseObservation | None) -> bool:
    """Whether the reference's run of a variant ended without a verdict of its own making."""
    return seen is None or seen.outcome in ("timeout", "crash")


def verify_variants(
    pins: Sequence[VariantPin],
    seed_sha256: str | None,
    corpus: Corpus,
    plan: VariantPlan,
    *,
    jobs: int = 2,
) -> CheckResult:
    """``variants-reproduced``: the revealed seed commits as recorded and makes the same variants.

    An auditor given the seed after the grading regenerates the variants from
    the corpus (``jobs`` cases at once) and compares kinds and ROM digests with
    the record's pins.
    """
    check = "variants-reproduced"
    if seed_sha256 != plan.seed_sha256:
        return CheckResult(
            id=check, passed=False, reason="the seed given is not the one the record commits to"
        )
    made = {(v.case_id, v.kind, v.sha256) for v in make_variants(corpus, plan, jobs=jobs)}
    graded = [(p.case_id, p.kind, p.sha256) for p in pins]
    missing = [entry for entry in graded if entry not in made]
    if missing:
        return CheckResult(
            id=check,
            passed=False,
            reason=f"{len(missing)} recorded variants are not what the seed makes "
            f"(first: {missing[0][0][:80]!r})",
        )
    return CheckResult(
        id=check,
        passed=True,
        reason=f"{len(graded)} variants regenerated from the seed, digests equal "
        f"({len(made) - len(graded)} not graded: the reference gave no answer)",
    )
