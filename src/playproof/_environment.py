"""Environments a child process can be given: text names and values, no NUL, no '=' in a name.

``subprocess`` refuses anything else with a bare ValueError, and only when the
process starts; the drivers and the worker client check an environment when
they are built and raise their own typed error with the problem this names.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = ["environment_problem"]


def environment_problem(env: Mapping[Any, object]) -> str | None:
    """Why no process can be given ``env`` (naming the entry), or None when one can."""
    for name, value in env.items():
        problem = _text_problem(name, f"name {name!r}")
        if problem is not None:
            return problem
        assert isinstance(name, str)
        if not name:
            return "a variable name is empty"
        if "=" in name:
            return f"the name {name!r} holds '='"
        problem = _text_problem(value, f"value of {name}")
        if problem is not None:
            return problem
    return None


def _text_problem(text: object, shown: str) -> str | None:
    if not isinstance(text, str):
        return f"the {shown} is {type(text).__name__}, not text"
    if "\0" in text:
        return f"the {shown} holds a NUL byte"
    try:
        os.fsencode(text)
    except UnicodeError:
        return f"the {shown} cannot be encoded for a process"
    return None
