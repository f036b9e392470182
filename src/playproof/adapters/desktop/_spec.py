"""The desktop spec: how to launch or attach to a native program, drive it and read it.

A spec is a TOML (or JSON) file. Relative paths in it are relative to the
spec's own folder. Everything it names that defines the game (the program it
runs and the files listed in ``pins``) is hashed into the build digest, so a
record says exactly which program and assets were played.

Example (a text game over stdin)::

    id = "cave"
    vocabulary = ["north", "south", "take", "quit"]
    pins = ["cave.py"]

    [launch]
    command = ["python3", "cave.py"]

    [input]
    via = "stdin"

    [observe]
    via = "stdout"
    prompt = "> $"

    [[collect]]
    name = "save"
    path = "save.json"
    kind = "json"

    [rules]
    state = [{ key = "gold", pattern = "gold: (\\d+)" }]
    save = [{ key = "rooms", file = "save", pointer = "/rooms" }]
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from playproof._bounded import read_bounded
from playproof._containment import resolve_program
from playproof.core.transcript import MAX_INLINE_FILE_BYTES, EvidenceRules
from playproof.errors import TargetError

__all__ = [
    "MAX_COLLECT_BYTES",
    "MAX_PIN_BYTES",
    "MAX_SPEC_BYTES",
    "Collect",
    "DesktopSpec",
    "InputSpec",
    "LaunchSpec",
    "ObserveSpec",
    "load_spec",
    "pin_files",
]

MAX_SPEC_BYTES = 256 * 1024
"""The largest spec file read."""
MAX_PIN_BYTES = 1 << 30
"""The largest executable or asset hashed into the build digest."""
MAX_COLLECT_BYTES = 4 << 20
"""The largest bound a spec may set on one collected file."""
_PIN_DEADLINE_S = 60.0
_PIN_CHUNK = 1 << 20
MAX_STEP_TIMEOUT_S = 300.0
"""The longest a spec may let one input's output take."""
_MAX_SENT_CHARS = 4096
"""The longest text one input may send: what a transcript step records as ``sent``."""


def _without_nul(text: str) -> str:
    if "\0" in text:
        raise ValueError("holds a NUL character, which no path, argument or variable can hold")
    return text


_NoNul = AfterValidator(_without_nul)
"""TOML can spell a NUL character; the system refuses one in a path, argument or variable."""
Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
Word = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:+-]{1,64}$")]
Argv = Annotated[
    tuple[Annotated[str, Field(min_length=1, max_length=4096), _NoNul], ...],
    Field(min_length=1, max_length=64),
]
RelPath = Annotated[str, Field(min_length=1, max_length=1024), _NoNul]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LaunchSpec(_Frozen):
    """How the program is started or found.

    ``spawn`` runs ``command`` and plays it; ``pid-file`` runs ``command`` (a
    launcher) and plays the process whose id it writes to ``pid_file``;
    ``descendant`` runs ``command`` and plays its descendant named
    ``descendant``; ``pid`` attaches to the running process ``pid``, which
    playproof did not start and does not end.
    """

    mode: Literal["spawn", "pid-file", "descendant", "pid"] = "spawn"
    command: Argv | None = None
    cwd: RelPath = "."
    env: dict[Annotated[str, Field(pattern=r"^[A-Z_][A-Z0-9_]{0,63}$")], Annotated[str, _NoNul]] = (
        Field(default_factory=dict, max_length=64)
    )
    pid_file: RelPath | None = None
    descendant: Annotated[str, Field(min_length=1, max_length=15)] | None = None
    pid: Annotated[int, Field(ge=2)] | None = None
    ready_timeout_s: Annotated[float, Field(gt=0, le=120)] = 10.0

    @model_validator(mode="after")
    def _fields_of_mode(self) -> Self:
        needs: dict[str, tuple[str, ...]] = {
            "spawn": ("command",),
            "pid-file": ("command", "pid_file"),
            "descendant": ("command", "descendant"),
            "pid": ("pid",),
        }
        missing = [name for name in needs[self.mode] if getattr(self, name) is None]
        if missing:
            raise ValueError(f"launch mode {self.mode} needs {', '.join(missing)}")
        if self.mode == "pid" and self.command is not None:
            raise ValueError("launch mode pid attaches to a running process: give no command")
        return self


