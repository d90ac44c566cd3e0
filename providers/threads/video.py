"""Threads' media containers for video, one step per function. Threads fetches a video from its
``video_url`` (Herald's signed media URL) and processes it while the container's ``status`` is
``IN_PROGRESS``; ``FINISHED`` may be published, ``ERROR`` names why in ``error_message``
(``FAILED_DOWNLOADING_VIDEO``, ``INVALID_DURATION``...), ``EXPIRED`` was not published within
24 hours. A carousel (2 to 20 items, images and videos mixed) is one container per item with
``is_carousel_item=true``, each ``FINISHED`` before the ``CAROUSEL`` container that names them
is created; that one is polled too, then published. Threads asks for a status read about once
a minute, for no more than 5 minutes. See docs/providers/threads.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from providers.base import ErrorKind, MediaItem, ProviderError
from providers.helpers import check_processing_time

if TYPE_CHECKING:
    from providers.threads.adapter import ThreadsAdapter

LABEL = "Threads"
FINISHED = "FINISHED"
IN_PROGRESS = "IN_PROGRESS"
MAX_ALT_TEXT = 1000
MIN_CAROUSEL = 2
MAX_CAROUSEL = 20
# Threads' advice: a status read about once a minute, for no more than 5 minutes.
STATUS_EVERY_SECONDS = 60
PROCESSING_LIMIT_SECONDS = 5 * 60


def is_video(item: MediaItem) -> bool:
    return item.mime_type.startswith("video/")


def item_fields(item: MediaItem, *, carousel_item: bool = False) -> dict[str, str]:
    """The container fields of one image or video (Threads fetches it from ``item.url``)."""
    if is_video(item):
        fields = {"media_type": "VIDEO", "video_url": item.url}
    else:
        fields = {"media_type": "IMAGE", "image_url": item.url}
    if carousel_item:
        fields["is_carousel_item"] = "true"
    if item.alt_text:
        fields["alt_text"] = item.alt_text[:MAX_ALT_TEXT]
    return fields


def single_fields(item: MediaItem, text: str) -> dict[str, str]:
    """A post of one image or video, with its text."""
    fields = item_fields(item)
    if text:
        fields["text"] = text
    return fields


def create_children(
    api: ThreadsAdapter, token: str, user: str, items: list[MediaItem]
) -> list[str]:
    """One carousel item container per image or video, in order."""
    if not MIN_CAROUSEL <= len(items) <= MAX_CAROUSEL:
        raise ProviderError(
            ErrorKind.PERMANENT,
            f"{LABEL}: a carousel has {MIN_CAROUSEL} to {MAX_CAROUSEL} images or videos.",
        )
    return [api._create(token, user, item_fields(item, carousel_item=True)) for item in items]


def carousel_fields(children: list[str], text: str) -> dict[str, str]:
    """The ``CAROUSEL`` container of finished children."""
    fields = {"media_type": "CAROUSEL", "children": ",".join(children)}
    if text:
        fields["text"] = text
    return fields


def read_status(api: ThreadsAdapter, token: str, container: str) -> tuple[str, str]:
    """``GET /{container-id}?fields=status,error_message``."""
    body = api._json(
        api._call(
            "GET",
            f"/{quote(container, safe='')}",
            token=token,
            operation="container status",
            params={"fields": "status,error_message"},
        ),
        "container status",
    )
    return str(body.get("status") or ""), str(body.get("error_message") or "")


def is_finished(status: str, error_message: str = "") -> bool:
    """Whether a container may be published now (``IN_PROGRESS``: not yet). ``ERROR`` is
    Threads refusing the content (its reason in the message); ``EXPIRED`` is temporary: the
    next attempt creates a new container (an unpublished container is never shown)."""
    if status == FINISHED:
        return True
    if status == "ERROR":
        reason = (error_message or "unknown")[:200]
        raise ProviderError(
            ErrorKind.PERMANENT, f"{LABEL}: the post was refused while processed: {reason}"
        )
    if status == "EXPIRED":
        raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: the container expired.")
    if status == "PUBLISHED":
        raise ProviderError(ErrorKind.AMBIGUOUS, f"{LABEL}: the container was already published.")
    return False


def all_finished(api: ThreadsAdapter, token: str, containers: list[str]) -> bool:
    """A status read per container, in order, up to the first still in progress."""
    return all(is_finished(*read_status(api, token, container)) for container in containers)


def ready(
    api: ThreadsAdapter,
    token: str,
    containers: list[str],
    *,
    started_at: float,
    limit: float = PROCESSING_LIMIT_SECONDS,
) -> bool:
    """True once every container is ``FINISHED``; False while Threads processes them, for at
    most ``limit`` seconds after ``started_at`` (the containers' creation)."""
    if all_finished(api, token, containers):
        return True
    check_processing_time(LABEL, started_at, limit)
    return False
