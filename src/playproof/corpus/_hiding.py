"""What a jail hides: the package's corpus data, the answers, the corpus folders.

bubblewrap shows a jail only the paths it binds, but a bound folder shows
everything below it: in a wheel install the interpreter's site-packages holds
the package, and with it the shipped answers. So every hidden path that lies
inside a bound one is covered again after the binds, wherever it shows.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from playproof.corpus._shipped import DATA

__all__ = ["MAX_SECRET_FILES", "answers_files", "masks", "protected_paths"]

MAX_SECRET_FILES = 256
"""Answers files checked for readability per launch under the rlimits fallback as root."""


def protected_paths() -> tuple[Path, ...]:
    """What every jail hides: the package's corpus data folder (manifests, ROMs, answers)."""
    return (DATA.resolve(),)


def _inside_jail(target: Path, bound: list[Path]) -> list[tuple[str, bool]]:
    """Where ``target`` shows inside a jail binding ``bound``, and whether it is a folder there.

    Both sides are compared with symlinks resolved, so a target reached through
    a linked folder (or a bound path that is a link) is found too; a bound path
    that lies inside ``target`` is itself such a place.
    """
    real = target.resolve()
    if not real.exists():
        return []
    places: list[tuple[str, bool]] = []
    for path in bound:
        root = path.resolve()
        if root == real or root in real.parents:
            places.append((str(path / real.relative_to(root)), real.is_dir()))
        elif real in root.parents:
            places.append((str(path), root.is_dir()))
    return places


def masks(hidden: Iterable[Path], bound: list[Path]) -> list[str]:
    """bubblewrap arguments covering ``hidden`` (and :func:`protected_paths`) inside ``bound``.

    They must follow the binds: an empty read-only tmpfs (a folder) or
    ``/dev/null`` (a file) then lies over the bound content and over anything
    bound deeper inside it.
    """
    args: list[str] = []
    covered: set[str] = set()
    for target in (*hidden, *protected_paths()):
        for place, folder in _inside_jail(target, bound):
            if place in covered:
                continue
            covered.add(place)
            if folder:
                args += ["--tmpfs", place, "--remount-ro", place]
            else:
                args += ["--ro-bind", "/dev/null", place]
    return args


def answers_files(secret: Iterable[Path]) -> list[str]:
    """The answers files no jail may read: ``secret`` (files or folders) and every shipped one."""
    shipped = sorted(DATA.iterdir()) if DATA.is_dir() else []
    files: list[str] = []
    for path in (*secret, *(folder / "answers.json" for folder in shipped)):
        if path.is_dir():
            files += [str(p) for p in sorted(path.rglob("*")) if p.is_file()]
        elif path.exists():
            files.append(str(path))
    return files[:MAX_SECRET_FILES]
