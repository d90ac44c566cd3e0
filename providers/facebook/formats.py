"""The Facebook Page formats and their documented limits.

* ``facebook.post``: a feed post: text (up to 63,206 characters), a link (the ``link`` option or
  the text's only URL is previewed by Facebook), one or many photos (more than one: unpublished
  photos attached to one post), or one video;
* ``facebook.reel``: one vertical video, 3 to 90 seconds, with its description;
* ``facebook.story``: one photo or one video (up to 60 seconds); a Story carries no text.

``first_comment`` (post and reel): a comment the Page adds under the post once it is live.
Sources: developers.facebook.com/docs/pages-api/posts, /docs/graph-api/reference/page/photos,
/docs/video-api/guides/reels-publishing, /docs/page-stories-api.
"""

from __future__ import annotations

from providers.base import MediaRule, OptionSpec, OutputProfile, VideoRule

MAX_MESSAGE = 63_206
MAX_PHOTOS = 10
MAX_PHOTO_BYTES = 4 * 1024 * 1024  # Page photos: under 4 MB
MAX_COMMENT = 8_000
PHOTO_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
VIDEO_TYPES = ("video/mp4", "video/quicktime")


def message_length(text: str) -> int:
    return len(text)


FIRST_COMMENT = OptionSpec(name="first_comment", max_length=MAX_COMMENT)
LINK = OptionSpec(name="link", max_length=2000)

POST_PROFILE = OutputProfile(
    key="facebook.post",
    text_limit=MAX_MESSAGE,
    text_counter=message_length,
    media=MediaRule(
        by_url=True,
        max_count=MAX_PHOTOS,
        mime_types=PHOTO_TYPES + VIDEO_TYPES,
        max_bytes=MAX_PHOTO_BYTES,
    ),
    video=VideoRule(
        network="Facebook",
        delivers=True,  # fetched by Facebook from the signed media URL, then processed
        video_codecs=("h264", "hevc"),
        max_bytes=10 * 1024 * 1024 * 1024,
        max_seconds=240 * 60,
        max_count=1,
        mixes_with_images=False,
        source="developers.facebook.com: Video API, Page videos (MP4/MOV, 10 GB, 240 min)",
    ),
    options=(LINK, FIRST_COMMENT),
    counting_rule="characters",
)

REEL_PROFILE = OutputProfile(
    key="facebook.reel",
    text_limit=MAX_MESSAGE,
    text_counter=message_length,
    media=MediaRule(
        by_url=True, max_count=1, mime_types=VIDEO_TYPES, max_bytes=1024**3, required=True
    ),
    video=VideoRule(
        network="Facebook Reels",
        delivers=True,
        video_codecs=("h264", "hevc"),
        max_bytes=1024**3,
        min_seconds=3,
        max_seconds=90,
        min_side=540,
        min_aspect=9 / 16 - 0.01,
        max_aspect=9 / 16 + 0.01,
        max_frame_rate=60,
        source="developers.facebook.com: Reels publishing (9:16, 540x960 or more, 3-90 s)",
    ),
    options=(FIRST_COMMENT,),
    counting_rule="characters",
)

STORY_PROFILE = OutputProfile(
    key="facebook.story",
    text_limit=MAX_MESSAGE,  # a Story shows no text: the publication's text is not sent
    text_counter=message_length,
    media=MediaRule(
        by_url=True,
        max_count=1,
        mime_types=PHOTO_TYPES + VIDEO_TYPES,
        max_bytes=MAX_PHOTO_BYTES,
        required=True,
    ),
    video=VideoRule(
        network="Facebook Stories",
        delivers=True,
        video_codecs=("h264", "hevc"),
        max_bytes=1024**3,
        min_seconds=3,
        max_seconds=60,
        min_side=540,
        source="developers.facebook.com: Page Stories (video 3-60 s, 540x960 or more)",
    ),
    counting_rule="characters (not shown on a Story)",
)

PROFILES = (POST_PROFILE, REEL_PROFILE, STORY_PROFILE)
