"""The controlled Rust build of a task: declared, offline, fingerprinted, and held to rules.

A task whose ``task.json`` declares ``"build": {"kind": "cargo", ...}`` is not
built by a command the agent chose. The grader copies the workspace into a
clean folder, runs the toolchain it fingerprinted when the task started, in
the build jail, offline (``--offline --locked``, no network namespace, an
empty ``CARGO_HOME`` whose only configuration is the grader's), and refuses
the build, naming the rule, when:

- ``toolchain``: cargo's or rustc's version, or the digest of one of their
  binaries, differs from the task's fingerprint;
- ``cargo-config``: the workspace holds a ``.cargo`` folder (its configuration
  could name a compiler wrapper, a linker or other flags);
- ``vendored-set``: ``cargo metadata`` shows a crate that is neither a
  workspace member nor in the task's vendored set (``name@version``);
- ``build-script``, ``proc-macro``, ``links``: a crate has a build script, is
  a procedural macro, or has a ``links`` key (each runs or links code the
  grader does not see);
- ``unsafe``: rustc refuses ``unsafe`` code (the build passes
  ``-F unsafe_code``; cargo caps lints of non-path crates, so only the task's
  own vendored crates may hold ``unsafe``);
- ``spawn``: the built binary's symbol tables (static and dynamic) name a
  process-spawning function (``fork``, ``execve``, ``posix_spawn``,
  ``system``, ``clone`` ...), or it has no dynamic symbol table to check.

The symbol tables are read here, in Python, with every read bounded; no
binutils is needed. The binary is then copied out of the build folder into a
folder only the grader writes, which the candidate's jail shows read-only; the
candidate command's first word names the binary.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import stat
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from playproof._atomic import write_atomic
from playproof._bounded import read_bounded
from playproof.core.canonical import parse_json
from playproof.corpus._jail import JailLimits, JailSpec, reserve_lanes
from playproof.corpus._trees import remove_tree
from playproof.corpus._watch import run_build
from playproof.errors import FormatError, NotSupportedError

__all__ = [
    "FINGERPRINT_FILE",
    "RULES",
    "SPAWN_SYMBOLS",
    "BuiltProgram",
    "CargoBuild",
    "RustBuild",
    "Toolchain",
    "ToolchainFingerprint",
    "binary_symbols",
    "check_metadata",
    "check_toolchain",
    "find_toolchain",
    "fingerprint",
    "record_fingerprint",
    "run_cargo_build",
    "rust_instructions",
    "rust_starter_build",
    "spawn_symbols",
    "write_rust_starter",
]

FINGERPRINT_FILE = ".playproof/toolchain.json"
"""The task's toolchain fingerprint, in the grader's own folder (hidden from every jail)."""
RULES = (
    "toolchain",
    "cargo-config",
    "vendored-set",
    "build-script",
    "proc-macro",
    "links",
    "unsafe",
    "spawn",
)
"""Every rule a Rust build can be refused by; a refusal names one."""
SPAWN_SYMBOLS = frozenset(
    {
        "fork",
        "vfork",
        "_Fork",
        "__fork",
        "clone",
        "clone3",
        "__clone",
        "__clone2",
        "execve",
        "execveat",
        "fexecve",
        "execv",
        "execvp",
        "execvpe",
        "execl",
        "execle",
        "execlp",
        "posix_spawn",
        "posix_spawnp",
        "pidfd_spawn",
        "pidfd_spawnp",
        "system",
        "popen",
    }
)
"""Functions that start a process; a candidate binary naming one is refused (rule ``spawn``)."""
TOOL_SECONDS = 30.0
"""How long ``rustc --print ...`` or ``--version`` may take on the host."""
MAX_TOOL_OUTPUT = 64 * 1024
MAX_TOOL_FILE_BYTES = 1024**3
"""The largest toolchain file hashed for the fingerprint."""
MAX_FINGERPRINT_BYTES = 64 * 1024
MAX_METADATA_BYTES = 16 * 1024 * 1024
"""The largest ``cargo metadata`` output read."""
MAX_MESSAGES_BYTES = 16 * 1024 * 1024
"""The largest ``cargo build --message-format json`` output read."""
MAX_BINARY_BYTES = 256 * 1024 * 1024
"""The largest binary whose symbol tables are read."""
MAX_SYMBOLS = 4_000_000
"""Symbol table entries read per binary (a table claiming more is refused)."""
MAX_SYMBOL_NAME = 4096
MAX_SOURCE_FILES = 20_000
MAX_SOURCE_BYTES = 512 * 1024 * 1024
"""A workspace copied for a build holds at most this many files and bytes (``target/`` left out)."""
MAX_SOURCE_DEPTH = 64
COPY_CHUNK = 1 << 20
MAX_LOG_CHARS = 4000
MIN_STEP_SECONDS = 0.1
BUILD_PROCESSES = 256
"""Processes and threads the build jail's uid may have (rustc runs many threads)."""
BUILD_WRITABLE_BYTES = 2 * 1024**3
BUILD_WRITABLE_FILES = 100_000
"""What the build folder (sources, ``CARGO_HOME``, target) may hold; past it the build stops."""
_NAME = r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}"


