"""YouTube's resumable upload protocol, one step per function.

1. ``initiate``: ``POST /upload/youtube/v3/videos?uploadType=resumable&part=snippet,status``
   with the video resource as JSON, ``X-Upload-Content-Length`` and ``X-Upload-Content-Type``;
   YouTube answers the upload session's URI in ``Location``. No video exists yet.
2. ``send_from``: ``PUT`` the bytes to the session URI in chunks (multiples of 256 KiB but the
   last), each with ``Content-Range: bytes FIRST-LAST/TOTAL``. YouTube answers ``308 Resume
   Incomplete`` with ``Range: bytes=0-LAST`` (what it holds) until the last byte, then ``200`` or
   ``201`` with the video resource: only then does the video exist.
3. ``query``: after an interruption, an empty ``PUT`` with ``Content-Range: bytes */TOTAL``
   asks what the session holds: ``308`` and its ``Range`` (none: nothing yet), or the video
   when the upload had in fact completed. A session YouTube no longer knows (``404``/``410``)
   never made a video: the upload starts over in a new session.

The file is read from storage one chunk at a time. The session URI is kept in the
destination's long-send state (never in the API) so that a send interrupted anywhere, a worker
killed included, goes on in the same session and never makes two videos. See
docs/providers/youtube.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import requests

from providers.base import ErrorKind, MediaItem, ProviderError
from providers.http_errors import ProviderHTTPError

if TYPE_CHECKING:
    from providers.youtube.adapter import YouTubeAdapter

LABEL = "YouTube"
CHUNK_UNIT = 256 * 1024  # every chunk but the last is a multiple of this
RESUME_INCOMPLETE = 308
_RANGE = re.compile(r"bytes=0-(\d+)")


class SessionGone(ProviderError):
    """YouTube no longer knows the upload session (expired, or never completed): no video was
    made through it, so a new session may be started."""

    def __init__(self) -> None:
        super().__init__(ErrorKind.TRANSIENT, f"{LABEL}: the upload session expired.")


@dataclass(frozen=True)
class Progress:
    """What the session holds: ``offset`` bytes, or the finished ``video`` resource."""

    offset: int
    video: dict[str, Any] | None = None

    @property
    def video_id(self) -> str:
        return str((self.video or {}).get("id") or "")


def initiate(
    api: YouTubeAdapter,
    token: str,
    item: MediaItem,
    resource: dict[str, Any],
    *,
    notify_subscribers: bool,
) -> str:
    """Start a session for ``item``: its URI. Retried like a read when it fails (an unused
    session makes nothing)."""
    response = api._call(
        "POST",
        f"{api.upload_url}/upload/youtube/v3/videos",
        token=token,
        operation="video upload",
        params={
            "uploadType": "resumable",
            "part": "snippet,status",
            "notifySubscribers": "true" if notify_subscribers else "false",
        },
        headers={
            "X-Upload-Content-Length": str(item.size),
            "X-Upload-Content-Type": item.mime_type,
        },
        json_body=resource,
        quota_cost=api.costs["videos.insert"],
    )
    session = str(response.headers.get("Location") or "")
    if not session.startswith(("http://", "https://")):
        raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: the upload answer had no session.")
    return session


def _progress(response: requests.Response, api: YouTubeAdapter) -> Progress:
    if response.status_code == RESUME_INCOMPLETE:
        match = _RANGE.fullmatch(str(response.headers.get("Range") or "").strip())
        return Progress(offset=int(match.group(1)) + 1 if match else 0)
    video = api._json(response, "video upload")
    if not video.get("id"):
        raise ProviderError(ErrorKind.AMBIGUOUS, f"{LABEL}: the upload answer had no video id.")
    return Progress(offset=-1, video=video)


def _put(
    api: YouTubeAdapter, token: str, session: str, content_range: str, data: bytes
) -> Progress:
    try:
        response = api._call(
            "PUT",
            session,
            token=token,
            operation="video upload",
            ok=(200, 201, RESUME_INCOMPLETE),
            headers={"Content-Range": content_range, "Content-Type": "application/octet-stream"},
            data=data,
            extra_secrets=(session,),
        )
    except ProviderHTTPError as exc:
        if exc.status in (404, 410):
            raise SessionGone() from exc
        raise
    return _progress(response, api)


def query(api: YouTubeAdapter, token: str, session: str, size: int) -> Progress:
    """What the session holds (an empty PUT with ``Content-Range: bytes */SIZE``)."""
    return _put(api, token, session, f"bytes */{size}", b"")


def send_from(
    api: YouTubeAdapter,
    token: str,
    session: str,
    item: MediaItem,
    offset: int,
    chunk_bytes: int,
    budget: int,
) -> Progress:
    """PUT the file from byte ``offset``, one chunk at a time, each starting where YouTube
    said it holds, until the last byte (the finished video) or ``budget`` bytes were sent (the
    send then waits a moment and goes on: its token stays fresh, its progress on record)."""
    progress = Progress(offset=offset)
    with item.open() as handle:
        while progress.video is None and progress.offset - offset < budget:
            start = progress.offset
            data = _read_chunk(handle, start, chunk_bytes, item)
            last = start + len(data) - 1
            progress = _put(api, token, session, f"bytes {start}-{last}/{item.size}", data)
            if progress.video is None and progress.offset <= start:
                raise ProviderError(
                    ErrorKind.TRANSIENT, f"{LABEL}: the upload did not move forward."
                )
    return progress


def _read_chunk(handle: IO[bytes], offset: int, chunk_bytes: int, item: MediaItem) -> bytes:
    if offset >= item.size:
        # YouTube holds every byte but has not answered the video: ask again later.
        raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: the upload is not finished yet.")
    handle.seek(offset)
    data = handle.read(min(chunk_bytes, item.size - offset))
    if not data:
        raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: {item.name} is shorter than its size.")
    return bytes(data)
