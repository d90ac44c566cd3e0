"""Admin for voice profiles: read-only. Changes go through the API (revision checks, the
default-profile rules and definition validation live in the services)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from config.admin import ReadOnlyAdmin
from voice.models import VoiceProfile, VoiceProfileAssignment


class VoiceProfileAssignmentInline(admin.TabularInline[VoiceProfileAssignment, VoiceProfile]):
    model = VoiceProfileAssignment
    extra = 0
    can_delete = False
    fields = ("account", "assigned_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(VoiceProfile)
class VoiceProfileAdmin(ReadOnlyAdmin):
    list_display = ("name", "workspace", "is_default", "revision", "updated_at")
    list_filter = ("is_default",)
    list_select_related = ("workspace",)
    search_fields = ("name", "workspace__name")
    readonly_fields = (
        "id",
        "workspace",
        "name",
        "is_default",
        "revision",
        "schema_version",
        "definition",
        "created_at",
        "updated_at",
    )
    inlines = (VoiceProfileAssignmentInline,)
