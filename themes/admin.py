"""Read-only admin for themes: changes go through the API, whose services check revisions,
references and assets in use. Published revisions cannot be changed or deleted anywhere."""

from __future__ import annotations

from django.contrib import admin

from config.admin import ReadOnlyAdmin
from themes.models import (
    OrganizationThemeSettings,
    PublishedRevision,
    Theme,
    ThemeAsset,
    ThemeAssignment,
)


@admin.register(Theme)
class ThemeAdmin(ReadOnlyAdmin):
    list_display = (
        "name",
        "organization",
        "draft_revision",
        "published_revision",
        "updated_at",
        "deleted_at",
    )
    list_select_related = ("organization",)
    list_filter = ("deleted_at",)
    search_fields = ("name", "organization__name")


@admin.register(PublishedRevision)
class PublishedRevisionAdmin(ReadOnlyAdmin):
    list_display = ("theme", "revision", "source_revision", "published_at", "published_by")
    list_select_related = ("theme",)
    search_fields = ("theme__name",)


@admin.register(ThemeAsset)
class ThemeAssetAdmin(ReadOnlyAdmin):
    list_display = ("name", "organization", "kind", "media_type", "size_bytes", "created_at")
    list_select_related = ("organization",)
    list_filter = ("kind", "media_type")
    search_fields = ("name", "checksum_sha256", "organization__name")


@admin.register(OrganizationThemeSettings)
class OrganizationThemeSettingsAdmin(ReadOnlyAdmin):
    list_display = (
        "organization",
        "reference_kind",
        "reference_id",
        "reference_version",
        "updated_at",
    )
    list_select_related = ("organization",)


@admin.register(ThemeAssignment)
class ThemeAssignmentAdmin(ReadOnlyAdmin):
    list_display = (
        "workspace",
        "reference_kind",
        "reference_id",
        "reference_version",
        "assigned_at",
    )
    list_select_related = ("workspace",)
