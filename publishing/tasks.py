"""Celery tasks: thin wrappers that receive ids and call one service. Safe to run twice."""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import Task, shared_task
from kombu.exceptions import KombuError

from config.outages import REDIS_OUTAGE_ERRORS, log_outage

logger = logging.getLogger(__name__)


# After a failed send, the next ones in this process are skipped for this long: while the broker
# is down each attempt costs Celery's publish retries (about 0.7 s), and a publication with many
# destinations would pay that once per destination inside one request.
BROKER_BACKOFF_SECONDS = 5.0
_broker_down_until = 0.0


def nudge(task: Task[Any, Any], destination_id: str, countdown: float | None = None) -> None:
    """Send one task message; called after commit (``transaction.on_commit(partial(nudge, ...))``).

    The message is only a nudge: when the broker is down the failure is logged (once per
    interval, no traceback), not raised (the transaction has committed and the caller must not
    see an error), and the dispatcher re-enqueues the work from the database once it is stale.
    """
    global _broker_down_until
    if time.monotonic() < _broker_down_until:
        _log_unsent(task, destination_id, "skipped: the broker failed moments ago")
        return
    try:
        if countdown is None:
            task.delay(destination_id)
        else:
            task.apply_async((destination_id,), countdown=countdown)
    except _ENQUEUE_ERRORS as exc:
        _broker_down_until = time.monotonic() + BROKER_BACKOFF_SECONDS
        _log_unsent(task, destination_id, type(exc).__name__)


# What a failed enqueue raises when the broker is down (one tuple: mypy reads no starred except).
_ENQUEUE_ERRORS: tuple[type[Exception], ...] = (KombuError, OSError, *REDIS_OUTAGE_ERRORS)


def reset_broker_backoff() -> None:
    """Try the broker again at the next send (e.g. after pointing the app at another broker)."""
    global _broker_down_until
    _broker_down_until = 0.0


def _log_unsent(task: Task[Any, Any], destination_id: str, reason: str) -> None:
    log_outage(
        logger,
        "broker",
        "enqueue",
        "could not enqueue %s for %s (%s); the dispatcher "
        "re-enqueues queued work from the database once it is stale",
        task.name,
        destination_id,
        reason,
    )


@shared_task(
    name="publishing.delivery_send", acks_late=True, reject_on_worker_lost=True, ignore_result=True
)
def delivery_send(destination_id: str) -> None:
    from publishing.services import delivery

    delivery.delivery_send(destination_id=destination_id)


@shared_task(
    name="publishing.delivery_reconcile",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def delivery_reconcile(destination_id: str) -> None:
    from publishing.services import delivery

    delivery.delivery_reconcile(destination_id=destination_id)


@shared_task(
    name="publishing.media_probe",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    soft_time_limit=60,  # above the probe's own wall-clock budget (services.video.MAX_SECONDS)
    time_limit=90,
)
def media_probe(media_id: str) -> None:
    from publishing.services import media

    media.media_probe(media_id=media_id)


@shared_task(name="publishing.delivery_dispatch", ignore_result=True)
def delivery_dispatch() -> dict[str, int]:
    from publishing.services import delivery

    return delivery.delivery_dispatch()


@shared_task(name="publishing.housekeeping", ignore_result=True)
def housekeeping() -> dict[str, int]:
    from publishing.services import housekeeping as service

    return service.housekeeping()


@shared_task(
    name="publishing.account_token_refresh",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def account_token_refresh(account_id: str) -> str:
    from publishing.services import tokens

    return str(tokens.account_token_refresh(account_id=account_id))


@shared_task(name="publishing.account_tokens_refresh_due", ignore_result=True)
def account_tokens_refresh_due() -> dict[str, int]:
    from publishing.services import tokens

    return tokens.account_tokens_refresh_due()


@shared_task(name="publishing.uploads_expire", ignore_result=True)
def uploads_expire() -> int:
    """Remove resumable uploads past their Upload-Expires, with their spool files (idempotent)."""
    from publishing.services import uploads

    return uploads.uploads_expire()
