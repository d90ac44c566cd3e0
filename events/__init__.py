"""The event record: an append-only list of what happened in a workspace (docs/events.md)."""
