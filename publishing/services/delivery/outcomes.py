"""Recording a send's outcome: published, retry later, failed or blocked; settling the
publication once every destination has settled. Each outcome is one conditional UPDATE plus
its event, in one transaction."""

from __future__ import annotations

import random
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from config.nudge import nudge
from config.queries import CompiledQuery, Param
from config.types import ModelId
from providers.base import (
    ErrorKind,
    Pending,
    ProviderError,
    PublishResult,
)
from publishing import tasks
from publishing.models import Destination, Publication
from publishing.services.accounts import account_mark_reconnect_required
from publishing.services.publications import event_record

S = Destination.Status
P = Publication.Status
SETTLED = (S.PUBLISHED, S.FAILED, S.CANCELED, S.BLOCKED)
# A long send is checked again no sooner and no later than this, whatever the adapter asked.
CHECK_AFTER_BOUNDS = (0.5, 300.0)
# What a settled or retried destination no longer needs of a long send.
NO_LONG_SEND: dict[str, Any] = {"send_stage": None, "send_state": None, "send_check_at": None}


def backoff_seconds(attempt: int, retry_after: float | None = None) -> float:
    """30 s doubling to 15 min, ±20 % jitter; a provider's Retry-After wins up to 30 min."""
    base = min(
        settings.HERALD_RETRY_BASE_SECONDS * 2 ** max(0, attempt - 1),
        settings.HERALD_RETRY_MAX_SECONDS,
    )
    delay: float = base * random.uniform(0.8, 1.2)  # noqa: S311  (jitter, not security)
    if retry_after is not None:
        delay = max(delay, min(float(retry_after), settings.HERALD_RETRY_AFTER_CAP_SECONDS))
    return delay


def long_send_cleared(destination: Destination) -> dict[str, Any]:
    """The long-send columns to clear when ``destination`` settles: none for a send that never
    had a stage (every text or image send), whose columns are already empty, so its outcome's
    UPDATE stays the one it was before long sends existed. ``destination`` is the row as its
    claim holder read it; only a claim holder writes these columns."""
    if any(getattr(destination, column) is not None for column in NO_LONG_SEND):
        return NO_LONG_SEND
    return {}


# Settling a publication, inside the transaction that records a destination's outcome: compiled
# once per process (config/queries.py). Every send runs both; compiling them again each time was
# about 630 of a text send's 5,900 Python calls (bench/README.md "Burst benchmark").
PUBLICATION_STATUS_LOCKED = CompiledQuery(
    lambda: (
        Publication.objects.select_for_update()
        .filter(pk=Param("publication_id", Publication, "id"))
        .values_list("status")
    )
)
DESTINATION_STATUSES = CompiledQuery(
    lambda: Destination.objects.filter(
        publication_id=Param("publication_id", Destination, "publication")
    ).values_list("status", "action")
)


def publish_succeeded(destination: Destination, result: PublishResult) -> None:
    now = timezone.now()
    with transaction.atomic():
        # One conditional UPDATE locks the row and records the outcome; none when another
        # delivery of the same destination (e.g. a reconcile) recorded it first.
        if (
            not Destination.objects.filter(pk=destination.pk)
            .exclude(status=S.PUBLISHED)
            .update(
                status=S.PUBLISHED,
                external_id=result.external_id,
                external_url=result.external_url,
                published_at=now,
                error_kind="",
                error_message="",
                action="",
                readiness=None,
                claim_expires_at=None,
                next_attempt_at=None,
                updated_at=now,
                **long_send_cleared(destination),
            )
        ):
            return
        event_record(
            publication_id=destination.publication_id,
            destination=destination,
            kind="destination.published",
            status=S.PUBLISHED,
            data={"external_id": result.external_id, "external_url": result.external_url},
        )
        aggregate(destination.publication_id)


