"""Native desktop games under a trusted recorder (see docs/adapters-desktop.md).

A declarative spec launches or attaches to a program, sends it allowlisted
inputs, reads its output and collected files, and pins its executables and
assets into the build digest. The one live pass is written to a transcript
that the recorder signs; verification recomputes the milestones from the
transcript and never runs the program again.
"""

from playproof.adapters.desktop._game import DESKTOP_PLATFORM, DesktopGame, make_game
from playproof.adapters.desktop._recorder import TranscriptSealer, transcript_path_for
from playproof.adapters.desktop._spec import DesktopSpec, load_spec, pin_files

__all__ = [
    "DESKTOP_PLATFORM",
    "DesktopGame",
    "DesktopSpec",
    "TranscriptSealer",
    "load_spec",
    "make_game",
    "pin_files",
    "transcript_path_for",
]
