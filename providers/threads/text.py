"""Threads' text length and the post format.

Threads (developers.facebook.com/docs/threads/posts, "Limitations"): a post's text is limited to
500 characters, and emojis are counted as the number of their UTF-8 bytes. Herald counts one per
user-perceived character (grapheme), except an emoji, which counts its UTF-8 bytes (``👍`` 4, a
skin-toned or ZWJ emoji more).
"""

from __future__ import annotations

import unicodedata

import grapheme

from providers.base import MediaRule, OutputProfile, VideoRule
from providers.emoji import is_emoji

MAX_LENGTH = 500
MAX_MEDIA = 20  # a carousel holds 2 to 20 items
MAX_IMAGE_BYTES = 8 * 1024 * 1024  # Threads' image specification: JPEG or PNG, 8 MB


def threads_length(text: str) -> int:
    """The length Threads gives ``text`` (limit 500); see the module docstring."""
    total = 0
    for cluster in grapheme.graphemes(unicodedata.normalize("NFC", text)):
        total += len(cluster.encode("utf-8")) if is_emoji(cluster) else 1
    return total


def comparable_text(text: str) -> str:
    """What reconcile compares: NFC, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFC", text).split())


POST_PROFILE = OutputProfile(
    key="threads.post",
    text_limit=MAX_LENGTH,
    text_counter=threads_length,
    media=MediaRule(
        max_count=MAX_MEDIA,  # one image or video, or a carousel of 2-20 of them
        mime_types=("image/jpeg", "image/png", "video/mp4", "video/quicktime"),
        max_bytes=MAX_IMAGE_BYTES,  # images; a video is held to the video rule's size
    ),
    video=VideoRule(
        network="Threads",
        # Threads fetches the video from its signed URL and processes it while no worker
        # waits (a long send); then the container is published (providers/threads/video.py).
        delivers=True,
        video_codecs=("h264", "hevc"),
        max_bytes=1024 * 1024 * 1024,
        max_seconds=5 * 60,
        max_width=1920,
        min_aspect=0.01,
        max_aspect=10,
        min_frame_rate=23,
        max_frame_rate=60,
        max_count=20,
        mixes_with_images=True,  # a carousel mixes images and videos
        source=(
            "developers.facebook.com: Threads media specifications (MOV/MP4, 1 GB, 5 min, "
            "23-60 frames per second)"
        ),
    ),
    counting_rule="characters (graphemes); each emoji counts its UTF-8 bytes",
)
