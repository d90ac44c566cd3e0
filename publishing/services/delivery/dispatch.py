"""The dispatcher (one beat tick): due scheduled work into the queue, round-robin by workspace;
lost messages and dead workers' claims; deadlines."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from datetime import timedelta
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
        _enqueue_sends(due)
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
        settle(
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
                aggregate(publication_id)
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
