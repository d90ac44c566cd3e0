"""Celery tasks of repost automation: thin wrappers that receive ids and call the engine.
Safe to run twice (an execution is claimed with a conditional update)."""

from __future__ import annotations

from celery import shared_task


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
