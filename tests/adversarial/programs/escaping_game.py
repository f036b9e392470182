"""A toy game for a worker child that leaves a detached sleeper on the word ``escape``.

Run in a worker with this folder and the worker tests' folder (``toygames``) on
``PYTHONPATH``; ``escaper`` names where the sleepers' pids are recorded. The
imports wait for ``make_game`` so that this module imports anywhere.
"""

from __future__ import annotations

from typing import Any


def make_game(**options: Any) -> Any:
    """Factory for the worker: the toy walker, where ``escape`` starts a sleeper."""
    from escaper import leave_sleeper
    from toygames import Walker

    class EscapingWalker(Walker):
        """The toy walker; ``escape`` starts a sleeper that leaves the worker's process group."""

        def step(self, word: str) -> None:
            """Walk, or leave a sleeper behind."""
            if word == "escape":
                leave_sleeper()
                return
            super().step(word)

    return EscapingWalker(**options)
