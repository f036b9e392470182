"""Turning an agent's free-text answer into one declared input (or ``noop``)."""

from __future__ import annotations

from collections.abc import Sequence

from playproof.core.agent import NOOP, normalize_input

__all__ = ["first_word", "first_word_of_line"]

# Models like to dress a word up ("**left**", "`up`", "Down."); these wrappers are
# peeled, and the case folded, only when the word as written is not a declared input.
_DRESSING = "\"'`*_.,;:!?()[]{}<>"


def first_word(text: str, vocabulary: Sequence[str]) -> str:
    """The first whitespace-separated word of ``text``, normalized against ``vocabulary``.

    >>> first_word("  **Left** because the corner is free", ["left", "right"])
    'left'
    >>> first_word("left. Keep the corner", ["left", "right"])
    'left'
    >>> first_word("", ["left"])
    'noop'
    """
    words = text.split(maxsplit=1)
    if not words:
        return NOOP
    for candidate in (words[0], words[0].strip(_DRESSING)):
        if normalize_input(candidate, vocabulary) != NOOP:
            return candidate
    # A differently cased word counts only when exactly one declared input matches it.
    folded = words[0].strip(_DRESSING).casefold()
    matches = [word for word in vocabulary if word.casefold() == folded]
    return normalize_input(matches[0], vocabulary) if len(matches) == 1 else NOOP


def first_word_of_line(text: str, vocabulary: Sequence[str]) -> str:
    """Like :func:`first_word`, but an answer spanning several lines is ``noop``.

    >>> first_word_of_line("up\\n", ["up"]), first_word_of_line("up\\ndown", ["up", "down"])
    ('up', 'noop')
    """
    stripped = text.strip()
    if "\n" in stripped or "\r" in stripped:
        return NOOP
    return first_word(stripped, vocabulary)
