"""How to start a platform's reference candidate in a jail.

On a DMG it is the PyBoy protocol implementation (``reference_candidate``);
on CHIP-8 it is the interpreter of ``playproof.corpus.chip8``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from playproof.corpus import reference_candidate
from playproof.corpus._jail import python_paths
from playproof.corpus._runner import CandidateSpec
from playproof.corpus.chip8 import candidate as chip8_candidate

__all__ = ["REFERENCE_NAME", "reference_candidate_spec", "reference_identity"]

REFERENCE_NAME = reference_candidate.CANDIDATE_NAME
CHIP8_REFERENCE_NAME = chip8_candidate.CANDIDATE_NAME


def reference_candidate_spec(platform: str = "dmg") -> CandidateSpec:
    """The reference candidate, run as a script so it starts without importing playproof.

    Only the script (for CHIP-8: its folder, script and interpreter, and the
    Game Boy script whose request loop it shares) and the interpreter's
    folders are visible in the jail; where those folders hold the package (a
    wheel install), the jail covers its corpus data folder, answers included.
    It is the one candidate that runs under the ``grader`` runtime.
    """
    script = Path(reference_candidate.__file__).resolve()
    # Normalized, never resolved: ``../.venv/bin/python`` must name the same file
    # inside the jail, and a virtual environment's link must stay a link.
    python = os.path.abspath(sys.executable)
    if platform == "chip8":
        chip8_script = Path(chip8_candidate.__file__).resolve()
        return CandidateSpec(
            command=(python, "-I", str(chip8_script)),
            read_only=(*python_paths(), chip8_script.parent, script),
            runtime="grader",
        )
    return CandidateSpec(
        command=(python, "-I", str(script)),
        read_only=(*python_paths(), script),
        runtime="grader",
    )


def reference_identity(platform: str = "dmg") -> str:
    """Which emulator the reference candidate is, e.g. ``pyboy-reference (PyBoy 2.8.1)``."""
    if platform == "chip8":
        return f"{CHIP8_REFERENCE_NAME} (playproof's COSMAC VIP interpreter)"
    from importlib.metadata import version

    return f"{REFERENCE_NAME} (PyBoy {version('pyboy')})"
