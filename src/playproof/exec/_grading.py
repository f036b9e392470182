"""Corpus grading on Ray: what every node needs, checked on each node before any case runs.

A case runs in the grading jail of whichever node its task lands on, so
every node must be able to build that jail (bubblewrap and util-linux's
``prlimit`` installed, and bubblewrap able to create the user, PID, mount and
network namespaces the jail uses) and must hold the candidate's files at the
same paths, with the same bytes, as the machine that started the grading.
:func:`check_grading_nodes` asks every alive node once, with a task pinned to
it, and refuses naming each node that falls short and why.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from playproof.corpus._jail import bubblewrap_usable
from playproof.corpus._runner import CandidateSpec

__all__ = ["GRADING_NEEDS", "GradingProbe", "check_grading_nodes", "grading_probe", "jail_problem"]

GRADING_NEEDS = "what corpus grading needs"
"""How the refusal names what a node lacks."""
HASH_CHUNK = 1024 * 1024


def jail_problem() -> str | None:
    """What keeps this machine from building the grading jail, or None when it can."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    if shutil.which("prlimit") is None:
        return "prlimit is not installed (apt-get install util-linux)"
    if not bubblewrap_usable():
        return (
            "bubblewrap cannot create the jail's namespaces (allow unprivileged user "
            "namespaces, e.g. sysctl kernel.unprivileged_userns_clone=1, or run the node as root)"
        )
    return None


def _sha256(path: Path, size: int) -> str | None:
    """SHA-256 of ``path`` if it is a regular file of exactly ``size`` bytes, else None."""
    try:
        if not path.is_file() or path.stat().st_size != size:
            return None
        sha = hashlib.sha256()
        with path.open("rb") as handle:
            while chunk := handle.read(HASH_CHUNK):
                sha.update(chunk)
                if handle.tell() > size:
                    return None
        return sha.hexdigest()
    except OSError:
        return None


@dataclass(frozen=True)
class GradingProbe:
    """Run on a node: the jail works there and the candidate's files are there, unchanged."""

    files: tuple[tuple[str, int, str], ...]
    """Path, size and SHA-256 of every file the candidate's command names."""
    folders: tuple[str, ...]
    """Folders the candidate sees read-only (its build folder, an interpreter's)."""

    def __call__(self) -> str | None:
        problem = jail_problem()
        if problem is not None:
            return problem
        for path, size, sha in self.files:
            if _sha256(Path(path), size) != sha:
                return f"the candidate's file {path} is missing or differs from this machine's"
        for folder in self.folders:
            if not os.path.exists(folder):
                return f"the candidate's folder {folder} is missing"
        return None


def grading_probe(*candidates: CandidateSpec) -> GradingProbe:
    """The probe for ``candidates``: the files their commands name, as on this machine."""
    files: list[tuple[str, int, str]] = []
    folders: list[str] = []
    for candidate in candidates:
        for arg in candidate.command:
            path = Path(arg)
            if path.is_file():
                size = path.stat().st_size
                sha = _sha256(path, size)
                if sha is not None and (arg, size, sha) not in files:
                    files.append((arg, size, sha))
        folders += [str(p) for p in candidate.read_only if p.is_dir() and str(p) not in folders]
    return GradingProbe(files=tuple(files), folders=tuple(folders))


def check_grading_nodes(*candidates: CandidateSpec) -> int:
    """Refuse, naming the nodes, unless every node of the connected cluster can grade.

    ``candidates`` are what will run on the nodes (the candidate, and the
    reference when ROM variants are graded). Call it with a Ray executor open
    (it asks that executor's cluster); the answer is how many nodes were checked.
    """
    from playproof.exec._ray import require_on_every_node  # local: optional extra

    return require_on_every_node(grading_probe(*candidates), GRADING_NEEDS)
