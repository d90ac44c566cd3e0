"""TikTok's direct video post: its documented limits, options and chunk plan.

The caption (``post_info.title`` of a video) is at most 2,200 UTF-16 code units. A video is
MP4, WebM or MOV (H.264, H.265, VP8 or VP9), at most 4 GB, frames 360 to 4096 pixels a side,
23 to 60 frames a second; its length is bounded per creator (``max_video_post_duration_sec``
from the creator info, checked before every post) and by the Content Posting API's 10 minutes.

Options: ``privacy_level`` is required (TikTok gives no default: the person chooses among the
levels the creator info allows); ``disable_comment`` / ``disable_duet`` / ``disable_stitch``;
the commercial content disclosure ``brand_content_toggle`` (a paid partnership) and
``brand_organic_toggle`` (the creator's own business) are required choices. A branded content
post may not be private (TikTok refuses it).
"""

from __future__ import annotations

from dataclasses import replace

from providers.base import MediaRule, OptionSpec, OutputProfile, VideoRule

MAX_CAPTION = 2200  # UTF-16 code units
MAX_VIDEO_BYTES = 4 * 1024**3
MAX_SECONDS = 600
MIN_CHUNK = 5 * 1024 * 1024
MAX_CHUNK = 64 * 1024 * 1024
MAX_LAST_CHUNK = 128 * 1024 * 1024
MAX_CHUNKS = 1000
PRIVACY_LEVELS = (
    "PUBLIC_TO_EVERYONE",
    "MUTUAL_FOLLOW_FRIENDS",
    "FOLLOWER_OF_CREATOR",
    "SELF_ONLY",
)
PRIVATE = "SELF_ONLY"
BOOLEAN = ("true", "false")
VIDEO_TYPES = ("video/mp4", "video/webm", "video/quicktime")


def caption_length(text: str) -> int:
    """TikTok counts the caption in UTF-16 code units (an emoji outside the BMP is two)."""
    return len(text.encode("utf-16-le")) // 2


