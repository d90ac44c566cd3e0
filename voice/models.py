"""Voice profiles: a workspace's writing-style definitions, and which accounts and publications
use which profile."""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.utils.timezone import now

from publishing.models import Account, Publication
from voice.definition import SCHEMA_VERSION, empty_definition
from workspaces.models import Workspace

DEFAULT_PROFILE_NAME = "Default voice"
NAME_MAX_LENGTH = 80


class VoiceProfile(models.Model):
    """``revision`` counts replacements (PUT); ``expected_revision`` is checked against it under
    a row lock. Exactly one profile per workspace is the default (a partial unique index; the
    services keep one in place)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="voice_profiles"
    )
    name = models.CharField(max_length=NAME_MAX_LENGTH)
    is_default = models.BooleanField(default=False)
    definition = models.JSONField(default=empty_definition)
    revision = models.PositiveIntegerField(default=1)
    schema_version = models.PositiveSmallIntegerField(default=SCHEMA_VERSION)
    created_at = models.DateTimeField(default=now)
    updated_at = models.DateTimeField(default=now)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                "workspace", Lower("name"), name="voice_profile_name_ci_unique"
            ),
            models.UniqueConstraint(
                fields=["workspace"],
                condition=Q(is_default=True),
                name="one_default_voice_profile",
            ),
            models.CheckConstraint(
                condition=Q(revision__gte=1), name="voice_profile_revision_gte_1"
            ),
        ]
        indexes: ClassVar = [
            models.Index(
                fields=["workspace", "-created_at", "-id"], name="voice_profile_ws_newest"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} (r{self.revision})"


class VoiceProfileAssignment(models.Model):
    """The profile a connected account writes with (instead of the workspace default)."""

    account = models.OneToOneField(
        Account, on_delete=models.CASCADE, primary_key=True, related_name="voice_assignment"
    )
    voice_profile = models.ForeignKey(
        VoiceProfile, on_delete=models.CASCADE, related_name="assignments"
    )
    assigned_at = models.DateTimeField(default=now)

    def __str__(self) -> str:
        return f"{self.account_id} → {self.voice_profile_id}"


class PublicationVoiceOverride(models.Model):
    """A publication written in a chosen profile, whatever its accounts are assigned."""

    publication = models.OneToOneField(
        Publication, on_delete=models.CASCADE, primary_key=True, related_name="voice_override"
    )
    voice_profile = models.ForeignKey(
        VoiceProfile, on_delete=models.CASCADE, related_name="publication_overrides"
    )
    created_at = models.DateTimeField(default=now)

    def __str__(self) -> str:
        return f"{self.publication_id} → {self.voice_profile_id}"
