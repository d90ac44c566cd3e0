"""A ``multipart/form-data`` body read from storage as it is sent (a 50 MB video never sits in
memory), for networks that take a file in a multipart request: the request that posts it
(Telegram, Discord) or a media upload (Mastodon's ``POST /api/v2/media``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from typing import IO, Any

from requests.utils import super_len
from requests_toolbelt import MultipartEncoder

from providers.base import ErrorKind, MediaItem, ProviderError

# (form field name, media item, the most bytes the network takes for it)
FilePart = tuple[str, MediaItem, int]
_CHUNK = 1024 * 1024


class _Remaining:
    """A stored file as MultipartEncoder reads it: ``len`` is what is left to send and every
    ``read`` takes one chunk. (Handed a file object, the encoder copies anything with
    ``getvalue`` whole into memory.)"""

    def __init__(self, stream: IO[bytes], size: int) -> None:
        self._stream = stream
        self.len = size

    def read(self, size: int = -1) -> bytes:
        chunk = self._stream.read(size if 0 <= size <= _CHUNK else _CHUNK)
        self.len = self.len - len(chunk) if chunk else 0
        return chunk


def _opened(stack: ExitStack, item: MediaItem, max_bytes: int, provider: str) -> _Remaining:
    """The stored file, refused when its real length passes ``max_bytes`` (the stored size
    was checked already; this is what is actually sent)."""
    stream = stack.enter_context(closing(item.open()))
    size = super_len(stream)
    if size > max_bytes:
        raise ProviderError(
            ErrorKind.PERMANENT, f"{provider}: {item.name} is larger than {max_bytes} bytes."
        )
    return _Remaining(stream, size)


@contextmanager
def streamed_form(
    fields: dict[str, str], files: list[FilePart], *, provider: str
) -> Iterator[dict[str, Any]]:
    """``data`` and ``headers`` for :meth:`providers.http.HttpClient.request`: the text
    fields, then each file streamed from storage; the files are closed on exit."""
    with ExitStack() as stack:
        parts: list[tuple[str, Any]] = list(fields.items())
        for name, item, max_bytes in files:
            stream = _opened(stack, item, max_bytes, provider)
            parts.append((name, (item.name, stream, item.mime_type)))
        encoder = MultipartEncoder(fields=parts)
        yield {"data": encoder, "headers": {"Content-Type": encoder.content_type}}
