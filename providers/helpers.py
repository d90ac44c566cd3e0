"""Helpers shared by provider adapters: URL matching in post text, reading media, the pre-checks
a request must pass before any upload, language options, compact JSON and the time bound on a
network processing a video."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from providers.base import (
    ErrorKind,
    MediaItem,
    OutputProfile,
    ProviderError,
    PublishRequest,
)

URL_RE = re.compile(r"(?<![\w@/.])https?://[^\s<>\"'`]+", re.IGNORECASE)
_TRAILING = ".,:;!?'\")]}»…"


def find_urls(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, url)`` of http(s) URLs in ``text`` (character offsets), trailing
    punctuation excluded unless it closes a parenthesis opened inside the URL."""
    found = []
    for match in URL_RE.finditer(text):
        url = match.group(0)
        while url and url[-1] in _TRAILING:
            if url[-1] == ")" and url.count("(") >= url.count(")"):
                break
            url = url[:-1]
        if len(url) > len("https://"):
            found.append((match.start(), match.start() + len(url), url))
    return found


def read_media(item: MediaItem, *, provider: str, max_bytes: int) -> bytes:
    stream = item.open()
    try:
        payload = stream.read(max_bytes + 1)
    finally:
        stream.close()
    if len(payload) > max_bytes:
        raise ProviderError(
            ErrorKind.PERMANENT, f"{provider}: {item.name} is larger than {max_bytes} bytes."
        )
    return bytes(payload)


def precheck(profile: OutputProfile, request: PublishRequest, *, provider: str) -> None:
    """Refuse, before any upload, what the profile says the provider will refuse: its media,
    then its text, then its options (the first refusal is the one reported)."""
    _check_media(profile, request, provider=provider)
    _check_text(profile, request, provider=provider)
    _check_options(profile, request, provider=provider)
    rules = profile.content_rules
    found = rules([i.mime_type for i in request.media], request.options) if rules else []
    if found:
        raise ProviderError(ErrorKind.PERMANENT, f"{provider}: {found[0][1]}")


def _item_bound(profile: OutputProfile, item: MediaItem) -> int:
    """A video is held to the network's video size when the format sends video and names one
    (LinkedIn's 500 MB beside its 8 MB images); anything else to the media rule's."""
    video = profile.video
    if item.mime_type.startswith("video/") and video and video.delivers and video.max_bytes:
        return video.max_bytes
    return profile.media.max_bytes


def _check_media(profile: OutputProfile, request: PublishRequest, *, provider: str) -> None:
    rule = profile.media
    if len(request.media) > rule.max_count:
        raise ProviderError(
            ErrorKind.PERMANENT, f"{provider}: at most {rule.max_count} media item(s) per post."
        )
    if rule.required and not request.media:
        raise ProviderError(ErrorKind.PERMANENT, f"{provider}: this format needs an image.")
    for item in request.media:
        if item.mime_type not in rule.mime_types:
            raise ProviderError(
                ErrorKind.PERMANENT, f"{provider}: media type {item.mime_type} is not accepted."
            )
        if item.size > (bound := _item_bound(profile, item)):
            raise ProviderError(
                ErrorKind.PERMANENT, f"{provider}: {item.name} is larger than {bound} bytes."
            )


def _check_text(profile: OutputProfile, request: PublishRequest, *, provider: str) -> None:
    if profile.text_required and not request.text.strip():
        raise ProviderError(ErrorKind.PERMANENT, f"{provider}: text is required.")
    if not request.text.strip() and not request.media:
        raise ProviderError(ErrorKind.PERMANENT, f"{provider}: nothing to publish.")
    if any(char in request.text for char in profile.text_forbidden):
        raise ProviderError(
            ErrorKind.PERMANENT,
            f"{provider}: the text may not contain {' or '.join(profile.text_forbidden)}.",
        )
    length = profile.text_counter(request.text)
    if length > profile.text_limit:
        raise ProviderError(
            ErrorKind.PERMANENT,
            f"{provider}: text is {length} long ({profile.counting_rule}); "
            f"the limit is {profile.text_limit}.",
        )
    problems = profile.text_rules(request.text) if profile.text_rules else []
    if problems:
        raise ProviderError(ErrorKind.PERMANENT, f"{provider}: {problems[0]}")


