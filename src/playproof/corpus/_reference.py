"""How to start the reference candidate in a jail (the PyBoy protocol implementation)."""

from __future__ import annotations

import sys
from pathlib import Path

from playproof.corpus import reference_candidate
from playproof.corpus._jail import python_paths
from playproof.corpus._runner import CandidateSpec

__all__ = ["REFERENCE_NAME", "reference_candidate_spec", "reference_identity"]

REFERENCE_NAME = reference_candidate.CANDIDATE_NAME


def reference_candidate_spec() -> CandidateSpec:
    """The reference candidate, run as a script so it starts without importing playproof.

    Only the script file itself and the interpreter's folders are visible in
    the jail; where those folders hold the package (a wheel install), the jail
    covers its corpus data folder, answers included.
    """
    script = Path(reference_candidate.__file__).resolve()
    return CandidateSpec(
        command=(sys.executable, "-I", str(script)),
        read_only=(*python_paths(), script),
    )


def reference_identity() -> str:
    """Which emulator the reference candidate wraps, e.g. ``pyboy-reference (PyBoy 2.8.1)``."""
    from importlib.metadata import version

    return f"{REFERENCE_NAME} (PyBoy {version('pyboy')})"
