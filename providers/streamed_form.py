"""A ``multipart/form-data`` body read from storage as it is sent (a 50 MB video never sits in
memory), for networks that take a file in the request that posts it (Telegram, Discord)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from typing import IO, Any

from requests.utils import super_len
from requests_toolbelt import MultipartEncoder

from providers.base import ErrorKind, MediaItem, ProviderError

# (form field name, media item, the most bytes the network takes for it)
FilePart = tuple[str, MediaItem, int]


def _opened(stack: ExitStack, item: MediaItem, max_bytes: int, provider: str) -> IO[bytes]:
    """The stored file, refused when its real length passes ``max_bytes`` (the stored size
    was checked already; this is what is actually sent)."""
    stream = stack.enter_context(closing(item.open()))
    if super_len(stream) > max_bytes:
        raise ProviderError(
            ErrorKind.PERMANENT, f"{provider}: {item.name} is larger than {max_bytes} bytes."
        )
    return stream


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
