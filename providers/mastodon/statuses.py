"""Mastodon statuses: the length rule and the post format, visibility choices, the body of a
status post, and what reconcile compares (normalized source text, creation time)."""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime
from typing import Any

import grapheme

from providers.base import (
    MediaRule,
    OptionSpec,
    OutputProfile,
    PublishRequest,
    VideoRule,
)
from providers.helpers import find_urls

VISIBILITIES = ("public", "unlisted", "private", "direct")
VIDEO_MIME_TYPES = ("video/mp4", "video/quicktime", "video/webm")
URL_WEIGHT = 23

_MENTION_RE = re.compile(
    r"(?<![=/\w])@([a-z0-9_]+(?:[a-z0-9_.-]*[a-z0-9_])?)(?:@[\w.-]*\w)?", re.IGNORECASE
)


def mastodon_length(text: str) -> int:
    """Mastodon's own count: grapheme clusters, after every http(s) URL is replaced by 23
    characters and every ``@user@domain`` mention by ``@user``."""
    pieces: list[str] = []
    last = 0
    for start, end, _url in find_urls(text):
        pieces.append(text[last:start])
        pieces.append("x" * URL_WEIGHT)
        last = end
    pieces.append(text[last:])
    rewritten = _MENTION_RE.sub(lambda m: "@" + m.group(1), "".join(pieces))
    return int(grapheme.length(rewritten))


VIDEO_RULE = VideoRule(
    network="Mastodon",
    # Sent as a long send: uploaded, processed by the server while no worker waits, then
    # posted (docs/decisions/0020-long-sends.md).
    delivers=True,
    containers=("mp4", "mov", "webm"),
    video_codecs=("h264", "hevc", "vp8", "vp9", "av1"),  # the server transcodes
    audio_codecs=("aac", "mp3", "opus", "vorbis"),
    # The defaults of Mastodon 4 (99 MB; 40 MB before 4.0). Each server announces its own
    # in /api/v2/instance (configuration.media_attachments: video_size_limit,
    # video_frame_rate_limit, video_matrix_limit): the adapter reads the size limit
    # before it uploads a video (one GET, only for posts with a video) and refuses a
    # larger file there; the other two are left to the server, which transcodes.
    max_bytes=99 * 1024 * 1024,
    max_width=4096,
    max_height=4096,
    max_frame_rate=120,
    source="docs.joinmastodon.org: /api/v2/instance configuration.media_attachments",
)


POST_PROFILE = OutputProfile(
    key="mastodon.post",
    text_limit=500,
    text_counter=mastodon_length,
    media=MediaRule(
        max_count=4,
        # A video is held to the video rule's size, an image to this rule's.
        mime_types=("image/jpeg", "image/png", "image/gif", "image/webp", *VIDEO_MIME_TYPES),
        max_bytes=16 * 1024 * 1024,
    ),
    video=VIDEO_RULE,
    options=(
        OptionSpec("visibility", choices=VISIBILITIES, default="public"),
        OptionSpec("language", max_length=8),
    ),
    counting_rule="graphemes; each URL counts as 23, @user@domain counts as @user",
)

_VISIBILITY_LABELS: dict[str, tuple[str, str, str, str]] = {
    "en": ("Public", "Unlisted", "Followers only", "Mentioned people only"),
    "de": ("Öffentlich", "Nicht gelistet", "Nur Follower", "Nur erwähnte Profile"),
    "fr": ("Public", "Non listé", "Abonnés uniquement", "Personnes mentionnées uniquement"),
    "es": ("Público", "No listado", "Solo seguidores", "Solo personas mencionadas"),
    "it": ("Pubblico", "Non elencato", "Solo follower", "Solo persone menzionate"),
    "pt": ("Público", "Não listado", "Apenas seguidores", "Apenas pessoas mencionadas"),
    "nl": ("Openbaar", "Minder openbaar", "Alleen volgers", "Alleen vermelde mensen"),
    "ja": ("公開", "未収載", "フォロワー限定", "指定された相手のみ"),
}


def visibility_options(language: str) -> list[dict[str, str]]:
    base = (language or "en").lower().split("-")[0]
    labels = _VISIBILITY_LABELS.get(base, _VISIBILITY_LABELS["en"])
    return [
        {"label": label, "value": value} for label, value in zip(labels, VISIBILITIES, strict=True)
    ]


def status_body(request: PublishRequest, media_ids: list[str]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "status": request.text,
        "visibility": request.options.get("visibility") or "public",
    }
    if media_ids:
        body["media_ids"] = media_ids
    if request.options.get("language"):
        body["language"] = request.options["language"]
    return body


def _normalize_text(text: str) -> str:
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n"))
    return "\n".join(line.rstrip() for line in text.strip().split("\n"))


def _created_at(status: dict[str, Any]) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(status.get("created_at", "")).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
