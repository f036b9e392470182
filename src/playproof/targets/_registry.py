"""The registry of targets: packaged games with a contract, a reference and a pinned build.

A target is found by name (``native/2048``). Targets come from the entry point
group ``playproof.targets``: each entry point names a zero-argument callable
returning a :class:`Target`. playproof registers its own targets the same way,
so a third-party package adds targets by declaring entry points.

A packaged target lives in a folder holding ``target.json`` (a
:class:`TargetSpec`), ``contract.json`` and ``reference.txt`` (one input per
line); :func:`load_target_dir` reads it with bounded reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import import_module, metadata
from importlib.util import find_spec
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from playproof._bounded import read_bounded
from playproof.core.canonical import parse_json
from playproof.core.contract import Contract, parse_contract
from playproof.core.game import MAX_SEED, Game
from playproof.errors import FormatError, TargetError

__all__ = [
    "ENTRY_POINT_GROUP",
    "MAX_TARGET_FILE_BYTES",
    "Target",
    "TargetSpec",
    "get_target",
    "list_targets",
    "load_target_dir",
    "read_input_script",
]

ENTRY_POINT_GROUP = "playproof.targets"
MAX_TARGET_FILE_BYTES = 8 << 20
"""The largest target file (contract, spec or input script) playproof reads."""


class TargetSpec(BaseModel):
    """``target.json``: how to build the game and what is claimed about it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.-]*/[a-z0-9][a-z0-9_.-]*$")]
    description: Annotated[str, Field(min_length=1, max_length=1000)]
    factory: Annotated[str, Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")]
    options: dict[str, Any] = Field(default_factory=dict)
    build_digest: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    reference_seed: Annotated[int, Field(ge=0, le=MAX_SEED)] = 0
    isolation: Literal["in-process", "worker"] = "in-process"
    extra: str | None = None
    """The optional dependency set (``pip install playproof[extra]``) the target needs."""
    separates: bool | None = None
    """Whether the contract separates the reference from trivial play (None = not calibrated)."""
    separation_note: Annotated[str, Field(max_length=2000)] = ""
    opaque: tuple[str, ...] = ()
    """Milestone ids declared opaque (hash checks): calibration requires this exact set."""


@dataclass(frozen=True)
class Target:
    """A target: spec, validated contract and reference input script.

    A packaged target comes from the registry. An ad-hoc one is built from a
    spec such as ``gym:CartPole-v1`` (``adhoc`` holds it; its build is not
    pinned in advance, the record pins it) and a contract the user supplied;
    ``user_contract`` marks a contract that did not ship with the target.
    """

    spec: TargetSpec
    contract: Contract
    reference: tuple[str, ...]
    folder: Path | None = field(default=None, compare=False)
    adhoc: str | None = None
    user_contract: bool = False

    @property
    def name(self) -> str:
        """The registry name (``native/2048``) or the ad-hoc spec (``gym:CartPole-v1``)."""
        return self.adhoc or self.spec.name

    @property
    def calibrated(self) -> bool:
        """True only for a packaged target whose shipped contract went through calibration."""
        return self.adhoc is None and not self.user_contract and self.spec.separates is not None

    @property
    def label(self) -> str:
        """The name a listing shows, marked ``(uncalibrated)`` when not calibrated."""
        return self.name if self.calibrated else f"{self.name} (uncalibrated)"

    def open(self, *, worker: bool | None = None, **overrides: Any) -> Game:
        """Build a fresh game session (in a worker process when ``worker``, else as declared).

        The build digest of the session must equal the pinned one, else TargetError.
        """
        self._check_extra()
        options = {**self.spec.options, **overrides}
        use_worker = self.spec.isolation == "worker" if worker is None else worker
        game: Game
        if use_worker:
            from playproof.workers import WorkerGame  # local: workers are optional here

            game = WorkerGame(self.spec.factory, options)
        else:
            game = _load_factory(self.spec.factory)(**options)
        pinned = self.adhoc is None and not overrides
        if pinned and game.descriptor.build.digest != self.spec.build_digest:
            actual = game.descriptor.build.digest
            game.close()
            raise TargetError(
                f"target {self.name} pins build {self.spec.build_digest[:16]}... but the "
                f"installed game reports {actual[:16]}...; the build changed"
            )
        return game

    def _check_extra(self) -> None:
        """Refuse early, with the install command, when the game's module cannot be found."""
        module_name = self.spec.factory.partition(":")[0]
        try:
            found = find_spec(module_name) is not None
        except ImportError:  # a parent package raised while being imported
            found = False
        if found and self.spec.extra is not None:
            # The adapter imports lazily; its library must be importable too.
            library = _EXTRA_LIBRARIES.get(self.spec.extra)
            found = library is None or find_spec(library) is not None
        if not found:
            hint = f": pip install 'playproof[{self.spec.extra}]'" if self.spec.extra else ""
            raise TargetError(f"target {self.name} needs a library that is not installed{hint}")


# The library each optional extra brings, checked before a game starts.
_EXTRA_LIBRARIES = {
    "ale": "ale_py",
    "gym": "gymnasium",
    "retro": "stable_retro",
    "pyboy": "pyboy",
    "solana": "solders",
}


def _load_factory(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    try:
        return getattr(import_module(module_name), attr)
    except ImportError as exc:
        raise TargetError(f"cannot import game factory {spec}: {exc}") from exc
    except AttributeError as exc:
        raise TargetError(f"game factory {spec} does not exist") from exc


def _read_target_file(path: Path) -> str:
    data = read_bounded(path, MAX_TARGET_FILE_BYTES, "input script")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"input script {path} is not UTF-8 text: {exc.reason}") from exc


def read_input_script(path: Path) -> tuple[str, ...]:
    """Read an input script: one input per line; blank lines and ``#`` comments skipped."""
    text = _read_target_file(path)
    return tuple(
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
    )


def load_target_dir(folder: Path) -> Target:
    """Load a packaged target folder (``target.json``, ``contract.json``, ``reference.txt``)."""
    try:
        spec = TargetSpec.model_validate(
            parse_json(
                read_bounded(folder / "target.json", MAX_TARGET_FILE_BYTES, "target file"),
                limit=MAX_TARGET_FILE_BYTES,
                what="target.json",
            )
        )
    except ValidationError as exc:
        raise FormatError(f"{folder / 'target.json'}: {exc.errors()[0]['msg']}") from exc
    contract = parse_contract(
        parse_json(
            read_bounded(folder / "contract.json", MAX_TARGET_FILE_BYTES, "contract file"),
            limit=MAX_TARGET_FILE_BYTES,
            what="contract.json",
        )
    )
    reference = read_input_script(folder / "reference.txt")
    return Target(spec=spec, contract=contract, reference=reference, folder=folder)


@cache
def _discover() -> Mapping[str, metadata.EntryPoint]:
    found: dict[str, metadata.EntryPoint] = {}
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(entry.name, entry)
    return found


def _load_entry(entry: metadata.EntryPoint) -> Target:
    try:
        target = entry.load()()
    except Exception as exc:
        raise TargetError(f"target entry point {entry.name} failed to load: {exc}") from exc
    if not isinstance(target, Target):
        raise TargetError(f"target entry point {entry.name} did not return a Target")
    return target


def list_targets() -> list[Target]:
    """Every registered target that loads, sorted by name."""
    targets: list[Target] = []
    for entry in _discover().values():
        try:
            targets.append(_load_entry(entry))
        except TargetError:
            continue
    return sorted(targets, key=lambda t: t.name)


def get_target(name: str) -> Target:
    """The registered target called ``name`` (e.g. ``native/2048``); TargetError if unknown.

    An entry point that fails to load (an extra not installed, a broken
    plug-in) never hides the others: its error is raised only when it is the
    one asked for (entry ``solana-swap`` for ``solana/swap``) or when no
    loaded target has the name.
    """
    entries = _discover()
    # The entry named after the target first: usually it is the one, and nothing else loads.
    wanted = name.replace("/", "-")
    ordered = sorted(entries.values(), key=lambda entry: entry.name != wanted)
    failures: dict[str, TargetError] = {}
    for entry in ordered:
        try:
            target = _load_entry(entry)
        except TargetError as exc:
            failures[entry.name] = exc
            continue
        if target.name == name:
            return target
    if wanted in failures:
        raise failures[wanted]
    known = ", ".join(t.name for t in list_targets()) or "none"
    broken = f"; {len(failures)} entry point(s) failed to load: {', '.join(failures)}"
    raise TargetError(f"unknown target {name!r} (registered: {known}{broken if failures else ''})")
