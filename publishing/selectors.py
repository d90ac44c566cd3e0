"""Reads for publishing. Every read checks workspace access first."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db.models import Prefetch, QuerySet

from config.api.pagination import Page, keyset_page
from config.api.problems import RequestValidationError
from config.errors import FieldValidationError, NotFoundError, PermissionDeniedError
from config.types import ModelId
from providers import get_adapter
from providers.base import describe
from publishing.models import Account, Destination, Media, Publication, PublicationEvent
from readiness.projection import provider_readiness_projection
from workspaces.access import Actor, parse_id, require_workspace


def account_page(
    *,
    actor: Actor,
    workspace_id: ModelId,
    limit: int,
    cursor: str | None,
    provider: str | None = None,
) -> Page[Account]:
    access = require_workspace(actor, workspace_id)
    queryset = Account.objects.filter(workspace=access.workspace).exclude(
        status=Account.Status.DISCONNECTED
    )
    if provider:
        queryset = queryset.filter(provider=provider)
    return keyset_page(
        queryset, list_key=f"accounts:{access.workspace.pk}", limit=limit, cursor=cursor
    )


def media_page(
    *, actor: Actor, workspace_id: ModelId, limit: int, cursor: str | None
) -> Page[Media]:
    access = require_workspace(actor, workspace_id)
    return keyset_page(
        Media.objects.filter(workspace=access.workspace),
        list_key=f"media:{access.workspace.pk}",
        limit=limit,
        cursor=cursor,
    )


def _with_destinations(queryset: QuerySet[Publication]) -> QuerySet[Publication]:
    # ``voice_override`` is the voice app's one-to-one row: joined here so lists show it without N+1.
    return queryset.select_related("voice_override").prefetch_related(
        Prefetch(
            "destinations",
            queryset=Destination.objects.select_related("account").order_by("position"),
        )
    )


def _scheduled_within(
    queryset: QuerySet[Publication], after: datetime | None, before: datetime | None
) -> QuerySet[Publication]:
    """Publications scheduled in [after, before) (a calendar's window); 422 when reversed."""
    if after is not None and before is not None and before <= after:
        raise FieldValidationError.at(
            "query.scheduled_before",
            "Must be later than scheduled_after.",
            value=before.isoformat(),
        )
    if after is not None:
        queryset = queryset.filter(scheduled_at__gte=after)
    if before is not None:
        queryset = queryset.filter(scheduled_at__lt=before)
    return queryset


def publication_page(
    *,
    actor: Actor,
    workspace_id: ModelId,
    limit: int,
    cursor: str | None,
    status: str | None = None,
    account_id: ModelId | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    scheduled_window: tuple[datetime | None, datetime | None] = (None, None),
) -> Page[Publication]:
    access = require_workspace(actor, workspace_id)
    queryset = _scheduled_within(
        Publication.objects.filter(workspace=access.workspace), *scheduled_window
    )
    if status:
        queryset = queryset.filter(status=status)
    if account_id:
        try:
            account_pk = parse_id(account_id, what="account")
        except NotFoundError:
            raise RequestValidationError(
                {"account_id": ["Not a valid account ID."]}, location="query"
            ) from None
        queryset = queryset.filter(destinations__account_id=account_pk).distinct()
    if created_after:
        queryset = queryset.filter(created_at__gte=created_after)
    if created_before:
        queryset = queryset.filter(created_at__lt=created_before)
    key = f"publications:{access.workspace.pk}:{status or ''}:{account_id or ''}"
    return keyset_page(_with_destinations(queryset), list_key=key, limit=limit, cursor=cursor)


def publication_get(*, actor: Actor, publication_id: ModelId) -> Publication:
    pk = parse_id(publication_id, what="publication")
    publication = _with_destinations(Publication.objects.filter(pk=pk)).first()
    if publication is None:
        raise NotFoundError(f"No publication with ID {pk}.")
    require_workspace(actor, publication.workspace_id)
    return publication


def publication_events(
    *, actor: Actor, publication_id: ModelId, limit: int, cursor: str | None
) -> Page[PublicationEvent]:
    publication = publication_get(actor=actor, publication_id=publication_id)
    return keyset_page(
        PublicationEvent.objects.filter(publication=publication),
        list_key=f"events:{publication.pk}",
        limit=limit,
        cursor=cursor,
        descending=False,
    )


# --- Capabilities ---------------------------------------------------------------------------


def capabilities_resolve(
    *, actor: Actor, workspace_id: ModelId, account_ids: str = "", content_profile: str = ""
) -> dict[str, Any]:
    """What each connected account of the workspace (or of ``account_ids``, comma-separated)
    can publish, narrowed to ``content_profile`` when given, with readiness per format: the
    accounts' ``items`` and the ``provider_readiness`` of their providers."""
    access = require_workspace(actor, workspace_id)
    accounts = _capability_accounts(access.workspace.pk, account_ids)
    projection = provider_readiness_projection(
        workspace_id=access.workspace.pk, accounts=accounts, content_profile=content_profile
    )
    decided = {
        (p["account_id"], p["output_profile"]): p
        for entry in projection["providers"]
        for p in entry["profiles"]
    }
    providers = {account.provider for account in accounts}
    return {
        "items": [_capability_item(account, decided, content_profile) for account in accounts],
        "provider_readiness": [e for e in projection["providers"] if e["provider"] in providers],
    }


def _capability_accounts(workspace_id: ModelId, account_ids: str) -> list[Account]:
    """The workspace's connected accounts, oldest first, or the named ones: a named account
    that is connected but elsewhere is a 403, one unknown or disconnected a 404."""
    live = Account.objects.filter(workspace_id=workspace_id).exclude(
        status=Account.Status.DISCONNECTED
    )
    if account_ids:
        ids = {_account_uuid(part.strip()) for part in account_ids.split(",") if part.strip()}
        live = live.filter(pk__in=ids)
        found = {str(pk) for pk in live.values_list("pk", flat=True)}
        if missing := sorted(ids - found):
            connected = Account.objects.filter(pk__in=missing).exclude(
                status=Account.Status.DISCONNECTED
            )
            if connected.exists():
                raise PermissionDeniedError(
                    "An account belongs to another workspace.", code="account_not_in_workspace"
                )
            raise NotFoundError(f"No connected account with ID {missing[0]}.")
    return list(live.order_by("created_at"))


def _account_uuid(value: str) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise NotFoundError(f"No connected account with ID {value[:64]!r}.") from None


def _capability_item(
    account: Account, decided: dict[tuple[str, str], dict[str, Any]], content_profile: str
) -> dict[str, Any]:
    adapter = get_adapter(account.provider)
    profiles = [
        p
        for p in describe(adapter)["profiles"]
        if not content_profile or p["key"] == content_profile
    ]
    return {
        "account_id": str(account.pk),
        "provider": adapter.capabilities.provider,
        "profiles": profiles,
        "readiness": {
            p["key"]: {
                "immediate": decided[(str(account.pk), p["key"])]["immediate"],
                "scheduled": decided[(str(account.pk), p["key"])]["scheduled"],
            }
            for p in profiles
        },
        # A network's daily API quota as Herald counted it (YouTube: units and uploads left
        # today, when the day resets); None for networks without one.
        "quota": adapter.quota_status() if hasattr(adapter, "quota_status") else None,
    }
