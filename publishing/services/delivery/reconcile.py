"""Reconciling an ambiguous write: ask the provider whether the post landed; re-queue only when
it says no, never re-send blindly."""

from __future__ import annotations

import logging
import random
import time
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from config.db import release_connection
from config.nudge import nudge
from config.types import ModelId
from providers import get_adapter
from providers.base import (
    ErrorKind,
    NotSupported,
    Pending,
    ProviderError,
    PublishResult,
)
from publishing import tasks
from publishing.models import Destination
from publishing.services.accounts import account_context, account_mark_reconnect_required
from publishing.services.delivery.outcomes import (
    NO_LONG_SEND,
    S,
    aggregate,
    backoff_seconds,
    publish_succeeded,
)
from publishing.services.delivery.politeness import host_paused_until, pause_host, provider_host
from publishing.services.delivery.send import request_for
from publishing.services.publications import event_record
from readiness import services as readiness

logger = logging.getLogger(__name__)


def delivery_reconcile(*, destination_id: ModelId) -> None:
    """Ask the provider whether an ambiguous write landed; re-queue only when it says no.

    Whatever stops the question from being answered (readiness blocks it, the host asked for a
    pause, the provider fails) leaves the destination ambiguous and asks again later: an
    unknown outcome is never re-sent blindly."""
    if not _claim_for_reconcile(destination_id):
        return
    destination = Destination.objects.select_related("publication", "account", "account__app").get(
        pk=destination_id
    )
    if not _readiness_allows(destination):
        return
    answered, found = _ask_provider(destination)
    if not answered:
        return
    if isinstance(found, Pending):
        _resume_send(destination, found)
    elif found is not None:
        _record_found(destination, found)
    else:
        _requeue_absent(destination)


def _claim_for_reconcile(destination_id: ModelId) -> bool:
    """Take the destination for one lease (its ``next_attempt_at`` moves past it), so that two
    reconcile messages for it do not both ask the provider; whether this one got it."""
    now = timezone.now()
    lease = now + timedelta(seconds=settings.HERALD_DELIVERY_LEASE_SECONDS)
    claimed = (
        Destination.objects.filter(
            Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now),
            pk=destination_id,
            status=S.AMBIGUOUS,
        )
        .exclude(action="contact_support")
        .update(next_attempt_at=lease, updated_at=now)
    )
    return bool(claimed)


def _readiness_allows(destination: Destination) -> bool:
    """Readiness is asked before every provider call, reconciliation included (it may re-send
    within the provider's idempotency window). While blocked, the outcome stays unknown and is
    asked again later, with no provider call in between."""
    operation = "publish_scheduled" if destination.publication.scheduled_at else "publish_immediate"
    decision = readiness.decide_account(
        account=destination.account,
        operation=operation,
        profile=destination.profile,
        intent=destination.publication.execution_intent,
    )
    if decision.executable:
        return True
    _reconcile_later(
        destination,
        retry_after=settings.HERALD_RETRY_MAX_SECONDS,
        readiness_decision=decision.as_dict(),
        action="reconnect" if decision.state == "reconnect_required" else "",
    )
    return False


def _ask_provider(
    destination: Destination,
) -> tuple[bool, PublishResult | Pending | None]:
    """``(True, the post or None)`` when the provider answered; ``(False, None)`` when it did
    not, with what comes next already recorded (asked later, or handed to a person)."""
    adapter = get_adapter(destination.account.provider)
    host = ""
    try:
        context, request = account_context(destination.account), request_for(destination)
        host = provider_host(destination.account.provider, context)
        if paused_until := host_paused_until(host):  # the host asked for a pause: ask it later
            jitter = random.uniform(0.0, 1.0)  # noqa: S311 (spreads retries, not a secret)
            _reconcile_later(destination, retry_after=paused_until - time.time() + jitter)
            return False, None
        release_connection()
        found = adapter.reconcile(
            account=context, request=request, external_id=destination.external_id
        )
    except NotSupported:
        _hand_to_person(destination)
    except ProviderError as exc:
        _after_provider_error(destination, exc, host=host)
    except Exception:
        logger.exception("Unexpected failure reconciling destination %s", destination.pk)
        _reconcile_later(destination, retry_after=backoff_seconds(1))
    else:
        return True, found
    return False, None


