"""The recorder's side of provenance: the source checkout and secret-free run settings.

:func:`source_checkout` asks git, bounded in time and output, for the commit
playproof runs from and whether the work tree has changes; it answers None
(never an error) when playproof is not a git checkout or git cannot say.
:func:`public_agent` and :func:`public_url` strip what must never enter a
record: command arguments (they may carry keys), URL credentials and queries.

>>> public_agent("cli:python agent.py --api-key sk-123")
'cli:python (3 arguments not recorded)'
>>> public_url("https://user:secret@api.example.com/v1?key=abc")
'https://api.example.com/v1'
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import threading
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from playproof.core.record import SourceCheckout

__all__ = [
    "GIT_OUTPUT_LIMIT",
    "GIT_TIMEOUT_S",
    "public_agent",
    "public_url",
    "source_checkout",
]

GIT_TIMEOUT_S = 2.0
"""How long one git command may take before the checkout is reported as unknown."""
GIT_OUTPUT_LIMIT = 4096
"""Bytes of git output read at most (a commit id; one line of status is enough)."""
_MAX_LEVELS = 4
"""How far above the package a checkout's root may be (``src/playproof`` is two levels)."""
_COMMIT = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_COMMANDS = ("cli", "session")


def _git(root: Path, *args: str) -> bytes | None:
    """The first bytes of a git command's output, or None when it failed or took too long."""
    git = shutil.which("git")
    if git is None:
        return None
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}  # status must not take the index lock
    try:
        process = subprocess.Popen(
            [git, "-C", str(root), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    except OSError:
        return None
    timer = threading.Timer(GIT_TIMEOUT_S, process.kill)
    timer.start()
    try:
        assert process.stdout is not None
        data = process.stdout.read(GIT_OUTPUT_LIMIT)
    finally:
        timer.cancel()
        process.kill()
        code = process.wait()
        if process.stdout is not None:
            process.stdout.close()
    # Killed after reading enough is fine for status (only emptiness matters).
    return data if code == 0 or (args[0] == "status" and data) else None


def _checkout_root(package: Path) -> Path | None:
    for folder in list(package.parents)[:_MAX_LEVELS]:
        if (folder / ".git").exists():
            if "site-packages" in package.relative_to(folder).parts:
                return None  # an installed copy inside someone's repository
            return folder
    return None


@cache
def source_checkout() -> SourceCheckout | None:
    """The git commit playproof runs from and whether the tree is dirty; None when unknown.

    Asked once per process: a record made later in a long-lived process still
    names the commit the process started from.
    """
    root = _checkout_root(Path(__file__).resolve().parent / "__init__.py")
    if root is None:
        return None
    head = _git(root, "rev-parse", "HEAD")
    commit = head.decode("ascii", "replace").strip() if head is not None else ""
    if not _COMMIT.match(commit):
        return None
    status = _git(root, "status", "--porcelain")
    if status is None:
        return None
    return SourceCheckout(commit=commit, dirty=bool(status.strip()))


def public_agent(spec: str) -> str:
    """The agent spec as a record may show it: a command's arguments are left out."""
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in _COMMANDS:
        return spec[:512]
    try:
        argv = shlex.split(rest)
    except ValueError:
        return f"{kind}:(command not recorded)"
    if not argv:
        return f"{kind}:"
    # Only the first word of the program's file name: a quoted "program" may hold arguments.
    words = Path(argv[0]).name.split()
    program = words[0][:200] if words else "(program)"
    extra = len(argv) - 1 + len(words[1:])
    if not extra:
        return f"{kind}:{program}"
    noun = "argument" if extra == 1 else "arguments"
    return f"{kind}:{program} ({extra} {noun} not recorded)"


def public_url(url: str) -> str:
    """``url`` without user, password, query or fragment (they may carry credentials)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "(unparsable URL not recorded)"
    return urlunsplit((parts.scheme, host + port, parts.path, "", ""))[:512]
