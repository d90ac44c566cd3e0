"""Celery tasks: thin wrappers that receive ids and call one service. Safe to run twice."""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task
from kombu.exceptions import KombuError

logger = logging.getLogger(__name__)


def nudge(task: Task[Any, Any], destination_id: str, countdown: float | None = None) -> None:
    """Send one task message; called after commit (``transaction.on_commit(partial(nudge, ...))``).

    The message is only a nudge: when the broker is down the failure is logged, not raised (the
    transaction has committed and the caller must not see an error), and the dispatcher
    re-enqueues the work from the database once it is stale.
    """
    try:
        if countdown is None:
            task.delay(destination_id)
        else:
            task.apply_async((destination_id,), countdown=countdown)
    except (KombuError, OSError) as exc:
        logger.warning(
            "Could not enqueue %s for %s (%s); the dispatcher will re-enqueue it.",
            task.name, destination_id, type(exc).__name__,
        )  # fmt: skip


@shared_task(name="publishing.delivery_send", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def delivery_send(destination_id: str) -> None:
    from publishing.services import delivery

    delivery.delivery_send(destination_id=destination_id)


@shared_task(name="publishing.delivery_reconcile", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def delivery_reconcile(destination_id: str) -> None:
    from publishing.services import delivery

    delivery.delivery_reconcile(destination_id=destination_id)


@shared_task(name="publishing.delivery_dispatch", ignore_result=True)
def delivery_dispatch() -> dict[str, int]:
    from publishing.services import delivery

    return delivery.delivery_dispatch()


@shared_task(name="publishing.housekeeping", ignore_result=True)
def housekeeping() -> dict[str, int]:
    from publishing.services import housekeeping as service

    return service.housekeeping()
