"""The built-in engine's platform treatments: for each card and platform, the format and its
real limits, media suited to the kind of card, an objective, and what the workspace's record
there (and the earlier post, for a follow-up) means for it."""

from __future__ import annotations

import math

from discovery.context import PastPublication, PlatformFormat, PlatformInfo
from discovery.engines.builtin.signals import Seed
from discovery.engines.builtin.text import _clip, _join


def treatment(platform: PlatformInfo, seed: Seed) -> dict[str, str]:
    """How this card works on one platform: the format and its real limits, media that
    suit the kind of card, an objective for the card on that format, and what the
    workspace's record there (and the earlier post, for a follow-up) means for it."""
    fmt = _pick_format(platform.formats, seed)
    rationale = _rationale(platform, fmt)
    if seed.publication is not None and seed.kind in {"follow_up", "covered", "second_chance"}:
        rationale += " " + _earlier_post_note(platform, seed.publication, seed.kind)
    return {
        "platform": platform.provider,
        "format": fmt.key,
        "media": _media(fmt, seed.kind),
        "objective": _objective(fmt, seed.kind),
        "rationale": _clip(rationale, 700),
    }


def _pick_format(formats: tuple[PlatformFormat, ...], seed: Seed) -> PlatformFormat:
    """The provider's default format; a story or how-to prefers a format that carries media."""
    default = formats[0]
    if seed.kind in {"starter", "interview"} and default.media_max_count == 0:
        with_media = [f for f in formats if f.media_max_count > 0]
        if with_media:
            return with_media[0]
    return default


def _media_kinds(types: tuple[str, ...]) -> str:
    kinds = []
    if any(t.startswith("image/") and t != "image/gif" for t in types):
        kinds.append("images")
    if "image/gif" in types:
        kinds.append("GIFs")
    if any(t.startswith("video/") for t in types):
        kinds.append("video")
    return _join(kinds) or "files"


_MEDIA_HINTS = {
    "focus": "a photo, screenshot or chart that shows the point",
    "gap": "a photo, screenshot or diagram of how you do it",
    "covered": "a before-and-after screenshot or chart",
    "follow_up": "a screenshot of the result since, or of the first post",
    "second_chance": "the first post's visual, if it had one",
    "opinion": "none needed, the claim carries it; skip the stock photo",
    "interview": "one real photo or screenshot from the moment",
    "starter": "one strong visual helps the hook land",
}


def _media(fmt: PlatformFormat, kind: str = "starter") -> str:
    if fmt.media_max_count == 0:
        return "Text only: this format takes no media."
    kinds = _media_kinds(fmt.media_types)
    hint = _MEDIA_HINTS.get(kind, _MEDIA_HINTS["starter"])
    if fmt.media_required:
        count = "one" if fmt.media_max_count == 1 else f"1 to {fmt.media_max_count}"
        if kind == "opinion":
            hint = "a plain image of the claim itself works"
        return f"Required: {count} ({kinds}): {hint}; the text becomes the caption."
    return f"Optional: up to {fmt.media_max_count} ({kinds}); {hint}."


_OBJECTIVES = {  # kind -> (short format, long format)
    "focus": (
        "Make one clear point people can act on.",
        "Give your full take, with enough detail to act on.",
    ),
    "gap": (
        "Show your take in one point people can act on.",
        "Teach one repeatable method in enough detail to use it.",
    ),
    "covered": (
        "Go one step deeper than last time, in one point.",
        "Go deeper than last time: the method, the result and the caveats.",
    ),
    "follow_up": (
        "Bring back the first post's readers: lead with what changed.",
        "Bring back the first post's readers: link it, then give the full update.",
    ),
    "second_chance": (
        "Reach the followers who missed it, with a fresh first line.",
        "Reach the followers who missed it: rewrite the opening, keep the substance.",
    ),
    "opinion": (
        "Spark replies: the claim in the first line, then ask who disagrees.",
        "Make the full case, then ask who disagrees and why.",
    ),
    "interview": (
        "Build trust with one first-person moment.",
        "Build trust with the whole first-person story.",
    ),
    "starter": (
        "Start a conversation around one clear point.",
        "Introduce the subject with enough detail to act on.",
    ),
}


def _objective(fmt: PlatformFormat, kind: str = "starter") -> str:
    short, long = _OBJECTIVES.get(kind, _OBJECTIVES["starter"])
    return short if fmt.text_limit <= 500 else long


def _limit_phrase(fmt: PlatformFormat) -> str:
    """ "500 graphemes (each URL counts as 23, …)" from the adapter's counting rule."""
    unit, _, detail = fmt.counting_rule.partition(";")
    detail = detail.strip()
    return f"{fmt.text_limit} {unit.strip()}" + (f" ({detail})" if detail else "")


def _earlier_post_note(platform: PlatformInfo, post: PastPublication, kind: str) -> str:
    statuses = {o.status for o in post.outcomes if o.provider == platform.provider}
    name = platform.display_name
    if "published" in statuses:
        if kind == "second_chance":
            return (
                f"Your {name} followers already saw the first post: post only what is new "
                "here, or leave this platform out."
            )
        return "The first post went out here: reply to it or quote it so the thread stays together."
    if "failed" in statuses:
        return f"The first post failed here, so this is its first real run on {name}."
    return f"The first post did not go to {name}: give readers here one line of context."


def _rationale(platform: PlatformInfo, fmt: PlatformFormat) -> str:
    fit = (
        "Lead with the hook and keep to a single angle."
        if fmt.text_limit <= 500
        else "Room for the hook, two or three points and a closing question."
    )
    if fmt.text_limit > 2000:
        fit = "Room for the full argument; break it into short paragraphs."
    text = f"{platform.display_name} ({fmt.key}): up to {_limit_phrase(fmt)}. {fit}"
    stats = platform.deliveries
    total = stats.published + stats.failed
    if platform.connected_accounts == 0:
        text += (
            f" No {platform.display_name} account is connected yet: connect one before scheduling."
        )
    elif stats.failed and stats.last_error_kind == "auth":
        text += " Your last failed delivery here needed a reconnect: check the account first."
    elif total:
        share = math.floor(100 * stats.published / total)
        text += (
            f" {stats.published} of your last {total} deliveries here were published ({share} %)."
        )
        if stats.failed:
            text += f" Recent failures were {stats.last_error_kind or 'unexplained'}: review them before scheduling."
    else:
        text += " Nothing has gone out here in the last 90 days: a good slot to start."
    return text
