"""Politeness (docs/operations.md "Delivery: politeness and fairness"): in-flight caps per account and per provider host, and the
pause of a host after a 429 or Retry-After. A send without a free slot gives its claim back."""

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
from config.db import release_connection
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


def in_flight_slots(destination: Destination, context: Any) -> dict[str, Any]:
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
    return {"host": host, "keys": keys, "token": f"{destination.pk}:{uuid.uuid4().hex}"}


def take_slots(destination: Destination, slots: dict[str, Any]) -> bool:
    """Take the send's slots, waiting up to HERALD_PROVIDER_SLOT_WAIT_SECONDS for free ones; else
    put the destination back (see :func:`unclaim`) and answer False."""
    wait_until = time.monotonic() + settings.HERALD_PROVIDER_SLOT_WAIT_SECONDS
    pause_key = _pause_key(slots["host"]) if slots["host"] else ""
    pause = 0.05
    if not slots["keys"] and not pause_key:
        return True
    while True:
        taken, paused_until = limits.acquire_shared_slots(
            slots["keys"],
            slots["token"],
            settings.HERALD_PROVIDER_SLOT_LEASE_SECONDS,
            unless_marked=pause_key,
        )
        if taken:
            return True
        if paused_until:  # the host asked us to wait: no point polling
            unclaim(destination, max(0.0, paused_until - time.time()) + random.uniform(0.0, 1.0))  # noqa: S311
            return False
        if time.monotonic() + pause > wait_until:
            unclaim(destination, random.uniform(1.0, 2.0))  # noqa: S311  (spread the returns)
            return False
        release_connection()  # pooled: not held while waiting
        time.sleep(pause)
        pause = min(pause * 1.5, 0.25)


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
