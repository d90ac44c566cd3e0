"""LinkedIn's Videos API, one step per function: ``initializeUpload`` (the owner and the file's
size; LinkedIn answers the video URN and one upload URL per byte range), one ``PUT`` per range
(each answers an ``ETag``), ``finalizeUpload`` with those ETags in order, then the video's
``status`` until ``AVAILABLE`` (``PROCESSING`` meanwhile, ``PROCESSING_FAILED`` when LinkedIn
could not use it). The post names the video in ``content.media`` (id and title).

The file is read one part at a time from storage (LinkedIn's parts are 4 MB): a large video is
never held in memory whole. See docs/providers/linkedin.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import quote

from providers.base import ErrorKind, MediaItem, ProviderError
from providers.helpers import check_processing_time

if TYPE_CHECKING:
    from providers.linkedin.adapter import LinkedInAdapter

LABEL = "LinkedIn"
AVAILABLE = "AVAILABLE"
PROCESSING = "PROCESSING"
FAILED = "PROCESSING_FAILED"
WAITING_UPLOAD = "WAITING_UPLOAD"
MAX_TITLE = 400  # Herald's bound for the title shown with the video (the file's name)
# How long Herald waits for LinkedIn to process one video before the attempt fails (and the
# next attempt uploads it again).
PROCESSING_LIMIT_SECONDS = 30 * 60


@dataclass(frozen=True)
class UploadPart:
    """One ``uploadInstructions`` entry: PUT bytes ``first_byte``..``last_byte`` (inclusive)."""

    url: str
    first_byte: int
    last_byte: int

    @property
    def size(self) -> int:
        return self.last_byte - self.first_byte + 1


@dataclass(frozen=True)
class Upload:
    """What ``initializeUpload`` answered."""

    video: str  # urn:li:video:...
    parts: tuple[UploadPart, ...]
    upload_token: str = ""


def is_video(item: MediaItem) -> bool:
    return item.mime_type.startswith("video/")


def title_of(item: MediaItem) -> str:
    """The title LinkedIn shows with the video: the file's name without its extension."""
    stem, _, extension = item.name.rpartition(".")
    return (stem if stem and len(extension) <= 4 else item.name)[:MAX_TITLE]


def initialize(api: LinkedInAdapter, token: str, owner: str, size: int) -> Upload:
    """``POST /rest/videos?action=initializeUpload``. Nothing is shown to anyone yet: a failure
    is retried like a read (an unused video expires at LinkedIn)."""
    body = api._json(
        api._call(
            "POST",
            "/rest/videos?action=initializeUpload",
            token=token,
            operation="video upload",
            json_body={
                "initializeUploadRequest": {
                    "owner": owner,
                    "fileSizeBytes": size,
                    "uploadCaptions": False,
                    "uploadThumbnail": False,
                }
            },
        ),
        "video upload",
    )
    value = body.get("value") or {}
    parts = tuple(_part(entry) for entry in value.get("uploadInstructions") or [])
    video = str(value.get("video") or "")
    if not video or not parts or not _covers(parts, size):
        raise ProviderError(
            ErrorKind.TRANSIENT, f"{LABEL}: the video upload answer was incomplete."
        )
    return Upload(video=video, parts=parts, upload_token=str(value.get("uploadToken") or ""))


def _part(entry: Any) -> UploadPart:
    entry = entry if isinstance(entry, dict) else {}
    try:
        first, last = int(entry.get("firstByte")), int(entry.get("lastByte"))
    except (TypeError, ValueError):
        first, last = -1, -2
    return UploadPart(url=str(entry.get("uploadUrl") or ""), first_byte=first, last_byte=last)


def _covers(parts: tuple[UploadPart, ...], size: int) -> bool:
    """The ranges follow each other from byte 0 to the last byte, each with its URL."""
    expected = 0
    for part in parts:
        if not part.url or part.first_byte != expected or part.size <= 0:
            return False
        expected = part.last_byte + 1
    return expected == size


def upload_parts(api: LinkedInAdapter, token: str, item: MediaItem, upload: Upload) -> list[str]:
    """PUT each range to its URL, read from storage one part at a time; the ETags in order."""
    etags = []
    with item.open() as handle:
        for part in upload.parts:
            etags.append(_put_part(api, token, part, _read_range(handle, part, item.name)))
    return etags


def _read_range(handle: IO[bytes], part: UploadPart, name: str) -> bytes:
    handle.seek(part.first_byte)
    data = handle.read(part.size)
    if len(data) != part.size:
        raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: {name} is shorter than its size.")
    return data


def _put_part(api: LinkedInAdapter, token: str, part: UploadPart, data: bytes) -> str:
    response = api.put_bytes(token, part.url, data, "video upload")
    etag = str(response.headers.get("ETag") or "")
    if not etag:
        raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: a video part was not acknowledged.")
    return etag


def finalize(api: LinkedInAdapter, token: str, upload: Upload, etags: list[str]) -> None:
    """``POST /rest/videos?action=finalizeUpload`` with every part's ETag, in order; LinkedIn
    starts processing the video."""
    api._call(
        "POST",
        "/rest/videos?action=finalizeUpload",
        token=token,
        operation="video upload",
        ok=(200, 201, 204),
        json_body={
            "finalizeUploadRequest": {
                "video": upload.video,
                "uploadToken": upload.upload_token,
                "uploadedPartIds": etags,
            }
        },
    )


def send(api: LinkedInAdapter, token: str, owner: str, item: MediaItem) -> str:
    """Initialize, upload every part and finalize; the video URN (processing from now on)."""
    upload = initialize(api, token, owner, item.size)
    finalize(api, token, upload, upload_parts(api, token, item, upload))
    return upload.video


def status(api: LinkedInAdapter, token: str, video: str) -> str:
    """``GET /rest/videos/{urn}``: the video's ``status``."""
    body = api._json(
        api._call(
            "GET",
            f"/rest/videos/{quote(video, safe='')}",
            token=token,
            operation="video status",
        ),
        "video status",
    )
    return str(body.get("status") or "")


def is_available(state: str) -> bool:
    """Whether the post can be made now. ``PROCESSING`` (or an upload LinkedIn has not seen
    complete yet) is not yet; ``PROCESSING_FAILED`` is LinkedIn refusing the video."""
    if state == AVAILABLE:
        return True
    if state == FAILED:
        raise ProviderError(
            ErrorKind.PERMANENT,
            f"{LABEL}: the video could not be processed; check its format and upload it again.",
        )
    if state in (PROCESSING, WAITING_UPLOAD, ""):
        return False
    raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: unexpected video status {state[:40]}.")


def ready(
    api: LinkedInAdapter,
    token: str,
    video: str,
    *,
    started_at: float,
    limit: float = PROCESSING_LIMIT_SECONDS,
) -> bool:
    """One status read: True once ``AVAILABLE``, False while LinkedIn processes it (for at
    most ``limit`` seconds after ``started_at``, the finalize time)."""
    if is_available(status(api, token, video)):
        return True
    check_processing_time(LABEL, started_at, limit)
    return False


def media_content(video: str, title: str) -> dict[str, Any]:
    """The post's ``content`` for one video."""
    media: dict[str, str] = {"id": video}
    if title:
        media["title"] = title[:MAX_TITLE]
    return {"media": media}
