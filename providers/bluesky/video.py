"""Bluesky's video service, one step per function, as its documentation recommends: a service
token from the account's PDS (``com.atproto.server.getServiceAuth``, audience the PDS's
``did:web``, scope ``com.atproto.repo.uploadBlob``, 30 minutes), the file sent to the video
service (``app.bsky.video.uploadVideo``), then ``app.bsky.video.getJobStatus`` until
``JOB_STATE_COMPLETED`` (with the processed video's blob, stored in the account's repository by
the service) or ``JOB_STATE_FAILED``. The post embeds it as ``app.bsky.embed.video`` with its
alt text and aspect ratio. ``app.bsky.video.getUploadLimits`` (a token for the video service
itself) says whether the account may upload one more video today.

The file is streamed from storage to the video service: a large video is never held in memory
whole. See docs/providers/bluesky.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from providers.base import AccountContext, ErrorKind, MediaItem, ProviderError
from providers.helpers import check_processing_time

if TYPE_CHECKING:
    from providers.bluesky.adapter import BlueskyAdapter

LABEL = "Bluesky"
DEFAULT_VIDEO_URL = "https://video.bsky.app"
VIDEO_SERVICE_DID = "did:web:video.bsky.app"
UPLOAD_SCOPE = "com.atproto.repo.uploadBlob"
LIMITS_SCOPE = "app.bsky.video.getUploadLimits"
TOKEN_SECONDS = 30 * 60  # the documented lifetime of the upload's service token
COMPLETED = "JOB_STATE_COMPLETED"
FAILED = "JOB_STATE_FAILED"
EMBED = "app.bsky.embed.video"
MAX_ALT = 10_000  # graphemes of an app.bsky.embed.video alt text (Herald cuts characters)
# How long Herald waits for the video service to process one video before the attempt fails
# (and the next attempt uploads it again).
PROCESSING_LIMIT_SECONDS = 15 * 60


@dataclass(frozen=True)
class Job:
    """One ``app.bsky.video.defs#jobStatus``."""

    job_id: str
    state: str
    progress: int = 0
    blob: dict[str, Any] | None = None
    error: str = ""
    message: str = ""


@dataclass(frozen=True)
class UploadLimits:
    """``app.bsky.video.getUploadLimits``."""

    can_upload: bool
    remaining_videos: int | None = None
    remaining_bytes: int | None = None
    message: str = ""


def job_of(body: Any) -> Job:
    """A job status, bare (as ``uploadVideo`` answers) or under ``jobStatus``."""
    body = body if isinstance(body, dict) else {}
    status = body.get("jobStatus") if isinstance(body.get("jobStatus"), dict) else body
    blob = status.get("blob")
    progress = status.get("progress")
    return Job(
        job_id=str(status.get("jobId") or ""),
        state=str(status.get("state") or ""),
        progress=progress if isinstance(progress, int) else 0,
        blob=blob if isinstance(blob, dict) and blob.get("ref") else None,
        error=str(status.get("error") or ""),
        message=str(status.get("message") or "")[:200],
    )


def pds_audience(pds_url: str) -> str:
    """The PDS's ``did:web`` (a port is written ``%3A``)."""
    return "did:web:" + quote(urlsplit(pds_url).netloc, safe="")


def service_token(api: BlueskyAdapter, account: AccountContext, *, aud: str, lxm: str) -> str:
    """``com.atproto.server.getServiceAuth`` on the account's PDS: a token for ``aud`` that
    allows ``lxm`` only, for 30 minutes."""
    response = api._xrpc(
        account,
        "GET",
        "com.atproto.server.getServiceAuth",
        operation="video service token",
        params={"aud": aud, "lxm": lxm, "exp": int(time.time()) + TOKEN_SECONDS},
    )
    token = str(api._json(response, "video service token").get("token") or "")
    if not token:
        raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: the PDS gave no service token.")
    return token


