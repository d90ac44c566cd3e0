"""Politeness (docs/operations.md "Delivery: politeness and fairness"): in-flight caps per account and per provider host, and the
pause of a host after a 429 or Retry-After. A send without a free slot gives its claim back
at once (it never sleeps in the worker thread)."""

from __future__ import annotations

import random
import time
import uuid
from datetime import timedelta
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from config import limits
from config.nudge import nudge
from publishing import tasks
from publishing.models import Destination
from publishing.services.delivery.outcomes import S


def provider_host(provider: str, context: Any) -> str:
    """The provider host a destination's calls go to (``host[:port]``; empty when none, e.g. the
    built-in feed): the account's instance or API base, its webhook URL, else the provider's
    configured API. Only the host is kept (a webhook URL's path may hold a token)."""
    credentials = getattr(context, "credentials", None) or {}
    defaults = {
        "telegram": settings.HERALD_TELEGRAM_API_URL,
        "bluesky": settings.HERALD_BLUESKY_SERVICE_URL,
    }
    url = (
        getattr(context, "instance_url", "")
        or credentials.get("url")
        or credentials.get("webhook_url")
        or defaults.get(provider, "")
    )
    try:
        return urlsplit(str(url)).netloc.rsplit("@", 1)[-1].lower()
    except ValueError:
        return ""


def _host_key(host: str) -> str:
    return f"delivery:host:{host}"


def _pause_key(host: str) -> str:
    return f"delivery:paused:{host}"


def host_paused_until(host: str) -> float:
    """When the pause of ``host`` after a 429 / Retry-After ends (epoch seconds), 0 if none."""
    return limits.read_mark(_pause_key(host)) if host else 0.0


def pause_host(host: str, retry_after: float | None) -> None:
    """A 429 or Retry-After from ``host`` pauses every send to it (only it) until it has passed."""
    if not host:
        return
    seconds = settings.HERALD_RETRY_BASE_SECONDS if retry_after is None else float(retry_after)
    seconds = min(max(seconds, 0.0), settings.HERALD_RETRY_AFTER_CAP_SECONDS)
    if seconds > 0:
        limits.set_mark(_pause_key(host), time.time() + seconds)


def in_flight_slots(
    destination: Destination, context: Any, *, lease_seconds: float = 0.0
) -> dict[str, Any]:
    """The slots a send takes: its account's and its provider host's, leased for
    HERALD_PROVIDER_SLOT_LEASE_SECONDS plus ``lease_seconds`` (the time its upload may take)."""
    host = provider_host(destination.account.provider, context)
    keys = [
        (
            f"delivery:account:{destination.account_id}",
            settings.HERALD_PROVIDER_MAX_IN_FLIGHT_PER_ACCOUNT,
        )
    ]
    if host:
        keys.append((_host_key(host), settings.HERALD_PROVIDER_MAX_IN_FLIGHT_PER_HOST))
    keys = [(key, limit) for key, limit in keys if limit > 0]
    return {
        "host": host,
        "keys": keys,
        "token": f"{destination.pk}:{uuid.uuid4().hex}",
        "lease": settings.HERALD_PROVIDER_SLOT_LEASE_SECONDS + lease_seconds,
    }


def take_slots(slots: dict[str, Any]) -> float | None:
    """Take the send's slots at once: None when taken, else after how many seconds the send
    should come back (when the host's pause ends, or 1-2 s when the slots are busy). Nothing
    sleeps here: the caller gives its claim back and the worker thread goes on with other
    work (docs/decisions/0020-long-sends.md)."""
    pause_key = _pause_key(slots["host"]) if slots["host"] else ""
    if not slots["keys"] and not pause_key:
        return None
    taken, paused_until = limits.acquire_shared_slots(
        slots["keys"], slots["token"], slots["lease"], unless_marked=pause_key
    )
    if taken:
        return None
    if paused_until:  # the host asked us to wait: come back once it has passed
        return max(0.0, paused_until - time.time()) + random.uniform(0.0, 1.0)  # noqa: S311
    return random.uniform(1.0, 2.0)  # noqa: S311  (spread the returns)


def release_slots(slots: dict[str, Any]) -> None:
    if slots["keys"] and not slots.get("released"):
        slots["released"] = True
        limits.release_shared_slots([key for key, _ in slots["keys"]], slots["token"])


def unclaim(destination: Destination, delay: float) -> None:
    """Give back a claim taken before anything was sent: the attempt is not counted, and the
    destination is sent again after ``delay`` seconds (its message, and the dispatcher's stale
    sweep if that message is lost)."""
    now = timezone.now()
    status = S.RETRY_WAIT if destination.action == "retry" else S.QUEUED
    with transaction.atomic():
        if Destination.objects.filter(
            pk=destination.pk, status=S.SENDING, write_started_at__isnull=True
        ).update(
            status=status,
            attempts=F("attempts") - 1,
            claim_expires_at=None,
            next_attempt_at=now + timedelta(seconds=delay),
            updated_at=now,
        ):
            transaction.on_commit(
                partial(nudge, tasks.delivery_send, str(destination.pk), countdown=delay)
            )


def check_later(destination: Destination, delay: float) -> None:
    """Give back the claim of a long send's check that found no free slot: it waits as
    before, checked again after ``delay`` seconds."""
    now = timezone.now()
    with transaction.atomic():
        if Destination.objects.filter(
            pk=destination.pk, status=S.SENDING, send_stage__isnull=False
        ).update(
            claim_expires_at=None,
            send_check_at=now + timedelta(seconds=delay),
            updated_at=now,
        ):
            transaction.on_commit(
                partial(nudge, tasks.delivery_send, str(destination.pk), countdown=delay)
            )
