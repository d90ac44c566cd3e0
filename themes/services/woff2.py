"""A WOFF2 file's compressed blocks decoded under a hard bound before fontTools reads it, and
the few tables Herald parses checked against bounds of their own.

fontTools decodes a WOFF2 font's Brotli streams (the tables, the metadata) in one call with no
limit and compares the size only afterwards, so a few hundred bytes that expand to gigabytes
would take the process's memory first. Here the container (W3C WOFF2 §3-§5) is read by hand and
each stream decoded by :mod:`config.bounded`, stopping as soon as it passes what the font
declares (itself capped): only a font that expands within bounds reaches fontTools.
"""

from __future__ import annotations

import struct

from config.bounded import DecompressedTooLarge, DecompressionFailed, brotli_decompress

_HEADER = struct.Struct(">4s4sLHHLLHHLLLLL")  # the 48-byte WOFF2 header
_UNKNOWN_TAG = 0x3F  # a table directory entry whose 4-byte tag follows its flags
_GLYF_LOCA = (10, 11)  # known-tag indexes of glyf and loca: transform version 3 is the null one
META_MAX_BYTES = 1024 * 1024  # the extended metadata block is XML: 1 MiB is plenty
# The name table is the one table parsed into objects whose size its bytes do not bound (records
# may all point at the same string): real fonts have tens to a few hundred records.
NAME_MAX_RECORDS = 2048
NAME_MAX_STRING_BYTES = 1024 * 1024
# Tables every usable font has, and one set of outlines (TrueType or CFF).
REQUIRED_TABLES = frozenset({"head", "hhea", "hmtx", "maxp", "name", "cmap", "post"})
OUTLINE_TABLES = (frozenset({"glyf", "loca"}), frozenset({"CFF "}))


class FontTooLarge(ValueError):
    """The font expands (or declares that it expands) past the allowed size."""


class FontDamaged(ValueError):
    """The WOFF2 container is malformed."""


def check_woff2_expansion(data: bytes, limit: int) -> None:
    """Refuse ``data`` unless it is one WOFF2 font whose tables decode to at most ``limit``
    bytes and whose metadata (if any) to at most :data:`META_MAX_BYTES`; raise
    :class:`FontTooLarge` or :class:`FontDamaged`."""
    if len(data) < _HEADER.size:
        raise FontDamaged("shorter than a WOFF2 header")
    (
        signature,
        flavor,
        _length,
        num_tables,
        _reserved,
        total_sfnt_size,
        compressed_size,
        _major,
        _minor,
        meta_offset,
        meta_length,
        meta_orig_length,
        _priv_offset,
        _priv_length,
    ) = _HEADER.unpack_from(data)
    if signature != b"wOF2":
        raise FontDamaged("not a WOFF2 file")
    if flavor == b"ttcf":
        raise FontDamaged("a font collection, not one font")
    if total_sfnt_size > limit:
        raise FontTooLarge("declared size over the limit")
    offset, stored, original = _read_directory(data, num_tables)
    if stored > limit or original > limit:
        raise FontTooLarge("declared table sizes over the limit")
    tables = data[offset : offset + compressed_size]
    if len(tables) != compressed_size:
        raise FontDamaged("truncated table data")
    _decode(tables, stored)
    if meta_length:
        if meta_orig_length > META_MAX_BYTES:
            raise FontTooLarge("declared metadata size over the limit")
        metadata = data[meta_offset : meta_offset + meta_length]
        if len(metadata) != meta_length:
            raise FontDamaged("truncated metadata")
        _decode(metadata, meta_orig_length)


def _decode(stream: bytes, declared: int) -> None:
    try:
        decoded = brotli_decompress(stream, declared)
    except DecompressedTooLarge as exc:
        raise FontTooLarge("expands past its declared size") from exc
    except DecompressionFailed as exc:
        raise FontDamaged(str(exc)) from exc
    if len(decoded) != declared:
        raise FontDamaged("expands to another size than declared")


def _read_directory(data: bytes, num_tables: int) -> tuple[int, int, int]:
    """The offset just past the table directory, and the sum of the tables' stored
    (transformed) and original lengths."""
    if num_tables == 0:
        raise FontDamaged("no tables")
    offset, stored, original = _HEADER.size, 0, 0
    for _ in range(num_tables):
        if offset >= len(data):
            raise FontDamaged("truncated table directory")
        flags = data[offset]
        offset += 1
        if flags & 0x3F == _UNKNOWN_TAG:
            offset += 4
        orig_length, offset = _base128(data, offset)
        version, known = flags >> 6, flags & 0x3F
        transformed = version != 3 if known in _GLYF_LOCA else version != 0
        length = orig_length
        if transformed:
            length, offset = _base128(data, offset)
        stored += length
        original += orig_length
    return offset, stored, original


def _base128(data: bytes, offset: int) -> tuple[int, int]:
    """A UIntBase128 (WOFF2 §4.1) at ``offset``, and the offset after it."""
    value = 0
    for index in range(5):
        if offset + index >= len(data):
            raise FontDamaged("truncated table directory")
        byte = data[offset + index]
        if index == 0 and byte == 0x80:
            raise FontDamaged("UIntBase128 with a leading zero")
        if value & 0xFE000000:
            raise FontDamaged("UIntBase128 overflow")
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, offset + index + 1
    raise FontDamaged("UIntBase128 longer than five bytes")


def check_tables(tables: set[str]) -> None:
    """Refuse a font without the tables every font needs (or without outlines)."""
    if not tables >= REQUIRED_TABLES or not any(tables >= need for need in OUTLINE_TABLES):
        raise FontDamaged("required tables missing")


def check_name_table(data: bytes) -> None:
    """Refuse a name table whose records, read one string each, would exceed the bounds."""
    if len(data) < 6:
        raise FontDamaged("truncated name table")
    _format, count, _storage = struct.unpack_from(">HHH", data)
    if count > NAME_MAX_RECORDS:
        raise FontDamaged("too many name records")
    if len(data) < 6 + 12 * count:
        raise FontDamaged("truncated name table")
    lengths = sum(struct.unpack_from(">H", data, 6 + 12 * index + 8)[0] for index in range(count))
    if lengths > NAME_MAX_STRING_BYTES:
        raise FontDamaged("name strings too long")
