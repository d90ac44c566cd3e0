"""Bluesky records: text length rules and the post format, TID-shaped record keys derived from
idempotency keys, and link/mention facets with UTF-8 byte offsets."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

import grapheme

from providers.base import MediaRule, OptionSpec, OutputProfile, VideoRule
from providers.bluesky.media import MAX_IMAGE_BYTES
from providers.helpers import LANGUAGES, find_urls

POST = "app.bsky.feed.post"
VIDEO_TYPES = ("video/mp4", "video/quicktime", "video/webm")
REPOST = "app.bsky.feed.repost"

_S32 = "234567abcdefghijklmnopqrstuvwxyz"  # base32-sortable alphabet of TIDs
_TID_START_US = 1_672_531_200_000_000  # 2023-01-01T00:00:00Z
_TID_SPAN_US = 365 * 24 * 3600 * 1_000_000
_MENTION_RE = re.compile(
    r"(?<![\w@.])@((?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+"
    r"[a-zA-Z](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)"
)


def bluesky_graphemes(text: str) -> int:
    return int(grapheme.length(text))


def bluesky_length(text: str) -> int:
    """Bluesky's two limits in one count: 300 graphemes and 3000 UTF-8 bytes.

    The count is ``max(graphemes, ceil(bytes / 10))``, so it stays within 300 exactly when both
    limits hold; for ordinary text it is simply the number of graphemes.
    """
    return max(bluesky_graphemes(text), -(-len(text.encode("utf-8")) // 10))


POST_PROFILE = OutputProfile(
    key="bluesky.post",
    text_limit=300,
    text_counter=bluesky_length,
    media=MediaRule(
        max_count=4,  # up to 4 images, or one video alone (checked by the adapter)
        mime_types=("image/jpeg", "image/png", "image/webp", *VIDEO_TYPES),
        max_bytes=MAX_IMAGE_BYTES,  # images; a video is held to the video rule's size
    ),
    video=VideoRule(
        network="Bluesky",
        # Sent through the video service as a long send: uploaded, processed while no worker
        # waits, then posted (providers/bluesky/video.py).
        delivers=True,
        containers=("mp4", "mov", "webm"),
        video_codecs=("h264", "hevc", "vp8", "vp9", "av1"),  # the video service transcodes
        audio_codecs=("aac", "mp3", "opus", "vorbis"),
        max_bytes=100 * 1000 * 1000,
        max_seconds=180,
        source="docs.bsky.app: video uploads (one video per post, 100 MB, up to 3 minutes)",
    ),
    options=(OptionSpec("language", choices=tuple(LANGUAGES), max_length=8),),
    counting_rule="graphemes (and at most 3000 UTF-8 bytes)",
)


def record_key_for(idempotency_key: str) -> str:
    """A deterministic, TID-shaped record key for an idempotency key.

    13 characters of the base32-sortable alphabet, first character in ``[2-7a-j]``: valid both
    as a TID and as a general record key. The timestamp part is a hash folded into 2023, so the
    key never looks like it comes from the future.
    """
    digest = hashlib.sha256(b"herald:bluesky:" + idempotency_key.encode("utf-8")).digest()
    number = int.from_bytes(digest[:8], "big")
    micros = _TID_START_US + (number >> 10) % _TID_SPAN_US
    value = (micros << 10) | (number & 0x3FF)
    return "".join(_S32[(value >> (5 * i)) & 31] for i in reversed(range(13)))


def _utf8_offset(text: str, index: int) -> int:
    return len(text[:index].encode("utf-8"))


def build_facets(text: str, resolve_handle: Callable[[str], str | None]) -> list[dict[str, Any]]:
    """Link and mention facets with UTF-8 byte offsets (``byteStart`` inclusive, ``byteEnd``
    exclusive). Mentions whose handle does not resolve get no facet (plain text)."""
    facets: list[dict[str, Any]] = []
    taken: list[tuple[int, int]] = []
    for start, end, url in find_urls(text):
        taken.append((start, end))
        facets.append(
            {
                "index": {
                    "byteStart": _utf8_offset(text, start),
                    "byteEnd": _utf8_offset(text, end),
                },
                "features": [{"$type": "app.bsky.richtext.facet#link", "uri": url}],
            }
        )
    resolved: dict[str, str | None] = {}
    for match in _MENTION_RE.finditer(text):
        start, end = match.span()
        if any(s < end and start < e for s, e in taken):
            continue
        handle = match.group(1).lower()
        if handle not in resolved:
            resolved[handle] = resolve_handle(handle)
        did = resolved[handle]
        if not did:
            continue
        facets.append(
            {
                "index": {
                    "byteStart": _utf8_offset(text, start),
                    "byteEnd": _utf8_offset(text, end),
                },
                "features": [{"$type": "app.bsky.richtext.facet#mention", "did": did}],
            }
        )
    facets.sort(key=lambda f: int(f["index"]["byteStart"]))
    return facets


def _rkey(uri: str) -> str:
    return uri.rstrip("/").rsplit("/", 1)[-1]
