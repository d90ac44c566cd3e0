"""A network's video rules (``OutputProfile.video``) applied to the media of one destination.

Checked when a publication is created or replaced (a ``processing`` video passes what its probe
cannot tell yet) and again when it is scheduled or published (every video must then be
``ready``). Each broken rule is one message, in words, naming the network, the limit and what
to change. The probe worker already converted what it cheaply could to MP4 (H.264/AAC)
(``publishing.services.video_convert``); a video whose conversion stopped at its bounds says so.
"""

from __future__ import annotations

from typing import Any

from config.errors import field_error
from providers.base import OutputProfile, VideoRule
from publishing.models import Media


def is_video(media: Media) -> bool:
    return media.mime_type.startswith("video/")


def destination_video_errors(
    profile: OutputProfile, items: list[tuple[str, Media]]
) -> list[dict[str, Any]]:
    """Problems (location, message) for the ``(location, media)`` items of one destination."""
    videos = [(location, m) for location, m in items if is_video(m)]
    if not videos:
        return []
    rule = profile.video
    if rule is None or not rule.delivers:
        network = rule.network if rule is not None else profile.key.split(".", 1)[0].title()
        return [
            field_error(location, f"{network}: video is not supported yet.")
            for location, _ in videos
        ]
    errors: list[dict[str, Any]] = []
    if len(videos) > rule.max_count:
        for location, _ in videos[rule.max_count :]:
            errors.append(
                field_error(
                    location, f"{rule.network}: at most {rule.max_count} video(s) per post."
                )
            )
    if not rule.mixes_with_images and len(videos) < len(items):
        for location, _ in videos:
            errors.append(
                field_error(
                    location,
                    f"{rule.network}: a video cannot share a post with images; post it alone.",
                )
            )
    for location, media in videos:
        errors.extend(field_error(location, message) for message in video_messages(rule, media))
    return errors


def video_messages(rule: VideoRule, media: Media) -> list[str]:
    """What breaks ``rule`` in one video; what is not probed yet is not judged."""
    n = rule.network
    if media.status == Media.Status.FAILED:
        return [f"This video failed processing: {media.failure_reason} Upload it again."]
    out: list[str] = []
    if rule.max_bytes and media.size_bytes > rule.max_bytes:
        out.append(
            f"{n}: videos up to {_mb(rule.max_bytes)}; this one is {_mb(media.size_bytes)}. "
            "Lower the bit rate or shorten it."
        )
    if rule.min_bytes and media.size_bytes < rule.min_bytes:
        out.append(
            f"{n}: videos of at least {_kb(rule.min_bytes)}; this one is "
            f"{_kb(media.size_bytes)}. Export it at a higher quality or make it longer."
        )
    facts = media.probe or {}
    if not facts:
        return out
    before_format = len(out)
    container = facts.get("container")
    if rule.containers and container not in rule.containers:
        out.append(
            f"{n}: videos in {_names(rule.containers)}; this one is {container}. "
            "Re-export it as MP4 (H.264/AAC)."
        )
    codec = facts.get("video_codec")
    if rule.video_codecs and codec not in rule.video_codecs:
        out.append(
            f"{n}: video encoded as {_names(rule.video_codecs)}; this one is {codec}. "
            "Re-encode it as H.264."
        )
    audio = facts.get("audio_codec")
    if audio and rule.audio_codecs and audio not in rule.audio_codecs:
        out.append(
            f"{n}: sound encoded as {_names(rule.audio_codecs)}; this one is {audio}. "
            "Re-encode the sound as AAC."
        )
    if len(out) > before_format and facts.get("conversion_stopped"):
        out.append(f"Herald did not convert it: {facts['conversion_stopped']}")
    out.extend(_duration(rule, facts.get("duration_seconds")))
    out.extend(_picture(rule, facts))
    return out


def _duration(rule: VideoRule, seconds: float | None) -> list[str]:
    if seconds is None:
        return []
    n = rule.network
    if rule.max_seconds and seconds > rule.max_seconds:
        return [
            f"{n}: videos up to {_seconds(rule.max_seconds)}; this one is {_seconds(seconds)}. "
            "Shorten it."
        ]
    if rule.min_seconds and seconds < rule.min_seconds:
        return [
            f"{n}: videos of at least {_seconds(rule.min_seconds)}; this one is "
            f"{_seconds(seconds)}."
        ]
    return []


def _picture(rule: VideoRule, facts: dict[str, Any]) -> list[str]:
    n = rule.network
    width, height = int(facts.get("width") or 0), int(facts.get("height") or 0)
    if facts.get("rotation") in (90, 270):
        width, height = height, width  # as it is shown
    out: list[str] = []
    if width and height:
        if (rule.max_width and width > rule.max_width) or (
            rule.max_height and height > rule.max_height
        ):
            out.append(
                f"{n}: videos up to {rule.max_width or 'any'} x {rule.max_height or 'any'} px; "
                f"this one is {width} x {height} px. Scale it down."
            )
        if rule.min_side and min(width, height) < rule.min_side:
            out.append(
                f"{n}: videos at least {rule.min_side} px per side; this one is "
                f"{width} x {height} px."
            )
        ratio = width / height
        if (rule.min_aspect and ratio < rule.min_aspect - 1e-6) or (
            rule.max_aspect and ratio > rule.max_aspect + 1e-6
        ):
            out.append(
                f"{n}: aspect ratios from {_ratio(rule.min_aspect)} to {_ratio(rule.max_aspect)}; "
                f"this one is {width}:{height}. Crop or pad it."
            )
    return out + _frame_rate(rule, facts.get("frame_rate"))


def _frame_rate(rule: VideoRule, rate: float | None) -> list[str]:
    n = rule.network
    if rule.max_frame_rate and rate and rate > rule.max_frame_rate + 0.01:
        return [
            f"{n}: up to {rule.max_frame_rate:g} frames per second; this one has {rate:g}. "
            "Re-export it at a lower frame rate."
        ]
    if rule.min_frame_rate and rate and rate < rule.min_frame_rate - 0.01:
        return [
            f"{n}: at least {rule.min_frame_rate:g} frames per second; this one has {rate:g}. "
            "Re-export it at a higher frame rate."
        ]
    return []


def _names(values: tuple[str, ...]) -> str:
    return ", ".join(v.upper() if len(v) <= 4 else v for v in values)


def _mb(size: int) -> str:
    """Binary megabytes when the size is a whole number of them (limits such as X's 512 MB),
    decimal ones otherwise (Bluesky's 100 MB is 100,000,000 bytes)."""
    if size % (1024 * 1024) == 0:
        return f"{size // (1024 * 1024)} MB"
    return f"{size / 1_000_000:.1f} MB".replace(".0 MB", " MB")


def _kb(size: int) -> str:
    """Kilobytes of 1,024 bytes, the unit LinkedIn states its smallest video in."""
    return f"{size / 1024:.0f} KB" if size % 1024 else f"{size // 1024} KB"


def _seconds(value: float) -> str:
    return f"{value:g} s" if value == int(value) else f"{value:.1f} s"


def _ratio(value: float) -> str:
    if not value:
        return "any"
    return f"{value:g}:1" if value >= 1 else f"1:{1 / value:g}"
