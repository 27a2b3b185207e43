"""Reading an Inspect ``.eval`` log (a zip file) one member at a time, without ``zipfile``.

Why not the standard library: Inspect has written every member of a ``.eval`` with
**zstd** (zip compression method 93) since inspect_ai 0.3.206, and Python's ``zipfile`` reads
zstd only from Python 3.14 (3.11 raises "That compression method is not supported").
inspect_ai works around it by importing ``zipfile_zstd``, which patches ``zipfile`` for the
whole process; this reader instead parses the zip itself (APPNOTE.TXT 6.3: end of central
directory, ZIP64 records and extra field 0x0001, central and local headers) and inflates
stored (0), deflate (8, older logs) and zstd (93, with the ``zstandard`` package, frames read
across: Inspect caps a frame at 200 MiB) members. It keeps one member in memory at a time, and
checks each member's CRC-32.

A log cut short (a copy that stopped, a disk that filled) has no central directory: the
members are then found by walking the local headers from the start of the file, which works
because Inspect writes the sizes into each local header (no data descriptors); every whole
member before the cut is read, and :attr:`ZipReader.damage` says where it stopped.
A member written twice (Inspect re-logs a retried sample under the same name) is read from
its last copy, as every zip reader does.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from judge.base import Closing

try:  # a base dependency; its absence still leaves deflate logs readable
    import zstandard
except ImportError:  # pragma: no cover - zstandard is installed with judge
    zstandard = None  # type: ignore[assignment]

ZIP_MAGIC = b"PK\x03\x04"
_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
_EOCD64 = b"PK\x06\x06"
_CENTRAL = b"PK\x01\x02"
STORED, DEFLATED, ZSTD = 0, 8, 93
_METHODS = {STORED: "stored", DEFLATED: "deflate", ZSTD: "zstd"}
_MAX_COMMENT = 65535
_U32 = 0xFFFFFFFF


class ZipError(Exception):
    """The file, or one of its members, cannot be read; the message says which and why."""


@dataclass(frozen=True)
class Member:
    """One member of the zip, as its central directory (or local header) describes it."""

    name: str
    method: int
    flags: int
    crc: int
    compressed_size: int
    size: int
    offset: int


def _zip64_sizes(
    extra: bytes, size: int, compressed: int, offset: int | None
) -> tuple[int, int, int | None]:
    """Sizes and offset from the ZIP64 extra field (0x0001): only the values that overflowed
    32 bits are in it, in the order size, compressed size, offset."""
    at = 0
    while at + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, at)
        if tag == 0x0001:
            values = list(struct.unpack_from(f"<{length // 8}Q", extra, at + 4))
            if size == _U32 and values:
                size = values.pop(0)
            if compressed == _U32 and values:
                compressed = values.pop(0)
            if offset == _U32 and values:
                offset = values.pop(0)
            break
        at += 4 + length
    return size, compressed, offset


class ZipReader(Closing):
    """The members of one zip file, read on demand. Use as a context manager."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle: BinaryIO = path.open("rb")
        #: Why the central directory could not be used (the file is cut short), else None.
        self.damage: str | None = None
        try:
            self.size = self.handle.seek(0, 2)
            self.handle.seek(0)
            if self.handle.read(4) != ZIP_MAGIC:
                raise ZipError("not a zip file (it does not start with PK\\x03\\x04)")
            try:
                found = self._central_directory()
            except ZipError as exc:
                self.damage = str(exc)
                found = list(self._walk_local_headers())
        except BaseException:
            self.handle.close()
            raise
        #: name -> member (the last copy of a name), in the order the members were written.
        self.members: dict[str, Member] = {}
        for member in found:
            self.members.pop(member.name, None)
            self.members[member.name] = member

    def close(self) -> None:
        """Close the file."""
        self.handle.close()

    # --- the directory ---------------------------------------------------------------------

    def _end_record(self) -> tuple[int, int, int]:
        """(member count, central directory size, its offset), from the end record (and the
        ZIP64 one when the counts overflowed)."""
        tail_size = min(self.size, 22 + _MAX_COMMENT)
        self.handle.seek(self.size - tail_size)
        tail = self.handle.read(tail_size)
        at = tail.rfind(_EOCD)
        if at < 0 or len(tail) - at < 22:
            raise ZipError("no end-of-central-directory record: the file is cut short")
        count, cd_size, cd_offset = struct.unpack_from("<HII", tail, at + 10)
        end_at = self.size - tail_size + at
        if end_at >= 20:
            self.handle.seek(end_at - 20)
            locator = self.handle.read(20)
            if locator[:4] == _EOCD64_LOCATOR:
                (record_at,) = struct.unpack_from("<Q", locator, 8)
                self.handle.seek(record_at)
                record = self.handle.read(56)
                if record[:4] != _EOCD64:
                    raise ZipError("the ZIP64 end-of-central-directory record is damaged")
                count, cd_size, cd_offset = struct.unpack_from("<QQQ", record, 32)
        if cd_offset + cd_size > self.size:
            raise ZipError("the central directory lies past the end of the file: it is cut short")
        return count, cd_size, cd_offset

    def _central_directory(self) -> list[Member]:
        count, cd_size, cd_offset = self._end_record()
        self.handle.seek(cd_offset)
        directory = self.handle.read(cd_size)
        members: list[Member] = []
        at = 0
        for index in range(count):
            if at + 46 > len(directory) or directory[at : at + 4] != _CENTRAL:
                raise ZipError(f"central directory entry {index} is damaged")
            (flags, method, _time, _date, crc, compressed, size, name_len, extra_len) = (
                struct.unpack_from("<HHHHIIIHH", directory, at + 8)
            )
            (comment_len,) = struct.unpack_from("<H", directory, at + 32)
            (offset,) = struct.unpack_from("<I", directory, at + 42)
            name_bytes = directory[at + 46 : at + 46 + name_len]
            extra = directory[at + 46 + name_len : at + 46 + name_len + extra_len]
            size, compressed, offset = _zip64_sizes(extra, size, compressed, offset)
            name = name_bytes.decode("utf-8" if flags & 0x800 else "cp437")
            members.append(Member(name, method, flags, crc, compressed, size, offset or 0))
            at += 46 + name_len + extra_len + comment_len
        return members

    def _walk_local_headers(self) -> Iterator[Member]:
        """The members found by following local headers from the start (a log cut short)."""
        offset = 0
        while offset + 30 <= self.size:
            self.handle.seek(offset)
            header = self.handle.read(30)
            if header[:4] != ZIP_MAGIC:
                return
            (flags, method, _time, _date, crc, compressed, size, name_len, extra_len) = (
                struct.unpack_from("<HHHHIIIHH", header, 6)
            )
            name_bytes = self.handle.read(name_len)
            extra = self.handle.read(extra_len)
            name = name_bytes.decode("utf-8" if flags & 0x800 else "cp437", errors="replace")
            if flags & 0x08:
                self.damage = (
                    f"{self.damage}; member {name!r} keeps its sizes after its data (a data "
                    "descriptor), so the members after it cannot be found"
                )
                return
            size, compressed, _ = _zip64_sizes(extra, size, compressed, None)
            data_at = offset + 30 + name_len + extra_len
            if data_at + compressed > self.size:
                self.damage = f"{self.damage}; member {name!r} is cut short"
                return
            yield Member(name, method, flags, crc, compressed, size, offset)
            offset = data_at + compressed

    # --- members -----------------------------------------------------------------------------

    def names(self) -> list[str]:
        """Every member name, in the order written."""
        return list(self.members)

    def read(self, name: str) -> bytes:
        """The uncompressed bytes of member ``name``; ZipError saying why not."""
        member = self.members.get(name)
        if member is None:
            raise ZipError(f"no member {name!r}")
        self.handle.seek(member.offset)
        header = self.handle.read(30)
        if header[:4] != ZIP_MAGIC:
            raise ZipError(f"member {name!r}: its local header is damaged")
        name_len, extra_len = struct.unpack_from("<HH", header, 26)
        self.handle.seek(member.offset + 30 + name_len + extra_len)
        data = self.handle.read(member.compressed_size)
        if len(data) < member.compressed_size:
            raise ZipError(f"member {name!r} is cut short")
        out = _inflate(name, member.method, data)
        if zlib.crc32(out) != member.crc:
            raise ZipError(f"member {name!r} is damaged (its CRC-32 does not match)")
        return out


def _inflate(name: str, method: int, data: bytes) -> bytes:
    if method == STORED:
        return data
    if method == DEFLATED:
        try:
            return zlib.decompress(data, -15)
        except zlib.error as exc:
            raise ZipError(f"member {name!r} cannot be inflated ({exc})") from exc
    if method == ZSTD:
        if zstandard is None:
            raise ZipError(
                f"member {name!r} is zstd-compressed and the zstandard package is missing "
                "(pip install zstandard)"
            )
        try:
            reader = zstandard.ZstdDecompressor().decompressobj(read_across_frames=True)
            return reader.decompress(data)
        except zstandard.ZstdError as exc:
            raise ZipError(f"member {name!r} cannot be decompressed ({exc})") from exc
    raise ZipError(
        f"member {name!r} uses zip compression method {method}, which this reader does not "
        f"know (it reads {', '.join(f'{k} ({v})' for k, v in _METHODS.items())})"
    )


def is_zip(path: Path) -> bool:
    """True when ``path`` starts with a zip local header."""
    try:
        with path.open("rb") as handle:
            return handle.read(4) == ZIP_MAGIC
    except OSError:
        return False
