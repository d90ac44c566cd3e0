"""Reading the event record: the ordered list a consumer catches up from."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from config.api.pagination import decode_cursor, encode_cursor
from config.api.problems import RequestValidationError
from config.types import ModelId
from events.models import Event
from workspaces.access import Actor, require_workspace

# An event is listed once it is this old. Events are numbered when inserted, not when their
# transaction commits: a short wait lets a transaction that took a lower number commit before a
# consumer's cursor passes it. Herald's state changes commit well within it.
SETTLE = timedelta(seconds=2)


@dataclass(frozen=True)
class EventPage:
    items: list[Event]
    next_cursor: str
    has_more: bool


def _list_key(workspace_id: ModelId) -> str:
    return f"workspace-events:{workspace_id}"


def _position(workspace_id: ModelId, after: str | None) -> int:
    if not after:
        return 0
    values = decode_cursor(_list_key(workspace_id), after)
    if len(values) != 1 or not isinstance(values[0], int):
        raise RequestValidationError({"after": ["Invalid cursor."]}, location="query")
    return values[0]


def event_list(*, actor: Actor, workspace_id: ModelId, after: str | None, limit: int) -> EventPage:
    """The workspace's events after the cursor ``after`` (from the first without it), oldest
    first. ``next_cursor`` is where to continue, also when the page is empty."""
    workspace = require_workspace(actor, workspace_id).workspace
    position = _position(workspace.pk, after)
    rows = list(
        Event.objects.filter(
            workspace=workspace, pk__gt=position, occurred_at__lte=timezone.now() - SETTLE
        ).order_by("pk")[: limit + 1]
    )
    items = rows[:limit]
    last = items[-1].pk if items else position
    return EventPage(
        items=items,
        next_cursor=encode_cursor(_list_key(workspace.pk), [last]),
        has_more=len(rows) > limit,
    )