def send_pending(destination: Destination, pending: Pending) -> None:
    """The provider is still at it (a video being processed): the destination stays
    ``sending`` with the adapter's state and the time of the next check, its claim is given
    back, and a message comes back then (the dispatcher re-sends it if that message is lost).
    No worker thread waits meanwhile (docs/decisions/0020-long-sends.md). The first time a
    send reaches a stage, an event says so."""
    low, high = CHECK_AFTER_BOUNDS
    delay = min(max(float(pending.check_after_seconds), low), high)
    now = timezone.now()
    # While a send waits (a publishing limit) nothing is processed: the processing bound
    # (HERALD_DELIVERY_PENDING_MAX_SECONDS, from the write's start) counts from its last check.
    restart = {"write_started_at": now} if pending.stage == "waiting" else {}
    # The reason is kept with the state (the API's ``wait_reason``); the adapter sees it again.
    state = {**pending.state, "reason": pending.reason} if pending.reason else pending.state
    with transaction.atomic():
        if not Destination.objects.filter(pk=destination.pk, status=S.SENDING).update(
            send_stage=pending.stage,
            send_state=state,
            send_check_at=now + timedelta(seconds=delay),
            claim_expires_at=None,
            updated_at=now,
            **restart,
        ):
            return
        if destination.send_stage != pending.stage:
            data: dict[str, Any] = {"check_after_seconds": delay}
            if pending.reason:
                data["reason"] = pending.reason
            event_record(
                publication_id=destination.publication_id,
                destination=destination,
                kind=f"destination.{pending.stage}",
                status=S.SENDING,
                detail=pending.reason,
                data=data,
            )
        transaction.on_commit(
            partial(nudge, tasks.delivery_send, str(destination.pk), countdown=delay)
        )


def handle_failure(destination: Destination, exc: ProviderError) -> None:
    if exc.kind == ErrorKind.AMBIGUOUS:
        with transaction.atomic():
            Destination.objects.filter(pk=destination.pk, status=S.SENDING).update(
                status=S.AMBIGUOUS,
                error_kind=exc.kind.value,
                error_message=exc.message[:500],
                action="",
                claim_expires_at=None,
                next_attempt_at=timezone.now(),
                updated_at=timezone.now(),
            )
            event_record(
                publication_id=destination.publication_id,
                destination=destination,
                kind="destination.ambiguous",
                status=S.AMBIGUOUS,
                detail=exc.message,
            )
            transaction.on_commit(partial(nudge, tasks.delivery_reconcile, str(destination.pk)))
        return
    if exc.kind == ErrorKind.AUTH:
        account_mark_reconnect_required(account_id=destination.account_id, reason=exc.message)
        settle(destination, S.FAILED, kind=exc.kind.value, message=exc.message, action="reconnect")
        return
    if exc.kind in (ErrorKind.TRANSIENT, ErrorKind.RATE_LIMITED):
        attempts = Destination.objects.values_list("attempts", flat=True).get(pk=destination.pk)
        deadline = destination.deadline_at
        delay = backoff_seconds(attempts, exc.retry_after)
        next_at = timezone.now() + timedelta(seconds=delay)
        if attempts < settings.HERALD_DELIVERY_MAX_ATTEMPTS and (
            deadline is None or next_at <= deadline
        ):
            with transaction.atomic():
                Destination.objects.filter(pk=destination.pk, status=S.SENDING).update(
                    status=S.RETRY_WAIT,
                    next_attempt_at=next_at,
                    claim_expires_at=None,
                    write_started_at=None,
                    **NO_LONG_SEND,
                    error_kind=exc.kind.value,
                    error_message=exc.message[:500],
                    action="retry",
                    updated_at=timezone.now(),
                )
                event_record(
                    publication_id=destination.publication_id,
                    destination=destination,
                    kind="destination.retry_scheduled",
                    status=S.RETRY_WAIT,
                    detail=exc.message,
                    data={"next_attempt_at": next_at.isoformat(), "retry_after": exc.retry_after},
                )
                transaction.on_commit(
                    partial(nudge, tasks.delivery_send, str(destination.pk), countdown=delay)
                )
            return
    settle(destination, S.FAILED, kind=exc.kind.value, message=exc.message, action=exc.action)


