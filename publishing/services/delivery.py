"""Delivery (decisions §5): claim a destination, re-check readiness, record the write before the
provider call, send with the destination's idempotency key, record the outcome atomically.

The database is the source of truth; broker messages are nudges. The dispatcher (beat) moves
due work into the queue and re-enqueues what a lost message or a dead worker left behind, so a
broker restart or a SIGKILL loses nothing, and a write that may have reached the provider is
reconciled, never blindly re-sent.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection as db_connection
from django.db import transaction
from django.db.models import Count, F, OuterRef, Q, Subquery, UUIDField, Value, Window
from django.db.models.functions import Coalesce, RowNumber
from django.utils import timezone

from config import limits
from config.db import release_connection
from config.queries import CompiledQuery, Param
from config.types import ModelId
from publishing import tasks
from publishing.models import Destination, Media, Publication, PublicationEvent, SchedulerHeartbeat
from publishing.providers import get_adapter
from publishing.providers.base import (
    ErrorKind,
    MediaItem,
    NotSupported,
    ProviderError,
    PublishRequest,
    PublishResult,
)
from publishing.services import tokens  # just-in-time token refresh before a send
from publishing.services.accounts import account_context, account_mark_reconnect_required
from publishing.services.media import media_absolute_url
from publishing.services.publications import event_record
from readiness import services as readiness

logger = logging.getLogger(__name__)

S = Destination.Status
P = Publication.Status
SETTLED = (S.PUBLISHED, S.FAILED, S.CANCELED, S.BLOCKED)


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


# --- Send -----------------------------------------------------------------------------------


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


# Settling a publication (inside the transaction that records a destination's outcome).
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


def _request_for(destination: Destination) -> PublishRequest:
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
        _settle(
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
        _settle(
            destination,
            S.FAILED,
            kind="internal",
            action="contact_support",
            message=f"The stored credentials cannot be read ({type(exc).__name__}); reconnect the account.",
        )
        return
    # Politeness (README "Delivery"): one slot of the account and one of the provider host for
    # the call; none while the host is paused after a 429 or Retry-After. Without a slot the
    # destination goes back to the queue: nothing was sent and no attempt is counted.
    slots = _in_flight_slots(destination, context)
    if not _take_slots(destination, slots):
        return
    try:
        _send_claimed(destination, adapter, context, slots)
    except BaseException:
        _release_slots(slots)
        raise


def _send_claimed(
    destination: Destination, adapter: Any, context: Any, slots: dict[str, Any]
) -> None:
    started = timezone.now()
    if destination.first_attempt_at is None:
        destination.first_attempt_at = started
    request = _request_for(destination)
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
        _release_slots(slots)
        if exc.kind == ErrorKind.RATE_LIMITED or exc.retry_after is not None:
            _pause_host(slots["host"], exc.retry_after)
        _handle_failure(destination, exc)
        return
    except Exception as exc:
        _release_slots(slots)
        logger.exception("Unexpected failure sending destination %s", destination.pk)
        _handle_failure(
            destination,
            ProviderError(ErrorKind.AMBIGUOUS, f"Unexpected error: {type(exc).__name__}"),
        )
        return
    _release_slots(slots)
    _publish_succeeded(destination, result)


# --- Politeness: in-flight caps per account and provider host, pauses after 429 -------------------


def provider_host(provider: str, context: Any) -> str:
    """The provider host a destination's calls go to (``host[:port]``; empty when none, e.g. the
    built-in feed): the account's instance or API base, its webhook URL, else the provider's
    configured API. Only the host is kept (a webhook URL's path may hold a token)."""
    credentials = getattr(context, "credentials", None) or {}
    defaults = {
        "telegram": settings.HERALD_TELEGRAM_API_URL,
        "bluesky": settings.HERALD_BLUESKY_SERVICE_URL,
    }
    url = (
        getattr(context, "instance_url", "")
        or credentials.get("url")
        or credentials.get("webhook_url")
        or defaults.get(provider, "")
    )
    try:
        return urlsplit(str(url)).netloc.rsplit("@", 1)[-1].lower()
    except ValueError:
        return ""


def _host_key(host: str) -> str:
    return f"delivery:host:{host}"


def _pause_key(host: str) -> str:
    return f"delivery:paused:{host}"


def host_paused_until(host: str) -> float:
    """When the pause of ``host`` after a 429 / Retry-After ends (epoch seconds), 0 if none."""
    return limits.read_mark(_pause_key(host)) if host else 0.0


def _pause_host(host: str, retry_after: float | None) -> None:
    """A 429 or Retry-After from ``host`` pauses every send to it (only it) until it has passed."""
    if not host:
        return
    seconds = settings.HERALD_RETRY_BASE_SECONDS if retry_after is None else float(retry_after)
    seconds = min(max(seconds, 0.0), settings.HERALD_RETRY_AFTER_CAP_SECONDS)
    if seconds > 0:
        limits.set_mark(_pause_key(host), time.time() + seconds)


def _in_flight_slots(destination: Destination, context: Any) -> dict[str, Any]:
    host = provider_host(destination.account.provider, context)
    keys = [
        (
            f"delivery:account:{destination.account_id}",
            settings.HERALD_PROVIDER_MAX_IN_FLIGHT_PER_ACCOUNT,
        )
    ]
    if host:
        keys.append((_host_key(host), settings.HERALD_PROVIDER_MAX_IN_FLIGHT_PER_HOST))
    keys = [(key, limit) for key, limit in keys if limit > 0]
    return {"host": host, "keys": keys, "token": f"{destination.pk}:{uuid.uuid4().hex}"}


def _take_slots(destination: Destination, slots: dict[str, Any]) -> bool:
    """Take the send's slots, waiting up to HERALD_PROVIDER_SLOT_WAIT_SECONDS for free ones; else
    put the destination back (see :func:`_unclaim`) and answer False."""
    wait_until = time.monotonic() + settings.HERALD_PROVIDER_SLOT_WAIT_SECONDS
    pause_key = _pause_key(slots["host"]) if slots["host"] else ""
    pause = 0.05
    if not slots["keys"] and not pause_key:
        return True
    while True:
        taken, paused_until = limits.acquire_shared_slots(
            slots["keys"],
            slots["token"],
            settings.HERALD_PROVIDER_SLOT_LEASE_SECONDS,
            unless_marked=pause_key,
        )
        if taken:
            return True
        if paused_until:  # the host asked us to wait: no point polling
            _unclaim(destination, max(0.0, paused_until - time.time()) + random.uniform(0.0, 1.0))  # noqa: S311
            return False
        if time.monotonic() + pause > wait_until:
            _unclaim(destination, random.uniform(1.0, 2.0))  # noqa: S311  (spread the returns)
            return False
        release_connection()  # pooled: not held while waiting
        time.sleep(pause)
        pause = min(pause * 1.5, 0.25)


def _release_slots(slots: dict[str, Any]) -> None:
    if slots["keys"] and not slots.get("released"):
        slots["released"] = True
        limits.release_shared_slots([key for key, _ in slots["keys"]], slots["token"])


def _unclaim(destination: Destination, delay: float) -> None:
    """Give back a claim taken before anything was sent: the attempt is not counted, and the
    destination is sent again after ``delay`` seconds (its message, and the dispatcher's stale
    sweep if that message is lost)."""
    now = timezone.now()
    status = S.RETRY_WAIT if destination.action == "retry" else S.QUEUED
    with transaction.atomic():
        if Destination.objects.filter(
            pk=destination.pk, status=S.SENDING, write_started_at__isnull=True
        ).update(
            status=status,
            attempts=F("attempts") - 1,
            claim_expires_at=None,
            next_attempt_at=now + timedelta(seconds=delay),
            updated_at=now,
        ):
            transaction.on_commit(
                partial(tasks.nudge, tasks.delivery_send, str(destination.pk), countdown=delay)
            )


def _publish_succeeded(destination: Destination, result: PublishResult) -> None:
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
        _aggregate(destination.publication_id)


def _handle_failure(destination: Destination, exc: ProviderError) -> None:
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
            transaction.on_commit(
                partial(tasks.nudge, tasks.delivery_reconcile, str(destination.pk))
            )
        return
    if exc.kind == ErrorKind.AUTH:
        account_mark_reconnect_required(account_id=destination.account_id, reason=exc.message)
        _settle(destination, S.FAILED, kind=exc.kind.value, message=exc.message, action="reconnect")
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
                    partial(tasks.nudge, tasks.delivery_send, str(destination.pk), countdown=delay)
                )
            return
    _settle(destination, S.FAILED, kind=exc.kind.value, message=exc.message, action=exc.action)


