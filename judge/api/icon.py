"""The page's icon (``/favicon.ico``), drawn here: a 32x32 PNG inside an ICO file. Browsers
ask for it on every page; served without a key (it is the same for everyone)."""

from __future__ import annotations

import struct
import zlib
from functools import cache

SIZE = 32
_BACK = (31, 58, 96)  # the page's dark blue
_MARK = (255, 255, 255)


def _pixel(x: int, y: int) -> tuple[int, int, int, int]:
    # A rounded square with a check mark: pixels near the mark's two strokes are white.
    corner = 5
    dx = max(corner - x, x - (SIZE - 1 - corner), 0)
    dy = max(corner - y, y - (SIZE - 1 - corner), 0)
    if dx * dx + dy * dy > corner * corner:
        return (0, 0, 0, 0)
    short = abs((y - 17) - (x - 8)) <= 2 and 8 <= x <= 14
    long = abs((y - 23) + (x - 14)) <= 2 and 13 <= x <= 25
    return (*(_MARK if short or long else _BACK), 255)


def _png() -> bytes:
    rows = b"".join(
        b"\x00" + b"".join(bytes(_pixel(x, y)) for x in range(SIZE)) for y in range(SIZE)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


@cache
def favicon() -> bytes:
    """The icon as an ICO file holding one PNG image."""
    png = _png()
    directory = struct.pack("<BBBBHHII", SIZE, SIZE, 0, 0, 1, 32, len(png), 6 + 16)
    return struct.pack("<HHH", 0, 1, 1) + directory + png
