"""The built-in feed's entries as ``FeedEntry`` rows: ``providers.feed.FeedEntries`` over the
publishing models, registered in ``PublishingConfig.ready`` (the adapter sits a layer below)."""

from __future__ import annotations

import uuid

from django.db import transaction
from django.utils import timezone

from config.types import ModelId
from providers.base import ErrorKind, ProviderError, PublishRequest
from providers.feed import LABEL, PROVIDER
from publishing.models import Account, FeedEnclosure, FeedEntry


def _feed_account(feed: str) -> Account:
    row = (
        Account.objects.filter(provider=PROVIDER, external_id=feed)
        .exclude(status=Account.Status.DISCONNECTED)
        .first()
    )
    if row is None:
        raise ProviderError(
            ErrorKind.AUTH, f"{LABEL}: this feed was disconnected; connect a new one."
        )
    return row


class FeedEntryStore:
    def write(self, *, feed: str, request: PublishRequest) -> ModelId:
        row = _feed_account(feed)
        with transaction.atomic():
            # Unique on the idempotency key: a repeated send (a retry, a reconcile that found
            # nothing, a second worker) finds the entry the first one wrote.
            entry, created = FeedEntry.objects.get_or_create(
                idempotency_key=request.idempotency_key,
                defaults={"account": row, "text": request.text, "published_at": timezone.now()},
            )
            if entry.account_id != row.pk:
                raise ProviderError(
                    ErrorKind.PERMANENT, f"{LABEL}: this key belongs to another feed."
                )
            if not created and entry.deleted_at is None:
                return entry.pk
            if not created:  # withdrawn earlier and sent again: the same entry comes back
                entry.text = request.text
                entry.deleted_at = None
                entry.published_at = timezone.now()
                entry.save(update_fields=["text", "deleted_at", "published_at", "updated_at"])
                entry.enclosures.all().delete()
            FeedEnclosure.objects.bulk_create(
                FeedEnclosure(entry=entry, media_id=item.media_id, position=index)
                for index, item in enumerate(request.media)
            )
        return entry.pk

    def find(
        self, *, feed: str, idempotency_key: str, entry_id: uuid.UUID | None
    ) -> ModelId | None:
        live = FeedEntry.objects.filter(account=_feed_account(feed), deleted_at__isnull=True)
        entry = live.filter(idempotency_key=idempotency_key).first()
        if entry is None and entry_id is not None:
            entry = live.filter(pk=entry_id).first()
        return entry.pk if entry is not None else None

    def withdraw(self, *, feed: str, entry_id: uuid.UUID) -> None:
        row = _feed_account(feed)
        with transaction.atomic():
            if FeedEntry.objects.filter(account=row, pk=entry_id, deleted_at__isnull=True).update(
                deleted_at=timezone.now(), text="", updated_at=timezone.now()
            ):
                FeedEnclosure.objects.filter(entry_id=entry_id).delete()