def _settle(
    destination: Destination,
    status: str,
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
            _aggregate(destination.publication_id)


def _aggregate(publication_id: ModelId) -> None:
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


# --- Reconcile ------------------------------------------------------------------------------


def delivery_reconcile(*, destination_id: ModelId) -> None:
    """Ask the provider whether an ambiguous write landed; re-queue only when it says no."""
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
    if not claimed:
        return
    destination = Destination.objects.select_related("publication", "account", "account__app").get(
        pk=destination_id
    )
    # Readiness is asked before every provider call, reconciliation included (it may re-send
    # within the provider's idempotency window). While blocked, the outcome stays unknown and
    # is asked again later, with no provider call in between.
    operation = "publish_scheduled" if destination.publication.scheduled_at else "publish_immediate"
    decision = readiness.decide_account(
        account=destination.account,
        operation=operation,
        profile=destination.profile,
        intent=destination.publication.execution_intent,
    )
    if not decision.executable:
        _reconcile_later(
            destination,
            retry_after=settings.HERALD_RETRY_MAX_SECONDS,
            readiness_decision=decision.as_dict(),
            action="reconnect" if decision.state == "reconnect_required" else "",
        )
        return
    adapter = get_adapter(destination.account.provider)
    host = ""
    try:
        context, request = account_context(destination.account), _request_for(destination)
        host = provider_host(destination.account.provider, context)
        if paused_until := host_paused_until(host):  # the host asked for a pause: ask it later
            jitter = random.uniform(0.0, 1.0)  # noqa: S311 (spreads retries, not a secret)
            _reconcile_later(destination, retry_after=paused_until - time.time() + jitter)
            return
        release_connection()
        found = adapter.reconcile(
            account=context, request=request, external_id=destination.external_id
        )
    except NotSupported:
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
            _aggregate(destination.publication_id)
        return
    except ProviderError as exc:
        if exc.kind == ErrorKind.AUTH:
            account_mark_reconnect_required(account_id=destination.account_id, reason=exc.message)
            _reconcile_later(
                destination, retry_after=settings.HERALD_RETRY_MAX_SECONDS, action="reconnect"
            )
            return
        if exc.kind == ErrorKind.RATE_LIMITED or exc.retry_after is not None:
            _pause_host(host, exc.retry_after)
        _reconcile_later(destination, retry_after=backoff_seconds(1, exc.retry_after))
        return
    except Exception:
        logger.exception("Unexpected failure reconciling destination %s", destination.pk)
        _reconcile_later(destination, retry_after=backoff_seconds(1))
        return
    if found is not None:
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
        _publish_succeeded(destination, found)
        return
    with transaction.atomic():  # the provider has no such post: sending again is safe
        Destination.objects.filter(pk=destination.pk, status=S.AMBIGUOUS).update(
            status=S.QUEUED, next_attempt_at=timezone.now(), write_started_at=None
        )
        event_record(
            publication_id=destination.publication_id,
            destination=destination,
            kind="destination.reconciled_absent",
            status=S.QUEUED,
        )
        transaction.on_commit(partial(tasks.nudge, tasks.delivery_send, str(destination.pk)))


def _reconcile_later(
    destination: Destination,
    *,
    retry_after: float,
    action: str = "",
    readiness_decision: dict[str, Any] | None = None,
) -> None:
    Destination.objects.filter(pk=destination.pk, status=S.AMBIGUOUS).update(
        next_attempt_at=timezone.now() + timedelta(seconds=retry_after),
        action=action,
        readiness=readiness_decision,
        updated_at=timezone.now(),
    )


# --- Dispatcher -----------------------------------------------------------------------------

DISPATCH_REFILL_SECONDS = 0.2
DISPATCH_BUSY_SECONDS = 5.0


@contextlib.contextmanager
def _without_jit() -> Iterator[None]:
    """On PostgreSQL, a transaction whose statements are not JIT-compiled (``SET LOCAL jit``).

    The planner estimates "status scheduled and due_at <= now" as if the two were independent:
    about a tenth of all destinations, where an idle tick finds none. On a large table that
    estimate makes the ranked query's cost exceed ``jit_above_cost``, and PostgreSQL spent about
    0.3 s compiling a query that then ran in 0.05 ms, on every tick (bench/README.md "Scale
    benchmark"). Elsewhere nothing is done (a SQLite transaction would take the write lock)."""
    if db_connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic(), db_connection.cursor() as cursor:
        cursor.execute("SET LOCAL jit = off")
        yield


def _dispatch_due(*, batch: int) -> tuple[list[Any], bool]:
    """Move up to ``batch`` due scheduled destinations to ``queued``, round-robin by workspace;
    their ids in that order, and whether a workspace's cap held some of its due work back.

    Fairness (README "Delivery"): each workspace's due work is ranked by due time, and the batch
    takes every workspace's first, then every workspace's second, and so on, so one workspace's
    burst never goes into the (FIFO) queue ahead of another's single due destination. A
    workspace has at most HERALD_DISPATCH_MAX_QUEUED_PER_WORKSPACE destinations queued (ready) or
    sending at once; the rest of its due work stays scheduled until the next batch or tick, so
    work of another workspace due later is not queued behind its whole backlog either.

    Rows that an overlapping tick holds are skipped (PostgreSQL ``SKIP LOCKED``), so two ticks
    never dispatch the same destination.
    """
    now = timezone.now()
    cap = settings.HERALD_DISPATCH_MAX_QUEUED_PER_WORKSPACE
    # Each due destination's workspace is looked up by the publication's primary key (a
    # correlated subquery), not joined: PostgreSQL cannot tell that few scheduled destinations are
    # due (it multiplies the two conditions' selectivities), and with a join it planned a hash
    # join over a sequential scan of every publication (tests/publishing/test_query_plans.py).
    workspace = Subquery(
        Publication.objects.filter(pk=OuterRef("publication_id")).values("workspace_id")[:1],
        output_field=UUIDField(),
    )  # read as a UUID, as a foreign key's value is
    ranked = (
        Destination.objects.filter(status=S.SCHEDULED, due_at__lte=now)
        .annotate(due_workspace=workspace)
        .annotate(
            rank=Window(
                RowNumber(),
                partition_by=[F("due_workspace")],
                order_by=[F("due_at").asc(), F("id").asc()],
            )
        )
    )
    if cap > 0:
        ranked = ranked.filter(rank__lte=cap)
    # Twice the batch: a tick that overlaps another skips the rows the other holds.
    with _without_jit():
        candidates = list(
            ranked.order_by("rank", "due_at", "id").values_list("pk", "due_workspace", "rank")[
                : batch * 2
            ]
        )
    capped = False
    if cap > 0 and candidates:
        # Busy: sending, or queued (or waiting to retry) to go within DISPATCH_BUSY_SECONDS. That
        # includes sends put back for want of an in-flight slot (their message comes back in 1-2 s,
        # held by the worker, ahead of the broker queue), not those deferred by a host's pause.
        soon = now + timedelta(seconds=DISPATCH_BUSY_SECONDS)
        busy = dict(
            Destination.objects.filter(
                Q(status=S.SENDING)
                | Q(status__in=[S.QUEUED, S.RETRY_WAIT], next_attempt_at__lte=soon),
                publication__workspace_id__in={w for _, w, _ in candidates},
            )
            .values_list("publication__workspace_id")
            .annotate(n=Count("pk"))
            .values_list("publication__workspace_id", "n")
        )
        allowed = [(pk, w, rank) for pk, w, rank in candidates if rank <= cap - busy.get(w, 0)]
        capped = len(allowed) < len(candidates)
        candidates = allowed
    if not candidates:
        return [], capped
    with transaction.atomic():
        locked = dict(
            Destination.objects.select_for_update(skip_locked=True)
            .filter(pk__in=[pk for pk, _, _ in candidates], status=S.SCHEDULED)
            .values_list("pk", "publication_id")
        )
        due = [(pk, locked[pk]) for pk, _, _ in candidates if pk in locked][:batch]
        if due:
            Destination.objects.filter(pk__in=[d for d, _ in due], status=S.SCHEDULED).update(
                status=S.QUEUED, next_attempt_at=now, updated_at=now
            )
            publication_ids = {p for _, p in due}
            Publication.objects.filter(pk__in=publication_ids, status=P.SCHEDULED).update(
                status=P.PUBLISHING, updated_at=now
            )
            # One INSERT for the batch (event_record would be one per publication).
            PublicationEvent.objects.bulk_create(
                PublicationEvent(
                    publication_id=publication_id, kind="publication.due", status=P.PUBLISHING
                )
                for publication_id in publication_ids
            )
    return [destination_id for destination_id, _ in due], capped


def _send_queue_depth() -> int | None:
    """Messages waiting in the queue of delivery_send, or None when the broker cannot say."""
    from kombu.exceptions import ChannelError

    app = tasks.delivery_send.app
    queue = app.conf.task_default_queue
    try:
        with app.connection_for_write() as connection:  # its own connection: no shared pool state
            connection.ensure_connection(max_retries=1)  # fail fast: never hang the tick
            try:
                channel: Any = connection.default_channel  # kombu's stubs omit queue_declare
                return int(channel.queue_declare(queue=queue, passive=True).message_count)
            except ChannelError:  # no such queue (Redis drops an empty list): nothing waits
                return 0
    except Exception:  # an unreachable broker must not stop the tick: nudge as if nothing waits
        logger.info("Cannot read the depth of queue %s; stale work is nudged regardless.", queue)
        return None


def delivery_dispatch(
    *, batch: int = 500, due_batch: int = 200, max_due_batches: int = 50
) -> dict[str, int]:
    """One beat tick: due scheduled work, lost messages, dead workers, deadlines.

    Due work goes out first, in small batches (each committed, then enqueued) until none is
    left or ``max_due_batches`` were taken: a burst of publications due in the same second
    leaves in this tick, not ``batch`` per tick, and the ticks that overlap a long one share the
    burst (each batch skips the rows another tick holds), so enqueueing it runs in parallel.
    """
    now = timezone.now()
    counts: dict[str, int] = {"due": 0}
    # While a workspace's cap holds its due work back, the tick tops the queue up again every
    # DISPATCH_REFILL_SECONDS for most of its interval, so that one busy workspace still keeps
    # the workers busy between ticks.
    refill_until = time.monotonic() + settings.HERALD_DISPATCH_INTERVAL_SECONDS * 0.8
    batches = 0
    while batches < max_due_batches:
        due, capped = _dispatch_due(batch=due_batch)
        batches += 1
        for destination_id in due:
            tasks.delivery_send.delay(str(destination_id))
        counts["due"] += len(due)
        if len(due) >= due_batch:
            continue
        if not capped or time.monotonic() + DISPATCH_REFILL_SECONDS > refill_until:
            break
        release_connection()
        time.sleep(DISPATCH_REFILL_SECONDS)
    # Dead workers: a claim that expired. If the write may have started, reconcile.
    expired = list(
        Destination.objects.filter(status=S.SENDING, claim_expires_at__lt=now).values_list(
            "pk", "write_started_at", "publication_id"
        )[:batch]
    )
    for destination_id, write_started_at, publication_id in expired:
        if write_started_at is not None:
            message = "The worker stopped while sending; checking with the provider."
            with transaction.atomic():
                if Destination.objects.filter(
                    pk=destination_id, status=S.SENDING, claim_expires_at__lt=now
                ).update(
                    status=S.AMBIGUOUS,
                    error_kind="ambiguous",
                    claim_expires_at=None,
                    next_attempt_at=now,
                    error_message=message,
                    updated_at=now,
                ):
                    event_record(
                        publication_id=publication_id,
                        destination=Destination(pk=destination_id),
                        kind="destination.ambiguous",
                        status=S.AMBIGUOUS,
                        detail=message,
                    )
        elif Destination.objects.filter(
            pk=destination_id, status=S.SENDING, claim_expires_at__lt=now
        ).update(status=S.QUEUED, claim_expires_at=None, next_attempt_at=now, updated_at=now):
            event_record(
                publication_id=publication_id,
                destination=Destination(pk=destination_id),
                kind="destination.requeued",
                status=S.QUEUED,
                detail="The worker stopped before sending; queued again.",
            )
            tasks.delivery_send.delay(str(destination_id))
    counts["expired_claims"] = len(expired)
    # Deadlines: queued work that never got through (field lesson 2: never "queued forever").
    overdue = list(
        Destination.objects.filter(
            status__in=[S.QUEUED, S.RETRY_WAIT], deadline_at__lt=now
        ).values_list("pk", flat=True)[:batch]
    )
    for destination_id in overdue:
        destination = Destination.objects.get(pk=destination_id)
        _settle(
            destination,
            S.FAILED,
            kind="deadline",
            message="Delivery did not complete before its deadline.",
            action="retry",
        )
    # An outcome that stays unknown past the deadline goes to a person: never re-sent blindly.
    unconfirmed = list(
        Destination.objects.filter(status=S.AMBIGUOUS, deadline_at__lt=now)
        .exclude(action="contact_support")
        .values_list("pk", "publication_id")[:batch]
    )
    for destination_id, publication_id in unconfirmed:
        with transaction.atomic():
            if (
                Destination.objects.filter(pk=destination_id, status=S.AMBIGUOUS)
                .exclude(action="contact_support")
                .update(action="contact_support", next_attempt_at=None, updated_at=now)
            ):
                event_record(
                    publication_id=publication_id,
                    destination_id=destination_id,
                    kind="destination.unconfirmable",
                    status=S.AMBIGUOUS,
                    detail="The provider could not confirm the post before the deadline; check the account.",
                )
                _aggregate(publication_id)
    counts["overdue"] = len(overdue) + len(unconfirmed)
    # Queued work whose message may be lost (broker restart, dropped nudge) is nudged again once
    # it is stale. A duplicate finds nothing to claim. Work that is merely waiting in a backlog
    # is not lost: at most as many stale rows as the queue holds messages can still have one, so
    # only the oldest beyond that number go again (every stale row when the queue is empty or the
    # broker cannot say). Otherwise a backlog older than the stale age is nudged again every
    # tick, and the duplicates slow the workers down further.
    stale_before = now - timedelta(seconds=settings.HERALD_DISPATCH_STALE_SECONDS)
    stale_rows = Destination.objects.filter(
        status__in=[S.QUEUED, S.RETRY_WAIT], next_attempt_at__lte=stale_before
    )
    stale = list(stale_rows.order_by("next_attempt_at").values_list("pk", flat=True)[:batch])
    if stale and (waiting := _send_queue_depth()):
        stale = stale[: max(0, stale_rows.count() - waiting)]
    if stale:
        Destination.objects.filter(pk__in=stale, status__in=[S.QUEUED, S.RETRY_WAIT]).update(
            next_attempt_at=now
        )
    for destination_id in stale:
        tasks.delivery_send.delay(str(destination_id))
    counts["enqueued"] = counts["due"] + len(stale)
    ambiguous = list(
        Destination.objects.filter(status=S.AMBIGUOUS, next_attempt_at__lte=now)
        .exclude(action="contact_support")
        .values_list("pk", flat=True)[:batch]
    )
    for destination_id in ambiguous:
        tasks.delivery_reconcile.delay(str(destination_id))
    counts["reconcile"] = len(ambiguous)
    SchedulerHeartbeat.objects.update_or_create(name="dispatcher", defaults={"last_tick_at": now})
    return counts
