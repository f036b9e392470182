"""Ad-hoc targets: any supported game named on the command line, with a user's contract.

A spec is ``FAMILY:NAME``:

- ``ale:pong`` — an Atari 2600 ROM bundled with ale-py, by its id;
- ``gym:CartPole-v1`` — a Gymnasium environment id with a Discrete action space;
- ``retro:Airstriker-Genesis-v0`` — a stable-retro game whose ROM is installed;
- ``gb:path/to/game.gb`` — a Game Boy ROM file (PyBoy);
- ``desktop:path/to/spec.toml`` — a native desktop program described by a spec
  (``trusted-recorder`` only: played once, verified from its signed transcript);
- ``retroarch:gambatte:path/to/game.gb`` — a ROM on a libretro core (by name or
  library path) through RetroArch, from a boot state made by counted frames;
  its contract names memory channels (see ``playproof.targets.retroarch``).

Each adapter is built with its default options. The build is not pinned in
advance: the run record pins the build digest, and a verifier rebuilds the
game from the same spec and compares. A Game Boy ROM is identified by its
SHA-256: verification reads the file named again (or another path to the same
bytes) and refuses one whose digest differs from the recorded one. Ad-hoc
targets are never calibrated: their records say so.

>>> adhoc_family("gym:CartPole-v1"), adhoc_family("native/2048")
('gym', None)
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from playproof._bounded import read_bounded
from playproof.core.canonical import parse_json
from playproof.core.contract import Contract, parse_contract
from playproof.errors import TargetError
from playproof.targets._registry import MAX_TARGET_FILE_BYTES, Target, TargetSpec

__all__ = [
    "ADHOC_FAMILIES",
    "MAX_GB_ROM_BYTES",
    "adhoc_family",
    "adhoc_target",
    "code_named_by",
    "gb_rom_digest",
    "read_contract",
]

MAX_GB_ROM_BYTES = 8 << 20
"""The largest Game Boy ROM (MBC5) is 8 MiB."""

_UNPINNED = "0" * 64
"""Stands for the build digest of an ad-hoc spec: the record pins the real one."""

ADHOC_FAMILIES: dict[str, tuple[str, str, str]] = {
    "ale": ("playproof.adapters.ale:make_game", "rom", "ale"),
    "gym": ("playproof.adapters.gym:make_game", "env_id", "gym"),
    "retro": ("playproof.adapters.retro:make_game", "game", "retro"),
    "gb": ("playproof.adapters.pyboy:make_game", "rom_path", "pyboy"),
    "desktop": ("playproof.adapters.desktop:make_game", "spec_path", ""),
    "retroarch": ("playproof.adapters.retroarch:make_game", "rom_path", ""),
}
"""The ad-hoc families: factory, the option the spec's name fills, the install extra."""

_NAME = re.compile(r"^[A-Za-z0-9_.:/-]{1,200}$")


def adhoc_family(name: str) -> str | None:
    """The family of an ad-hoc spec (``gym`` for ``gym:CartPole-v1``), else None."""
    family, sep, rest = name.partition(":")
    return family if sep and rest and family in ADHOC_FAMILIES else None


def code_named_by(spec: str) -> str | None:
    """What code an ad-hoc spec's text chooses, if any (None: only installed code runs).

    ``gym:MODULE:Id`` imports MODULE (to register the id) and
    ``retroarch:PATH:FILE`` loads the core library at PATH. A verifier takes
    such a spec from the person verifying (``--target``), never from the record
    being verified: a record would otherwise pick code to run inside the
    verifier.
    """
    family = adhoc_family(spec)
    rest = spec.partition(":")[2]
    if family == "gym" and ":" in rest:
        return f"it would import the Python module {rest.partition(':')[0][:64]!r}"
    if family == "retroarch" and "/" in rest.partition(":")[0]:
        return f"it would load the core library {rest.partition(':')[0][:128]!r}"
    return None


def gb_rom_digest(path: Path) -> str:
    """SHA-256 of a Game Boy ROM file (bounded read; TargetError when unreadable or too big)."""
    return hashlib.sha256(read_bounded(path, MAX_GB_ROM_BYTES, "ROM", TargetError)).hexdigest()


def read_contract(path: Path) -> Contract:
    """Read and validate a contract file (bounded; FormatError or ContractError say why)."""
    data = read_bounded(path, MAX_TARGET_FILE_BYTES, "contract file")
    return parse_contract(parse_json(data, limit=MAX_TARGET_FILE_BYTES, what=str(path)))


def _retro_game(name: str) -> str:
    """The installed stable-retro game id for ``name`` (``Airstriker-Genesis`` finds ``-v0``)."""
    try:
        from stable_retro import data  # local: an optional library, imported only when asked
    except ImportError as exc:
        raise TargetError(
            "retro: targets need stable-retro: pip install 'playproof[retro]'"
        ) from exc
    games = set(data.list_games())
    if name in games:
        return name
    if f"{name}-v0" in games:
        return f"{name}-v0"
    raise TargetError(
        f"stable-retro has no game {name!r} installed (ids look like Airstriker-Genesis-v0)"
    )


def adhoc_target(spec: str, contract: Contract, *, rom_sha256: str | None = None) -> Target:
    """The ad-hoc target ``spec`` played against ``contract`` (see the module docstring).

    For ``gb:`` and ``retroarch:`` specs, ``rom_sha256`` is the digest a record
    pinned: the file must have it, else TargetError (the wrong ROM is refused
    before it runs).
    """
    family = adhoc_family(spec)
    if family is None:
        known = ", ".join(f"{f}:NAME" for f in ADHOC_FAMILIES)
        raise TargetError(f"{spec!r} is not an ad-hoc target; use one of {known}")
    if len(spec) > 256:
        raise TargetError(f"the target spec is {len(spec)} characters; at most 256 fit a record")
    factory, option, extra = ADHOC_FAMILIES[family]
    rest = spec.partition(":")[2]
    if not _NAME.match(rest):
        raise TargetError(f"{spec!r}: the name after {family}: has characters a game id cannot")
    if family == "retro":
        rest = _retro_game(rest)
    options: dict[str, Any] = {option: rest}
    if family == "gb":
        try:
            digest = gb_rom_digest(Path(rest))
        except TargetError as exc:
            raise TargetError(f"{exc} (verify: name the ROM file with --target gb:FILE)") from exc
        if rom_sha256 is not None and digest != rom_sha256:
            raise TargetError(
                f"ROM {rest} has SHA-256 {digest[:16]}..., the record pins {rom_sha256[:16]}...; "
                "pass the ROM the run used (--target gb:FILE)"
            )
        options["game_id"] = f"gb-{digest[:12]}"
    if family == "retroarch":
        from playproof.targets.retroarch import adhoc_options  # local: avoids an import cycle

        options = adhoc_options(rest, contract, rom_sha256=rom_sha256)
    target_spec = TargetSpec(
        name=f"adhoc/{family}",
        description=f"ad-hoc {family} target {rest} (uncalibrated)",
        factory=factory,
        options=options,
        build_digest=_UNPINNED,
        # A desktop program or RetroArch is already a process of its own.
        isolation="in-process" if family in ("desktop", "retroarch") else "worker",
        extra=extra or None,
    )
    return Target(spec=target_spec, contract=contract, reference=(), adhoc=spec, user_contract=True)
