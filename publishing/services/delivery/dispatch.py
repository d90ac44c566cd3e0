"""The dispatcher (one beat tick): due scheduled work into the queue, round-robin by workspace;
lost messages and dead workers' claims; deadlines."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection as db_connection
from django.db import transaction
from django.db.models import Count, F, OuterRef, Q, Subquery, UUIDField, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from config.db import release_connection
from publishing import tasks
from publishing.models import Destination, Publication, PublicationEvent, SchedulerHeartbeat
from publishing.services.delivery.outcomes import P, S, aggregate, settle
from publishing.services.publications import event_record

logger = logging.getLogger(__name__)


DISPATCH_REFILL_SECONDS = 0.2
DISPATCH_BUSY_SECONDS = 5.0

# A due destination as the dispatcher ranks it: (id, workspace id, rank in its workspace).
_Candidate = tuple[Any, Any, int]


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

    Fairness (docs/operations.md "Delivery: politeness and fairness"): each workspace's due work is ranked by due time, and the batch
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
    candidates = _ranked_due_candidates(now=now, cap=cap, batch=batch)
    capped = False
    if cap > 0 and candidates:
        allowed = _within_workspace_caps(candidates, now=now, cap=cap)
        capped = len(allowed) < len(candidates)
        candidates = allowed
    if not candidates:
        return [], capped
    return _queue_due(candidates, now=now, batch=batch), capped


def _ranked_due_candidates(*, now: datetime, cap: int, batch: int) -> list[_Candidate]:
    """Due scheduled destinations as ``(id, workspace id, rank in its workspace)``, every
    workspace's first before any workspace's second; twice ``batch`` of them, because a tick that
    overlaps another skips the rows the other holds. Ranks above ``cap`` are left out."""
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
    with _without_jit():
        return list(
            ranked.order_by("rank", "due_at", "id").values_list("pk", "due_workspace", "rank")[
                : batch * 2
            ]
        )


def _within_workspace_caps(
    candidates: list[_Candidate], *, now: datetime, cap: int
) -> list[_Candidate]:
    """The candidates their workspace's cap still has room for, counting the work it already has
    busy: sending, or queued (or waiting to retry) to go within DISPATCH_BUSY_SECONDS. That
    includes sends put back for want of an in-flight slot (their message comes back in 1-2 s,
    held by the worker, ahead of the broker queue), not those deferred by a host's pause."""
    soon = now + timedelta(seconds=DISPATCH_BUSY_SECONDS)
    busy = dict(
        Destination.objects.filter(
            Q(status=S.SENDING) | Q(status__in=[S.QUEUED, S.RETRY_WAIT], next_attempt_at__lte=soon),
            publication__workspace_id__in={w for _, w, _ in candidates},
        )
        .values_list("publication__workspace_id")
        .annotate(n=Count("pk"))
        .values_list("publication__workspace_id", "n")
    )
    return [(pk, w, rank) for pk, w, rank in candidates if rank <= cap - busy.get(w, 0)]


def _queue_due(candidates: list[_Candidate], *, now: datetime, batch: int) -> list[Any]:
    """Lock the first ``batch`` candidates no other tick holds (``SKIP LOCKED``) and move them,
    with their publications, to queued in one transaction; their ids, in the candidates' order."""
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
    return [destination_id for destination_id, _ in due]


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


def _enqueue_sends(destination_ids: list[Any]) -> None:
    """One ``delivery_send`` message per destination, all through one broker producer (Celery's
    ``producer_or_acquire``): a burst's batch does not take a connection from the pool and
    declare the queue again for every message."""
    if not destination_ids:
        return
    send = tasks.delivery_send
    with send.app.producer_or_acquire() as producer:
        for destination_id in destination_ids:
            send.apply_async((str(destination_id),), producer=producer)


def delivery_dispatch(
    *, batch: int = 500, due_batch: int = 200, max_due_batches: int = 50
) -> dict[str, int]:
    """One beat tick, in phases: due work, dead workers' claims, deadlines, lost messages,
    ambiguous outcomes to reconcile; then the heartbeat. Returns how many rows each phase took.

    Every phase after the first takes at most ``batch`` rows, judged against the time the tick
    began; due work goes in batches of ``due_batch`` (see :func:`_dispatch_due_work`).
    """
    now = timezone.now()
    counts = {"due": _dispatch_due_work(due_batch=due_batch, max_due_batches=max_due_batches)}
    counts["expired_claims"] = _recover_expired_claims(now=now, batch=batch)
    counts["overdue"] = _fail_past_deadline(now=now, batch=batch)
    counts["overdue"] += _hand_unconfirmed_to_people(now=now, batch=batch)
    counts["enqueued"] = counts["due"] + _nudge_stale_work(now=now, batch=batch)
    counts["enqueued"] += _nudge_lost_checks(now=now, batch=batch)
    counts["reconcile"] = _enqueue_reconciles(now=now, batch=batch)
    SchedulerHeartbeat.objects.update_or_create(name="dispatcher", defaults={"last_tick_at": now})
    return counts


