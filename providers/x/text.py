"""X's weighted post length (the twitter-text "v3" configuration) and the post format.

The rule, from twitter-text's published v3 configuration and its ``parseTweet``:

* the text is NFC-normalized first;
* every URL counts as 23 (``transformedURLLength``: X wraps every link in a t.co link), with or
  without ``http(s)://`` (``example.com`` is a link on X too);
* every emoji counts as 2, however many code points it is made of (skin tones, ZWJ families,
  flags, keycaps);
* every other code point counts 1 in U+0000-U+10FF, U+2000-U+200D, U+2010-U+201F and
  U+2032-U+2037, and 2 anywhere else (CJK, most symbols, ``…``, ``€``);
* the limit is 280.

Protocol-less links are recognized for the country-code TLDs and the common generic TLDs listed
below (twitter-text knows every IANA TLD): a rarer generic TLD written without ``https://`` is
counted as plain text here, so X may find such a text longer than Herald did and refuse it.
"""

from __future__ import annotations

import html
import re
import unicodedata

import grapheme

from providers.base import MediaRule, OutputProfile, VideoRule
from providers.emoji import is_emoji
from providers.helpers import find_urls

MAX_WEIGHTED_LENGTH = 280
VIDEO_TYPES = ("video/mp4", "video/quicktime")
URL_WEIGHT = 23
_LIGHT_RANGES = ((0x0000, 0x10FF), (0x2000, 0x200D), (0x2010, 0x201F), (0x2032, 0x2037))

_CCTLDS = [
    "ac",
    "ad",
    "ae",
    "af",
    "ag",
    "ai",
    "al",
    "am",
    "an",
    "ao",
    "aq",
    "ar",
    "as",
    "at",
    "au",
    "aw",
    "ax",
    "az",
    "ba",
    "bb",
    "bd",
    "be",
    "bf",
    "bg",
    "bh",
    "bi",
    "bj",
    "bl",
    "bm",
    "bn",
    "bo",
    "bq",
    "br",
    "bs",
    "bt",
    "bv",
    "bw",
    "by",
    "bz",
    "ca",
    "cc",
    "cd",
    "cf",
    "cg",
    "ch",
    "ci",
    "ck",
    "cl",
    "cm",
    "cn",
    "co",
    "cr",
    "cu",
    "cv",
    "cw",
    "cx",
    "cy",
    "cz",
    "de",
    "dj",
    "dk",
    "dm",
    "do",
    "dz",
    "ec",
    "ee",
    "eg",
    "eh",
    "er",
    "es",
    "et",
    "eu",
    "fi",
    "fj",
    "fk",
    "fm",
    "fo",
    "fr",
    "ga",
    "gb",
    "gd",
    "ge",
    "gf",
    "gg",
    "gh",
    "gi",
    "gl",
    "gm",
    "gn",
    "gp",
    "gq",
    "gr",
    "gs",
    "gt",
    "gu",
    "gw",
    "gy",
    "hk",
    "hm",
    "hn",
    "hr",
    "ht",
    "hu",
    "id",
    "ie",
    "il",
    "im",
    "in",
    "io",
    "iq",
    "ir",
    "is",
    "it",
    "je",
    "jm",
    "jo",
    "jp",
    "ke",
    "kg",
    "kh",
    "ki",
    "km",
    "kn",
    "kp",
    "kr",
    "kw",
    "ky",
    "kz",
    "la",
    "lb",
    "lc",
    "li",
    "lk",
    "lr",
    "ls",
    "lt",
    "lu",
    "lv",
    "ly",
    "ma",
    "mc",
    "md",
    "me",
    "mf",
    "mg",
    "mh",
    "mk",
    "ml",
    "mm",
    "mn",
    "mo",
    "mp",
    "mq",
    "mr",
    "ms",
    "mt",
    "mu",
    "mv",
    "mw",
    "mx",
    "my",
    "mz",
    "na",
    "nc",
    "ne",
    "nf",
    "ng",
    "ni",
    "nl",
    "no",
    "np",
    "nr",
    "nu",
    "nz",
    "om",
    "pa",
    "pe",
    "pf",
    "pg",
    "ph",
    "pk",
    "pl",
    "pm",
    "pn",
    "pr",
    "ps",
    "pt",
    "pw",
    "py",
    "qa",
    "re",
    "ro",
    "rs",
    "ru",
    "rw",
    "sa",
    "sb",
    "sc",
    "sd",
    "se",
    "sg",
    "sh",
    "si",
    "sj",
    "sk",
    "sl",
    "sm",
    "sn",
    "so",
    "sr",
    "ss",
    "st",
    "su",
    "sv",
    "sx",
    "sy",
    "sz",
    "tc",
    "td",
    "tf",
    "tg",
    "th",
    "tj",
    "tk",
    "tl",
    "tm",
    "tn",
    "to",
    "tp",
    "tr",
    "tt",
    "tv",
    "tw",
    "tz",
    "ua",
    "ug",
    "uk",
    "um",
    "us",
    "uy",
    "uz",
    "va",
    "vc",
    "ve",
    "vg",
    "vi",
    "vn",
    "vu",
    "wf",
    "ws",
    "ye",
    "yt",
    "za",
    "zm",
    "zw",
]
_GTLDS = [
    "com",
    "net",
    "org",
    "edu",
    "gov",
    "mil",
    "int",
    "info",
    "biz",
    "name",
    "pro",
    "aero",
    "coop",
    "museum",
    "mobi",
    "jobs",
    "travel",
    "tel",
    "asia",
    "cat",
    "xyz",
    "app",
    "dev",
    "page",
    "blog",
    "news",
    "shop",
    "store",
    "online",
    "site",
    "website",
    "tech",
    "cloud",
    "art",
    "design",
    "social",
    "live",
    "media",
    "today",
    "world",
    "life",
    "space",
    "club",
    "email",
    "link",
    "wiki",
    "digital",
    "studio",
    "agency",
    "network",
    "systems",
    "solutions",
    "group",
    "company",
    "services",
    "global",
    "help",
    "support",
    "academy",
    "school",
    "foundation",
    "events",
    "photo",
    "photos",
    "video",
    "music",
    "games",
    "zone",
    "top",
    "icu",
    "fun",
    "gay",
    "bio",
    "eco",
    "ltd",
    "llc",
    "inc",
]
_TLDS = "|".join(sorted(_CCTLDS + _GTLDS, key=len, reverse=True))
_BARE_DOMAIN_RE = re.compile(
    r"(?<![\w@#$\uff20\uff03.\-/])"  # not inside a word, a mention, a hashtag or another URL
    rf"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:{_TLDS})(?![\w-])"
    r"(?::\d{1,5})?(?:/[^\s<>\"]*)?",
    re.IGNORECASE,
)
_TRAILING = ".,:;!?'\")]}»…"