class InputSpec(_Frozen):
    """How an allowlisted input reaches the program.

    ``stdin`` writes ``template`` (``{input}`` replaced by the word, or by its
    entry in ``send``) to the program's standard input; ``helper`` runs
    ``helper`` with that text as its last argument once per input.
    """

    via: Literal["stdin", "helper"] = "stdin"
    template: Annotated[str, Field(min_length=1, max_length=256)] = "{input}\n"
    send: dict[Word, Annotated[str, Field(max_length=256)]] = Field(
        default_factory=dict, max_length=256
    )
    helper: Argv | None = None
    helper_timeout_s: Annotated[float, Field(gt=0, le=60)] = 5.0

    @model_validator(mode="after")
    def _helper_given(self) -> Self:
        if self.via == "helper" and self.helper is None:
            raise ValueError("input via helper needs helper = [PROGRAM, ARGS...]")
        if "{input}" not in self.template:
            raise ValueError("the input template must contain {input}")
        return self


class ObserveSpec(_Frozen):
    """How the program's output after each input is read.

    ``stdout`` reads the program's standard output until ``prompt`` (a regular
    expression) matches the end of what arrived, or else until ``quiet_ms``
    pass without output; ``capture`` runs ``capture`` after each input and
    takes its standard output as the observation.
    """

    via: Literal["stdout", "capture"] = "stdout"
    prompt: Annotated[str, Field(min_length=1, max_length=512)] | None = None
    quiet_ms: Annotated[int, Field(ge=1, le=60_000)] = 100
    step_timeout_s: Annotated[float, Field(gt=0, le=MAX_STEP_TIMEOUT_S)] = 10.0
    capture: Argv | None = None

    @model_validator(mode="after")
    def _capture_given(self) -> Self:
        if self.via == "capture" and self.capture is None:
            raise ValueError("observe via capture needs capture = [PROGRAM, ARGS...]")
        return self


class Collect(_Frozen):
    """A file collected after every input: JSON or binary save data, or an append-only event log.

    An ``events`` file gains lines; each new line is an event. A file larger
    than ``max_bytes`` stops the run with an error naming it.
    """

    name: Name
    path: RelPath
    kind: Literal["json", "binary", "events"]
    max_bytes: Annotated[int, Field(ge=1, le=MAX_COLLECT_BYTES)] = MAX_INLINE_FILE_BYTES


class DesktopSpec(_Frozen):
    """A native desktop game as playproof drives it (see the module docstring)."""

    id: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")]
    vocabulary: Annotated[tuple[Word, ...], Field(min_length=1, max_length=256)]
    launch: LaunchSpec
    input: InputSpec = InputSpec()
    observe: ObserveSpec = ObserveSpec()
    collect: Annotated[tuple[Collect, ...], Field(max_length=16)] = ()
    pins: Annotated[tuple[RelPath, ...], Field(max_length=256)] = ()
    rules: EvidenceRules = EvidenceRules()

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if len(set(self.vocabulary)) != len(self.vocabulary):
            raise ValueError("the vocabulary lists a word twice")
        unknown = set(self.input.send) - set(self.vocabulary)
        if unknown:
            raise ValueError(f"send maps words outside the vocabulary: {sorted(unknown)}")
        names = [c.name for c in self.collect]
        if len(set(names)) != len(names):
            raise ValueError("two collected files share a name")
        kinds = {c.name: c.kind for c in self.collect}
        for field in self.rules.save:
            if kinds.get(field.file) != "json":
                raise ValueError(f"rule save.{field.key} reads {field.file!r}, not a json collect")
        if self.rules.save_hash is not None and kinds.get(self.rules.save_hash) not in (
            "json",
            "binary",
        ):
            raise ValueError(f"save_hash names {self.rules.save_hash!r}, not a json/binary collect")
        attached = self.launch.mode != "spawn"
        if self.input.via == "stdin" and self.launch.mode == "pid":
            raise ValueError("a process playproof did not start takes inputs only via a helper")
        if self.observe.via == "stdout" and self.launch.mode == "pid":
            raise ValueError("a process playproof did not start is observed only via capture")
        del attached
        for word in self.vocabulary:
            sent = self.sent_text(word)
            if len(sent) > _MAX_SENT_CHARS:
                raise ValueError(
                    f"the text sent for {word!r} is over {_MAX_SENT_CHARS} characters "
                    "(the input template repeats {input} too often)"
                )
            if self.input.via == "helper":
                _without_nul(sent)  # the helper gets the text as an argument
        return self

    def sent_text(self, word: str) -> str:
        """The text sent for an allowlisted ``word``."""
        return self.input.template.replace("{input}", self.input.send.get(word, word))


