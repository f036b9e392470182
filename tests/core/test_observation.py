import base64
import struct
import zlib

import pytest

from playproof.core.observation import (
    MAX_IMAGE_BYTES,
    MAX_IMAGES_PER_TURN,
    MAX_TEXT_CHARS,
    Image,
    Observation,
)
from playproof.errors import ObservationError


def png(width: int, height: int, pad: int = 0) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    rows = b"".join(b"\x00" + b"\x00" * width for _ in range(height))
    extra = chunk(b"tEXt", b"k\x00" + b"p" * pad) if pad else b""
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + extra
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


def test_valid_png_and_jpeg() -> None:
    image = Image.from_bytes(png(3, 2), media_type="image/png", width=3, height=2, label="screen")
    assert image.raw() == png(3, 2)
    assert Image.from_bytes(jpeg(5, 4), media_type="image/jpeg", width=5, height=4).height == 4


@pytest.mark.parametrize(
    ("raw", "kwargs", "message"),
    [
        (png(3, 2), {"media_type": "image/jpeg", "width": 3, "height": 2}, "magic"),
        (png(3, 2), {"media_type": "image/png", "width": 4, "height": 2}, "header says"),
        (png(3000, 2), {"media_type": "image/png", "width": 3000, "height": 2}, "outside"),
        (
            png(3, 2),
            {"media_type": "image/png", "width": 3, "height": 2, "label": "a\x00b"},
            "control",
        ),
        (
            png(3, 2),
            {"media_type": "image/png", "width": 3, "height": 2, "label": "a\u200bb"},
            "format",
        ),
        (
            png(3, 2),
            {"media_type": "image/png", "width": 3, "height": 2, "label": "x" * 201},
            "200",
        ),
        (
            png(1, 1, pad=MAX_IMAGE_BYTES),
            {"media_type": "image/png", "width": 1, "height": 1},
            "limit",
        ),
        (
            b"\xff\xd8\xff\xd9",
            {"media_type": "image/jpeg", "width": 1, "height": 1},
            "start-of-frame",
        ),
    ],
)
def test_image_bounds(raw: bytes, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ObservationError, match=message):
        Image.from_bytes(raw, **kwargs)  # type: ignore[arg-type]


def test_base64_must_be_canonical() -> None:
    data = base64.b64encode(png(1, 1)).decode()
    with pytest.raises(ObservationError, match="base64"):
        Image(media_type="image/png", data=data + "\n", width=1, height=1)
    with pytest.raises(ObservationError, match="base64"):
        Image(media_type="image/png", data="!!" + data, width=1, height=1)


def test_observation_bounds() -> None:
    one = Image.from_bytes(png(1, 1), media_type="image/png", width=1, height=1)
    Observation(text="ok", images=(one,) * MAX_IMAGES_PER_TURN)
    with pytest.raises(ObservationError, match="images"):
        Observation(text="ok", images=(one,) * (MAX_IMAGES_PER_TURN + 1))
    with pytest.raises(ObservationError, match="characters"):
        Observation(text="x" * (MAX_TEXT_CHARS + 1))
    big = Image.from_bytes(
        png(1, 1, pad=MAX_IMAGE_BYTES - 200), media_type="image/png", width=1, height=1
    )
    with pytest.raises(ObservationError, match="total"):
        Observation(text="ok", images=(big, big, big))
