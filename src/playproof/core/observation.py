"""Observations: what an agent may see. Built only from player-visible output.

Bounds (ARCHITECTURE 3.3). A breach raises :class:`~playproof.errors.ObservationError`;
nothing is silently shrunk.

>>> Observation(text="score 4").text
'score 4'
>>> Image.from_bytes(b"not a png", media_type="image/png", width=1, height=1)
Traceback (most recent call last):
...
playproof.errors.ObservationError: image bytes do not start with the image/png magic
"""

from __future__ import annotations

import base64
import binascii
import struct
import unicodedata
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from playproof.errors import ObservationError

__all__ = [
    "MAX_IMAGES_PER_TURN",
    "MAX_IMAGE_BYTES",
    "MAX_IMAGE_EDGE",
    "MAX_LABEL_CHARS",
    "MAX_TEXT_CHARS",
    "MAX_TURN_IMAGE_BYTES",
    "Image",
    "MediaType",
    "Observation",
]

MAX_IMAGE_BYTES = 1 << 20
"""Decoded bytes of one image."""
MAX_TURN_IMAGE_BYTES = 2 << 20
"""Decoded bytes of all images of one observation."""
MAX_IMAGES_PER_TURN = 4
MAX_IMAGE_EDGE = 2048
MAX_LABEL_CHARS = 200
MAX_TEXT_CHARS = 64 * 1024
"""Characters of observation text."""

MediaType = Literal["image/png", "image/jpeg"]

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_JPEG_MAGIC = b"\xff\xd8\xff"
# JPEG start-of-frame markers carry the dimensions; C4, C8 and CC are not frames.
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _png_size(data: bytes) -> tuple[int, int]:
    if len(data) < 24 or data[12:16] != b"IHDR":
        raise ObservationError("PNG has no IHDR chunk where the format requires it")
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def _jpeg_size(data: bytes) -> tuple[int, int]:
    pos = 2
    while pos + 4 <= len(data):
        if data[pos] != 0xFF:
            raise ObservationError("JPEG segment does not start with a marker")
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        (length,) = struct.unpack(">H", data[pos + 2 : pos + 4])
        if marker in _JPEG_SOF:
            if pos + 9 > len(data):
                break
            height, width = struct.unpack(">HH", data[pos + 5 : pos + 9])
            return int(width), int(height)
        if length < 2:
            raise ObservationError("JPEG segment length is invalid")
        pos += 2 + length
    raise ObservationError("JPEG has no start-of-frame segment")


def _check_label(label: str) -> None:
    if len(label) > MAX_LABEL_CHARS:
        raise ObservationError(f"image label is {len(label)} characters, over {MAX_LABEL_CHARS}")
    for char in label:
        if unicodedata.category(char) in ("Cc", "Cf"):
            raise ObservationError(f"image label contains the control/format character {char!r}")


class Image(BaseModel):
    """One bounded image: PNG or JPEG bytes in canonical base64 with declared dimensions."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    media_type: MediaType
    data: str
    width: int
    height: int
    label: str | None = None

    @model_validator(mode="after")
    def _bounded(self) -> Image:
        if len(self.data) > 4 * ((MAX_IMAGE_BYTES + 2) // 3):
            raise ObservationError(f"image is over the {MAX_IMAGE_BYTES}-byte limit")
        try:
            raw = base64.b64decode(self.data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ObservationError(f"image data is not base64: {exc}") from exc
        if base64.b64encode(raw).decode("ascii") != self.data:
            raise ObservationError("image data is not canonical base64")
        self._check_bytes(raw)
        return self

    def _check_bytes(self, raw: bytes) -> None:
        if len(raw) > MAX_IMAGE_BYTES:
            raise ObservationError(
                f"image is {len(raw)} bytes, over the {MAX_IMAGE_BYTES}-byte limit"
            )
        magic = _PNG_MAGIC if self.media_type == "image/png" else _JPEG_MAGIC
        if not raw.startswith(magic):
            raise ObservationError(f"image bytes do not start with the {self.media_type} magic")
        for edge in (self.width, self.height):
            if not 1 <= edge <= MAX_IMAGE_EDGE:
                raise ObservationError(f"image edge {edge} px is outside 1..{MAX_IMAGE_EDGE}")
        actual = _png_size(raw) if self.media_type == "image/png" else _jpeg_size(raw)
        if actual != (self.width, self.height):
            raise ObservationError(
                f"image declares {self.width}x{self.height} but its header says "
                f"{actual[0]}x{actual[1]}"
            )
        if self.label is not None:
            _check_label(self.label)

    @property
    def byte_size(self) -> int:
        """Decoded size in bytes."""
        return len(self.data) * 3 // 4 - self.data[-2:].count("=")

    def raw(self) -> bytes:
        """The decoded image bytes."""
        return base64.b64decode(self.data)

    @classmethod
    def from_bytes(
        cls, raw: bytes, *, media_type: MediaType, width: int, height: int, label: str | None = None
    ) -> Image:
        """Wrap encoded image bytes, enforcing every bound."""
        if len(raw) > MAX_IMAGE_BYTES:
            raise ObservationError(
                f"image is {len(raw)} bytes, over the {MAX_IMAGE_BYTES}-byte limit"
            )
        try:
            return cls(
                media_type=media_type,
                data=base64.b64encode(raw).decode("ascii"),
                width=width,
                height=height,
                label=label,
            )
        except ValidationError as exc:
            raise ObservationError(str(exc.errors()[0]["msg"])) from exc


class Observation(BaseModel):
    """What the agent sees for one turn: text always, images optionally, all bounded."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    images: tuple[Image, ...] = ()

    @model_validator(mode="after")
    def _bounded(self) -> Observation:
        if len(self.text) > MAX_TEXT_CHARS:
            raise ObservationError(
                f"observation text is {len(self.text)} characters, over {MAX_TEXT_CHARS}"
            )
        if len(self.images) > MAX_IMAGES_PER_TURN:
            raise ObservationError(
                f"observation has {len(self.images)} images, over {MAX_IMAGES_PER_TURN}"
            )
        total = sum(image.byte_size for image in self.images)
        if total > MAX_TURN_IMAGE_BYTES:
            raise ObservationError(
                f"observation images total {total} bytes, over {MAX_TURN_IMAGE_BYTES}"
            )
        return self
