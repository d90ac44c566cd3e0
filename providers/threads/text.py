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

MAX_LENGTH = 500
MAX_MEDIA = 20  # a carousel holds 2 to 20 items
MAX_IMAGE_BYTES = 8 * 1024 * 1024  # Threads' image specification: JPEG or PNG, 8 MB

# BMP characters shown as emoji by default (Unicode Emoji_Presentation=Yes below U+10000).
_BMP_EMOJI = (
    (0x231A, 0x231B),
    (0x23E9, 0x23EC),
    (0x23F0, 0x23F0),
    (0x23F3, 0x23F3),
    (0x25FD, 0x25FE),
    (0x2614, 0x2615),
    (0x2648, 0x2653),
    (0x267F, 0x267F),
    (0x2693, 0x2693),
    (0x26A1, 0x26A1),
    (0x26AA, 0x26AB),
    (0x26BD, 0x26BE),
    (0x26C4, 0x26C5),
    (0x26CE, 0x26CE),
    (0x26D4, 0x26D4),
    (0x26EA, 0x26EA),
    (0x26F2, 0x26F3),
    (0x26F5, 0x26F5),
    (0x26FA, 0x26FA),
    (0x26FD, 0x26FD),
    (0x2705, 0x2705),
    (0x270A, 0x270B),
    (0x2728, 0x2728),
    (0x274C, 0x274C),
    (0x274E, 0x274E),
    (0x2753, 0x2755),
    (0x2757, 0x2757),
    (0x2795, 0x2797),
    (0x27B0, 0x27B0),
    (0x27BF, 0x27BF),
    (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50),
    (0x2B55, 0x2B55),
)


def _is_emoji(cluster: str) -> bool:
    points = [ord(ch) for ch in cluster]
    if any(0x1F000 <= p <= 0x1FAFF for p in points):  # pictographs, emoticons, flags
        return True
    if 0x20E3 in points or 0xFE0F in points:  # keycap, emoji presentation selector
        return True
    return any(lo <= p <= hi for p in points for lo, hi in _BMP_EMOJI)


def threads_length(text: str) -> int:
    """The length Threads gives ``text`` (limit 500); see the module docstring."""
    total = 0
    for cluster in grapheme.graphemes(unicodedata.normalize("NFC", text)):
        total += len(cluster.encode("utf-8")) if _is_emoji(cluster) else 1
    return total


def comparable_text(text: str) -> str:
    """What reconcile compares: NFC, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFC", text).split())


POST_PROFILE = OutputProfile(
    key="threads.post",
    text_limit=MAX_LENGTH,
    text_counter=threads_length,
    media=MediaRule(
        max_count=MAX_MEDIA,  # one image, or a carousel of 2-20
        mime_types=("image/jpeg", "image/png"),
        max_bytes=MAX_IMAGE_BYTES,
    ),
    video=VideoRule(
        network="Threads",
        delivers=False,
        video_codecs=("h264", "hevc"),
        max_bytes=1024 * 1024 * 1024,
        max_seconds=5 * 60,
        max_width=1920,
        min_aspect=0.01,
        max_aspect=10,
        max_frame_rate=60,
        max_count=20,
        mixes_with_images=True,  # a carousel mixes images and videos
        source="developers.facebook.com: Threads media specifications (MOV/MP4, 1 GB, 5 min)",
    ),
    counting_rule="characters (graphemes); each emoji counts its UTF-8 bytes",
)
