"""A workspace's iCalendar feed (RFC 5545) of its scheduled posts, at a secret URL:
``GET /feeds/calendar/<token>.ics``, ``text/calendar``, no authentication (the random token in
the URL is the only key, as for the built-in Atom feed). The API gives and rotates the URL
(``/api/v1/workspaces/{id}/calendar-feed``).

One ``VEVENT`` per publication that is scheduled, publishing or published at a ``scheduled_at``
from ``PAST_DAYS`` days ago on (at most ``MAX_EVENTS``, earliest first): ``UID`` (the
publication's ID), ``DTSTAMP`` (its last change), ``DTSTART`` (in UTC), ``SUMMARY`` (the start of
its text), ``URL`` (the publication in the API) and ``STATUS``. Text is escaped and lines are
folded at 75 octets with CRLF line ends.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_safe

from config.types import ModelId
from publishing.models import CalendarFeed, Publication
from workspaces.access import Actor, require_workspace_role
from workspaces.models import Workspace, WorkspaceMembership

MAX_EVENTS = 1000
PAST_DAYS = 30
SUMMARY_CHARS = 80
SHOWN = (Publication.Status.SCHEDULED, Publication.Status.PUBLISHING, Publication.Status.PUBLISHED)


def escape_text(value: str) -> str:
    """An RFC 5545 TEXT value: backslash, semicolon, comma and line breaks escaped."""
    value = value.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,")
    value = value.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    return "".join(ch for ch in value if ch >= " " or ch == "\t")


def fold(line: str) -> str:
    """Lines longer than 75 octets split (before a whole UTF-8 character) with CRLF + space."""
    parts: list[str] = []
    current, size, limit = "", 0, 75
    for ch in line:
        width = len(ch.encode())
        if size + width > limit:
            parts.append(current)
            current, size, limit = "", 0, 74  # a continuation line starts with one space
        current += ch
        size += width
    parts.append(current)
    return "\r\n ".join(parts)


def _stamp(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def _summary(text: str) -> str:
    first = " ".join(text.split())
    if len(first) > SUMMARY_CHARS:
        first = first[: SUMMARY_CHARS - 1].rstrip() + "…"
    return first or "(no text)"


def _origin(request: HttpRequest) -> str:
    return settings.HERALD_PUBLIC_URL or request.build_absolute_uri("/").rstrip("/")


def _event(publication: Publication, origin: str) -> list[str]:
    start = publication.scheduled_at or publication.updated_at  # the query keeps scheduled ones
    url = origin + reverse("publishing:publication-detail", args=[publication.pk])
    status = "TENTATIVE" if publication.status == Publication.Status.SCHEDULED else "CONFIRMED"
    return [
        "BEGIN:VEVENT",
        f"UID:{publication.pk}@herald",
        f"DTSTAMP:{_stamp(publication.updated_at)}",
        f"DTSTART:{_stamp(start)}",
        f"SUMMARY:{escape_text(_summary(publication.text))}",
        f"URL:{url}",
        f"STATUS:{status}",
        "END:VEVENT",
    ]


def calendar_document(workspace: Workspace, origin: str, *, now: datetime | None = None) -> str:
    since = (now or timezone.now()) - timedelta(days=PAST_DAYS)
    rows = Publication.objects.filter(
        workspace=workspace, status__in=SHOWN, scheduled_at__gte=since
    ).order_by("scheduled_at", "pk")[:MAX_EVENTS]
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//Herald//Posting calendar//EN",
        "CALSCALE:GREGORIAN",
        "METHOD:PUBLISH",
        f"X-WR-CALNAME:{escape_text('Herald: ' + workspace.name)}",
    ]
    for publication in rows:
        lines.extend(_event(publication, origin))
    lines.append("END:VCALENDAR")
    return "".join(fold(line) + "\r\n" for line in lines)


@require_safe
def calendar_ics(request: HttpRequest, token: str) -> HttpResponse:
    feed = CalendarFeed.objects.select_related("workspace").filter(token=token).first()
    if feed is None:
        response = HttpResponse("No such calendar.", status=404, content_type="text/plain")
    else:
        body = calendar_document(feed.workspace, _origin(request))
        response = HttpResponse(body.encode(), content_type="text/calendar; charset=utf-8")
    response["Cache-Control"] = "no-store"
    response["X-Robots-Tag"] = "noindex"
    return response


# --- The API's side: give and rotate the URL --------------------------------------------------


def calendar_feed_get(*, actor: Actor, workspace_id: ModelId) -> CalendarFeed | None:
    pk = require_workspace_role(actor, workspace_id)
    return CalendarFeed.objects.filter(workspace_id=pk).first()


@transaction.atomic
def calendar_feed_rotate(*, actor: Actor, workspace_id: ModelId) -> CalendarFeed:
    """A new secret URL (the first one, or one replacing the previous, which stops working)."""
    pk = require_workspace_role(actor, workspace_id, role=WorkspaceMembership.Role.EDITOR)
    feed, _ = CalendarFeed.objects.update_or_create(
        workspace_id=pk,
        defaults={"token": secrets.token_hex(16), "created_at": timezone.now()},
    )
    return feed


def calendar_url(request: HttpRequest, feed: CalendarFeed) -> str:
    return _origin(request) + reverse("feeds:calendar", args=[feed.token])