def _check_options(profile: OutputProfile, request: PublishRequest, *, provider: str) -> None:
    """An option left empty is refused only when it is required and has no default."""
    for spec in profile.options:
        value = request.options.get(spec.name)
        if value in (None, ""):
            if spec.required and spec.default is None:
                raise ProviderError(
                    ErrorKind.PERMANENT, f"{provider}: option {spec.name} is required."
                )
            continue
        if spec.choices and value not in spec.choices:
            raise ProviderError(
                ErrorKind.PERMANENT, f"{provider}: option {spec.name} has an unsupported value."
            )
        if len(value) > spec.max_length:
            raise ProviderError(ErrorKind.PERMANENT, f"{provider}: option {spec.name} is too long.")
        if any(char in value for char in spec.forbidden):
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{provider}: option {spec.name} may not contain {' or '.join(spec.forbidden)}.",
            )


# ISO 639-1 code -> (English name, endonym). Used for language destination options.
LANGUAGES: dict[str, tuple[str, str]] = {
    "ar": ("Arabic", "العربية"),
    "bg": ("Bulgarian", "Български"),
    "ca": ("Catalan", "Català"),
    "cs": ("Czech", "Čeština"),
    "cy": ("Welsh", "Cymraeg"),
    "da": ("Danish", "Dansk"),
    "de": ("German", "Deutsch"),
    "el": ("Greek", "Ελληνικά"),
    "en": ("English", "English"),
    "eo": ("Esperanto", "Esperanto"),
    "es": ("Spanish", "Español"),
    "eu": ("Basque", "Euskara"),
    "fa": ("Persian", "فارسی"),
    "fi": ("Finnish", "Suomi"),
    "fr": ("French", "Français"),
    "ga": ("Irish", "Gaeilge"),
    "gl": ("Galician", "Galego"),
    "he": ("Hebrew", "עברית"),
    "hi": ("Hindi", "हिन्दी"),
    "hu": ("Hungarian", "Magyar"),
    "id": ("Indonesian", "Bahasa Indonesia"),
    "is": ("Icelandic", "Íslenska"),
    "it": ("Italian", "Italiano"),
    "ja": ("Japanese", "日本語"),
    "ko": ("Korean", "한국어"),
    "nl": ("Dutch", "Nederlands"),
    "no": ("Norwegian", "Norsk"),
    "pl": ("Polish", "Polski"),
    "pt": ("Portuguese", "Português"),
    "ro": ("Romanian", "Română"),
    "ru": ("Russian", "Русский"),
    "sk": ("Slovak", "Slovenčina"),
    "sv": ("Swedish", "Svenska"),
    "th": ("Thai", "ไทย"),
    "tr": ("Turkish", "Türkçe"),
    "uk": ("Ukrainian", "Українська"),
    "vi": ("Vietnamese", "Tiếng Việt"),
    "zh": ("Chinese", "中文"),
}


def language_options(language: str = "en") -> list[dict[str, str]]:
    """Language choices. Labels: English names for English (and unknown) requests, otherwise each
    language's own name (readable by its speakers whatever the UI language)."""
    english = (
        not language
        or language.lower().split("-")[0] not in LANGUAGES
        or language.lower().startswith("en")
    )
    items = [
        {"label": names[0] if english else names[1], "value": code}
        for code, names in LANGUAGES.items()
    ]
    return sorted(items, key=lambda item: item["label"].casefold())


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def check_processing_time(provider: str, started_at: float, limit: float) -> None:
    """A network still processing a video ``limit`` seconds after ``started_at`` (a Unix time)
    fails the attempt as temporary: the next one sends the video again."""
    if time.time() - started_at > limit:
        raise ProviderError(
            ErrorKind.TRANSIENT,
            f"{provider}: the video was still processing after {int(limit // 60)} minutes.",
        )