def upload_limits(api: BlueskyAdapter, account: AccountContext) -> UploadLimits:
    """``app.bsky.video.getUploadLimits`` with a token for the video service."""
    token = service_token(api, account, aud=VIDEO_SERVICE_DID, lxm=LIMITS_SCOPE)
    response = api._request(
        "GET", api.video_url, LIMITS_SCOPE, operation="video upload limits", token=token
    )
    body = api._json(response, "video upload limits")
    videos, size = body.get("remainingDailyVideos"), body.get("remainingDailyBytes")
    return UploadLimits(
        can_upload=bool(body.get("canUpload")),
        remaining_videos=videos if isinstance(videos, int) else None,
        remaining_bytes=size if isinstance(size, int) else None,
        message=str(body.get("message") or body.get("error") or "")[:200],
    )


def check_limits(limits: UploadLimits, item: MediaItem) -> None:
    """Refuse a video the service would refuse today: the account may not upload (e.g. its
    e-mail is not verified) or its daily videos or bytes are spent."""
    spent = limits.remaining_videos is not None and limits.remaining_videos < 1
    too_big = limits.remaining_bytes is not None and limits.remaining_bytes < item.size
    if limits.can_upload and not spent and not too_big:
        return
    reason = limits.message or "the account may not upload this video today"
    raise ProviderError(
        ErrorKind.PERMANENT,
        f"{LABEL}: the video service refused the upload: {reason}. Publish it again tomorrow "
        "or check the account's e-mail verification.",
    )


def upload(api: BlueskyAdapter, account: AccountContext, item: MediaItem) -> Job:
    """``app.bsky.video.uploadVideo``: the file streamed from storage with a service token for
    the PDS; the processing job. Retried like a read: the service knows a video it has seen
    (``already_exists`` with its blob)."""
    token = service_token(api, account, aud=pds_audience(api._pds(account)), lxm=UPLOAD_SCOPE)
    with item.open() as handle:
        response = api._request(
            "POST",
            api.video_url,
            "app.bsky.video.uploadVideo",
            operation="video upload",
            token=token,
            params={"did": account.external_id, "name": item.name},
            headers={"Content-Type": item.mime_type, "Content-Length": str(item.size)},
            data=handle,
        )
    job = job_of(api._json(response, "video upload"))
    if not job.job_id and job.blob is None:
        raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: the video upload answer had no job.")
    return job


def job_status(api: BlueskyAdapter, job_id: str) -> Job:
    """``app.bsky.video.getJobStatus``."""
    response = api._request(
        "GET",
        api.video_url,
        "app.bsky.video.getJobStatus",
        operation="video status",
        params={"jobId": job_id},
    )
    return job_of(api._json(response, "video status"))


def finished_blob(job: Job) -> dict[str, Any] | None:
    """The processed video's blob once the job has one (completed, or ``already_exists``: a
    video the service processed before); ``None`` while it works; a failed job is the service
    refusing the video (permanent, with its reason)."""
    if job.blob is not None:
        return job.blob
    if job.state == FAILED:
        reason = job.message or job.error or "failed"
        raise ProviderError(
            ErrorKind.PERMANENT, f"{LABEL}: the video could not be processed: {reason}"
        )
    if job.state == COMPLETED:
        raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: the finished video had no blob.")
    return None


def ready(
    api: BlueskyAdapter,
    job_id: str,
    *,
    started_at: float,
    limit: float = PROCESSING_LIMIT_SECONDS,
) -> dict[str, Any] | None:
    """One status read: the blob once processed, ``None`` while the service works on it (for
    at most ``limit`` seconds after ``started_at``, the upload time)."""
    blob = finished_blob(job_status(api, job_id))
    if blob is None:
        check_processing_time(LABEL, started_at, limit)
    return blob


def embed(blob: dict[str, Any], alt_text: str, size: tuple[int, int] | None) -> dict[str, Any]:
    """The post's ``app.bsky.embed.video``: the blob, its alt text and, when known, its aspect
    ratio (the probe's display width and height, :meth:`MediaItem.display_size`: the stored
    facts, the file is not opened again)."""
    video: dict[str, Any] = {"$type": EMBED, "video": blob}
    if alt_text:
        video["alt"] = alt_text[:MAX_ALT]
    if size and size[0] > 0 and size[1] > 0:
        video["aspectRatio"] = {"width": size[0], "height": size[1]}
    return video
