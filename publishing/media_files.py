"""Media bytes over HTTP: the public signed URL ``GET /media/<token>/<name>`` and the response
both it and the API's ``GET /api/v1/media/{id}/content`` answer with.

The response carries the stored type and length, a strong ``ETag`` (the SHA-256), a
``Last-Modified`` (media are immutable), and honours one byte range (RFC 9110 §14): ``206`` with
``Content-Range`` for ``bytes=a-b``, ``bytes=a-`` and ``bytes=-n``, ``416`` with
``Content-Range: bytes */<length>`` when unsatisfiable; several ranges, another unit or a
stale ``If-Range`` get the whole file (``200``), as the RFC allows. ``If-None-Match`` /
``If-Modified-Since`` answer ``304``.

The public view answers in plain text like the built-in feeds: a forged or malformed token, or a
deleted item, ``404``; a genuine but expired token ``403``. With S3 storage it redirects (``302``)
to the object store's presigned URL for the token's remaining lifetime.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import IO

from django.http import (
    FileResponse,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    HttpResponseRedirect,
    StreamingHttpResponse,
)
from django.utils.http import http_date, parse_etags
from django.views.decorators.http import require_safe

from publishing.models import Media
from publishing.services.media_links import (
    MediaLinkExpired,
    MediaLinkInvalid,
    media_file_name,
    media_link_resolve,
    presigned_poster_url,
    presigned_storage_url,
)

_CHUNK = 64 * 1024
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$", re.IGNORECASE)


def _plain(status: int, message: str) -> HttpResponse:
    response = HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "no-store"
    response["X-Robots-Tag"] = "noindex"
    return response


@require_safe
def media_file(request: HttpRequest, token: str, filename: str) -> HttpResponseBase:
    try:
        link = media_link_resolve(token)
    except MediaLinkInvalid:
        return _plain(404, "No such media.")
    except MediaLinkExpired:
        return _plain(403, "This media link has expired.")
    seconds = link.seconds_left()
    presigned = presigned_storage_url(link.media, seconds=seconds)
    if presigned is not None:
        redirect = HttpResponseRedirect(presigned)
        redirect["Cache-Control"] = "no-store"
        return redirect
    response = media_file_response(request, link.media)
    if response.status_code == 404:
        return _plain(404, "The media file is missing.")
    response["Cache-Control"] = f"private, max-age={seconds}"
    response["X-Robots-Tag"] = "noindex"
    return response


@require_safe
def media_poster(request: HttpRequest, token: str) -> HttpResponseBase:
    """The poster frame (JPEG) of the video a media token opens; answered like the file."""
    try:
        link = media_link_resolve(token)
    except MediaLinkInvalid:
        return _plain(404, "No such media.")
    except MediaLinkExpired:
        return _plain(403, "This media link has expired.")
    if not link.media.poster:
        return _plain(404, "This media has no poster.")
    seconds = link.seconds_left()
    presigned = presigned_poster_url(link.media, seconds=seconds)
    if presigned is not None:
        redirect = HttpResponseRedirect(presigned)
        redirect["Cache-Control"] = "no-store"
        return redirect
    try:
        handle = link.media.poster.open("rb")
    except OSError:
        return _plain(404, "The poster file is missing.")
    response = FileResponse(handle, content_type="image/jpeg")
    response["Cache-Control"] = f"private, max-age={seconds}"
    response["X-Robots-Tag"] = "noindex"
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


def byte_range(header: str, size: int) -> tuple[int, int] | bool | None:
    """The inclusive ``(first, last)`` a ``Range`` header asks of ``size`` bytes; ``None`` when
    the header is to be ignored (absent, malformed, several ranges, another unit); ``False``
    when it is unsatisfiable."""
    match = _RANGE.match(header.strip())
    if match is None:
        return None
    first, last = match.groups()
    if not first:
        if not last:
            return None
        suffix = int(last)
        if suffix == 0:
            return False
        return max(0, size - suffix), size - 1
    start = int(first)
    if last and int(last) < start:
        return None  # an invalid range-spec: the header is ignored
    if start >= size:
        return False
    return start, min(int(last), size - 1) if last else size - 1


def media_file_response(request: HttpRequest, media: Media) -> HttpResponseBase:
    """``media``'s bytes for ``request`` (conditional and range aware); ``404`` (empty) when
    the stored file is missing. The caller adds its own ``Cache-Control``."""
    etag = f'"{media.checksum_sha256}"'
    headers = {
        "ETag": etag,
        "Last-Modified": http_date(media.created_at.timestamp()),
        "Accept-Ranges": "bytes",
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "default-src 'none'; sandbox",
        "Content-Disposition": f'inline; filename="{media_file_name(media)}"',
    }
    if _not_modified(request, etag, media.created_at):
        response: HttpResponseBase = HttpResponse(status=304)
        for name, value in headers.items():
            response[name] = value
        return response
    size = media.size_bytes
    wanted = byte_range(request.headers.get("Range", ""), size)
    if wanted is not None and not _if_range_holds(request, etag, media.created_at):
        wanted = None
    if wanted is False:
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        for name, value in headers.items():
            response[name] = value
        return response
    first, last = wanted if isinstance(wanted, tuple) else (0, size - 1)
    try:
        handle = media.file.open("rb")
    except OSError:
        return HttpResponse(status=404)
    status = 206 if isinstance(wanted, tuple) else 200
    if request.method == "HEAD":
        handle.close()
        response = HttpResponse(status=status, content_type=media.mime_type)
    else:
        response = StreamingHttpResponse(
            _read(handle, first, last - first + 1), status=status, content_type=media.mime_type
        )
    response["Content-Length"] = str(last - first + 1)
    if status == 206:
        response["Content-Range"] = f"bytes {first}-{last}/{size}"
    for name, value in headers.items():
        response[name] = value
    return response


def _read(handle: IO[bytes], offset: int, length: int) -> Iterator[bytes]:
    with handle:
        handle.seek(offset)
        while length > 0:
            chunk = handle.read(min(_CHUNK, length))
            if not chunk:
                return
            length -= len(chunk)
            yield chunk


def _if_range_holds(request: HttpRequest, etag: str, last_modified: datetime) -> bool:
    """RFC 9110 §13.1.5: a range applies only if ``If-Range`` (when sent) names this version,
    by strong ETag or by the exact ``Last-Modified`` date."""
    if_range = request.headers.get("If-Range")
    if not if_range:
        return True
    if if_range.startswith(('"', "W/")):
        return if_range == etag
    return if_range == http_date(last_modified.timestamp())


def _not_modified(request: HttpRequest, etag: str, last_modified: datetime) -> bool:
    """RFC 9110 §13.2.2: If-None-Match decides when present; else If-Modified-Since."""
    if_none_match = request.headers.get("If-None-Match")
    if if_none_match is not None:
        tags = parse_etags(if_none_match)
        return "*" in tags or any(tag.removeprefix("W/") == etag for tag in tags)
    if_modified_since = request.headers.get("If-Modified-Since")
    if if_modified_since:
        try:
            since = parsedate_to_datetime(if_modified_since)
        except (TypeError, ValueError, IndexError):
            return False
        return int(last_modified.timestamp()) <= int(since.timestamp())
    return False
