"""Celery tasks: thin wrappers that receive ids and call one service. Safe to run twice."""

from __future__ import annotations

from celery import shared_task


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
