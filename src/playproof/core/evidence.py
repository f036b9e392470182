"""Evidence: the privileged snapshot the harness records and agents never see.

Evidence is integer maps plus hashes so comparisons are exact. Adapters scale
floats to integers and put the scale in their build identity.

- ``engine``: engine or RAM variables (``score``, ``lives`` ...).
- ``save``: normalized save data.
- ``frame``: numbers derived from the rendered frame.
- ``save_hash`` / ``frame_hash``: SHA-256 hex of the serialized state / frame.
- ``events``: events appended to the game's log *since the previous snapshot*.
  The event log of a run is the concatenation of these, so an ``event`` check
  holds once the event has appeared at or before the snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field, StrictInt, StrictStr, TypeAdapter, ValidationError

from playproof.errors import FormatError

__all__ = ["Evidence"]

Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


@dataclass(frozen=True, slots=True)
class Evidence:
    """One snapshot of privileged evidence (see the module docstring for the fields)."""

    engine: Mapping[StrictStr, StrictInt] = field(default_factory=dict)
    save: Mapping[StrictStr, StrictInt] = field(default_factory=dict)
    frame: Mapping[StrictStr, StrictInt] = field(default_factory=dict)
    save_hash: Sha256Hex | None = None
    frame_hash: Sha256Hex | None = None
    events: tuple[StrictStr, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (sorted maps) used on the worker wire and in traces."""
        return {
            "engine": dict(self.engine),
            "save": dict(self.save),
            "frame": dict(self.frame),
            "save_hash": self.save_hash,
            "frame_hash": self.frame_hash,
            "events": list(self.events),
        }

    @classmethod
    def from_json(cls, data: Any) -> Evidence:
        """Rebuild evidence from :meth:`to_json` output; a bad field is a FormatError."""
        try:
            return _ADAPTER.validate_python(data)
        except ValidationError as exc:
            raise FormatError(f"malformed evidence: {exc.errors()[0]['msg']}") from exc


_ADAPTER: TypeAdapter[Evidence] = TypeAdapter(Evidence)
