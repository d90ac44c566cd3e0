"""Periodic clean-up and catch-up (the hourly ``publishing.housekeeping`` beat task): expired
Idempotency-Key records, OAuth states and unchosen connection choices (their candidates'
tokens with them) go; video probes whose message never reached a worker
are sent again."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from config.nudge import nudge
from publishing import tasks
from publishing.models import ConnectionChoice, IdempotencyRecord, Media, OAuthState

# Probes sent again per run at most: a backlog after a long outage drains over a few hours
# rather than flooding the workers in one tick.
PROBES_RESENT_PER_RUN = 200


def housekeeping() -> dict[str, int]:
    now = timezone.now()
    idempotency, _ = IdempotencyRecord.objects.filter(
        created_at__lt=now - IdempotencyRecord.TTL
    ).delete()
    oauth, _ = OAuthState.objects.filter(expires_at__lt=now).delete()
    choices, _ = ConnectionChoice.objects.filter(expires_at__lt=now).delete()
    return {
        "idempotency_records": idempotency,
        "oauth_states": oauth,
        "connection_choices": choices,
        "media_probes_resent": media_probes_resend(now),
    }


def media_probes_resend(now: datetime) -> int:
    """Send ``publishing.media_probe`` again for videos still ``processing`` well after any probe
    of them would have ended (its hard time limit, plus five minutes of queueing).

    The upload stores the item, then sends the probe's message after commit; a message lost
    while the broker was down would otherwise leave the item ``processing`` for ever. A probe
    that runs twice is harmless: the outcome is recorded once, under a row lock.
    """
    probe_bound = settings.HERALD_TRANSCODE_MAX_SECONDS + 90 + 300
    stale = Media.objects.filter(
        status=Media.Status.PROCESSING, created_at__lt=now - timedelta(seconds=probe_bound)
    ).order_by("created_at")
    media_ids = list(stale.values_list("pk", flat=True)[:PROBES_RESENT_PER_RUN])
    for media_id in media_ids:
        nudge(tasks.media_probe, str(media_id))
    return len(media_ids)
