"""Pinterest's two publishable formats and their options.

``pinterest.image``: one image Pinterest fetches from its URL (``media_source`` ``image_url``),
so a server without a public origin (HERALD_PUBLIC_URL or S3 storage) cannot send it: such a
publication is refused when it is created. ``pinterest.video``: one video Herald uploads itself
(registered with ``POST /v5/media``, sent to the upload form Pinterest names, processed, then
pinned with the poster frame as its cover); no public origin is needed.

The publication's text is the Pin's description (at most 500 characters). Every Pin is saved on
a board: ``board_id`` is required (chosen from the destination options, as is the optional
``board_section_id``). ``title`` at most 100 characters, ``link`` the Pin's destination URL,
``alt_text`` at most 500 characters (default: the image's own alternative text).
"""

from __future__ import annotations

from providers.base import MediaRule, OptionSpec, OutputProfile, VideoRule

MAX_TITLE = 100
MAX_DESCRIPTION = 500
MAX_ALT_TEXT = 500
MAX_LINK = 2048
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_VIDEO_BYTES = 2 * 1024 * 1024 * 1024
IMAGE_TYPES = ("image/jpeg", "image/png", "image/webp", "image/gif")
VIDEO_TYPES = ("video/mp4", "video/quicktime")
SOURCE = (
    "developers.pinterest.com: POST /v5/pins (image_url, video_id), POST /v5/media; "
    "video 4 s to 15 min, up to 2 GB, MP4 or MOV (H.264 or H.265)"
)

OPTIONS = (
    OptionSpec("board_id", required=True, max_length=40),
    OptionSpec("board_section_id", max_length=40),
    OptionSpec("title", max_length=MAX_TITLE),
    OptionSpec("link", max_length=MAX_LINK),
    OptionSpec("alt_text", max_length=MAX_ALT_TEXT),
)


def description_length(text: str) -> int:
    return len(text)


IMAGE_PROFILE = OutputProfile(
    key="pinterest.image",
    text_limit=MAX_DESCRIPTION,
    text_counter=description_length,
    media=MediaRule(
        by_url=True,
        max_count=1,
        mime_types=IMAGE_TYPES,
        max_bytes=MAX_IMAGE_BYTES,
        required=True,
    ),
    options=OPTIONS,
    counting_rule="characters",
)

VIDEO_PROFILE = OutputProfile(
    key="pinterest.video",
    text_limit=MAX_DESCRIPTION,
    text_counter=description_length,
    media=MediaRule(max_count=1, mime_types=VIDEO_TYPES, max_bytes=MAX_VIDEO_BYTES, required=True),
    video=VideoRule(
        network="Pinterest",
        delivers=True,
        video_codecs=("h264", "hevc"),
        audio_codecs=("aac",),
        max_bytes=MAX_VIDEO_BYTES,
        min_seconds=4,
        max_seconds=15 * 60,
        max_count=1,
        source=SOURCE,
    ),
    options=OPTIONS,
    counting_rule="characters",
)

PROFILES = (IMAGE_PROFILE, VIDEO_PROFILE)