def chunk_plan(
    size: int, chunk_size: int = MAX_CHUNK, min_chunk: int = MIN_CHUNK, max_chunk: int = MAX_CHUNK
) -> tuple[int, int]:
    """``(chunk_size, total_chunk_count)`` as TikTok's init requires them: a video under 5 MB
    is one chunk of its own size; otherwise chunks of ``chunk_size`` (5 to 64 MB), the
    remainder joined to the last chunk (``total_chunk_count`` is the size divided by the chunk
    size, rounded down), which may then reach 128 MB."""
    if size < min_chunk:
        return size, 1
    chunk = max(min_chunk, min(chunk_size, max_chunk, size))
    return chunk, max(size // chunk, 1)


def chunk_bounds(size: int, chunk: int, count: int, index: int) -> tuple[int, int]:
    """First and last byte of chunk ``index`` (0-based) of the plan."""
    first = index * chunk
    last = size - 1 if index == count - 1 else first + chunk - 1
    return first, last


def content_problems(types: list[str], options: dict[str, str]) -> list[tuple[str, str]]:
    """One video per post; a branded content post is never private."""
    problems: list[tuple[str, str]] = []
    if sum(1 for t in types if t.startswith("video/")) != 1 or len(types) != 1:
        problems.append(("media", "A TikTok video post is exactly one video."))
    if options.get("brand_content_toggle") == "true" and options.get("privacy_level") == PRIVATE:
        problems.append(
            ("privacy_level", "Branded content cannot be private (SELF_ONLY) on TikTok.")
        )
    return problems


OPTIONS = (
    # One of the creator's privacy_level_options (destination options); no default.
    OptionSpec("privacy_level", required=True, choices=PRIVACY_LEVELS),
    OptionSpec("disable_comment", choices=BOOLEAN, default="false"),
    OptionSpec("disable_duet", choices=BOOLEAN, default="false"),
    OptionSpec("disable_stitch", choices=BOOLEAN, default="false"),
    # Commercial content disclosure: both must be answered.
    OptionSpec("brand_content_toggle", required=True, choices=BOOLEAN),
    OptionSpec("brand_organic_toggle", required=True, choices=BOOLEAN),
    OptionSpec("is_aigc", choices=BOOLEAN, default="false"),
)

VIDEO_PROFILE = OutputProfile(
    key="tiktok.video",
    text_limit=MAX_CAPTION,
    text_counter=caption_length,
    media=MediaRule(max_count=1, mime_types=VIDEO_TYPES, max_bytes=MAX_VIDEO_BYTES, required=True),
    video=VideoRule(
        network="TikTok",
        delivers=True,  # FILE_UPLOAD in chunks, a long send (providers/tiktok/adapter.py)
        containers=("mp4", "webm", "mov"),
        video_codecs=("h264", "hevc", "vp8", "vp9"),
        audio_codecs=("aac", "mp3", "opus", "vorbis"),
        max_bytes=MAX_VIDEO_BYTES,
        max_seconds=MAX_SECONDS,
        min_side=360,
        max_width=4096,
        max_height=4096,
        min_frame_rate=23,
        max_frame_rate=60,
        source="developers.tiktok.com: Content Posting API, media transfer guide",
    ),
    options=OPTIONS,
    counting_rule="UTF-16 code units",
    content_rules=content_problems,
)

MAX_PHOTOS = 35
MAX_PHOTO_BYTES = 20 * 1024 * 1024
MAX_PHOTO_TITLE = 90
MAX_PHOTO_DESCRIPTION = 4000
PHOTO_TYPES = ("image/jpeg", "image/webp")


def photo_problems(types: list[str], options: dict[str, str]) -> list[tuple[str, str]]:
    """Photos only (JPEG or WebP); a branded content post is never private."""
    problems = [p for p in content_problems(["video/mp4"], options) if p[0] != "media"]
    if not types or any(not t.startswith("image/") for t in types):
        problems.append(("media", "A TikTok photo post is 1 to 35 images, no video."))
    return problems


PHOTO_OPTIONS = (
    *[o for o in OPTIONS if o.name not in ("disable_duet", "disable_stitch")],
    OptionSpec("title", max_length=MAX_PHOTO_TITLE),
    OptionSpec("auto_add_music", choices=BOOLEAN, default="true"),
)

# Photo posts: TikTok pulls each image from its URL (a domain the operator verified with
# TikTok), so the media need a public origin. The text is the description.
PHOTO_PROFILE = OutputProfile(
    key="tiktok.photo",
    text_limit=MAX_PHOTO_DESCRIPTION,
    text_counter=caption_length,
    media=MediaRule(
        max_count=MAX_PHOTOS,
        mime_types=PHOTO_TYPES,
        max_bytes=MAX_PHOTO_BYTES,
        required=True,
        by_url=True,
    ),
    options=PHOTO_OPTIONS,
    counting_rule="UTF-16 code units",
    content_rules=photo_problems,
)

PROFILES = (VIDEO_PROFILE, PHOTO_PROFILE)
UNAUDITED = (
    "TikTok lets an app it has not audited post only privately (privacy_level SELF_ONLY); "
    "the operator sets HERALD_TIKTOK_AUDITED once TikTok has audited the app."
)


def unaudited_problems(types: list[str], options: dict[str, str]) -> list[tuple[str, str]]:
    """The format's rules, and privacy_level SELF_ONLY only (an app TikTok has not audited)."""
    problems = content_problems(types, options)
    level = options.get("privacy_level")
    if level and level != PRIVATE:
        problems.append(("privacy_level", UNAUDITED))
    return problems


def profiles_for(audited: bool) -> tuple[OutputProfile, ...]:
    """The formats as the app's audit state allows them: an unaudited app's posts are refused
    at create time (422 at ``privacy_level``) unless private."""
    if audited:
        return PROFILES
    return (
        replace(VIDEO_PROFILE, content_rules=unaudited_problems),
        replace(PHOTO_PROFILE, content_rules=_unaudited_photo_problems),
    )


def _unaudited_photo_problems(types: list[str], options: dict[str, str]) -> list[tuple[str, str]]:
    level = options.get("privacy_level")
    extra = [("privacy_level", UNAUDITED)] if level and level != PRIVATE else []
    return photo_problems(types, options) + extra
