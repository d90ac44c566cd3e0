"""Reads for publishing. Every read checks workspace access first."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Prefetch, QuerySet

from config.api.pagination import Page, keyset_page
from config.api.problems import RequestValidationError
from config.errors import NotFoundError
from config.types import ModelId
from publishing.models import Account, Destination, Media, Publication, PublicationEvent
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
) -> Page[Publication]:
    access = require_workspace(actor, workspace_id)
    queryset = Publication.objects.filter(workspace=access.workspace)
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
