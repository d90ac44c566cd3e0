"""How long a provider asks us to wait: ``Retry-After`` and the providers' rate-limit reset
headers."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from datetime import UTC, datetime


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait, from ``Retry-After`` (seconds or HTTP date) or a provider reset header.

    Understood: ``Retry-After``; Discord ``X-RateLimit-Reset-After`` (seconds);
    ``RateLimit-Reset`` (Bluesky: epoch seconds; IETF draft: delta seconds);
    ``X-RateLimit-Reset`` (Mastodon: ISO 8601 time; others: epoch seconds). The first header in
    that order that can be read decides; one that cannot is passed over.
    """
    now = time.time() if now is None else now
    lowered = {k.lower(): v.strip() for k, v in headers.items()}
    value = lowered.get("retry-after")
    if value and (seconds := _retry_after(value, now)) is not None:
        return seconds
    value = lowered.get("x-ratelimit-reset-after")
    if value and (seconds := _number(value)) is not None:
        return max(0.0, seconds)
    for name in ("ratelimit-reset", "x-ratelimit-reset"):
        value = lowered.get(name)
        if value and (seconds := _reset(value, now)) is not None:
            return seconds
    return None


def _retry_after(value: str, now: float) -> float | None:
    """``Retry-After``: delta seconds, or an HTTP date."""
    seconds = _number(value)
    if seconds is not None:
        return max(0.0, seconds)
    try:
        return _until(email.utils.parsedate_to_datetime(value).timestamp(), now)
    except (TypeError, ValueError, IndexError):
        return None


def _reset(value: str, now: float) -> float | None:
    """A reset header: a number (large values are absolute epoch times, small ones are deltas),
    or an ISO 8601 time (UTC when it names no zone)."""
    seconds = _number(value)
    if seconds is not None:
        return _until(seconds, now) if seconds > 1_000_000_000 else max(0.0, seconds)
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return _until(moment.timestamp(), now)


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _until(moment: float, now: float) -> float:
    return max(0.0, round(moment - now, 3))
