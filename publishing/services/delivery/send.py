"""Sending one destination: claim it, re-check readiness, record the write before the provider
call, send with the destination's idempotency key, record the outcome."""

from __future__ import annotations

import logging
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from config.db import release_connection
from config.queries import CompiledQuery, Param
from config.types import ModelId
from providers import get_adapter
from providers.base import (
    ErrorKind,
    MediaItem,
    ProviderError,
    PublishRequest,
)
from publishing.models import Destination, Media
from publishing.services import tokens  # just-in-time token refresh before a send
from publishing.services.accounts import account_context
from publishing.services.delivery.outcomes import S, handle_failure, publish_succeeded, settle
from publishing.services.delivery.politeness import (
    in_flight_slots,
    pause_host,
    release_slots,
    take_slots,
)
from publishing.services.media import media_absolute_url
from readiness import services as readiness

logger = logging.getLogger(__name__)


def _claim(destination_id: ModelId) -> bool:
    now = timezone.now()
    lease = timedelta(seconds=settings.HERALD_DELIVERY_LEASE_SECONDS)
    return bool(
        Destination.objects.filter(pk=destination_id, status__in=[S.QUEUED, S.RETRY_WAIT])
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .update(
            status=S.SENDING,
            claimed_at=now,
            claim_expires_at=now + lease,
            attempts=F("attempts") + 1,
            updated_at=now,
        )
    )


# The destination to send, with everything the send needs (one query, compiled once per process).
DESTINATION_FOR_SEND = CompiledQuery(
    lambda: Destination.objects.select_related("publication", "account", "account__app").filter(
        pk=Param("destination_id", Destination, "id")
    )
)


def request_for(destination: Destination) -> PublishRequest:
    publication = destination.publication
    text = destination.text if destination.text is not None else publication.text
    media_ids = (
        destination.media_ids if destination.media_ids is not None else publication.media_ids
    )
    # Most posts have no media: no queryset to build then (an empty IN sends no query, but the
    # ORM still builds one, about 0.2 ms of CPU per delivery).
    media_by_id = (
        {str(m.pk): m for m in Media.objects.filter(pk__in=media_ids)} if media_ids else {}
    )
    items = [
        MediaItem(
            name=m.name,
            mime_type=m.mime_type,
            size=m.size_bytes,
            open=partial(m.file.open, "rb"),
            alt_text=m.alt_text,
            url=media_absolute_url(m),
            media_id=str(m.pk),
        )
        for media_id in media_ids or []
        if (m := media_by_id.get(str(media_id))) is not None
    ]
    return PublishRequest(
        profile=destination.profile,
        text=text or "",
        media=items,
        options=dict(destination.options or {}),
        idempotency_key=destination.idempotency_key,
        first_attempt_at=destination.first_attempt_at,
        publication_id=str(publication.pk),
        created_at=publication.created_at,
        scheduled_at=publication.scheduled_at,
    )


def delivery_send(*, destination_id: ModelId) -> None:
    """Idempotent: a second message for the same destination finds nothing to claim."""
    if not _claim(destination_id):
        return
    destination = DESTINATION_FOR_SEND.instances(destination_id=destination_id)[0]
    destination.account = tokens.account_token_ensure_fresh(account=destination.account)
    operation = "publish_scheduled" if destination.publication.scheduled_at else "publish_immediate"
    decision = readiness.decide_account(
        account=destination.account,
        operation=operation,
        profile=destination.profile,
        intent=destination.publication.execution_intent,
    )
    if not decision.executable:
        settle(
            destination,
            S.BLOCKED,
            kind="readiness",
            message=f"Blocked by provider readiness ({decision.state}).",
            action="reconnect" if decision.state == "reconnect_required" else "contact_support",
            readiness_decision=decision.as_dict(),
        )
        return
    # Everything that can fail without the provider is prepared first: such a failure is not an
    # ambiguous write (nothing was sent).
    adapter = get_adapter(destination.account.provider)
    try:
        context = account_context(destination.account)
    except Exception as exc:
        logger.exception("Cannot prepare destination %s", destination.pk)
        settle(
            destination,
            S.FAILED,
            kind="internal",
            action="contact_support",
            message=f"The stored credentials cannot be read ({type(exc).__name__}); reconnect the account.",
        )
        return
    # Politeness (docs/operations.md "Delivery: politeness and fairness"): one slot of the account and one of the provider host for
    # the call; none while the host is paused after a 429 or Retry-After. Without a slot the
    # destination goes back to the queue: nothing was sent and no attempt is counted.
    slots = in_flight_slots(destination, context)
    if not take_slots(destination, slots):
        return
    try:
        _send_claimed(destination, adapter, context, slots)
    except BaseException:
        release_slots(slots)
        raise


def _send_claimed(
    destination: Destination, adapter: Any, context: Any, slots: dict[str, Any]
) -> None:
    started = timezone.now()
    if destination.first_attempt_at is None:
        destination.first_attempt_at = started
    request = request_for(destination)
    # The write is recorded before the call: if this worker dies from here on, the outcome is
    # unknown and the destination is reconciled, never re-sent blindly. (One statement: the
    # first attempt's time is kept if there was one.)
    Destination.objects.filter(pk=destination.pk).update(
        write_started_at=started, first_attempt_at=Coalesce(F("first_attempt_at"), Value(started))
    )
    release_connection()  # pooled: the connection serves other sends while this one waits
    try:
        result = adapter.publish(account=context, request=request)
    except ProviderError as exc:
        release_slots(slots)
        if exc.kind == ErrorKind.RATE_LIMITED or exc.retry_after is not None:
            pause_host(slots["host"], exc.retry_after)
        handle_failure(destination, exc)
        return
    except Exception as exc:
        release_slots(slots)
        logger.exception("Unexpected failure sending destination %s", destination.pk)
        handle_failure(
            destination,
            ProviderError(ErrorKind.AMBIGUOUS, f"Unexpected error: {type(exc).__name__}"),
        )
        return
    release_slots(slots)
    publish_succeeded(destination, result)
