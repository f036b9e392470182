"""What the CLI writes to the terminal: values are data, never markup; errors are one line.

Both consoles have markup and highlighting off, so a string printed through
them is shown exactly as written: a claim id ``[/x]`` or an actor id holding
``[green]CLEAN[/]`` is text, not a style tag. Styles come only from
:func:`styled`, applied by this package to its own words. :func:`data` also
turns control characters (escape sequences, carriage returns) into visible
escapes, so a record cannot drive the terminal either, and lone surrogates
(which JSON can carry but no terminal encoding can write) into ``\\udXXX``.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

__all__ = [
    "actor_label",
    "console",
    "data",
    "errors",
    "line",
    "one_line",
    "progress_bar",
    "row",
    "say_error",
    "styled",
]

console = Console(markup=False, highlight=False)
"""Standard output: results."""
errors = Console(stderr=True, markup=False, highlight=False)
"""Standard error: progress, notes and errors."""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_SPACES = re.compile(r"\s+")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if 0xD800 <= code <= 0xDFFF else " "


def actor_label(kind: str, actor_id: str) -> str:
    """``kind:id``, the kind said once (records made before ids dropped the prefix repeat it)."""
    return actor_id if actor_id.startswith(f"{kind}:") else f"{kind}:{actor_id}"


def data(value: object) -> Text:
    """``value`` as plain text: no markup, no style, control characters shown as escapes."""
    return Text(_CONTROL.sub(_visible, str(value)))


def styled(value: object, style: str) -> Text:
    """``value`` as data, shown in ``style``."""
    shown = data(value)
    shown.stylize(style)
    return shown


def line(*parts: object) -> Text:
    """One printable text: :class:`Text` parts keep their style, anything else is data."""
    return Text.assemble(*(part if isinstance(part, Text) else data(part) for part in parts))


def row(table: Table, *cells: object) -> None:
    """Add a table row: :class:`Text` cells keep their style, anything else is data."""
    table.add_row(*(cell if isinstance(cell, Text) else data(cell) for cell in cells))


def one_line(message: str) -> str:
    """``message`` folded to one line: every run of whitespace (newlines too) is one space."""
    return _CONTROL.sub(_visible, _SPACES.sub(" ", message)).strip()


def say_error(label: str, message: str) -> None:
    """Print ``<label>: <message>`` to stderr as exactly one line, never wrapped."""
    errors.print(Text.assemble(styled(f"{label}:", "red"), " ", one_line(message)), soft_wrap=True)


class _DataColumn(TextColumn):
    """A text column that shows its formatted text as data (no markup, no control codes)."""

    def __init__(self, text_format: str, style: str = "") -> None:
        super().__init__(text_format, style=style, markup=False)

    def render(self, task: Any) -> Text:
        """The column's text for ``task``, escaped like :func:`data`."""
        shown = data(super().render(task).plain)
        shown.stylize(self.style)
        return shown


def progress_bar(quiet: bool, *, status: bool = True, **options: Any) -> Progress:
    """A progress bar on stderr (silent when ``quiet``); descriptions and status are data."""
    columns: list[Any] = [
        _DataColumn("{task.description}", style="bold"),
        BarColumn(),
        MofNCompleteColumn(),
    ]
    if status:
        columns.append(_DataColumn("{task.fields[status]}"))
    columns.append(TimeElapsedColumn())
    return Progress(*columns, console=errors, disable=quiet, **options)
