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
    ``X-RateLimit-Reset`` (Mastodon: ISO 8601 time; others: epoch seconds).
    """
    now = time.time() if now is None else now
    lowered = {k.lower(): v.strip() for k, v in headers.items()}

    def number(value: str) -> float | None:
        try:
            return float(value)
        except ValueError:
            return None

    def until(moment: float) -> float:
        return max(0.0, round(moment - now, 3))

    value = lowered.get("retry-after")
    if value:
        seconds = number(value)
        if seconds is not None:
            return max(0.0, seconds)
        try:
            return until(email.utils.parsedate_to_datetime(value).timestamp())
        except (TypeError, ValueError, IndexError):
            pass
    value = lowered.get("x-ratelimit-reset-after")
    if value and (seconds := number(value)) is not None:
        return max(0.0, seconds)
    for name in ("ratelimit-reset", "x-ratelimit-reset"):
        value = lowered.get(name)
        if not value:
            continue
        seconds = number(value)
        if seconds is not None:
            # Large values are absolute epoch times, small ones are deltas.
            return until(seconds) if seconds > 1_000_000_000 else max(0.0, seconds)
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            continue
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return until(moment.timestamp())
    return None
