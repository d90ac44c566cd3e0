"""Reads that gather a workspace's own material for discovery. Reads only: nothing here writes,
and nothing here talks to a provider (capability metadata is static adapter data)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Prefetch
from django.utils import timezone

from config.types import ModelId
from discovery.context import (
    DeliveryStats,
    DiscoveryContext,
    Engagement,
    Outcome,
    PastPublication,
    PlatformFormat,
    PlatformInfo,
    Voice,
)
from providers import PROVIDERS, get_adapter
from publishing.models import Account, Destination, Publication, PublicationEvent
from voice.definition import stored_definition
from voice.models import VoiceProfile
from workspaces.models import Workspace

RECENT_DAYS = 90
RECENT_PUBLICATIONS = 40
RECENT_DESTINATIONS = 2000  # bounds the delivery record read for the treatments
PENDING = {
    Destination.Status.SCHEDULED,
    Destination.Status.QUEUED,
    Destination.Status.SENDING,
    Destination.Status.RETRY_WAIT,
    Destination.Status.AMBIGUOUS,
    Destination.Status.BLOCKED,
}


def publishable_providers() -> list[str]:
    """Providers Herald can publish to on this instance (not disabled by the operator)."""
    disabled = set(getattr(settings, "HERALD_DISABLED_PROVIDERS", []) or [])
    return [provider for provider in PROVIDERS if provider not in disabled]


def platform_formats(provider: str) -> tuple[str, tuple[PlatformFormat, ...]]:
    capabilities = get_adapter(provider).capabilities
    formats = tuple(
        PlatformFormat(
            key=profile.key,
            text_limit=profile.text_limit,
            counting_rule=profile.counting_rule,
            text_required=profile.text_required,
            media_max_count=profile.media.max_count,
            media_types=tuple(profile.media.mime_types),
            media_required=profile.media.required,
        )
        for profile in capabilities.profiles
    )
    return capabilities.display_name, formats


def _engagement(publication_ids: Sequence[ModelId]) -> dict[str, Engagement]:
    """Engagement where known: the latest ``metrics`` ({likes, comments, reposts, views})
    recorded in a publication event, per destination (or per publication), summed."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    events = (
        PublicationEvent.objects.filter(publication_id__in=publication_ids, data__has_key="metrics")
        .order_by("id")
        .values_list("publication_id", "destination_id", "data")
    )
    for publication_id, destination_id, data in events:
        metrics = data.get("metrics") if isinstance(data, dict) else None
        if isinstance(metrics, dict):
            latest[(str(publication_id), str(destination_id or ""))] = metrics
    totals: dict[str, Engagement] = {}
    for (publication_key, _), metrics in latest.items():

        def number(name: str, metrics: dict[str, Any] = metrics) -> int:
            value = metrics.get(name)
            return value if isinstance(value, int) and value >= 0 else 0

        before = totals.get(publication_key, Engagement())
        totals[publication_key] = Engagement(
            likes=before.likes + number("likes"),
            comments=before.comments + number("comments"),
            reposts=before.reposts + number("reposts"),
            views=before.views + number("views"),
        )
    return totals


def recent_publications(*, workspace: Workspace) -> list[PastPublication]:
    since = timezone.now() - timedelta(days=RECENT_DAYS)
    destinations = Destination.objects.select_related("account").only(
        "publication_id", "status", "error_kind", "position", "account__provider"
    )
    rows = list(
        Publication.objects.filter(workspace=workspace, created_at__gte=since)
        .exclude(status=Publication.Status.CANCELED)
        .order_by("-created_at", "-id")
        .prefetch_related(Prefetch("destinations", queryset=destinations))[:RECENT_PUBLICATIONS]
    )
    engagement = _engagement([row.pk for row in rows])
    return [
        PastPublication(
            id=str(row.pk),
            text=row.text,
            created_at=row.created_at,
            status=row.status,
            outcomes=tuple(
                Outcome(provider=d.account.provider, status=d.status, error_kind=d.error_kind)
                for d in row.destinations.all()
            ),
            engagement=engagement.get(str(row.pk)),
        )
        for row in rows
    ]


def delivery_stats(*, workspace: Workspace, providers: list[str]) -> dict[str, DeliveryStats]:
    since = timezone.now() - timedelta(days=RECENT_DAYS)
    rows = (
        Destination.objects.filter(
            publication__workspace=workspace,
            publication__created_at__gte=since,
            account__provider__in=providers,
        )
        .order_by("-updated_at", "-id")
        .values_list("account__provider", "status", "error_kind", "published_at")[
            :RECENT_DESTINATIONS
        ]
    )
    counts: dict[str, dict[str, Any]] = defaultdict(
        lambda: {
            "published": 0,
            "failed": 0,
            "pending": 0,
            "last_error_kind": "",
            "last_published_at": None,
        }
    )
    for provider, status, error_kind, published_at in rows:
        entry = counts[provider]
        if status == Destination.Status.PUBLISHED:
            entry["published"] += 1
            if entry["last_published_at"] is None or (
                published_at is not None and published_at > entry["last_published_at"]
            ):
                entry["last_published_at"] = published_at
        elif status == Destination.Status.FAILED:
            entry["failed"] += 1
            if not entry["last_error_kind"]:
                entry["last_error_kind"] = error_kind or "unknown"
        elif status in PENDING:
            entry["pending"] += 1
    return {provider: DeliveryStats(**counts[provider]) for provider in providers}


def discovery_context(
    *,
    workspace: Workspace,
    platforms: list[str],
    limit: int,
    focus: str,
    audience: str,
    voice_profile: VoiceProfile | None,
) -> DiscoveryContext:
    accounts = dict(
        Account.objects.filter(
            workspace=workspace, provider__in=platforms, status=Account.Status.ACTIVE
        )
        .values_list("provider")
        .annotate(n=Count("id"))
        .values_list("provider", "n")
    )
    stats = delivery_stats(workspace=workspace, providers=platforms)
    infos = []
    for provider in platforms:
        display_name, formats = platform_formats(provider)
        infos.append(
            PlatformInfo(
                provider=provider,
                display_name=display_name,
                formats=formats,
                connected_accounts=int(accounts.get(provider, 0)),
                deliveries=stats[provider],
            )
        )
    voice = None
    if voice_profile is not None:
        voice = Voice(
            profile_id=str(voice_profile.pk),
            name=voice_profile.name,
            definition=stored_definition(voice_profile.definition),
            updated_at=voice_profile.updated_at,
        )
    return DiscoveryContext(
        workspace_id=str(workspace.pk),
        workspace_name=workspace.name,
        today=timezone.now().date(),
        platforms=tuple(infos),
        limit=limit,
        focus=focus,
        audience=audience,
        voice=voice,
        publications=tuple(recent_publications(workspace=workspace)),
    )
