"""Mastodon video: which items are videos, the bound an item is read with, and the server's own
limits (``/api/v2/instance``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from providers.base import MediaItem
from providers.mastodon.statuses import POST_PROFILE, VIDEO_MIME_TYPES, VIDEO_RULE


@dataclass(frozen=True)
class ServerVideoLimits:
    """What one server announces (0: it did not say)."""

    max_bytes: int = 0
    max_frame_rate: float = 0
    max_pixels: int = 0


def is_video(item: MediaItem) -> bool:
    return item.mime_type in VIDEO_MIME_TYPES


def media_max_bytes(item: MediaItem) -> int:
    """The documented default bound of one item: the video rule's for a video, else the
    image rule's."""
    return VIDEO_RULE.max_bytes if is_video(item) else POST_PROFILE.media.max_bytes


def video_limits(instance: Any) -> ServerVideoLimits:
    """``configuration.media_attachments`` of a ``GET /api/v2/instance`` answer."""
    configuration = instance.get("configuration") if isinstance(instance, dict) else None
    media = (configuration or {}).get("media_attachments") or {}
    if not isinstance(media, dict):
        return ServerVideoLimits()

    def number(key: str) -> float:
        value = media.get(key)
        return float(value) if isinstance(value, int | float) else 0.0

    return ServerVideoLimits(
        max_bytes=int(number("video_size_limit")),
        max_frame_rate=number("video_frame_rate_limit"),
        max_pixels=int(number("video_matrix_limit")),
    )
