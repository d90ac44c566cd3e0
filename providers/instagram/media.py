"""Instagram's media containers, one step per function.

Publishing is the container flow Meta documents: ``POST /{ig-user-id}/media`` creates a container
(Instagram fetches the image or video from its URL, Herald's signed public media URL); its
``status_code`` is read with ``GET /{container-id}?fields=status_code,status`` until it is
``FINISHED`` (``IN_PROGRESS`` meanwhile; ``ERROR`` says why in ``status``, ``EXPIRED`` was not
published within 24 hours, ``PUBLISHED`` is already live); ``POST /{ig-user-id}/media_publish``
with ``creation_id`` makes it a post. A carousel is one container per item
(``is_carousel_item=true``), each ``FINISHED`` before the ``CAROUSEL`` container that names them
is created. See docs/providers/instagram.md.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from providers.base import AccountContext, ErrorKind, MediaItem, ProviderError, PublishRequest
from providers.instagram.rules import (
    MAX_CAROUSEL,
    MIN_CAROUSEL,
    POST_PROFILE,
    REEL_PROFILE,
    STORY_PROFILE,
)
from providers.meta.errors import SUBCODES

if TYPE_CHECKING:
    from providers.instagram.adapter import InstagramAdapter

LABEL = "Instagram"
FINISHED = "FINISHED"
MAX_ALT_TEXT = 1000
MAX_COLLABORATORS = 3
_USERNAME = re.compile(r"[A-Za-z0-9._]{1,30}")


def is_video(item: MediaItem) -> bool:
    return item.mime_type.startswith("video/")


def refusal(status: str) -> str:
    """A refused container's reason in words: its ``status`` names a 2207xxx subcode, whose
    rule ``providers.meta.errors`` words."""
    text = (status or "unknown reason")[:200]
    for code, (_kind, words) in SUBCODES.items():
        if str(code) in text:
            return f"{words} ({text})"
    return text


def _item(item: MediaItem, *, carousel_item: bool = False) -> dict[str, str]:
    if is_video(item):
        fields = {"media_type": "VIDEO" if carousel_item else "REELS", "video_url": item.url}
    else:
        fields = {"image_url": item.url}
        if item.alt_text:
            fields["alt_text"] = item.alt_text[:MAX_ALT_TEXT]
    if carousel_item:
        fields["is_carousel_item"] = "true"
    return fields


def _with_caption(fields: dict[str, str], text: str) -> dict[str, str]:
    return {**fields, "caption": text} if text else fields


def collaborators(value: str) -> list[str]:
    """The ``collaborators`` option: up to 3 Instagram usernames (comma or space separated,
    ``@`` optional), invited as the post's collaborators."""
    names = [name.removeprefix("@") for name in re.split(r"[,\s]+", value.strip()) if name]
    if len(names) > MAX_COLLABORATORS or not all(_USERNAME.fullmatch(n) for n in names):
        raise ProviderError(
            ErrorKind.PERMANENT,
            f"{LABEL}: collaborators are up to {MAX_COLLABORATORS} Instagram usernames.",
        )
    return names


def _post_fields(fields: dict[str, str], request: PublishRequest) -> dict[str, str]:
    """A feed post's or Reel's caption, collaborators and location (a Facebook Page id with a
    location), as the options give them."""
    fields = _with_caption(fields, request.text)
    names = collaborators(request.options.get("collaborators") or "")
    if names:
        fields["collaborators"] = json.dumps(names)
    location = (request.options.get("location_id") or "").strip()
    if location:
        if not location.isdigit():
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: location_id is a Page id.")
        fields["location_id"] = location
    return fields


def single_fields(request: PublishRequest) -> dict[str, str] | None:
    """The one container of a request, or None for a carousel (see :func:`carousel_children`)."""
    media = request.media
    if request.profile == STORY_PROFILE.key:
        item = media[0]
        key = "video_url" if is_video(item) else "image_url"
        return {"media_type": "STORIES", key: item.url}  # a story has no caption
    if request.profile == REEL_PROFILE.key:
        return reel_fields(request)
    if len(media) == 1:
        fields = _item(media[0])
        if is_video(media[0]):
            fields["share_to_feed"] = "true"  # a feed video is a Reel also shown in the feed
        return _post_fields(fields, request)
    return None


