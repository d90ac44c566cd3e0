"""Helpers of the decompression-bomb tests (no tests here): compressed streams that expand to
hundreds of MiB from a few hundred bytes, WOFF2 fonts carrying them, and a measure of how much
the process's peak resident memory grew while something ran."""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TypeVar

import brotli
from fontTools.ttLib.woff2 import WOFF2Reader
from PIL import Image

BOMB_BYTES = 512 * 1024 * 1024  # what every bomb here expands to
_MIB = 1024 * 1024
_HEADER = struct.Struct(">4s4sLHHLLHHLLLLL")

T = TypeVar("T")


@functools.cache
def brotli_bomb(prefix: bytes = b"", size: int = BOMB_BYTES) -> bytes:
    """A Brotli stream of ``prefix`` followed by zeros, ``size`` bytes in all (a few hundred
    bytes for 512 MiB; about a second to make, so kept)."""
    encoder = brotli.Compressor(quality=4, lgwin=24)
    pieces = [encoder.process(prefix)]
    zeros = bytes(_MIB)
    left = size - len(prefix)
    while left > 0:
        pieces.append(encoder.process(zeros[: min(left, _MIB)]))
        left -= _MIB
    pieces.append(encoder.finish())
    return b"".join(pieces)


@functools.cache
def gzip_bomb(size: int = BOMB_BYTES) -> bytes:
    """A gzip member of ``size`` zero bytes (about 1/1000 of ``size``)."""
    encoder = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(_MIB)
    pieces = [encoder.compress(zeros) for _ in range(size // _MIB)]
    pieces.append(encoder.flush())
    return b"".join(pieces)


def _woff2_parts(font: bytes) -> tuple[list[int], bytes, bytes]:
    """A WOFF2 font's header fields, table directory bytes and decoded table data."""
    reader = WOFF2Reader(io.BytesIO(font))
    directory = b"".join(entry.toString() for entry in reader.tables.values())
    return list(_HEADER.unpack_from(font)), directory, reader.transformBuffer.getvalue()


def _pad(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)


def woff2_table_bomb(font: bytes) -> bytes:
    """``font`` whose table stream, declared as small as before, expands to 512 MiB."""
    header, directory, tables = _woff2_parts(font)
    stream = brotli_bomb(tables)
    header[6] = len(stream)  # totalCompressedSize
    body = directory + stream
    header[2] = _HEADER.size + len(body)  # length
    return _HEADER.pack(*header) + body


def woff2_metadata_bomb(font: bytes) -> bytes:
    """``font`` with an extended-metadata block declared as 1000 bytes that expands to 512 MiB."""
    header, directory, tables = _woff2_parts(font)
    stream = brotli.compress(tables)
    head = _pad(_HEADER.size * b"\0" + directory + stream)
    metadata = brotli_bomb()
    header[6] = len(stream)
    header[9:12] = [len(head), len(metadata), 1000]  # metaOffset, metaLength, metaOrigLength
    header[2] = len(head) + len(metadata)
    return _HEADER.pack(*header) + head[_HEADER.size :] + metadata


def png_text_bomb(chunks: int = 64) -> bytes:
    """A 1 x 1 PNG carrying ``chunks`` zTXt chunks before its pixels, each expanding to just
    under Pillow's 1 MiB per-chunk limit (about 1 KB each compressed)."""
    out = io.BytesIO()
    Image.new("RGB", (1, 1)).save(out, "PNG")
    png = out.getvalue()
    text = zlib.compress(b"a" * (1024 * 1024 - 1024), 9)
    chunks_bytes = b"".join(
        _png_chunk(b"zTXt", b"comment%d\0\0" % index + text) for index in range(chunks)
    )
    at = png.index(b"IDAT") - 4
    return png[:at] + chunks_bytes + png[at:]


def _png_chunk(kind: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(kind + payload)
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise LookupError(field)


def measure(call: Callable[[], T]) -> tuple[T, int, float]:
    """``call()``'s result, how many bytes the process's peak resident memory rose above its
    resident memory before the call, and the seconds it took.

    Linux resets the peak (``VmHWM``) to the current resident size on writing ``5`` to
    ``/proc/self/clear_refs``, so earlier peaks of the test process hide nothing.
    """
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")
    before = _status_kib("VmRSS")
    started = time.monotonic()
    result = call()
    elapsed = time.monotonic() - started
    return result, (_status_kib("VmHWM") - before) * 1024, elapsed


@contextlib.contextmanager
def answering_server(
    body: bytes, *, status: int = 200, headers: dict[str, str] | None = None
) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 answering every request with ``status``, ``headers`` and
    ``body`` (sent as is: a compressed body keeps its ``Content-Encoding``); yields its URL."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):  # the client stopped reading: as tests want
                self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def woff2_with_tables(font: bytes, tables: dict[str, bytes]) -> bytes:
    """``font`` (WOFF2) with raw ``tables`` added or replaced, saved as WOFF2 again."""
    from fontTools.ttLib import TTFont
    from fontTools.ttLib.tables.DefaultTable import DefaultTable

    parsed = TTFont(io.BytesIO(font))
    for tag, data in tables.items():
        table = DefaultTable(tag)
        table.data = data
        parsed[tag] = table
    out = io.BytesIO()
    parsed.flavor = "woff2"
    parsed.save(out, reorderTables=False)
    return out.getvalue()


def gpos_shared_subtables(subtables: int = 400) -> bytes:
    """A GPOS table of one pair-adjustment lookup whose ``subtables`` offsets all point at the
    same class-pair subtable of 100 x 300 values: about 60 KB, read as ``subtables`` x 30,000
    value records by a parser that does not share what the offsets share."""
    class1, class2 = 100, 300
    records = b"\0\0" * class1 * class2  # one XAdvance per class pair
    head = 16
    coverage_at = head + len(records)
    coverage = struct.pack(">HHH", 1, 1, 1)  # format 1, one glyph: glyph 1
    class_def_at = coverage_at + len(coverage)
    class_def = struct.pack(">HHH", 1, 0, 0)  # format 1, no glyphs
    pair_pos = (
        struct.pack(">HHHHHHHH", 2, coverage_at, 4, 0, class_def_at, class_def_at, class1, class2)
        + records
        + coverage
        + class_def
    )
    lookup_head = 6 + 2 * subtables
    lookup = struct.pack(">HHH", 2, 0, subtables) + struct.pack(">H", lookup_head) * subtables
    lookup_list = struct.pack(">HH", 1, 4)
    script_list = feature_list = struct.pack(">H", 0)
    at = 10
    return (
        struct.pack(">HHHHH", 1, 0, at, at + 2, at + 4)
        + script_list
        + feature_list
        + lookup_list
        + lookup
        + pair_pos
    )


def name_shared_strings(family: str = "Brand Sans", records: int = 4000) -> bytes:
    """A name table whose family name is ``family`` and whose ``records`` other records all
    point at the same 64 KB string: about 110 KB, read as ``records`` x 64 KB strings by a
    parser that copies each record's string."""
    family_bytes = family.encode("utf-16-be")
    storage = family_bytes + b"\0" * 65000
    rows = [struct.pack(">HHHHHH", 3, 1, 0x409, 1, len(family_bytes), 0)]
    rows += [struct.pack(">HHHHHH", 3, 1, 0x409, 5, 65000, 0)] * records
    count = len(rows)
    return struct.pack(">HHH", 0, count, 6 + 12 * count) + b"".join(rows) + storage
