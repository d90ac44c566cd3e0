"""The hourly check that networks fetching media by URL (Facebook, Instagram) can reach this
server's media: a request to itself through ``HERALD_PUBLIC_URL`` for the signed URL of the
newest ready media item (Herald's health answer while there is none). The result is what
``/api/v1/ready`` reports as ``public_origin`` (``config.public_origin``)."""

from __future__ import annotations

import logging

import requests
from django.conf import settings

from config import public_origin
from publishing.models import Media
from publishing.services import media_links

logger = logging.getLogger(__name__)

TIMEOUT_SECONDS = 10.0


def _probe_url() -> str:
    media = (
        Media.objects.filter(status=Media.Status.READY)
        .exclude(file="")
        .order_by("-created_at")
        .first()
    )
    if media is not None:
        return media_links.media_absolute_url(media)
    return f"{settings.HERALD_PUBLIC_URL}/api/v1/health"


def public_origin_check() -> str | None:
    """``ok`` or ``unreachable`` (recorded), or None without ``HERALD_PUBLIC_URL``."""
    if not settings.HERALD_PUBLIC_URL:
        return None
    try:
        with requests.get(_probe_url(), timeout=TIMEOUT_SECONDS, stream=True) as answer:
            reachable = answer.status_code == 200
            detail = f"HTTP {answer.status_code}"
    except requests.RequestException as exc:
        reachable, detail = False, type(exc).__name__
    public_origin.record(reachable)
    if not reachable:
        logger.warning(
            "Media are not reachable through HERALD_PUBLIC_URL (%s): Facebook and Instagram "
            "cannot fetch them",
            detail,
        )
    return "ok" if reachable else "unreachable"
