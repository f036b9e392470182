"""An honest candidate whose frame count is off: the platform's reference, except that every
``FRAMES n`` runs ``n + SHIFT`` frames (an emulator that counts frames a little differently).

``REFERENCE_SCRIPT`` names the reference candidate script to wrap (stdlib + its emulator).
"""

import os

from _reference import load_reference

reference = load_reference()
SHIFT = int(os.environ.get("SHIFT", "3"))
handle = reference.Session.handle


def shifted(self: object, words: list[str]) -> bytes:
    if len(words) == 2 and words[0] == "FRAMES":
        words = ["FRAMES", str(int(words[1]) + SHIFT)]
    return handle(self, words)


reference.Session.handle = shifted
reference.main()
