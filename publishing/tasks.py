"""Celery tasks: thin wrappers that receive ids and call one service. Safe to run twice."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings


@shared_task(
    name="publishing.delivery_send",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    # Sized to the largest upload at the minimum throughput (docs/decisions/0020-long-sends.md);
    # a processing wait holds no task, so it needs no time here.
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT
    + settings.HERALD_DELIVERY_TRANSFER_SECONDS,
    time_limit=settings.CELERY_TASK_TIME_LIMIT + settings.HERALD_DELIVERY_TRANSFER_SECONDS,
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
    # Above the budgets of two probes (services.video.MAX_SECONDS) and of a conversion.
    soft_time_limit=settings.HERALD_TRANSCODE_MAX_SECONDS + 60,
    time_limit=settings.HERALD_TRANSCODE_MAX_SECONDS + 90,
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


@shared_task(name="publishing.public_origin_check", ignore_result=True)
def public_origin_check() -> str | None:
    from publishing.services import public_origin

    return public_origin.public_origin_check()


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
