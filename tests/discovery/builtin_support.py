"""Plain discovery contexts for the built-in engine's unit tests (no database): a fixed day, a
voice definition, past posts with their outcomes and engagement."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from discovery.context import (
    DeliveryStats,
    DiscoveryContext,
    Engagement,
    Outcome,
    PastPublication,
    PlatformInfo,
    Voice,
)
from discovery.selectors import platform_formats
from voice.definition import clean_definition

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
TODAY = NOW.date()
PROFILE_SAVED = datetime(2026, 2, 10, 9, tzinfo=UTC)


def day(days_ago: int) -> str:
    return (TODAY - timedelta(days=days_ago)).isoformat()


def post(
    post_id: str,
    text: str,
    days_ago: int,
    *outcomes: tuple[str, str] | tuple[str, str, str],
    engagement: Engagement | None = None,
    status: str = "published",
) -> PastPublication:
    """A past post; each outcome is (provider, destination status[, error kind])."""
    return PastPublication(
        id=post_id,
        text=text,
        created_at=NOW - timedelta(days=days_ago),
        status=status,
        outcomes=tuple(Outcome(*outcome) for outcome in outcomes),
        engagement=engagement,
    )


def context(
    definition: dict[str, Any] | None = None,
    *,
    publications: tuple[PastPublication, ...] = (),
    providers: tuple[str, ...] = ("mastodon",),
    focus: str = "",
    audience: str = "",
    limit: int = 8,
    name: str = "Acme Ops",
) -> DiscoveryContext:
    """A context; ``definition`` None means no voice profile at all."""
    voice = (
        Voice("v1", "Voice", clean_definition(definition), PROFILE_SAVED)
        if definition is not None
        else None
    )
    platforms = tuple(
        PlatformInfo(provider, *platform_formats(provider), 1, DeliveryStats())
        for provider in providers
    )
    return DiscoveryContext(
        workspace_id="w1",
        workspace_name=name,
        today=TODAY,
        platforms=platforms,
        limit=limit,
        focus=focus,
        audience=audience,
        voice=voice,
        publications=publications,
    )
