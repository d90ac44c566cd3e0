"""Decompression with a hard bound on the output, for bytes an attacker chose.

A few hundred bytes of Brotli can expand to gigabytes. Every compressed input is decoded
here first, in pieces, and decoding stops as soon as the output passes the caller's limit: the
memory used is about the limit, whatever the input claims, and a bomb is refused in
milliseconds. Parsers (fontTools, Pillow) see only input that is known to expand within bounds.

Pillow bounds its own decoders (pixels by ``Image.MAX_IMAGE_PIXELS`` and Herald's pixel limits,
each PNG text chunk by ``PngImagePlugin.MAX_TEXT_CHUNK``); :func:`bound_pillow` lowers the one
ceiling left too high for an upload service.
"""

from __future__ import annotations

import brotli

# Decoded PNG text chunks (zTXt, iTXt, tEXt) one image may hold; Pillow's default is 64 MiB,
# which about 64 KB of zTXt reaches. Real metadata (XMP, comments) is far smaller.
PNG_TEXT_MAX_BYTES = 4 * 1024 * 1024

# Output produced per step while decoding: small enough that overshooting the limit costs
# little, large enough that a legitimate stream needs few steps.
_STEP = 256 * 1024


class DecompressedTooLarge(ValueError):
    """The input expands to more than the limit; decoding stopped at the limit."""


class DecompressionFailed(ValueError):
    """The input is not a complete, valid compressed stream."""


def brotli_decompress(data: bytes, limit: int) -> bytes:
    """``data`` Brotli-decoded, refused once the output passes ``limit`` bytes."""
    decoder = brotli.Decompressor()
    pieces: list[bytes] = []
    size = 0
    pending = data
    try:
        while True:
            # ``output_buffer_limit`` stops the decoder growing its buffer past one step; it
            # keeps the rest of the input and yields more on calls with empty input.
            piece = decoder.process(pending, output_buffer_limit=_STEP)
            pending = b""
            size += len(piece)
            if size > limit:
                raise DecompressedTooLarge(f"more than {limit} bytes")
            pieces.append(piece)
            if decoder.is_finished():
                break
            if not piece and decoder.can_accept_more_data():
                raise DecompressionFailed("truncated Brotli stream")
    except brotli.error as exc:
        raise DecompressionFailed("invalid Brotli stream") from exc
    return b"".join(pieces)


def bound_pillow() -> None:
    """Lower Pillow's ceiling on decoded PNG text (a documented module setting; process-wide,
    so set once at start-up): past it ``Image.open`` raises ``ValueError``, a damaged image."""
    from PIL import PngImagePlugin

    PngImagePlugin.MAX_TEXT_MEMORY = PNG_TEXT_MAX_BYTES