def _dispatch_due_work(*, due_batch: int, max_due_batches: int) -> int:
    """Queue and enqueue due work in small batches (each committed, then enqueued); how many.

    Batches go until none is left or ``max_due_batches`` were taken: a burst of publications due
    in the same second leaves in this tick, not one batch per tick, and the ticks that overlap a
    long one share the burst (each batch skips the rows another tick holds), so enqueueing it
    runs in parallel. While a workspace's cap holds its due work back, the tick tops the queue up
    again every DISPATCH_REFILL_SECONDS for most of its interval, so that one busy workspace
    still keeps the workers busy between ticks.
    """
    refill_until = time.monotonic() + settings.HERALD_DISPATCH_INTERVAL_SECONDS * 0.8
    dispatched = 0
    for _ in range(max_due_batches):
        due, capped = _dispatch_due(batch=due_batch)
        _enqueue_sends(due)
        dispatched += len(due)
        if len(due) >= due_batch:
            continue
        if not capped or time.monotonic() + DISPATCH_REFILL_SECONDS > refill_until:
            break
        release_connection()  # no connection held while sleeping
        time.sleep(DISPATCH_REFILL_SECONDS)
    return dispatched


def _recover_expired_claims(*, now: datetime, batch: int) -> int:
    """Dead workers: sending claims that expired before ``now``; how many were found.

    A claim whose write may have started (``write_started_at``) may have reached the provider:
    it becomes ambiguous, to be reconciled, never re-sent. One whose write never started is
    queued again and enqueued at once."""
    expired = list(
        Destination.objects.filter(status=S.SENDING, claim_expires_at__lt=now).values_list(
            "pk", "write_started_at", "publication_id"
        )[:batch]
    )
    for destination_id, write_started_at, publication_id in expired:
        if write_started_at is not None:
            _mark_ambiguous_after_dead_worker(destination_id, publication_id, now=now)
        else:
            _requeue_after_dead_worker(destination_id, publication_id, now=now)
    return len(expired)


def _mark_ambiguous_after_dead_worker(
    destination_id: Any, publication_id: Any, *, now: datetime
) -> None:
    """The worker died after the write may have started: ambiguous, with its event, in one
    transaction; only while the claim is still the expired one (a live worker may have settled
    it since it was read)."""
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


def _requeue_after_dead_worker(destination_id: Any, publication_id: Any, *, now: datetime) -> None:
    """The worker died before the write started: sending again is safe. Queued again (only while
    the claim is still the expired one) and enqueued."""
    if Destination.objects.filter(
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


def _fail_past_deadline(*, now: datetime, batch: int) -> int:
    """Queued work that never got through before its deadline fails (nothing stays "queued"
    forever); how many."""
    overdue = list(
        Destination.objects.filter(
            status__in=[S.QUEUED, S.RETRY_WAIT], deadline_at__lt=now
        ).values_list("pk", flat=True)[:batch]
    )
    for destination_id in overdue:
        destination = Destination.objects.get(pk=destination_id)
        settle(
            destination,
            S.FAILED,
            kind="deadline",
            message="Delivery did not complete before its deadline.",
            action="retry",
        )
    return len(overdue)


def _hand_unconfirmed_to_people(*, now: datetime, batch: int) -> int:
    """An outcome that stays unknown past the deadline goes to a person (``contact_support``),
    never re-sent blindly; how many. Each with its event and the publication's status, in one
    transaction."""
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
                aggregate(publication_id)
    return len(unconfirmed)


def _nudge_stale_work(*, now: datetime, batch: int) -> int:
    """Enqueue again the queued work whose message may be lost (broker restart, dropped nudge)
    once it is stale; how many. A duplicate finds nothing to claim.

    Work that is merely waiting in a backlog is not lost: at most as many stale rows as the
    queue holds messages can still have one, so only the oldest beyond that number go again
    (every stale row when the queue is empty or the broker cannot say). Otherwise a backlog
    older than the stale age is nudged again every tick, and the duplicates slow the workers
    down further."""
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
    return len(stale)


def _nudge_lost_checks(*, now: datetime, batch: int) -> int:
    """Enqueue again the check of a long send whose message may be lost (its check is stale:
    due HERALD_DISPATCH_STALE_SECONDS ago and still unclaimed, e.g. the worker holding its
    countdown was killed); how many. A duplicate finds nothing to claim
    (docs/decisions/0020-long-sends.md)."""
    stale_before = now - timedelta(seconds=settings.HERALD_DISPATCH_STALE_SECONDS)
    lost = list(
        Destination.objects.filter(
            status=S.SENDING,
            claim_expires_at__isnull=True,
            send_stage__isnull=False,
            send_check_at__lte=stale_before,
        ).values_list("pk", flat=True)[:batch]
    )
    for destination_id in lost:
        tasks.delivery_send.delay(str(destination_id))
    return len(lost)


def _enqueue_reconciles(*, now: datetime, batch: int) -> int:
    """One ``delivery_reconcile`` message per ambiguous destination whose next check is due (a
    person's case, ``contact_support``, is left alone); how many."""
    ambiguous = list(
        Destination.objects.filter(status=S.AMBIGUOUS, next_attempt_at__lte=now)
        .exclude(action="contact_support")
        .values_list("pk", flat=True)[:batch]
    )
    for destination_id in ambiguous:
        tasks.delivery_reconcile.delay(str(destination_id))
    return len(ambiguous)