def wait_for_network(destination: Destination, exc: ProviderError) -> None:
    """The network holds this send until a known time (YouTube: its quota day resets): the
    destination waits in ``retry_wait`` exactly that long, with the reason as its
    ``error_kind`` (``quota_exhausted``), and the wait is neither counted as an attempt (the
    claim counted one; nothing was published) nor against the deadline: a deadline that would
    pass during the wait moves to HERALD_DELIVERY_DEADLINE_SECONDS after it ends."""
    delay = max(float(exc.retry_after or 0.0), 1.0) * random.uniform(1.0, 1.02)  # noqa: S311
    next_at = timezone.now() + timedelta(seconds=delay)
    deadline = destination.deadline_at
    if deadline is not None:
        deadline = max(
            deadline, next_at + timedelta(seconds=settings.HERALD_DELIVERY_DEADLINE_SECONDS)
        )
    with transaction.atomic():
        Destination.objects.filter(pk=destination.pk, status=S.SENDING).update(
            status=S.RETRY_WAIT,
            next_attempt_at=next_at,
            attempts=Greatest(F("attempts") - 1, 0),
            deadline_at=deadline,
            claim_expires_at=None,
            write_started_at=None,
            **NO_LONG_SEND,
            error_kind=exc.wait_reason,
            error_message=exc.message[:500],
            action="retry",
            updated_at=timezone.now(),
        )
        event_record(
            publication_id=destination.publication_id,
            destination=destination,
            kind="destination.waiting",
            status=S.RETRY_WAIT,
            detail=exc.message,
            data={"reason": exc.wait_reason, "next_attempt_at": next_at.isoformat()},
        )
        transaction.on_commit(
            partial(nudge, tasks.delivery_send, str(destination.pk), countdown=delay)
        )


def settle(
    destination: Destination,
    status: Destination.Status,
    *,
    kind: str,
    message: str,
    action: str,
    readiness_decision: dict[str, Any] | None = None,
) -> None:
    with transaction.atomic():
        updated = (
            Destination.objects.filter(pk=destination.pk)
            .exclude(status=S.PUBLISHED)
            .update(
                status=status,
                error_kind=kind,
                error_message=message[:500],
                action=action,
                readiness=readiness_decision,
                claim_expires_at=None,
                next_attempt_at=None,
                updated_at=timezone.now(),
                **NO_LONG_SEND,
            )
        )
        if updated:
            event_record(
                publication_id=destination.publication_id,
                destination=destination,
                kind=f"destination.{status}",
                status=status,
                detail=message,
                data={
                    "action": action,
                    **({"readiness": readiness_decision} if readiness_decision else {}),
                },
            )
            aggregate(destination.publication_id)


def aggregate(publication_id: ModelId) -> None:
    """Settle the publication once every destination has settled (call inside a transaction)."""
    # The lock serializes the last destinations of a publication settling at the same time: the
    # one that locks second sees the other's committed status.
    locked = PUBLICATION_STATUS_LOCKED.values(publication_id=publication_id)
    if not locked or locked[0][0] != P.PUBLISHING:
        return
    statuses = DESTINATION_STATUSES.values(publication_id=publication_id)
    if any(
        s not in SETTLED and not (s == S.AMBIGUOUS and a == "contact_support") for s, a in statuses
    ):
        return
    published = sum(1 for s, _ in statuses if s == S.PUBLISHED)
    if published == len(statuses):
        status = P.PUBLISHED
    elif published:
        status = P.PARTIALLY_PUBLISHED
    else:
        status = P.FAILED
    Publication.objects.filter(pk=publication_id).update(status=status, updated_at=timezone.now())
    event_record(publication_id=publication_id, kind=f"publication.{status}", status=status)
