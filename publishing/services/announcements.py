"""Which publication timeline entries are also workspace events (docs/events.md), and the
resource each event carries: the publication or destination as the API shows it.

The representation is built here, not with the API's serializers: a send records two events,
and serializing through them would more than double a send's Python work on the delivery hot
path (tests/publishing/test_delivery_send_cost.py). tests/events/test_event_record.py checks
that what is built here equals what the API shows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Prefetch

from config.types import ModelId
from events.services.record import record_event
from publishing.models import Destination, Publication

# timeline kind -> event type. A kind not listed here stays on the publication's timeline only.
EVENT_OF_KIND: dict[str, str] = {
    "publication.scheduled": "publication.scheduled",
    "publication.published": "publication.published",
    "publication.partially_published": "publication.partially_published",
    "publication.failed": "publication.failed",
    "publication.canceled": "publication.canceled",
    "destination.published": "destination.published",
    "destination.reconciled": "destination.published",
    "destination.failed": "destination.failed",
    "destination.ambiguous": "destination.ambiguous",
    "destination.unconfirmable": "destination.ambiguous",
    "destination.blocked": "destination.held",
    "destination.retry_scheduled": "destination.retrying",
}


def announce(*, kind: str, publication_id: ModelId, destination_id: ModelId | None) -> None:
    """Record the workspace event of a timeline entry, if it has one (inside the caller's
    transaction: the event commits with the change)."""
    event_type = EVENT_OF_KIND.get(kind)
    if event_type is None:
        return
    if event_type.startswith("destination.") and destination_id is not None:
        # One read: the destination with its account (shown) and publication (its workspace).
        destination = Destination.objects.select_related("account", "publication").get(
            pk=destination_id
        )
        workspace_id = destination.publication.workspace_id
        data = {"publication_id": str(publication_id), **destination_shown(destination)}
    else:
        # Two reads: the publication with its voice override, its destinations with accounts.
        publication = (
            Publication.objects.select_related("voice_override")
            .prefetch_related(
                Prefetch("destinations", Destination.objects.select_related("account"))
            )
            .get(pk=publication_id)
        )
        workspace_id = publication.workspace_id
        data = publication_shown(publication)
    record_event(workspace_id=workspace_id, type=event_type, data=data)


def _when(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def _text_list(values: list[Any] | None) -> list[str] | None:
    return None if values is None else [str(v) for v in values]


def destination_shown(destination: Destination) -> dict[str, Any]:
    """``destination`` as the API's DestinationSerializer shows it (its account loaded)."""
    state = destination.send_state or {}
    waiting = destination.send_stage == "waiting"
    return {
        "id": str(destination.pk),
        "account_id": str(destination.account_id),
        "provider": destination.account.provider,
        "username": destination.account.username,
        "profile": destination.profile,
        "text": destination.text,
        "media_ids": _text_list(destination.media_ids),
        "options": {k: str(v) for k, v in (destination.options or {}).items()},
        "status": destination.status,
        "attempts": destination.attempts,
        "next_attempt_at": _when(destination.next_attempt_at),
        "deadline_at": _when(destination.deadline_at),
        "external_id": destination.external_id,
        "external_url": destination.external_url,
        "error_kind": destination.error_kind,
        "error_message": destination.error_message,
        "action": destination.action,
        "readiness": destination.readiness,
        "send_stage": destination.send_stage,
        "wait_reason": (str(state.get("reason") or "") or None) if waiting else None,
        "published_at": _when(destination.published_at),
        "updated_at": _when(destination.updated_at),
    }


def publication_shown(publication: Publication) -> dict[str, Any]:
    """``publication`` as GET /api/v1/publications/{id} shows it (without ``$schema``)."""
    try:
        voice_profile_id = publication.voice_override.voice_profile_id
    except ObjectDoesNotExist:
        voice_profile_id = None
    return {
        "id": str(publication.pk),
        "workspace_id": str(publication.workspace_id),
        "status": publication.status,
        "text": publication.text,
        "media_ids": _text_list(publication.media_ids) or [],
        "revision": publication.revision,
        "scheduled_at": _when(publication.scheduled_at),
        "execution_intent": publication.execution_intent,
        "voice_profile_id": None if voice_profile_id is None else str(voice_profile_id),
        "created_by": None if publication.created_by_id is None else str(publication.created_by_id),
        "created_at": _when(publication.created_at),
        "updated_at": _when(publication.updated_at),
        "destinations": [destination_shown(d) for d in publication.destinations.all()],
    }
