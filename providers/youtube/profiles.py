"""YouTube's two publishable formats and their options.

``youtube.video``: one video (up to 256 GB and 12 hours; YouTube holds channels that have not
verified a phone number to 15 minutes) with an optional image as its custom thumbnail.
``youtube.short``: the same upload, held to what YouTube treats as a Short: vertical or square
(width no larger than height) and at most 3 minutes. YouTube itself decides Short-ness from the
file's shape and length; the format lets Herald refuse at create time a "Short" YouTube would
show as an ordinary video, and links the result as ``/shorts/<id>``.

The publication's text is the video's description: at most 5,000 bytes of UTF-8, without ``<``
or ``>``. The title is an option: at most 100 characters, without ``<`` or ``>``. The person
must say whether the video is made for kids (no default: YouTube requires the choice).
"""

from __future__ import annotations

from providers.base import MediaRule, OptionSpec, OutputProfile, VideoRule

MAX_TITLE = 100  # characters
MAX_DESCRIPTION = 5000  # bytes of UTF-8
MAX_TAGS = 500  # characters of all tags together (a tag with a space counts its quotes too)
MAX_THUMBNAIL_BYTES = 2 * 1024 * 1024  # thumbnails.set takes JPEG or PNG up to 2 MB
SHORT_MAX_SECONDS = 180
FORBIDDEN = "<>"
VIDEO_TYPES = ("video/mp4", "video/quicktime", "video/webm")
THUMBNAIL_TYPES = ("image/jpeg", "image/png")
PRIVACY = ("private", "unlisted", "public")
LICENSES = ("youtube", "creativeCommon")
BOOLEAN = ("true", "false")
THUMBNAIL = ("none", "poster", "image")
DEFAULT_CATEGORY = "22"  # People & Blogs


def content_problems(types: list[str], options: dict[str, str]) -> list[tuple[str, str]]:
    """What YouTube would refuse in the media and options together: one video; an image only
    as the thumbnail (``thumbnail=image``), and then exactly one; the tags' total length."""
    videos = sum(1 for t in types if t.startswith("video/"))
    images = len(types) - videos
    problems: list[tuple[str, str]] = []
    if videos != 1:
        problems.append(("media", "A YouTube upload is one video (and at most one image)."))
    choice = options.get("thumbnail") or "none"
    if choice == "image" and images != 1:
        problems.append(("thumbnail", "thumbnail=image needs one image sent with the video."))
    elif choice != "image" and images:
        problems.append(("media", "An image goes with the video only as its thumbnail=image."))
    if tags_length(tag_list(options.get("tags", ""))) > MAX_TAGS:
        problems.append(("tags", f"The tags are longer than {MAX_TAGS} characters together."))
    return problems


def description_length(text: str) -> int:
    """YouTube bounds the description in bytes of UTF-8, not characters."""
    return len(text.encode("utf-8"))


OPTIONS = (
    OptionSpec("title", required=True, max_length=MAX_TITLE, forbidden=FORBIDDEN),
    OptionSpec("made_for_kids", required=True, choices=BOOLEAN),
    OptionSpec("privacy", choices=PRIVACY, default="private"),
    # A category id from the destination options (videoCategories.list, assignable ones).
    OptionSpec("category", max_length=8, default=DEFAULT_CATEGORY),
    # Comma-separated; all together at most 500 characters.
    OptionSpec("tags", max_length=MAX_TAGS, forbidden=FORBIDDEN),
    OptionSpec("notify_subscribers", choices=BOOLEAN, default="true"),
    OptionSpec("embeddable", choices=BOOLEAN, default="true"),
    OptionSpec("license", choices=LICENSES, default="youtube"),
    # "poster": the frame Herald took from the video; "image": the image sent with the video.
    OptionSpec("thumbnail", choices=THUMBNAIL, default="none"),
)

_MEDIA = MediaRule(
    max_count=2,  # the video, and an image for its thumbnail
    mime_types=VIDEO_TYPES + THUMBNAIL_TYPES,
    max_bytes=MAX_THUMBNAIL_BYTES,  # the image; the video is held to the video rule's size
    required=True,
)
_SOURCE = (
    "developers.google.com/youtube: videos.insert (video/*, up to 256 GB or 12 hours), "
    "Shorts up to 3 minutes, square or vertical"
)
_VIDEO_RULE = VideoRule(
    network="YouTube",
    delivers=True,  # the resumable upload, a long send (providers/youtube/upload.py)
    containers=("mp4", "mov", "webm"),
    video_codecs=("h264", "hevc", "vp9", "av1", "mpeg4"),
    audio_codecs=("aac", "opus", "vorbis", "mp3"),
    max_bytes=256 * 1024**3,
    max_seconds=12 * 3600,
    mixes_with_images=True,  # the thumbnail
    source=_SOURCE,
)

VIDEO_PROFILE = OutputProfile(
    key="youtube.video",
    text_limit=MAX_DESCRIPTION,
    text_counter=description_length,
    text_forbidden=FORBIDDEN,
    media=_MEDIA,
    video=_VIDEO_RULE,
    options=OPTIONS,
    counting_rule="bytes of UTF-8",
    content_rules=content_problems,
)

SHORT_PROFILE = OutputProfile(
    key="youtube.short",
    text_limit=MAX_DESCRIPTION,
    text_counter=description_length,
    text_forbidden=FORBIDDEN,
    media=_MEDIA,
    video=VideoRule(
        network="YouTube Shorts",
        delivers=True,
        containers=_VIDEO_RULE.containers,
        video_codecs=_VIDEO_RULE.video_codecs,
        audio_codecs=_VIDEO_RULE.audio_codecs,
        max_bytes=_VIDEO_RULE.max_bytes,
        max_seconds=SHORT_MAX_SECONDS,
        max_aspect=1.0,  # vertical or square
        mixes_with_images=True,
        source=_SOURCE,
    ),
    options=OPTIONS,
    counting_rule="bytes of UTF-8",
    content_rules=content_problems,
)

PROFILES = (VIDEO_PROFILE, SHORT_PROFILE)


def tag_list(value: str) -> list[str]:
    return [tag.strip() for tag in (value or "").split(",") if tag.strip()]


def tags_length(tags: list[str]) -> int:
    """How YouTube counts the 500: each tag, its quotes when it holds a space, and the commas
    between tags."""
    return sum(len(t) + (2 if " " in t else 0) for t in tags) + max(len(tags) - 1, 0)
