"""Serial port output (link cable bytes) collected into lines and events.

Test ROMs such as Blargg's print their results over the serial port. PyBoy
records every byte written to SB (0xFF01) in a 1024-byte ring that
``PyBoy._serial()`` drains; the adapter drains it after every input, so a ROM
must not write more than 1024 bytes within one input.
"""

from __future__ import annotations

__all__ = ["EVENT_PREFIX", "MAX_LINE_CHARS", "MAX_SERIAL_BYTES", "SerialLog"]

MAX_SERIAL_BYTES = 64 << 10
"""Serial bytes kept per session; later bytes are counted, not stored."""
MAX_LINE_CHARS = 200
"""A longer line is emitted in pieces (event strings stay within the contract's 256)."""
EVENT_PREFIX = "serial:"


class SerialLog:
    """Accumulates serial text and turns each completed non-blank line into an event."""

    __slots__ = ("_line", "dropped", "events", "text")

    def __init__(self) -> None:
        self.text = ""
        self.dropped = 0
        self.events: list[str] = []
        self._line = ""

    def feed(self, chunk: str) -> None:
        """Add newly received characters."""
        if not chunk:
            return
        room = MAX_SERIAL_BYTES - len(self.text)
        self.text += chunk[:room]
        self.dropped += max(0, len(chunk) - room)
        for char in chunk:
            if char == "\n":
                self._emit()
            elif char != "\r":
                self._line += char
                if len(self._line) >= MAX_LINE_CHARS:
                    self._emit()

    def _emit(self) -> None:
        line = "".join(c if c.isprintable() else "?" for c in self._line).strip()
        self._line = ""
        if line:
            self.events.append(EVENT_PREFIX + line)

    def take_events(self) -> tuple[str, ...]:
        """Events since the previous call."""
        events, self.events = tuple(self.events), []
        return events

    def to_state(self) -> dict[str, object]:
        """JSON-ready state for checkpoints."""
        return {
            "text": self.text,
            "dropped": self.dropped,
            "line": self._line,
            "events": self.events,
        }

    @classmethod
    def from_state(cls, state: dict[str, object]) -> SerialLog:
        """Rebuild from :meth:`to_state` output (the caller has verified the blob)."""
        log = cls()
        text, dropped, line, events = (
            state["text"],
            state["dropped"],
            state["line"],
            state["events"],
        )
        if not (
            isinstance(text, str)
            and isinstance(dropped, int)
            and isinstance(line, str)
            and isinstance(events, list)
            and all(isinstance(e, str) for e in events)
        ):
            raise ValueError("malformed serial state")
        log.text, log.dropped, log._line, log.events = text, dropped, line, list(events)
        return log
