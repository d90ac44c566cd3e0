"""``record_event``: the one way anything adds to the event record."""

from __future__ import annotations

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder

from config.types import ModelId
from events.errors import UnknownEventType
from events.models import Event
from events.types import EVENT_TYPES


def record_event(*, workspace_id: ModelId, type: str, data: dict[str, Any]) -> Event:
    """Append one event. Call it inside the transaction of the state change that causes it, so
    the event exists exactly when the change does (rolled back together)."""
    if type not in EVENT_TYPES:
        raise UnknownEventType(f"Unknown event type {type!r}: add it to events.types.")
    return Event.objects.create(workspace_id=workspace_id, type=type, data=_plain(data))


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as JSON would carry it (datetimes as ISO 8601 strings, UUIDs as text)."""
    plain: dict[str, Any] = json.loads(json.dumps(data, cls=DjangoJSONEncoder))
    return plain
