"""Branch hints: the shipped files match what trying every branch finds, and only shorten
the search (a hinted branch is still a candidate and still tried)."""

from __future__ import annotations

import json
import random
from collections import OrderedDict
from pathlib import Path

import pytest

from playproof.corpus import _branch_hints, _trials, load_corpus, load_manifest, shipped_paths
from playproof.corpus._branch_hints import (
    HINTS_DIR,
    HINTS_SCHEMA,
    MAX_HINTS_BYTES,
    BranchHints,
    hinted_sites,
    read_hints,
)
from playproof.corpus._manifest import Corpus
from playproof.corpus._patching import HEADER
from playproof.corpus._trials import TrialWorker
from playproof.corpus._variants import VariantPlan, branch_hints, load_symbols, make_variants
from playproof.corpus._variants_blargg import blargg_branch
from playproof.corpus._variants_dmg import branch_sites
from playproof.errors import FormatError

HINTED = {"blargg": "blargg", "mooneye": "mooneye"}
SEED = bytes(range(32))
QUICK_MOONEYE = ("acceptance/add_sp_e_timing", "acceptance/instr/daa")
QUICK_BLARGG = "cpu_instrs/individual/02-interrupts"


def _corpus(name: str, ids: tuple[str, ...] | None = None) -> Corpus:
    manifest_path, _, roms = shipped_paths(name)
    manifest = load_manifest(manifest_path)
    if ids is not None:
        cases = tuple(c for c in manifest.cases if c.id in ids)
        manifest = manifest.model_copy(update={"cases": cases, "denominator": len(cases)})
    return load_corpus(manifest, roms)


@pytest.mark.parametrize("name", sorted(HINTED))
def test_the_shipped_hints_name_branch_candidates_of_shipped_roms(name: str) -> None:
    hints = read_hints(HINTS_DIR / f"{HINTED[name]}.json")
    corpus = _corpus(name)
    assert hints.corpus_id == corpus.manifest.corpus_id
    roms = {case.sha256: corpus.roms[case.id] for case in corpus.manifest.cases}
    assert set(hints.roms) <= set(roms)
    # Most cases have qualifying branches (Blargg's and Mooneye's, as the variant tests show).
    assert len(hints.roms) >= len(roms) * 0.9
    for digest, sites in hints.roms.items():
        assert list(sites) == sorted(set(sites))
        assert set(sites) <= set(branch_sites(roms[digest]))
        assert not set(sites) & set(HEADER)


def test_the_shipped_hints_are_what_trying_every_branch_finds() -> None:
    """Recomputed for two quick Mooneye cases: the same branches (so a change to the
    acceptance rules or the reference without rerunning ``tools/branch_hints.py`` fails)."""
    corpus = _corpus("mooneye", QUICK_MOONEYE)
    found = branch_hints(corpus, jobs=1, reference="test")
    assert set(found.roms) == {case.sha256 for case in corpus.manifest.cases}
    for case in corpus.manifest.cases:
        assert found.roms[case.sha256] == hinted_sites(corpus.roms[case.id])


def test_a_hinted_search_needs_fewer_tries_and_makes_a_valid_variant(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    corpus = _corpus("blargg", (QUICK_BLARGG,))
    case, rom = corpus.manifest.cases[0], corpus.roms[QUICK_BLARGG]
    tries: list[bytes] = []
    run = _trials.TrialWorker.run

    def counted(self: TrialWorker, kind: str, data: bytes, argument: object, frames: int) -> object:
        tries.append(data)
        return run(self, kind, data, argument, frames)

    monkeypatch.setattr(_trials.TrialWorker, "run", counted)
    found: dict[str, tuple[bytes, object]] = {}
    for label, hinted in (("hinted", True), ("plain", False)):
        if not hinted:
            monkeypatch.setattr(_branch_hints, "_shipped", lambda: {})
        # Nothing remembered from earlier searches: both count the original's run.
        monkeypatch.setattr(_trials, "_REPLIES", OrderedDict())
        tries.clear()
        with TrialWorker() as trials:
            altered, patch = blargg_branch(case, rom, random.Random(7), trials)
        found[label] = (altered, len(tries))
        ((at, _),) = patch
        assert at in branch_sites(rom)
    assert found["hinted"][1] == 2  # the original's run, then one try: the first hint
    assert found["plain"][1] > 2


def test_bogus_hints_are_ignored_and_the_variants_stay_branch_inversions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A hints file names offsets that are no branch (the header, data bytes): none is
    patched; the search falls back to the real candidates."""
    corpus = _corpus("blargg", (QUICK_BLARGG,))
    rom = corpus.roms[QUICK_BLARGG]
    real = set(branch_sites(rom))
    bogus = tuple(at for at in range(0x100, 0x400) if at not in real)
    monkeypatch.setattr(_branch_hints, "_shipped", lambda: {corpus.manifest.cases[0].sha256: bogus})
    plan = VariantPlan(
        seed=SEED, per_case=1, symbols=load_symbols(shipped_paths("blargg")[2], corpus.manifest)
    )
    (variant,) = make_variants(corpus, plan)
    assert variant.kind in ("dmg-branch", "blargg-crc")
    if variant.kind == "dmg-branch":
        ((at, _),) = variant.patches
        assert at in real


def _write(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("document", "complaint"),
    [
        (
            {"schema": "playproof/branch-hints/v0", "corpus_id": "x", "reference": "r", "roms": {}},
            "schema",
        ),
        (
            {"schema": HINTS_SCHEMA, "corpus_id": "x", "reference": "r", "roms": {}, "extra": 1},
            "extra",
        ),
        ({"schema": HINTS_SCHEMA, "corpus_id": "x", "reference": "r", "roms": {"ab": [1]}}, "roms"),
        (
            {"schema": HINTS_SCHEMA, "corpus_id": "x", "reference": "r", "roms": {"a" * 64: [-1]}},
            "roms",
        ),
        (
            {"schema": HINTS_SCHEMA, "corpus_id": "x", "reference": "r", "roms": {"a" * 64: ["1"]}},
            "roms",
        ),
        ([], "branch hints"),
    ],
)
def test_a_malformed_hints_file_is_refused_by_name(
    tmp_path: Path, document: object, complaint: str
) -> None:
    with pytest.raises(FormatError, match="not a branch hints file") as raised:
        read_hints(_write(tmp_path / "hints.json", document))
    assert complaint in str(raised.value)


def test_an_oversize_hints_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "hints.json"
    path.write_bytes(b" " * (MAX_HINTS_BYTES + 1))
    with pytest.raises(FormatError, match="branch hints file"):
        read_hints(path)


def test_a_hints_file_round_trips_through_its_model() -> None:
    hints = BranchHints.model_validate(
        {"schema": HINTS_SCHEMA, "corpus_id": "x", "reference": "r", "roms": {"a" * 64: (3, 9)}}
    )
    again = BranchHints.model_validate_json(hints.model_dump_json(by_alias=True))
    assert again == hints
