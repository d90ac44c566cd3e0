"""LinkedIn post text: the 3,000-character commentary limit and the "little" text format.

The Posts API stores ``commentary`` in LinkedIn's *little* format, where ``\\ | { } @ [ ] ( )
< > # * _ ~`` are reserved (mentions ``@[Name](urn:li:person:...)``, hashtag templates
``{hashtag|\\#|word}``). A reserved character that is not escaped with a backslash is not
plain text: LinkedIn may cut the post at it (the request still succeeds). Herald's text is
plain text, so :func:`escape_little` escapes every reserved character, except:

* inside links (``https://...``): left as written so LinkedIn still links them;
* ``#`` starting a hashtag (``#word`` at the start or after whitespace): left as written, so
  the hashtag stays a hashtag, as in LinkedIn's own composer.

The limit (3,000) is counted on the text as the user wrote it, before escaping, in Unicode
code points.
"""

from __future__ import annotations

import re

from providers.base import MediaRule, OptionSpec, OutputProfile, VideoRule
from providers.helpers import find_urls

MAX_COMMENTARY = 3000
RESERVED = "\\|{}@[]()<>#*_~"
_HASHTAG = re.compile(r"(?:(?<=\s)|^)#(?=\w)")


def commentary_length(text: str) -> int:
    return len(text)


def _escape_plain(text: str) -> str:
    hashtags = {m.start() for m in _HASHTAG.finditer(text)}
    return "".join(
        "\\" + char if char in RESERVED and index not in hashtags else char
        for index, char in enumerate(text)
    )


def escape_little(text: str) -> str:
    """``text`` as little-format commentary that LinkedIn shows exactly as written."""
    pieces = []
    last = 0
    for start, end, _url in find_urls(text):
        pieces.append(_escape_plain(text[last:start]))
        pieces.append(text[start:end])
        last = end
    pieces.append(_escape_plain(text[last:]))
    return "".join(pieces)


def unescape_little(text: str) -> str:
    """Plain text of little-format commentary (reconcile compares plain texts)."""
    return re.sub(r"\\(.)", r"\1", text, flags=re.DOTALL)


def comparable_text(text: str) -> str:
    return " ".join(text.split())


POST_PROFILE = OutputProfile(
    key="linkedin.post",
    text_limit=MAX_COMMENTARY,
    text_counter=commentary_length,
    media=MediaRule(
        # One image (content.media), a multi-image post of 2-20, or one video alone.
        max_count=20,
        mime_types=("image/jpeg", "image/png", "image/gif", "video/mp4"),
        # Herald's bound for images (LinkedIn bounds them by pixels); a video is held to the
        # video rule's size.
        max_bytes=8 * 1024 * 1024,
    ),
    video=VideoRule(
        network="LinkedIn",
        # Sent through the Videos API as a long send: uploaded, processed by LinkedIn while
        # no worker waits, then posted (providers/linkedin/video.py).
        delivers=True,
        containers=("mp4",),
        audio_codecs=("aac", "mp3"),
        max_bytes=500 * 1024 * 1024,
        min_bytes=75 * 1024,
        min_seconds=3,
        max_seconds=30 * 60,
        min_aspect=1 / 2.4,
        max_aspect=2.4,
        max_frame_rate=60,
        source="learn.microsoft.com: LinkedIn Videos API (MP4, 75 KB-500 MB, 3 s-30 min)",
    ),
    # The post's author: the member (default) or an organization page the member administers
    # (a ``urn:li:organization:<id>`` from the destination options).
    options=(OptionSpec("author", max_length=80),),
    counting_rule="characters (Unicode code points, before escaping)",
)
