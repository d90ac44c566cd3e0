"""Every event type Herald records, with what its ``data`` holds (docs/events.md)."""

from __future__ import annotations

PUBLICATION = "the publication as GET /api/v1/publications/{id} shows it"
DESTINATION = (
    "the destination as the publication's `destinations` list shows it, with `publication_id`"
)

# type -> (when it is recorded, what ``data`` is)
EVENT_TYPES: dict[str, tuple[str, str]] = {
    "publication.scheduled": ("A publication was scheduled.", PUBLICATION),
    "publication.published": ("Every destination of a publication published.", PUBLICATION),
    "publication.partially_published": (
        "A publication settled with some destinations published and some not.",
        PUBLICATION,
    ),
    "publication.failed": ("A publication settled with no destination published.", PUBLICATION),
    "publication.canceled": ("A draft or scheduled publication was canceled.", PUBLICATION),
    "destination.published": (
        "A destination published (or a reconciliation found it published).",
        DESTINATION,
    ),
    "destination.failed": ("A destination failed for good.", DESTINATION),
    "destination.ambiguous": (
        "A send's outcome is unknown; Herald will not resend it blindly.",
        DESTINATION,
    ),
    "destination.held": (
        "A destination is held back (blocked) until someone acts: see `action`.",
        DESTINATION,
    ),
    "destination.retrying": ("A send failed transiently and waits for a retry.", DESTINATION),
}