def reel_fields(request: PublishRequest) -> dict[str, str]:
    """A Reel: the video, its caption, whether it is also shown in the feed, and its cover (an
    image after the video) or the frame to use as cover (``thumb_offset``, milliseconds)."""
    videos = [item for item in request.media if is_video(item)]
    images = [item for item in request.media if not is_video(item)]
    if len(videos) != 1:
        raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: a Reel is one video.")
    fields = {
        "media_type": "REELS",
        "video_url": videos[0].url,
        "share_to_feed": request.options.get("share_to_feed") or "true",
    }
    if images:
        fields["cover_url"] = images[0].url
    offset = (request.options.get("thumb_offset") or "").strip()
    if offset:
        if not offset.isdigit():
            raise ProviderError(
                ErrorKind.PERMANENT, f"{LABEL}: thumb_offset is a number of milliseconds."
            )
        fields["thumb_offset"] = offset
    return _post_fields(fields, request)


def carousel_children(request: PublishRequest) -> list[dict[str, str]]:
    """The item containers of a carousel, in order (2 to 10 images and videos)."""
    if request.profile != POST_PROFILE.key or not (
        MIN_CAROUSEL <= len(request.media) <= MAX_CAROUSEL
    ):
        raise ProviderError(
            ErrorKind.PERMANENT,
            f"{LABEL}: a carousel has {MIN_CAROUSEL} to {MAX_CAROUSEL} images or videos.",
        )
    return [_item(item, carousel_item=True) for item in request.media]


def carousel_fields(children: list[str], request: PublishRequest) -> dict[str, str]:
    return _post_fields({"media_type": "CAROUSEL", "children": ",".join(children)}, request)


def read_status(api: InstagramAdapter, account: AccountContext, container: str) -> tuple[str, str]:
    """``GET /{container-id}?fields=status_code,status``."""
    body = api._json(
        api._api(
            account,
            "GET",
            f"{api._base(account)}/{quote(container, safe='')}",
            operation="container status",
            params={"fields": "status_code,status"},
        ),
        "container status",
    )
    return str(body.get("status_code") or ""), str(body.get("status") or "")


def is_finished(status_code: str, status: str = "") -> bool:
    """Whether a container may be published now (``IN_PROGRESS``: not yet). ``ERROR`` is
    Instagram refusing the media (permanent, with its reason); ``EXPIRED`` is temporary (the
    next attempt creates new containers); ``PUBLISHED`` means an earlier publish went through
    (ambiguous: reconcile finds the post)."""
    if status_code == FINISHED:
        return True
    if status_code == "ERROR":
        raise ProviderError(
            ErrorKind.PERMANENT, f"{LABEL}: the media was refused: {refusal(status)}"
        )
    if status_code == "EXPIRED":
        raise ProviderError(
            ErrorKind.TRANSIENT,
            f"{LABEL}: the container expired (not published within 24 hours).",
        )
    if status_code == "PUBLISHED":
        raise ProviderError(ErrorKind.AMBIGUOUS, f"{LABEL}: the container was already published.")
    return False


def all_finished(api: InstagramAdapter, account: AccountContext, containers: list[str]) -> bool:
    """A status read per container, in order, up to the first still in progress."""
    return all(is_finished(*read_status(api, account, c)) for c in containers)


def quota(body: dict[str, Any]) -> tuple[int, int]:
    """``(used, total)`` from ``GET /{ig-user-id}/content_publishing_limit``; a total of 0 when
    the answer does not say (then no limit is assumed)."""
    rows = body.get("data") or []
    row = rows[0] if rows and isinstance(rows[0], dict) else {}
    config = row.get("config") if isinstance(row.get("config"), dict) else {}
    try:
        return int(row.get("quota_usage") or 0), int((config or {}).get("quota_total") or 0)
    except (TypeError, ValueError):
        return 0, 0


def post_kinds(request: PublishRequest) -> tuple[str, ...]:
    """The ``media_product_type`` values a request's post can have in the account's media."""
    if request.profile == REEL_PROFILE.key:
        return ("REELS",)
    if request.profile == STORY_PROFILE.key:
        return ("STORY",)
    if len(request.media) == 1 and is_video(request.media[0]):
        return ("REELS",)
    return ("FEED",)
