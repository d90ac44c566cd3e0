"""Organization themes: one draft per theme, immutable published revisions, theme assets, the
organization default and workspace assignments.

A theme reference (``{kind, id, version}``) names either a built-in (``kind`` ``built_in``, the
built-in's ID and version) or an organization theme (``kind`` ``organization``, the theme ID and
a published revision number, or none for "the latest published revision").
"""

from __future__ import annotations

import uuid
from typing import Any, NoReturn

from django.db import models
from django.db.models import Q
from django.utils.timezone import now

from themes.manifest.vocabulary import ASSET_KINDS, REFERENCE_KINDS


class ReferenceKind(models.TextChoices):
    BUILT_IN = "built_in", "Built-in theme"
    ORGANIZATION = "organization", "Organization theme"


assert tuple(ReferenceKind.values) == REFERENCE_KINDS  # noqa: S101 - one vocabulary


class Theme(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        "workspaces.Organization", on_delete=models.PROTECT, related_name="themes"
    )
    name = models.CharField(max_length=80)
    draft_manifest = models.JSONField()
    draft_revision = models.PositiveIntegerField(default=1)
    draft_updated_at = models.DateTimeField(default=now)
    draft_updated_by = models.CharField(max_length=64)
    # The number of the latest published revision; 0 while nothing has been published.
    published_revision = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=now)
    updated_at = models.DateTimeField(default=now)
    # Themes are deleted softly: their published revisions are immutable and stay.
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "name"],
                condition=Q(deleted_at__isnull=True),
                name="theme_name_unique_per_organization",
            ),
            models.CheckConstraint(
                condition=Q(draft_revision__gte=1), name="theme_draft_revision_positive"
            ),
        ]
        indexes = [
            models.Index(fields=["organization", "-created_at", "-id"], name="theme_org_created")
        ]

    def __str__(self) -> str:
        return self.name


class PublishedRevisionQuerySet(models.QuerySet["PublishedRevision"]):
    def update(self, **kwargs: Any) -> NoReturn:
        raise ImmutableRevisionError("Published theme revisions are immutable.")

    def delete(self) -> NoReturn:
        raise ImmutableRevisionError("Published theme revisions are immutable.")


class ImmutableRevisionError(Exception):
    """A write to a published revision; the database refuses it too (triggers)."""


class PublishedRevision(models.Model):
    """One published revision of a theme: written once, never updated or deleted (guarded here
    and by database triggers, see migration 0002)."""

    theme = models.ForeignKey(Theme, on_delete=models.PROTECT, related_name="revisions")
    revision = models.PositiveIntegerField()
    source_revision = models.PositiveIntegerField()
    manifest = models.JSONField()
    published_at = models.DateTimeField(default=now)
    published_by = models.CharField(max_length=64)

    objects = PublishedRevisionQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["theme", "revision"], name="theme_revision_unique"),
            models.CheckConstraint(condition=Q(revision__gte=1), name="theme_revision_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.theme_id} r{self.revision}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableRevisionError("Published theme revisions are immutable.")
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise ImmutableRevisionError("Published theme revisions are immutable.")


def theme_asset_path(asset: ThemeAsset, filename: str) -> str:
    return f"theme-assets/{asset.organization_id}/{filename}"


class ThemeAsset(models.Model):
    class Kind(models.TextChoices):
        FONT = "font", "Font"
        IMAGE = "image", "Image"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        "workspaces.Organization", on_delete=models.PROTECT, related_name="theme_assets"
    )
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    media_type = models.CharField(max_length=40)
    size_bytes = models.PositiveIntegerField()
    checksum_sha256 = models.CharField(max_length=64)
    file = models.FileField(upload_to=theme_asset_path, max_length=255)
    width = models.PositiveIntegerField(null=True, blank=True)
    height = models.PositiveIntegerField(null=True, blank=True)
    font_family = models.CharField(max_length=128, blank=True, default="")
    font_style = models.CharField(max_length=8, blank=True, default="")
    font_weight = models.PositiveSmallIntegerField(null=True, blank=True)
    license_acknowledged = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=now)
    created_by = models.CharField(max_length=64)

    class Meta:
        indexes = [
            models.Index(
                fields=["organization", "-created_at", "-id"], name="theme_asset_org_created"
            )
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind="image") | Q(license_acknowledged=True),
                name="theme_asset_font_license_acknowledged",
            ),
        ]

    def __str__(self) -> str:
        return self.name


assert tuple(ThemeAsset.Kind.values) == ASSET_KINDS  # noqa: S101 - one vocabulary


class ThemeAssetUse(models.Model):
    """An asset named by a theme's draft (``revision`` null) or by one published revision. The
    protecting foreign key is what makes an asset in use undeletable (409)."""

    theme = models.ForeignKey(Theme, on_delete=models.CASCADE, related_name="asset_uses")
    asset = models.ForeignKey(ThemeAsset, on_delete=models.PROTECT, related_name="uses")
    revision = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["theme", "asset"],
                condition=Q(revision__isnull=True),
                name="theme_asset_use_draft_unique",
            ),
            models.UniqueConstraint(
                fields=["theme", "asset", "revision"],
                condition=Q(revision__isnull=False),
                name="theme_asset_use_revision_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.asset_id} in {self.theme_id} ({self.revision or 'draft'})"


class ThemeReferenceFields(models.Model):
    """A theme reference stored in three columns."""

    reference_kind = models.CharField(max_length=16, choices=ReferenceKind.choices)
    reference_id = models.CharField(max_length=64)
    # A pinned version (built-in version or published revision); null: the latest.
    reference_version = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        abstract = True


class OrganizationThemeSettings(ThemeReferenceFields):
    """The organization default theme: what workspaces without an assignment use."""

    organization = models.OneToOneField(
        "workspaces.Organization",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="theme_settings",
    )
    updated_at = models.DateTimeField(default=now)
    updated_by = models.CharField(max_length=64)

    class Meta:
        indexes = [
            models.Index(fields=["reference_kind", "reference_id"], name="theme_default_reference")
        ]

    def __str__(self) -> str:
        return f"default theme of {self.organization_id}"


class ThemeAssignment(ThemeReferenceFields):
    """The theme a workspace uses instead of the organization default."""

    workspace = models.OneToOneField(
        "workspaces.Workspace",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="theme_assignment",
    )
    organization = models.ForeignKey(
        "workspaces.Organization", on_delete=models.CASCADE, related_name="theme_assignments"
    )
    assigned_at = models.DateTimeField(default=now)
    assigned_by = models.CharField(max_length=64)

    class Meta:
        indexes = [
            models.Index(
                fields=["reference_kind", "reference_id"], name="theme_assignment_reference"
            )
        ]

    def __str__(self) -> str:
        return f"theme of {self.workspace_id}"