def load_spec(path: Path) -> DesktopSpec:
    """Read and validate a desktop spec (TOML, or JSON if it ends in .json); TargetError if bad."""
    data = read_bounded(path, MAX_SPEC_BYTES, "desktop spec", TargetError)
    try:
        text = data.decode("utf-8")
        parsed: Any = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise TargetError(f"desktop spec {path} is not valid TOML/JSON: {exc}") from exc
    except RecursionError:  # the parsers recurse once per level of nesting
        raise TargetError(f"desktop spec {path} is nested too deeply") from None
    try:
        return DesktopSpec.model_validate(parsed)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "spec"
        raise TargetError(f"desktop spec {path}: {where}: {first['msg']}") from exc


def _hash_file(path: Path) -> str:
    """SHA-256 of a regular file of at most MAX_PIN_BYTES, read in chunks within a deadline."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | os.O_CLOEXEC)
    except OSError as exc:
        raise TargetError(f"cannot read pinned file {path}: {exc.strerror}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TargetError(f"pinned file {path} is not a regular file")
        sha = hashlib.sha256()
        size, deadline = 0, time.monotonic() + _PIN_DEADLINE_S
        while chunk := os.read(fd, _PIN_CHUNK):
            size += len(chunk)
            if size > MAX_PIN_BYTES:
                raise TargetError(f"pinned file {path} is over the {MAX_PIN_BYTES}-byte limit")
            if time.monotonic() > deadline:
                raise TargetError(f"hashing pinned file {path} took over {_PIN_DEADLINE_S:g} s")
            sha.update(chunk)
        return sha.hexdigest()
    except OSError as exc:
        raise TargetError(f"cannot read pinned file {path}: {exc.strerror}") from exc
    finally:
        os.close(fd)


def pin_files(spec: DesktopSpec, base: Path) -> dict[str, str]:
    """SHA-256 of the program each command runs and of every file in ``pins``, by name.

    Programs are named ``program:NAME`` (as the spec gives it), assets by
    their path in the spec.
    """
    pins: dict[str, str] = {}
    cwd = base / spec.launch.cwd
    env = {**os.environ, **spec.launch.env}
    commands = [
        ("program", spec.launch.command),
        ("input-helper", spec.input.helper),
        ("capture-helper", spec.observe.capture),
    ]
    for role, argv in commands:
        if argv is None:
            continue
        try:
            program = resolve_program(argv[0], env, cwd)
        except OSError as exc:
            raise TargetError(f"the {role} {argv[0]!r} of the desktop spec: {exc}") from exc
        where = Path(program) if os.path.isabs(program) else cwd / program
        pins[f"{role}:{argv[0]}"] = _hash_file(where)
    for name in spec.pins:
        pins[name] = _hash_file(base / name)
    return pins