class CargoBuild(BaseModel):
    """``task.json``'s ``build`` for a Rust task: which package and binary, what may be used."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["cargo"]
    package: Annotated[str, Field(pattern=f"^{_NAME}$")]
    """The workspace package to build."""
    bin: Annotated[str | None, Field(pattern=f"^{_NAME}$")] = None
    """Its binary target (default: the package's name); the candidate command starts it."""
    vendored: tuple[Annotated[str, Field(pattern=rf"^{_NAME}@[0-9A-Za-z.+-]{{1,64}}$")], ...] = ()
    """Crates besides the workspace's own that the build may use, as ``name@version``."""
    profile: Literal["release", "dev"] = "release"

    @property
    def binary(self) -> str:
        """The binary target's name."""
        return self.bin or self.package


class ToolchainFingerprint(BaseModel):
    """What the toolchain was when the task started: versions and file digests."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1] = 1
    cargo_version: str
    rustc_version: str
    files: dict[str, str]
    """Toolchain file (absolute path) -> SHA-256."""


@dataclass(frozen=True)
class Toolchain:
    """Where the build's cargo and rustc are, and the folder holding them."""

    cargo: Path
    rustc: Path
    sysroot: Path
    target_libdir: Path


@dataclass(frozen=True)
class BuiltProgram:
    """A built candidate: the folder the grader copied it to and the command that starts it."""

    folder: Path
    command: tuple[str, ...]


@dataclass(frozen=True)
class RustBuild:
    """How a Rust build ended: the program, or why not (``rule`` names a refusal)."""

    program: BuiltProgram | None
    log: str
    rule: str | None = None


def _tool_output(argv: list[str]) -> str:
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=TOOL_SECONDS, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise NotSupportedError(f"cannot run {argv[0]}: {exc}") from None
    if done.returncode != 0:
        tail = done.stderr[-300:].decode("utf-8", errors="replace").strip()
        raise NotSupportedError(f"{' '.join(argv)} failed: {tail}")
    return done.stdout[:MAX_TOOL_OUTPUT].decode("utf-8", errors="replace").strip()


def find_toolchain() -> Toolchain:
    """The host's Rust toolchain: rustc on PATH, resolved to its sysroot (past rustup's proxy)."""
    rustc = shutil.which("rustc")
    if rustc is None:
        raise NotSupportedError(
            "a cargo build needs rustc and cargo on PATH (Debian: apt-get install cargo rustc)"
        )
    sysroot = Path(_tool_output([rustc, "--print", "sysroot"])).resolve()
    libdir = Path(_tool_output([rustc, "--print", "target-libdir"])).resolve()
    real_rustc = sysroot / "bin" / "rustc"
    cargo = sysroot / "bin" / "cargo"
    if not cargo.is_file():
        found = shutil.which("cargo")
        if found is None:
            raise NotSupportedError("a cargo build needs cargo on PATH (apt-get install cargo)")
        cargo = Path(found).resolve()
    if not real_rustc.is_file():
        real_rustc = Path(rustc).resolve()
    return Toolchain(cargo=cargo, rustc=real_rustc, sysroot=sysroot, target_libdir=libdir)


def _toolchain_files(tools: Toolchain) -> list[Path]:
    """The files the fingerprint hashes: cargo, rustc, the linker ``cc``, rustc's driver
    library and ``std``."""
    found = [tools.cargo, tools.rustc]
    linker = shutil.which("cc")
    if linker is not None:
        found.append(Path(linker).resolve())
    lib = tools.sysroot / "lib"
    for pattern in ("librustc_driver-*", "*/librustc_driver-*"):
        found += sorted(lib.glob(pattern))
    for pattern in ("libstd-*.rlib", "libcore-*.rlib", "liballoc-*.rlib"):
        found += sorted(tools.target_libdir.glob(pattern))
    return found


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        if os.fstat(handle.fileno()).st_size > MAX_TOOL_FILE_BYTES:
            raise NotSupportedError(f"{path} is over {MAX_TOOL_FILE_BYTES} bytes; cannot hash it")
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fingerprint(tools: Toolchain) -> ToolchainFingerprint:
    """The versions of ``tools`` and the SHA-256 of their binaries."""
    return ToolchainFingerprint(
        cargo_version=_tool_output([str(tools.cargo), "--version"]),
        rustc_version=_tool_output([str(tools.rustc), "-vV"]),
        files={str(path): _file_digest(path) for path in _toolchain_files(tools)},
    )


def record_fingerprint(folder: Path, tools: Toolchain | None = None) -> ToolchainFingerprint:
    """Write the task's toolchain fingerprint (when the task starts)."""
    taken = fingerprint(tools or find_toolchain())
    path = folder / FINGERPRINT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    # Created afresh: never written through a link planted at the name.
    write_atomic(path, (taken.model_dump_json(indent=2) + "\n").encode("utf-8"))
    return taken


def check_toolchain(folder: Path, tools: Toolchain) -> str | None:
    """None when ``tools`` match the task's fingerprint (recorded now if the task has none),
    else what changed."""
    path = folder / FINGERPRINT_FILE
    if not path.exists():
        record_fingerprint(folder, tools)
        return None
    raw = read_bounded(path, MAX_FINGERPRINT_BYTES, "toolchain fingerprint")
    try:
        stored = ToolchainFingerprint.model_validate(
            parse_json(raw, limit=MAX_FINGERPRINT_BYTES, what=str(path))
        )
    except ValidationError:
        raise FormatError(
            f"{path} is not a toolchain fingerprint; delete it to record the current toolchain"
        ) from None
    now = fingerprint(tools)
    if now.cargo_version != stored.cargo_version:
        return f"cargo is now {now.cargo_version!r}, the task started with {stored.cargo_version!r}"
    if now.rustc_version != stored.rustc_version:
        first = stored.rustc_version.splitlines()[:1]
        return f"rustc is now {now.rustc_version.splitlines()[:1]}, the task started with {first}"
    for name in sorted(set(stored.files) | set(now.files)):
        if stored.files.get(name) != now.files.get(name):
            return f"toolchain file {name} changed since the task started"
    return None


# -- cargo metadata ----------------------------------------------------------------


def _refusal(rule: str, why: str) -> str:
    return f"refused by rule '{rule}': {why}"


def check_metadata(metadata: Mapping[str, Any], build: CargoBuild) -> tuple[str, str] | None:
    """The first rule ``cargo metadata`` output breaks, as (rule, why); None when it breaks none."""
    packages = metadata.get("packages")
    members = metadata.get("workspace_members")
    if not isinstance(packages, list) or not isinstance(members, list):
        raise FormatError("cargo metadata output has no packages or workspace members")
    member_ids = {m for m in members if isinstance(m, str)}
    vendored = set(build.vendored)
    found_package = False
    for package in packages:
        if not isinstance(package, dict):
            raise FormatError("cargo metadata lists a package that is not an object")
        name, version = str(package.get("name")), str(package.get("version"))
        label = f"{name}@{version}"
        member = package.get("id") in member_ids
        if not member and label not in vendored:
            return "vendored-set", f"crate {label} is not in the task's vendored set"
        if package.get("links"):
            return "links", f"crate {label} has a links key ({str(package['links'])[:64]!r})"
        targets = package.get("targets")
        for target in targets if isinstance(targets, list) else []:
            kinds = target.get("kind", []) if isinstance(target, dict) else []
            if "custom-build" in kinds:
                return "build-script", f"crate {label} has a build script"
            if "proc-macro" in kinds:
                return "proc-macro", f"crate {label} is a procedural macro"
        if member and name == build.package:
            found_package = True
            bins = [
                t.get("name")
                for t in (targets if isinstance(targets, list) else [])
                if isinstance(t, dict) and "bin" in t.get("kind", [])
            ]
            if build.binary not in bins:
                raise FormatError(
                    f"package {name} has no binary target {build.binary!r} (it has {bins[:8]}); "
                    "fix build.bin in task.json or the package's [[bin]]"
                )
    if not found_package:
        raise FormatError(
            f"the workspace has no package {build.package!r}; fix build.package in task.json"
        )
    return None


# -- ELF symbol tables --------------------------------------------------------------

_SHT_SYMTAB = 2
_SHT_DYNSYM = 11
_ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")


def _name_at(table: bytes, offset: int) -> str:
    if offset >= len(table):
        raise FormatError("an ELF symbol name lies outside its string table")
    end = table.find(b"\0", offset, offset + MAX_SYMBOL_NAME)
    if end < 0:
        raise FormatError("an ELF symbol name is unterminated or over the bound")
    return table[offset:end].decode("utf-8", errors="replace")


def binary_symbols(data: bytes) -> tuple[set[str], bool]:
    """Every symbol name in a 64-bit little-endian ELF's ``.symtab`` and ``.dynsym``, and
    whether it has a ``.dynsym``. Anything else, or a malformed table, is a FormatError."""
    if len(data) < _ELF_HEADER.size or data[:4] != b"\x7fELF":
        raise FormatError("the built file is not an ELF binary")
    if data[4] != 2 or data[5] != 1:
        raise FormatError("only 64-bit little-endian ELF binaries can be inspected")
    header = _ELF_HEADER.unpack_from(data)
    shoff, shentsize, shnum = header[6], header[11], header[12]
    if shentsize != _SECTION.size or shoff + shnum * shentsize > len(data):
        raise FormatError("the ELF section header table is malformed")
    sections = [_SECTION.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    names: set[str] = set()
    has_dynamic = False
    read = 0
    for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if kind not in (_SHT_SYMTAB, _SHT_DYNSYM):
            continue
        has_dynamic |= kind == _SHT_DYNSYM
        if entsize != _SYMBOL.size or offset + size > len(data) or link >= len(sections):
            raise FormatError("an ELF symbol table is malformed")
        strings = sections[link]
        if strings[4] + strings[5] > len(data):
            raise FormatError("an ELF string table is malformed")
        table = data[strings[4] : strings[4] + strings[5]]
        count = size // entsize
        read += count
        if read > MAX_SYMBOLS:
            raise FormatError(f"the binary has over {MAX_SYMBOLS} symbols")
        for index in range(count):
            name_offset = _SYMBOL.unpack_from(data, offset + index * entsize)[0]
            if name_offset:
                names.add(_name_at(table, name_offset))
    return names, has_dynamic


def spawn_symbols(data: bytes) -> list[str]:
    """The process-spawning functions an ELF binary names (``fork@GLIBC`` counts as ``fork``).

    A binary with no dynamic symbol table is reported as ``<no .dynsym>``: what
    it calls cannot be checked.
    """
    names, has_dynamic = binary_symbols(data)
    found = sorted({n.split("@", 1)[0] for n in names} & SPAWN_SYMBOLS)
    return found if has_dynamic else [*found, "<no .dynsym>"]


# -- the build ----------------------------------------------------------------------

_OUTPUTS: dict[Path, Path] = {}
"""Task folder -> the folder holding its last built program (removed by the next build)."""


def _drop_outputs() -> None:
    for path in _OUTPUTS.values():
        remove_tree(path)
    _OUTPUTS.clear()


atexit.register(_drop_outputs)


_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass
class _Copied:
    """Files and bytes copied so far; past either bound the copy is refused."""

    files: int = 0
    bytes: int = 0

    def grow(self, files: int, size: int) -> None:
        self.files += files
        self.bytes += size
        if self.files > MAX_SOURCE_FILES or self.bytes > MAX_SOURCE_BYTES:
            raise FormatError(
                f"the workspace is over {MAX_SOURCE_FILES} files or {MAX_SOURCE_BYTES} bytes "
                "(target/ left out); remove what the build does not need"
            )


def _copy_file(name: str, folder: int, target: Path, copied: _Copied) -> None:
    handle = os.open(name, _FILE_FLAGS, dir_fd=folder)
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise FormatError(f"{name} in the workspace changed while it was copied")
        copied.grow(1, 0)
        with target.open("wb") as out:
            while chunk := os.read(handle, COPY_CHUNK):
                copied.grow(0, len(chunk))  # counted as read: a growing file stays bounded
                out.write(chunk)
    finally:
        os.close(handle)


def _copy_folder(folder: int, target: Path, depth: int, copied: _Copied) -> None:
    """Copy the open folder ``folder`` into ``target``, every entry opened relative to it
    without following a symlink: a path swapped for a symlink meanwhile fails, never leads out."""
    if depth > MAX_SOURCE_DEPTH:
        raise FormatError(f"the workspace is nested over {MAX_SOURCE_DEPTH} folders deep")
    target.mkdir()
    for entry in sorted(os.listdir(folder)):
        if depth == 0 and entry == "target":
            continue
        kind = os.stat(entry, dir_fd=folder, follow_symlinks=False).st_mode
        if stat.S_ISLNK(kind):
            os.symlink(os.readlink(entry, dir_fd=folder), target / entry)
            copied.grow(1, 0)
        elif stat.S_ISREG(kind):
            _copy_file(entry, folder, target / entry, copied)
        elif stat.S_ISDIR(kind):
            inner = os.open(entry, _DIRECTORY_FLAGS, dir_fd=folder)
            try:
                _copy_folder(inner, target / entry, depth + 1, copied)
            finally:
                os.close(inner)
        else:
            raise FormatError(
                f"{entry} in the workspace is not a file, folder or symlink "
                "(a FIFO, socket or device); remove it"
            )


def _copy_sources(workspace: Path, target: Path) -> None:
    """Copy the workspace (``target/`` left out, symlinks kept as links) within the bounds.

    The grader may run as root while the agent edits the workspace: no path is
    followed through a symlink, so swapping a file for a link to a secret
    during the copy cannot bring the secret into the build.
    """
    try:
        top = os.open(workspace, _DIRECTORY_FLAGS)
    except OSError as exc:
        raise FormatError(f"cannot open the workspace {workspace}: {exc.strerror}") from None
    try:
        _copy_folder(top, target, 0, _Copied())
    except OSError as exc:
        raise FormatError(f"cannot copy the workspace for the build: {exc}") from None
    finally:
        os.close(top)


def _cargo_config(vendor: Path | None) -> str:
    lines = ["[net]", "offline = true", ""]
    if vendor is not None:
        lines += [
            "[source.crates-io]",
            'replace-with = "task-vendored"',
            "",
            "[source.task-vendored]",
            f"directory = {json.dumps(str(vendor))}",
            "",
        ]
    return "\n".join(lines)


def _read_output(path: Path, limit: int, what: str) -> bytes:
    """A file the build jail wrote, never through a symlink it may have planted."""
    if path.is_symlink():
        raise FormatError(f"the build left {what} as a symlink; refusing to follow it")
    if not path.exists():
        return b""
    return read_bounded(path, limit, what)


@dataclass(frozen=True)
class _Jailed:
    ok: bool
    log: str


def _run_jailed(argv: list[str], jail: JailSpec, seconds: float) -> _Jailed:
    with reserve_lanes(1) as (lane,):
        return _Jailed(*run_build(argv, jail, lane, seconds, MAX_LOG_CHARS))


def _messages(raw: bytes) -> tuple[list[str], list[str], str | None]:
    """From cargo's JSON messages: rendered diagnostics, unsafe-code errors, the executable."""
    rendered: list[str] = []
    unsafe: list[str] = []
    executable: str | None = None
    for line in raw.splitlines():
        if not line.startswith(b"{"):
            continue
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # not a message cargo writes: skipped
            continue
        if not isinstance(message, dict):
            continue
        if message.get("reason") == "compiler-message":
            body = message.get("message") or {}
            text = body.get("rendered") if isinstance(body, dict) else None
            if isinstance(text, str):
                rendered.append(text)
            code = body.get("code") if isinstance(body, dict) else None
            if (
                isinstance(code, dict)
                and code.get("code") == "unsafe_code"
                and body.get("level") == "error"
            ):
                unsafe.append(str(body.get("message", ""))[:200])
        elif message.get("reason") == "compiler-artifact" and message.get("executable"):
            executable = str(message["executable"])
    return rendered, unsafe, executable


def run_cargo_build(
    task: Path,
    workspace: Path,
    build: CargoBuild,
    candidate: Iterable[str],
    *,
    read_only: tuple[Path, ...],
    hidden: tuple[Path, ...],
    secret: tuple[Path, ...],
    seconds: float,
    jobs: int,
) -> RustBuild:
    """Build ``build`` from a clean copy of ``workspace`` in the jail, held to :data:`RULES`.

    ``read_only``, ``hidden`` and ``secret`` are what the task's runtime and
    corpus add to the jail; ``seconds`` bounds the whole build (metadata and
    compile). ``candidate`` is the task's candidate command: its first word
    must be the binary's name. The program's folder stays until the next
    build of ``task`` in this process, or the process's exit.
    """
    words = list(candidate)
    if not words or words[0] != build.binary:
        raise FormatError(
            f"a cargo task's candidate command starts with its binary's name {build.binary!r}, "
            f"not {words[:1]}; fix task.json"
        )
    key = task.resolve()
    if key in _OUTPUTS:
        remove_tree(_OUTPUTS.pop(key))
    deadline = time.monotonic() + seconds
    tools = find_toolchain()
    changed = check_toolchain(task, tools)
    if changed is not None:
        return RustBuild(None, _refusal("toolchain", changed), "toolchain")
    root = Path(tempfile.mkdtemp(prefix="playproof-cargo-"))
    try:
        root.chmod(0o755)
        _copy_sources(workspace, root / "src")
        if os.path.lexists(root / "src" / ".cargo"):
            why = "the workspace holds .cargo (cargo's configuration); the grader sets it"
            return RustBuild(None, _refusal("cargo-config", why), "cargo-config")
        jail = _build_jail(root, tools, read_only, hidden, secret, seconds, jobs)
        built = _compile(root, jail, build, tools, deadline)
        if built.program is None:
            return built
        output = Path(tempfile.mkdtemp(prefix="playproof-program-"))
        output.chmod(0o755)
        program = output / build.binary
        shutil.move(built.program.command[0], program)
        program.chmod(0o755)
        _OUTPUTS[key] = output
        return RustBuild(BuiltProgram(output, (str(program), *words[1:])), built.log)
    finally:
        remove_tree(root)


def _build_jail(
    root: Path,
    tools: Toolchain,
    read_only: tuple[Path, ...],
    hidden: tuple[Path, ...],
    secret: tuple[Path, ...],
    seconds: float,
    jobs: int,
) -> JailSpec:
    """The build jail: ``root`` writable (sources, ``CARGO_HOME``, target), the toolchain shown."""
    home, target, vendor = root / "home", root / "target", root / "src" / "vendor"
    home.mkdir()
    target.mkdir()
    (home / "config.toml").write_text(
        _cargo_config(vendor if vendor.is_dir() else None), encoding="utf-8"
    )
    system = Path("/usr")
    shown = [p for p in (tools.sysroot, tools.cargo.parent) if system not in (p, *p.parents)]
    return JailSpec(
        read_only=(*read_only, *dict.fromkeys(shown)),
        writable=(root,),
        hidden=hidden,
        secret=secret,
        limits=JailLimits(
            wall_seconds=seconds,
            cpu_seconds=int(seconds),
            processes=BUILD_PROCESSES,
            writable_bytes=BUILD_WRITABLE_BYTES,
            writable_files=BUILD_WRITABLE_FILES,
        ),
        env={
            "CARGO_HOME": str(home),
            "CARGO_TARGET_DIR": str(target),
            "CARGO_NET_OFFLINE": "true",
            "CARGO_TERM_COLOR": "never",
            "CARGO_INCREMENTAL": "0",
            "CARGO_BUILD_JOBS": str(jobs),
            "RUSTC": str(tools.rustc),
            "RUSTFLAGS": "-F unsafe_code",
        },
        workdir=root / "src",
    )


_REDIRECT = 'exec "$0" "$@" > "$OUT"'
"""cargo's stdout goes to a file of its own: its messages are parsed, its stderr is the log."""


def _cargo(tools: Toolchain, out: Path, *args: str) -> list[str]:
    return ["/usr/bin/env", f"OUT={out}", "sh", "-c", _REDIRECT, str(tools.cargo), *args]


def _left(deadline: float) -> float:
    """Seconds left of the build's time (a step past it is stopped at once)."""
    return max(MIN_STEP_SECONDS, deadline - time.monotonic())


def _compile(
    root: Path, jail: JailSpec, build: CargoBuild, tools: Toolchain, deadline: float
) -> RustBuild:
    """``cargo metadata``, the metadata rules, ``cargo build``, the unsafe and spawn rules.

    The program, when built, is the path of the binary inside ``root``.
    """
    metadata_out, messages_out = root / "metadata.json", root / "messages.json"
    command = _cargo(tools, metadata_out, "metadata", "--format-version", "1", "--offline")
    step = _run_jailed([*command, "--locked"], jail, _left(deadline))
    if not step.ok:
        return RustBuild(None, f"cargo metadata failed:\n{step.log}")
    raw = _read_output(metadata_out, MAX_METADATA_BYTES, "cargo metadata output")
    parsed = parse_json(raw, limit=MAX_METADATA_BYTES, what="cargo metadata output")
    if not isinstance(parsed, dict):
        raise FormatError("cargo metadata output is not an object")
    broken = check_metadata(parsed, build)
    if broken is not None:
        return RustBuild(None, _refusal(*broken), broken[0])
    profile = ["--release"] if build.profile == "release" else []
    command = _cargo(tools, messages_out, "build", "--frozen", "--offline", "-p", build.package)
    command += ["--bin", build.binary, *profile, "--message-format", "json"]
    step = _run_jailed(command, jail, _left(deadline))
    raw = _read_output(messages_out, MAX_MESSAGES_BYTES, "cargo build messages")
    rendered, unsafe, executable = _messages(raw)
    log = ("".join(rendered) + step.log)[-MAX_LOG_CHARS:]
    if unsafe:
        return RustBuild(None, _refusal("unsafe", f"{unsafe[0]}\n{log}"), "unsafe")
    if not step.ok:
        return RustBuild(None, f"cargo build failed:\n{log}")
    if executable is None:
        return RustBuild(None, f"cargo build named no executable:\n{log}")
    built = Path(executable).resolve()
    if (root / "target").resolve() not in built.parents:
        raise FormatError(f"cargo built {executable} outside its target folder")
    spawning = spawn_symbols(_read_output(built, MAX_BINARY_BYTES, "built binary"))
    if spawning:
        why = f"the binary names process-spawning functions: {', '.join(spawning[:8])}"
        return RustBuild(None, _refusal("spawn", why), "spawn")
    return RustBuild(BuiltProgram(built.parent, (str(built),)), log)


# -- the starter workspace ------------------------------------------------------------

STARTER_PACKAGE = "chip8-candidate"
"""The starter workspace's package and binary name."""
_STARTER_FILES = ("Cargo.toml", "Cargo.lock", "src/main.rs")
MAX_STARTER_BYTES = 64 * 1024


def rust_starter_build() -> CargoBuild:
    """The ``build`` a task made with the Rust starter declares."""
    return CargoBuild(kind="cargo", package=STARTER_PACKAGE)


def write_rust_starter(workspace: Path) -> None:
    """Copy the starter Rust workspace (a CHIP-8 candidate skeleton) into ``workspace``.

    Files already there are kept. The starter has no dependencies and builds with
    rustc 1.63 (Debian bookworm's) and later.
    """
    shipped = Path(__file__).parent / "starters" / "rust-chip8"
    for name in _STARTER_FILES:
        target = workspace / name
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(read_bounded(shipped / name, MAX_STARTER_BYTES, "starter file"))


def rust_instructions(build: CargoBuild) -> str:
    """What ``INSTRUCTIONS.md`` says about a cargo task's build."""
    vendored = ", ".join(build.vendored) or "none"
    return (
        "\n## The Rust build\n\n"
        f"`run-tests` builds package `{build.package}` (binary `{build.binary}`, profile\n"
        f"`{build.profile}`) from a clean copy of the workspace, offline, with\n"
        "`cargo build --frozen` and the toolchain fingerprinted when the task started;\n"
        "keep `Cargo.lock` in the workspace (lock file version 3, which cargo 1.63 reads).\n"
        "The build is refused, naming the rule, for: a crate outside the vendored set\n"
        f"(here: {vendored}), a build script, a procedural macro, a `links` key,\n"
        "`unsafe` code (`-F unsafe_code`), a `.cargo` folder in the workspace, a binary\n"
        "that links process-spawning functions (`fork`, `execve`, `posix_spawn`,\n"
        "`system` ...), or a changed toolchain. Write code that rustc 1.63 accepts.\n"
    )
