"""Admin for repost automation: read-only views for operators. Policies and grants change only
through the API, so that revisions are checked and grant changes are audited."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from config.admin import ReadOnlyAdmin
from reposts.models import RepostExecution, RepostGrant, RepostPolicy, RepostStage


@admin.register(RepostPolicy)
class RepostPolicyAdmin(ReadOnlyAdmin):
    list_display = ("name", "workspace", "enabled", "threshold_mode", "delay_seconds", "updated_at")
    list_filter = ("enabled", "threshold_mode")
    list_select_related = ("workspace",)
    search_fields = ("name", "workspace__name")


@admin.register(RepostGrant)
class RepostGrantAdmin(ReadOnlyAdmin):
    list_display = ("id", "source_workspace", "target_account", "created_at", "revoked_at")
    list_select_related = ("source_workspace", "target_account")
    search_fields = ("source_workspace__name", "target_account__username")


class RepostStageInline(admin.TabularInline[RepostStage, RepostExecution]):
    model = RepostStage
    extra = 0
    can_delete = False
    fields = (
        "index",
        "status",
        "due_at",
        "intent_at",
        "reposted_at",
        "unreposted_at",
        "reconciled",
        "repost_id",
        "error_message",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(RepostExecution)
class RepostExecutionAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "workspace",
        "status",
        "skip_reason",
        "target_account",
        "published_at",
        "next_check_at",
    )
    list_filter = ("status", "skip_reason")
    list_select_related = ("workspace", "target_account")
    search_fields = ("id", "workspace__name", "target_account__username")
    readonly_fields = ("claimed_until",)
    inlines = (RepostStageInline,)
