from __future__ import annotations


class UnknownEventType(ValueError):
    """A programming error: ``record_event`` was called with a type ``EVENT_TYPES`` lacks."""
