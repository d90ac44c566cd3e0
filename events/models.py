from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.utils.timezone import now


class Event(models.Model):
    """One thing that happened in a workspace. Append-only: never updated, never deleted
    (except with its workspace). ``id`` is the monotonic position the event list pages by."""

    id = models.BigAutoField(primary_key=True)
    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="+"
    )
    type = models.CharField(max_length=64)
    occurred_at = models.DateTimeField(default=now)
    data = models.JSONField(default=dict)

    class Meta:
        indexes: ClassVar = [models.Index(fields=["workspace", "id"], name="event_workspace_id")]

    def __str__(self) -> str:
        return f"{self.type} #{self.pk}"
