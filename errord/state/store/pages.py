"""The rows of a damaged SQLite file, read from its pages without SQLite.

SQLite reaches a row through the b-tree pages above it, so one damaged interior
page hides every row below it. This reader instead visits every page of the file
and decodes each table-leaf page it finds (the file format: sqlite.org/fileformat2.html),
following overflow chains, as the sqlite3 shell's ``.recover`` does. It yields
whatever decodes; a damaged page or chain yields nothing or garbage, which the
caller must check. It reads the main file only: what the WAL holds is read
through SQLite.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

Value = int | float | str | bytes | None
Row = tuple[int, list[Value]]
"""A rowid and the record's columns."""

TABLE_LEAF: Final = 0x0D
DEFAULT_PAGE_SIZE: Final = 4096
FIXED_INTEGER_SIZES: Final = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8}


class Damaged(Exception):
    """A page, cell or record does not decode."""


class PageFile:
    """A database file, open for reading pages by number (1-based)."""

    def __init__(self, descriptor: int) -> None:
        self._descriptor = descriptor
        header = os.pread(descriptor, 100, 0)
        size = int.from_bytes(header[16:18], "big") if len(header) == 100 else 0
        size = 65536 if size == 1 else size
        sound = size >= 512 and size & (size - 1) == 0
        self.page_size = size if sound else DEFAULT_PAGE_SIZE
        self.usable = self.page_size - (header[20] if sound else 0)
        self.pages = os.fstat(descriptor).st_size // self.page_size

    def page(self, number: int) -> bytes:
        if not 1 <= number <= self.pages:
            raise Damaged(f"page {number} is beyond the file")
        return os.pread(self._descriptor, self.page_size, (number - 1) * self.page_size)


def table_rows(path: Path, wanted: Callable[[int], bool]) -> Iterator[Row]:
    """Every row of a ``wanted`` rowid, on any table-leaf page of the file at ``path``,
    that decodes."""
    descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        file = PageFile(descriptor)
        for number in range(1, file.pages + 1):
            yield from _leaf_rows(file, number, wanted)
    finally:
        os.close(descriptor)


def _leaf_rows(file: PageFile, number: int, wanted: Callable[[int], bool]) -> Iterator[Row]:
    page = file.page(number)
    start = 100 if number == 1 else 0
    if page[start] != TABLE_LEAF:
        return
    cells = int.from_bytes(page[start + 3 : start + 5], "big")
    for index in range(cells):
        at = start + 8 + 2 * index
        try:
            row = _cell(file, page, int.from_bytes(page[at : at + 2], "big"), wanted)
        except (Damaged, IndexError, ValueError):
            continue
        if row is not None:
            yield row


def _cell(file: PageFile, page: bytes, at: int, wanted: Callable[[int], bool]) -> Row | None:
    size, at = varint(page, at)
    rowid, at = varint(page, at)
    if not wanted(rowid):
        return None
    local = _local_size(size, file.usable)
    payload = page[at : at + local]
    if len(payload) != local:
        raise Damaged("a cell runs past its page")
    if local < size:
        overflow = int.from_bytes(page[at + local : at + local + 4], "big")
        payload += _overflow(file, overflow, size - local)
    return rowid, record(payload)


def _local_size(size: int, usable: int) -> int:
    """How much of a table-leaf cell's payload of ``size`` bytes is on its own page."""
    most = usable - 35
    if size <= most:
        return size
    least = (usable - 12) * 32 // 255 - 23
    local = least + (size - least) % (usable - 4)
    return local if local <= most else least


def _overflow(file: PageFile, number: int, wanted: int) -> bytes:
    pieces: list[bytes] = []
    while wanted > 0:
        if number == 0:
            raise Damaged("an overflow chain ends early")
        page = file.page(number)
        piece = page[4 : min(file.usable, 4 + wanted)]
        pieces.append(piece)
        wanted -= len(piece)
        number = int.from_bytes(page[:4], "big")
    return b"".join(pieces)


def record(payload: bytes) -> list[Value]:
    """The columns of a record (SQLite's record format)."""
    header_size, at = varint(payload, 0)
    if not 0 < header_size <= len(payload):
        raise Damaged("a record header runs past its payload")
    types: list[int] = []
    while at < header_size:
        kind, at = varint(payload, at)
        types.append(kind)
    values: list[Value] = []
    body = header_size
    for kind in types:
        value, body = _value(payload, body, kind)
        values.append(value)
    if body != len(payload):
        raise Damaged("a record's values do not fill its payload")
    return values


def _value(payload: bytes, at: int, kind: int) -> tuple[Value, int]:
    if kind == 0:
        return None, at
    if kind in FIXED_INTEGER_SIZES:
        end = at + FIXED_INTEGER_SIZES[kind]
        return int.from_bytes(payload[at:end], "big", signed=True), end
    if kind == 7:
        return struct.unpack(">d", payload[at : at + 8])[0], at + 8
    if kind in (8, 9):
        return kind - 8, at
    if kind < 12:
        raise Damaged(f"serial type {kind} is reserved")
    end = at + (kind - 12) // 2
    if end > len(payload):
        raise Damaged("a value runs past its payload")
    raw = payload[at:end]
    return (raw if kind % 2 == 0 else raw.decode()), end


def varint(data: bytes, at: int) -> tuple[int, int]:
    """The variable-length integer at ``at`` and the offset after it."""
    value = 0
    for index in range(9):
        byte = data[at + index]
        if index == 8:
            return (value << 8) | byte, at + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + index + 1
    raise AssertionError("unreachable")
