"""Branch hints: which inverted branches of a shipped ROM make the reference fail cleanly.

Finding a ``dmg-branch`` variant means trying inverted branches on the
reference until one makes the test fail cleanly, and about nine in ten do
not. A hints file lists, per ROM digest, the branches that did when every one
was tried (``tools/branch_hints.py``), so a grading tries those first and
usually needs one try per variant. A hint is only a shortcut: every hinted
branch is still a candidate of :func:`~playproof.corpus._variants_dmg.branch_sites`
and is still tried on the reference before a variant is kept, and the
variant's answer is still the reference's run on it. An edited or stale file
can make the search slower, never a variant wrong. Nothing in a hints file is
secret: anyone with PyBoy and the public ROMs can compute it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from playproof._bounded import read_bounded
from playproof.core.canonical import sha256_hex
from playproof.errors import FormatError

__all__ = ["HINTS_DIR", "HINTS_SCHEMA", "MAX_HINTS_BYTES", "BranchHints", "hinted_sites"]

HINTS_SCHEMA = "playproof/branch-hints/v1"
HINTS_DIR = Path(__file__).parent / "hints"
"""Where the shipped hints files live, one per corpus (``<corpus_id>.json``)."""
MAX_HINTS_BYTES = 4 * 1024 * 1024
"""A hints file is at most this long."""
MAX_SITES_PER_ROM = 4096

Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Offset = Annotated[int, Field(ge=0, lt=8 * 1024 * 1024)]


class BranchHints(BaseModel):
    """The inverted branches that made the reference fail cleanly, per ROM digest."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    schema_: Literal["playproof/branch-hints/v1"] = Field(alias="schema")
    corpus_id: Annotated[str, Field(min_length=1, max_length=200)]
    reference: Annotated[str, Field(min_length=1, max_length=200)]
    """The reference emulator the branches were tried on (its name and version)."""
    roms: dict[Sha256, Annotated[tuple[Offset, ...], Field(max_length=MAX_SITES_PER_ROM)]]
    """ROM digest to the file offsets of the branches that qualified, ascending."""


def read_hints(path: Path) -> BranchHints:
    """One hints file, bounded and strictly read (FormatError says what is wrong)."""
    data = read_bounded(path, MAX_HINTS_BYTES, "branch hints file")
    try:
        return BranchHints.model_validate_json(data)
    except ValueError as exc:
        raise FormatError(f"{path.name} is not a branch hints file: {exc}") from None


@functools.lru_cache(maxsize=1)
def _shipped() -> dict[str, tuple[int, ...]]:
    found: dict[str, tuple[int, ...]] = {}
    for path in sorted(HINTS_DIR.glob("*.json")):
        found.update(read_hints(path).roms)
    return found


def hinted_sites(rom: bytes) -> tuple[int, ...]:
    """The shipped hints for this ROM (by digest); none for a ROM the project does not ship."""
    return _shipped().get(sha256_hex(rom), ())