def _url_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every link X would shorten: http(s) URLs, then bare domains."""
    spans = [(start, end) for start, end, _url in find_urls(text)]
    for match in _BARE_DOMAIN_RE.finditer(text):
        start, end = match.span()
        while end > start and text[end - 1] in _TRAILING:
            end -= 1
        if not any(s <= start < e for s, e in spans):
            spans.append((start, end))
    return sorted(spans)


def _weight(code_point: int) -> int:
    return 1 if any(lo <= code_point <= hi for lo, hi in _LIGHT_RANGES) else 2


def _plain_length(text: str) -> int:
    total = 0
    for cluster in grapheme.graphemes(text):
        total += 2 if is_emoji(cluster) else sum(_weight(ord(ch)) for ch in cluster)
    return total


def x_weighted_length(text: str) -> int:
    """The length X gives ``text`` (limit 280); see the module docstring."""
    text = unicodedata.normalize("NFC", text)
    total = 0
    last = 0
    for start, end in _url_spans(text):
        total += _plain_length(text[last:start]) + URL_WEIGHT
        last = end
    return total + _plain_length(text[last:])


def comparable_text(text: str) -> str:
    """What reconcile compares: X returns a post's text with its links replaced by t.co links,
    a t.co link to attached media appended, and ``&``/``<``/``>`` HTML-escaped. Links are
    dropped, whitespace collapsed."""
    text = unicodedata.normalize("NFC", html.unescape(text))
    pieces = []
    last = 0
    for start, end in _url_spans(text):
        pieces.append(text[last:start])
        last = end
    pieces.append(text[last:])
    return " ".join("".join(pieces).split())


POST_PROFILE = OutputProfile(
    key="x.post",
    text_limit=MAX_WEIGHTED_LENGTH,
    text_counter=x_weighted_length,
    media=MediaRule(
        # Up to 4 images, or one GIF or one video alone (checked by the adapter).
        max_count=4,
        mime_types=("image/jpeg", "image/png", "image/webp", "image/gif", *VIDEO_TYPES),
        # Images; a video is held to the video rule's size.
        max_bytes=5 * 1024 * 1024,
    ),
    video=VideoRule(
        network="X",
        # Sent through the chunked media upload as a long send: uploaded, processed by X while
        # no worker waits, then posted (providers/x/video.py).
        delivers=True,
        max_bytes=512 * 1024 * 1024,
        min_seconds=0.5,
        max_seconds=140,
        min_side=32,
        max_width=1280,
        max_height=1024,
        min_aspect=1 / 3,
        max_aspect=3,
        max_frame_rate=60,
        source="docs.x.com: media upload best practices (one video per post, 512 MB, 0.5-140 s)",
    ),
    counting_rule=(
        "weighted characters (twitter-text v3): most Latin-script characters 1, CJK and other "
        "characters 2, each emoji 2, each link 23"
    ),
)
