"""Celery tasks of repost automation: thin wrappers that receive ids and call the engine.
Safe to run twice (an execution is claimed with a conditional update)."""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task
from kombu.exceptions import KombuError

logger = logging.getLogger(__name__)


def nudge(task: Task[Any, Any], execution_id: str) -> None:
    """Send one task message. A broker outage is logged, not raised: the execution row is the
    source of truth, and a later tick dispatches it again once its lease has passed."""
    try:
        task.delay(execution_id)
    except (KombuError, OSError) as exc:
        logger.warning(
            "Could not enqueue %s for %s (%s); a later tick will.",
            task.name,
            execution_id,
            type(exc).__name__,
        )


@shared_task(name="reposts.engine_tick", ignore_result=True)
def engine_tick() -> dict[str, int]:
    from reposts import engine

    return engine.engine_tick()


@shared_task(
    name="reposts.execution_advance", acks_late=True, reject_on_worker_lost=True, ignore_result=True
)
def execution_advance(execution_id: str) -> None:
    from reposts import engine

    engine.execution_advance(execution_id=execution_id)
