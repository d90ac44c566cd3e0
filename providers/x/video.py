"""X's chunked media upload for a video, one step per function, on the same v2 endpoints the
adapter uses for images: ``initialize`` (``total_bytes``, ``media_type``,
``media_category=tweet_video``), one ``append`` per segment (``segment_index`` from 0), then
``finalize``; X then processes the video, and its ``processing_info`` (in the finalize answer and
in each ``STATUS`` read) says ``pending`` / ``in_progress``, ``succeeded`` or ``failed`` (with an
``error``) and when to ask again (``check_after_secs``). The post names the media id once it
succeeded.

The file is read from storage one segment at a time: a large video is never held in memory
whole. See docs/providers/x.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import quote

from providers.base import ErrorKind, MediaItem, ProviderError
from providers.helpers import check_processing_time

if TYPE_CHECKING:
    from providers.x.adapter import XAdapter

LABEL = "X"
CATEGORY = "tweet_video"
SEGMENT_BYTES = 4 * 1024 * 1024  # X takes segments of up to 5 MB
SUCCEEDED = "succeeded"
FAILED = "failed"
WAITING = ("pending", "in_progress")
# How long Herald waits for X to process one video before the attempt fails (and the next
# attempt uploads it again); X keeps an unused upload for a day.
PROCESSING_LIMIT_SECONDS = 15 * 60


@dataclass(frozen=True)
class Processing:
    """One ``processing_info``: its state, when to ask again and X's reason for a failure."""

    state: str
    check_after_secs: float = 1.0
    progress_percent: int = 0
    error: str = ""

    @property
    def done(self) -> bool:
        return self.state == SUCCEEDED


def processing_of(info: Any) -> Processing:
    """Read a ``processing_info``; none at all means X has nothing left to do."""
    if not isinstance(info, dict):
        return Processing(SUCCEEDED)
    error = info.get("error")
    error = error if isinstance(error, dict) else {}
    try:
        wait = max(float(info.get("check_after_secs") or 1), 0.0)
        progress = int(info.get("progress_percent") or 0)
    except (TypeError, ValueError):
        wait, progress = 1.0, 0
    return Processing(
        state=str(info.get("state") or SUCCEEDED),
        check_after_secs=wait,
        progress_percent=progress,
        error=str(error.get("message") or error.get("name") or "")[:200],
    )


def initialize(api: XAdapter, token: str, item: MediaItem) -> str:
    """``POST /2/media/upload/initialize``: the media id. Nothing is shown to anyone yet: a
    failure is retried like a read (an unused upload expires at X)."""
    body = api._json(
        api._call(
            "POST",
            "/2/media/upload/initialize",
            token=token,
            operation="video upload",
            json_body={
                "media_type": item.mime_type,
                "total_bytes": item.size,
                "media_category": CATEGORY,
            },
        ),
        "video upload",
    )
    media_id = str((body.get("data") or {}).get("id") or "")
    if not media_id:
        raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: the upload answer had no id.")
    return media_id


def append_segments(
    api: XAdapter, token: str, media_id: str, item: MediaItem, segment_bytes: int = SEGMENT_BYTES
) -> int:
    """One ``append`` per segment, read from storage one at a time; the number of segments."""
    sent = segments = 0
    with item.open() as handle:
        while segment := _read_segment(handle, min(segment_bytes, item.size - sent)):
            _append(api, token, media_id, segments, item.name, segment)
            sent += len(segment)
            segments += 1
    if sent != item.size:
        raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: {item.name} is shorter than its size.")
    return segments


def _read_segment(handle: IO[bytes], size: int) -> bytes:
    return handle.read(size) if size > 0 else b""


def _append(api: XAdapter, token: str, media_id: str, index: int, name: str, data: bytes) -> None:
    api._call(
        "POST",
        f"/2/media/upload/{quote(media_id, safe='')}/append",
        token=token,
        operation="video upload",
        ok=(200, 201, 202, 204),
        data={"segment_index": str(index)},
        files={"media": (name, data, "application/octet-stream")},
    )


def finalize(api: XAdapter, token: str, media_id: str) -> Processing:
    """``POST /2/media/upload/{id}/finalize``: X checks the segments add up to ``total_bytes``
    and starts processing the video."""
    body = api._json(
        api._call(
            "POST",
            f"/2/media/upload/{quote(media_id, safe='')}/finalize",
            token=token,
            operation="video upload",
        ),
        "video upload",
    )
    return processing_of((body.get("data") or {}).get("processing_info"))


def send(api: XAdapter, token: str, item: MediaItem) -> tuple[str, Processing]:
    """Initialize, append every segment and finalize: the media id and its processing."""
    media_id = initialize(api, token, item)
    append_segments(api, token, media_id, item, api.video_segment_bytes)
    return media_id, finalize(api, token, media_id)


def status(
    api: XAdapter, token: str, media_id: str, *, operation: str = "video status"
) -> Processing:
    """``GET /2/media/upload?command=STATUS&media_id=...``: the upload's processing."""
    body = api._json(
        api._call(
            "GET",
            "/2/media/upload",
            token=token,
            operation=operation,
            params={"command": "STATUS", "media_id": media_id},
        ),
        operation,
    )
    return processing_of((body.get("data") or {}).get("processing_info"))


def is_done(processing: Processing) -> bool:
    """Whether the post can be made now: ``succeeded``. ``failed`` is X refusing the video
    (permanent, with X's reason); any other state is not yet."""
    if processing.done:
        return True
    if processing.state == FAILED:
        reason = processing.error or "failed"
        raise ProviderError(
            ErrorKind.PERMANENT, f"{LABEL}: the video could not be processed: {reason}"
        )
    if processing.state in WAITING:
        return False
    raise ProviderError(
        ErrorKind.TRANSIENT, f"{LABEL}: unexpected video state {processing.state[:40]}."
    )


def ready(
    api: XAdapter,
    token: str,
    media_id: str,
    *,
    started_at: float,
    limit: float = PROCESSING_LIMIT_SECONDS,
) -> Processing:
    """One ``STATUS`` read: its processing once done; while X processes the video (for at most
    ``limit`` seconds after ``started_at``, the finalize time) the processing that says when
    to ask again (``done`` False)."""
    processing = status(api, token, media_id)
    if not is_done(processing):
        check_processing_time(LABEL, started_at, limit)
    return processing
