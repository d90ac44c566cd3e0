"""Instagram's formats and their rules, as Meta's content publishing documentation states them.

* A caption is at most 2,200 characters, with at most 30 hashtags and 20 @-mentions. Herald
  counts user-perceived characters (graphemes).
* Images: JPEG only, at most 8 MB; a feed image's aspect ratio is between 4:5 and 1.91:1.
* ``instagram.post``: one image, one video (published as a Reel shared to the feed, since
  Instagram publishes single feed videos as Reels), or a carousel of 2 to 10 images and videos
  (a carousel video is 3 to 60 seconds).
* ``instagram.reel``: one video (MOV or MP4, H.264 or HEVC, AAC, 3 seconds to 15 minutes, at most
  300 MB, 23 to 60 frames per second, at most 1920 pixels wide, aspect ratio 0.01:1 to 10:1),
  optionally followed by one JPEG image used as its cover.
* ``instagram.story``: one image or one video (3 to 60 seconds, at most 100 MB). A story has no
  caption: its text is not sent.
"""

from __future__ import annotations

import re
import unicodedata

import grapheme

from providers.base import MediaRule, OptionSpec, OutputProfile, VideoRule

MAX_CAPTION = 2200
MAX_HASHTAGS = 30
MAX_MENTIONS = 20
MAX_IMAGE_BYTES = 8 * 1024 * 1024
MIN_CAROUSEL = 2
MAX_CAROUSEL = 10
FEED_ASPECT = (4 / 5, 1.91)  # width / height of a feed image
SOURCE = "developers.facebook.com: Instagram content publishing and media specifications"

_HASHTAG = re.compile(r"(?<![\w&])#\w+")
_MENTION = re.compile(r"(?<![\w.])@[\w.]+")


def caption_length(text: str) -> int:
    """Characters as Herald counts them for Instagram: graphemes of the NFC text."""
    return int(grapheme.length(unicodedata.normalize("NFC", text)))


def caption_problems(text: str) -> list[str]:
    """What Instagram refuses in a caption beyond its length: more than 30 hashtags or more
    than 20 @-mentions."""
    problems = []
    hashtags = len(_HASHTAG.findall(text))
    if hashtags > MAX_HASHTAGS:
        problems.append(f"Instagram allows {MAX_HASHTAGS} hashtags; this text has {hashtags}.")
    mentions = len(_MENTION.findall(text))
    if mentions > MAX_MENTIONS:
        problems.append(f"Instagram allows {MAX_MENTIONS} @-mentions; this text has {mentions}.")
    return problems


FIRST_COMMENT = OptionSpec(name="first_comment", max_length=MAX_CAPTION)
# Up to 3 Instagram usernames invited as collaborators (feed posts and Reels).
COLLABORATORS = OptionSpec(name="collaborators", max_length=100)
# A Facebook Page id with a location, tagged as the post's location (feed posts and Reels).
LOCATION = OptionSpec(name="location_id", max_length=40)
SHARE_TO_FEED = OptionSpec(name="share_to_feed", choices=("true", "false"), default="true")
THUMB_OFFSET = OptionSpec(name="thumb_offset", max_length=10)  # milliseconds into the video

_VIDEO_COMMON = {
    "network": "Instagram",
    "delivers": True,
    "video_codecs": ("h264", "hevc"),
    "audio_codecs": ("aac",),
    "max_width": 1920,
    "min_aspect": 0.01,
    "max_aspect": 10,
    "min_frame_rate": 23,  # the documented range is 23 to 60 frames per second
    "max_frame_rate": 60,
    "source": SOURCE,
}

POST_PROFILE = OutputProfile(
    key="instagram.post",
    text_limit=MAX_CAPTION,
    text_counter=caption_length,
    media=MediaRule(
        by_url=True,
        max_count=MAX_CAROUSEL,
        mime_types=("image/jpeg", "video/mp4", "video/quicktime"),
        max_bytes=MAX_IMAGE_BYTES,
        required=True,
    ),
    video=VideoRule(
        **_VIDEO_COMMON,  # type: ignore[arg-type]
        max_bytes=300 * 1024 * 1024,
        min_seconds=3,
        max_seconds=60,  # a carousel's videos; a single video is a Reel (up to 15 minutes)
        max_count=MAX_CAROUSEL,
        mixes_with_images=True,
    ),
    options=(FIRST_COMMENT, COLLABORATORS, LOCATION),
    counting_rule="characters (graphemes); at most 30 hashtags and 20 @-mentions",
    text_rules=caption_problems,
    image_aspect=FEED_ASPECT,
)

REEL_PROFILE = OutputProfile(
    key="instagram.reel",
    text_limit=MAX_CAPTION,
    text_counter=caption_length,
    media=MediaRule(
        by_url=True,
        max_count=2,  # the video, then optionally its cover image
        mime_types=("video/mp4", "video/quicktime", "image/jpeg"),
        max_bytes=MAX_IMAGE_BYTES,
        required=True,
    ),
    video=VideoRule(
        **_VIDEO_COMMON,  # type: ignore[arg-type]
        max_bytes=300 * 1024 * 1024,
        min_seconds=3,
        max_seconds=15 * 60,
        max_count=1,
        mixes_with_images=True,  # the cover
    ),
    options=(SHARE_TO_FEED, THUMB_OFFSET, FIRST_COMMENT, COLLABORATORS, LOCATION),
    counting_rule="characters (graphemes); at most 30 hashtags and 20 @-mentions",
    text_rules=caption_problems,
)

STORY_PROFILE = OutputProfile(
    key="instagram.story",
    text_limit=MAX_CAPTION,  # a story has no caption: the text is not sent
    text_counter=caption_length,
    media=MediaRule(
        by_url=True,
        max_count=1,
        mime_types=("image/jpeg", "video/mp4", "video/quicktime"),
        max_bytes=MAX_IMAGE_BYTES,
        required=True,
    ),
    video=VideoRule(
        **_VIDEO_COMMON,  # type: ignore[arg-type]
        max_bytes=100 * 1024 * 1024,
        min_seconds=3,
        max_seconds=60,
        max_count=1,
    ),
    counting_rule="characters (graphemes); a story's text is not sent",
)

PROFILES = (POST_PROFILE, REEL_PROFILE, STORY_PROFILE)
