"""Django admin for identity. Token secrets are never stored, so never shown; revoke is an action."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.db.models import QuerySet
from django.http import HttpRequest

from workspaces import services
from workspaces.models import (
    AccessAuditEvent,
    ApiToken,
    Invitation,
    Organization,
    OrganizationMembership,
    Plan,
    User,
    Workspace,
    WorkspaceMembership,
)


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    ordering = ("email",)
    list_display = ("email", "name", "is_active", "is_staff", "is_superuser", "created_at")
    search_fields = ("email", "name")
    list_filter = ("is_active", "is_staff", "is_superuser")
    readonly_fields = ("created_at", "last_login")
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Profile", {"fields": ("name",)}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")}),
        ("Dates", {"fields": ("last_login", "created_at")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)


class OrganizationMembershipInline(admin.TabularInline):  # type: ignore[type-arg]
    model = OrganizationMembership
    extra = 0
    raw_id_fields = ("user",)


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("name", "id", "created_at")
    search_fields = ("name", "id")
    inlines = (OrganizationMembershipInline,)


class WorkspaceMembershipInline(admin.TabularInline):  # type: ignore[type-arg]
    model = WorkspaceMembership
    extra = 0
    raw_id_fields = ("user",)


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("name", "organization", "plan", "timezone", "created_at")
    list_select_related = ("organization", "plan")
    search_fields = ("name", "id", "organization__name")
    inlines = (WorkspaceMembershipInline,)


@admin.register(WorkspaceMembership)
class WorkspaceMembershipAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Read-only: role and status changes go through the API so they are audited."""

    list_display = ("user", "workspace", "role", "status", "updated_at")
    list_select_related = ("user", "workspace")
    list_filter = ("role", "status")
    search_fields = ("user__email", "workspace__name")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("email", "workspace", "role", "status", "created_at", "expires_at")
    list_select_related = ("workspace",)
    list_filter = ("status", "role")
    search_fields = ("email", "workspace__name")
    exclude = ("token_hash",)
    readonly_fields = ("workspace", "email", "role", "status", "invited_by", "created_at",
                       "expires_at", "accepted_at", "accepted_by")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("id", "name", "user", "workspace", "status", "expires_at", "last_used_at")
    list_select_related = ("user", "workspace")
    search_fields = ("id", "name", "user__email")
    readonly_fields = ("id", "user", "name", "secret_hash", "permissions", "workspace",
                       "created_at", "expires_at", "last_used_at", "revoked_at")
    actions = ("revoke_tokens",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # tokens are created in developer settings or by create_api_token

    @admin.action(description="Revoke selected tokens")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for token in queryset.select_related("user"):
            services.api_token_revoke(user=token.user, token_id=token.pk)
        messages.success(request, f"Revoked {queryset.count()} token(s).")


@admin.register(AccessAuditEvent)
class AccessAuditEventAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("created_at", "action", "workspace_id", "subject_email", "role", "status")
    list_filter = ("action",)
    search_fields = ("workspace_id", "subject_email", "subject_user_id")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


admin.site.register(Plan)
admin.site.site_header = "Herald administration"
