"""Sending a task message that is only a nudge: the database row is the source of truth.

The apps store their background work before they send its message (publishing's destinations,
media probes and token refreshes; reposts' executions), and their beat ticks find stored work
again when its message never came (the delivery dispatcher once queued work is stale, the repost
tick once an execution's lease has passed). So a message that cannot be sent while the broker is
down is logged, not raised: the caller's transaction has committed, and a caller that failed (a
request, a beat tick) would only lose the rest of its work.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from kombu.exceptions import KombuError

from config.outages import REDIS_OUTAGE_ERRORS, log_outage

if TYPE_CHECKING:
    from celery import Task

logger = logging.getLogger(__name__)

# After a failed send, the next ones in this process are skipped for this long: while the broker
# is down each attempt costs Celery's publish retries (about 0.7 s), and a publication with many
# destinations, or a tick with many due executions, would pay that once per message.
BROKER_BACKOFF_SECONDS = 5.0
_broker_down_until = 0.0

# What a failed enqueue raises when the broker is down: kombu's errors, the socket's, and
# redis-py's own connection errors (one tuple: mypy reads no starred except).
_ENQUEUE_ERRORS: tuple[type[Exception], ...] = (KombuError, OSError, *REDIS_OUTAGE_ERRORS)


def nudge(task: Task[Any, Any], object_id: str, countdown: float | None = None) -> None:
    """Send one ``task`` message for ``object_id``; call it after commit
    (``transaction.on_commit(partial(nudge, ...))``) or from a tick.

    When the broker is down the failure is logged (once per interval, no traceback), not
    raised, and the sends of the next :data:`BROKER_BACKOFF_SECONDS` in this process are
    skipped (logged the same way).
    """
    global _broker_down_until
    if time.monotonic() < _broker_down_until:
        _log_unsent(task, object_id, "skipped: the broker failed moments ago")
        return
    try:
        if countdown is None:
            task.delay(object_id)
        else:
            task.apply_async((object_id,), countdown=countdown)
    except _ENQUEUE_ERRORS as exc:
        _broker_down_until = time.monotonic() + BROKER_BACKOFF_SECONDS
        _log_unsent(task, object_id, type(exc).__name__)


def reset_broker_backoff() -> None:
    """Try the broker again at the next send (e.g. after pointing the app at another broker)."""
    global _broker_down_until
    _broker_down_until = 0.0


def _log_unsent(task: Task[Any, Any], object_id: str, reason: str) -> None:
    log_outage(
        logger,
        "broker",
        "enqueue",
        "could not enqueue %s for %s (%s); the work itself is stored",
        task.name,
        object_id,
        reason,
    )