def _hand_to_person(destination: Destination) -> None:
    """The provider cannot look a post up: the outcome can only be confirmed by a person
    (``contact_support``), and the publication settles around it."""
    with transaction.atomic():
        Destination.objects.filter(pk=destination.pk).update(
            action="contact_support",
            next_attempt_at=None,
            error_message="The provider cannot confirm whether the post was accepted; check the account.",
        )
        event_record(
            publication_id=destination.publication_id,
            destination=destination,
            kind="destination.unconfirmable",
            status=S.AMBIGUOUS,
        )
        aggregate(destination.publication_id)


def _after_provider_error(destination: Destination, exc: ProviderError, *, host: str) -> None:
    """Ask again later: after a reconnect when the account's grant failed, after the host's
    pause when it asked for one, else after one backoff step."""
    if exc.kind == ErrorKind.AUTH:
        account_mark_reconnect_required(account_id=destination.account_id, reason=exc.message)
        _reconcile_later(
            destination, retry_after=settings.HERALD_RETRY_MAX_SECONDS, action="reconnect"
        )
        return
    if exc.kind == ErrorKind.RATE_LIMITED or exc.retry_after is not None:
        pause_host(host, exc.retry_after)
    _reconcile_later(destination, retry_after=backoff_seconds(1, exc.retry_after))


def _record_found(destination: Destination, found: PublishResult) -> None:
    """The post landed: published, with the provider's id and URL. The row goes back to sending
    first (conditionally, so a send that settled it meanwhile wins) and is then recorded as any
    successful send is."""
    with transaction.atomic():
        if not Destination.objects.filter(pk=destination.pk, status=S.AMBIGUOUS).update(
            status=S.SENDING
        ):
            return  # settled meanwhile (e.g. the original send finished after all)
        event_record(
            publication_id=destination.publication_id,
            destination=destination,
            kind="destination.reconciled",
            status=S.PUBLISHED,
        )
    publish_succeeded(destination, found)


def _resume_send(destination: Destination, pending: Pending) -> None:
    """No post yet, but the provider still holds the upload the send started (YouTube's
    resumable session): the send goes on from there instead of starting over. The row goes
    back to ``sending`` as a long send whose check is due now (no claim; the write stays on
    record), and its check message is enqueued once the transaction commits."""
    now = timezone.now()
    with transaction.atomic():
        if not Destination.objects.filter(pk=destination.pk, status=S.AMBIGUOUS).update(
            status=S.SENDING,
            send_stage=pending.stage,
            send_state=pending.state,
            send_check_at=now,
            claim_expires_at=None,
            next_attempt_at=None,
            updated_at=now,
        ):
            return
        event_record(
            publication_id=destination.publication_id,
            destination=destination,
            kind="destination.reconciled_resumed",
            status=S.SENDING,
        )
        transaction.on_commit(partial(nudge, tasks.delivery_send, str(destination.pk)))


def _requeue_absent(destination: Destination) -> None:
    """The provider has no such post: sending again is safe. Queued, and enqueued once the
    transaction commits."""
    with transaction.atomic():
        Destination.objects.filter(pk=destination.pk, status=S.AMBIGUOUS).update(
            status=S.QUEUED,
            next_attempt_at=timezone.now(),
            write_started_at=None,
            **NO_LONG_SEND,  # sent again from the start (a long send uploads again)
        )
        event_record(
            publication_id=destination.publication_id,
            destination=destination,
            kind="destination.reconciled_absent",
            status=S.QUEUED,
        )
        transaction.on_commit(partial(nudge, tasks.delivery_send, str(destination.pk)))


def _reconcile_later(
    destination: Destination,
    *,
    retry_after: float,
    action: str = "",
    readiness_decision: dict[str, Any] | None = None,
) -> None:
    """Leave the outcome unknown and ask again in ``retry_after`` seconds (only while the
    destination is still ambiguous: a send that settled it meanwhile wins)."""
    Destination.objects.filter(pk=destination.pk, status=S.AMBIGUOUS).update(
        next_attempt_at=timezone.now() + timedelta(seconds=retry_after),
        action=action,
        readiness=readiness_decision,
        updated_at=timezone.now(),
    )
