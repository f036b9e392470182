"""What a candidate's jail may run: the runtime a task allows, never the grader's own.

The grader runs in a Python environment that holds PyBoy and playproof: the
reference emulator. A candidate that could start that interpreter, or import
from its libraries, could wrap the reference instead of emulating anything.
So a jail shows a candidate only what its build produced and one declared
runtime:

- ``native`` (the default): the binary alone, with the system's folders
  (``/usr``, ``/lib`` ...) for its shared libraries and basic tools. The
  grader's interpreter, its standard library and every folder of its Python
  packages are covered wherever they would show, even under ``/usr``.
- ``python``: a Python candidate whose task declares Python as its runtime.
  It runs on the grader's *base* interpreter with the standard library only:
  the grader's virtual environment, every site-packages folder and the
  folders holding PyBoy and playproof are covered. A command that names the
  grader's interpreter (``python3``, ``sys.executable``) starts that base
  interpreter instead.
- ``grader``: the grader's whole interpreter and libraries. Only the
  reference candidate (the one declared exception) and candidates the grader
  itself builds from the reference (tests of honest timing) run under it.
"""

from __future__ import annotations

import importlib.util
import os
import site
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from playproof.corpus._jail import python_paths

__all__ = [
    "RUNTIMES",
    "Runtime",
    "RuntimeView",
    "grader_interpreter",
    "grader_library_paths",
    "reference_paths",
    "runtime_command",
    "runtime_view",
]

Runtime = Literal["native", "python", "grader"]
"""What a jail shows besides the candidate's own files (see the module text)."""
RUNTIMES: tuple[Runtime, ...] = ("native", "python")
"""The runtimes a task or a ``grade`` command line may declare (``grader`` is the reference's)."""
_PYTHON_NAMES = frozenset({"python", "python3", f"python3.{sys.version_info.minor}"})
_GRADER_PACKAGES = ("pyboy", "playproof")


@dataclass(frozen=True)
class RuntimeView:
    """Paths a runtime adds to a jail (read-only) and paths it covers inside visible ones."""

    visible: tuple[Path, ...]
    hidden: tuple[Path, ...]


def grader_interpreter() -> Path:
    """The grader's base interpreter binary (symlinks resolved, outside any venv)."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    return Path(base).resolve()


def _package_folder(name: str) -> Path | None:
    """The folder holding the top-level package ``name``, found without importing it."""
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    return Path(next(iter(found.submodule_search_locations))).resolve()


def grader_library_paths() -> tuple[Path, ...]:
    """Every folder of the grader's Python packages: its venv, site-packages, PyBoy, playproof."""
    folders: set[Path] = {Path(sys.prefix)}
    base_vars = {"base": sys.base_prefix, "platbase": sys.base_prefix}
    for scheme in (sysconfig.get_paths(), sysconfig.get_paths(vars=base_vars)):
        folders.update(Path(scheme[key]) for key in ("purelib", "platlib"))
    folders.update(Path(path) for path in site.getsitepackages())
    if site.ENABLE_USER_SITE and site.USER_SITE:
        folders.add(Path(site.USER_SITE))
    for name in _GRADER_PACKAGES:
        package = _package_folder(name)
        if package is not None:
            folders.add(package)
    # The base installation itself is the interpreter's runtime, not a package folder.
    base = Path(sys.base_prefix).resolve()
    return tuple(sorted(p.resolve() for p in folders if p.resolve() != base))


def reference_paths() -> tuple[Path, ...]:
    """Where the reference emulator's code lies (PyBoy's package folder), if installed.

    The agent's shell covers it even when it shows the grader's environment,
    so no PyBoy can be copied into a workspace and started from there.
    """
    found = _package_folder("pyboy")
    return (found,) if found is not None else ()


def _interpreter_paths() -> tuple[Path, ...]:
    """The grader's interpreter: its binary, its standard library, its installation."""
    stdlib = Path(sysconfig.get_paths(vars={"installed_base": sys.base_prefix})["stdlib"])
    base = Path(sys.base_prefix).resolve()
    # A base installation under /usr is the system's own folder: only its parts are covered.
    whole = () if str(base).startswith("/usr") else (base,)
    return (grader_interpreter(), stdlib.resolve(), *whole)


def runtime_view(runtime: Runtime) -> RuntimeView:
    """What ``runtime`` shows and covers in a candidate's (or a build's) jail."""
    if runtime == "grader":
        return RuntimeView(visible=python_paths(), hidden=())
    libraries = grader_library_paths()
    if runtime == "python":
        base = Path(sys.base_prefix).resolve()
        shown = () if str(base).startswith("/usr") else (base,)
        return RuntimeView(visible=shown, hidden=libraries)
    return RuntimeView(visible=(), hidden=(*libraries, *_interpreter_paths()))


def runtime_command(command: tuple[str, ...], runtime: Runtime) -> tuple[str, ...]:
    """``command`` as ``runtime`` starts it: under ``python`` the grader's interpreter,
    named bare or by any path (its venv's ``python``), becomes the base interpreter."""
    if runtime != "python" or not command:
        return command
    program = command[0]
    named = os.sep not in program and program in _PYTHON_NAMES
    same = os.sep in program and os.path.exists(program)
    if named or (same and Path(program).resolve() == grader_interpreter()):
        return (str(grader_interpreter()), *command[1:])
    return command
