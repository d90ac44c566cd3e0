"""Django admin for identity. Every write goes through the same services as the API, with the
signed-in instance administrator (a superuser) as the actor, so access changes are audited in
the same transaction and validated by the same rules:

- organizations are created by ``organization_create`` and renamed by ``organization_update``;
  names follow the API's rule (``config.names``: no invisible or bidirectional-control
  characters, stored NFKC-normalized), which the services apply;
- workspaces are created by ``workspace_create`` (first admin, default voice profile, audit) and
  edited by ``workspace_update``; they are never deleted here, only by the guarded deletion of
  the API (organization owner, exact name, recent sign-in, blockers, lifecycle record);
- workspace memberships are added, changed and removed through the member services (audited;
  the last active admin is kept); organization memberships are read-only;
- invitations and API tokens are revoked (actions), never deleted; token secrets, invitation
  tokens and their links are never shown (an invitation's link goes to the invitee's mailbox
  alone; its ``delivery`` is shown). Users are deactivated, not deleted (a deletion would drop
  memberships without an audit event and hard-delete tokens); whether a user's mailbox is proven
  shows in the list, and an administrator who knows the person may vouch for it (an action that,
  like any proof, ends the user's sessions and revokes their earlier tokens, audited); display
  names follow the names rule (``config.names.clean_display_name``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.forms import UserChangeForm
from django.db.models import QuerySet
from django.http import HttpRequest

from config import version
from config.admin import ReadOnlyAdmin, ServiceAdmin, ServiceForm
from config.errors import DomainError
from config.names import InvalidName, clean_display_name
from workspaces import services
from workspaces.access import Actor
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


def _actor(request: HttpRequest) -> Actor:
    return Actor(user=request.user)  # type: ignore[arg-type]  # a signed-in admin session


def _user_by_email(email: str) -> User:
    user = User.objects.filter(email__iexact=email.strip()).first()
    if user is None:
        raise forms.ValidationError("No user with this e-mail address.")
    return user


def _run_each(
    request: HttpRequest, queryset: QuerySet[Any], call: Callable[[Any], object], done: str
) -> None:
    """An action that calls a service once per selected row, each in its own transaction;
    refusals are reported per row and do not stop the others."""
    succeeded = 0
    for row in queryset:
        try:
            call(row)
        except DomainError as exc:
            messages.error(request, f"{row}: {exc.detail}")
        else:
            succeeded += 1
    if succeeded:
        messages.success(request, f"{done}: {succeeded}.")


# --- Users ----------------------------------------------------------------------------------


class HeraldUserChangeForm(UserChangeForm[User]):
    def clean_name(self) -> str:
        try:
            return clean_display_name(self.cleaned_data.get("name", ""))
        except InvalidName as exc:
            raise forms.ValidationError(str(exc)) from None


@admin.register(User)
class UserAdmin(DjangoUserAdmin[User]):
    form = HeraldUserChangeForm
    ordering = ("email",)
    list_display = (
        "email",
        "name",
        "email_verified",
        "is_active",
        "is_staff",
        "is_superuser",
        "created_at",
    )
    search_fields = ("email", "name")
    list_filter = (
        ("email_verified_at", admin.EmptyFieldListFilter),
        "is_active",
        "is_staff",
        "is_superuser",
    )
    readonly_fields = ("created_at", "last_login", "email_verified_at")
    actions = ("vouch_for_mailboxes",)
    fieldsets = (
        (None, {"fields": ("email", "email_verified_at", "password")}),
        ("Profile", {"fields": ("name",)}),
        (
            "Permissions",
            {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")},
        ),
        ("Dates", {"fields": ("last_login", "created_at")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # deactivate instead (is_active): deleting drops memberships unaudited

    @admin.display(boolean=True, description="E-mail verified", ordering="email_verified_at")
    def email_verified(self, obj: User) -> bool:
        return obj.email_verified

    @admin.action(
        description=(
            "Vouch for the selected users' e-mail addresses (ends their sessions, revokes "
            "their earlier API tokens; audited)"
        )
    )
    def vouch_for_mailboxes(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        _run_each(
            request,
            queryset,
            lambda u: services.account_prove_mailbox(user=u, actor=_actor(request).user),
            "Verified",
        )


# --- Organizations --------------------------------------------------------------------------


class OrganizationMembershipInline(admin.TabularInline[OrganizationMembership, Organization]):
    """Read-only: no service changes organization roles."""

    model = OrganizationMembership
    extra = 0
    fields = ("user", "role", "created_at")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class OrganizationAddForm(ServiceForm):
    owner = forms.EmailField(
        help_text="E-mail of the existing user who becomes the organization's owner."
    )

    class Meta:
        model = Organization
        fields = ("name",)

    def clean_owner(self) -> User:
        return _user_by_email(self.cleaned_data["owner"])

    def call_service(self) -> Organization:
        data = self.cleaned_data
        return services.organization_create(
            actor=_actor(self.request), name=data["name"], owner=data["owner"]
        )


class OrganizationChangeForm(ServiceForm):
    class Meta:
        model = Organization
        fields = ("name",)

    def call_service(self) -> Organization:
        return services.organization_update(
            actor=_actor(self.request),
            organization_id=self.instance.pk,
            name=self.cleaned_data["name"],
        )


@admin.register(Organization)
class OrganizationAdmin(ServiceAdmin):
    """Added through ``organization_create`` (with an owner) and renamed through
    ``organization_update`` (the names' rule of the API); never deleted here."""

    list_display = ("name", "id", "created_at")
    search_fields = ("name", "id")
    form = OrganizationChangeForm
    add_form = OrganizationAddForm
    inlines = (OrganizationMembershipInline,)

    def get_inlines(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.inlines if obj is not None else ()


# --- Workspaces -----------------------------------------------------------------------------


class WorkspaceMembershipInline(admin.TabularInline[WorkspaceMembership, Workspace]):
    """Read-only here; each membership's own page (the change link) edits it through the
    member services, and "Workspace memberships" adds and removes members."""

    model = WorkspaceMembership
    extra = 0
    fields = ("user", "role", "status", "updated_at")
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class WorkspaceAddForm(ServiceForm):
    timezone = forms.CharField(
        max_length=64, initial="UTC", help_text="An IANA time zone, e.g. Europe/Berlin."
    )
    first_admin = forms.EmailField(
        help_text="E-mail of an owner or admin of the organization; becomes the workspace's first admin."
    )

    class Meta:
        model = Workspace
        fields = ("organization", "name", "timezone")

    def clean_first_admin(self) -> User:
        return _user_by_email(self.cleaned_data["first_admin"])

    def call_service(self) -> Workspace:
        data = self.cleaned_data
        return services.workspace_create(
            actor=_actor(self.request),
            organization_id=data["organization"].pk,
            name=data["name"],
            timezone_name=data["timezone"],
            first_admin=data["first_admin"],
        )


class WorkspaceChangeForm(ServiceForm):
    class Meta:
        model = Workspace
        fields = ("name", "timezone", "plan")

    def call_service(self) -> Workspace:
        data = self.cleaned_data
        return services.workspace_update(
            actor=_actor(self.request),
            workspace_id=self.instance.pk,
            name=data["name"],
            timezone_name=data["timezone"],
            plan_code=data["plan"].pk,
            instance_admin=True,
        )


@admin.register(Workspace)
class WorkspaceAdmin(ServiceAdmin):
    list_display = ("name", "organization", "plan", "timezone", "created_at")
    list_select_related = ("organization", "plan")
    search_fields = ("name", "id", "organization__name")
    form = WorkspaceChangeForm
    add_form = WorkspaceAddForm
    change_readonly_fields = ("organization", "created_at", "deletion")
    inlines = (WorkspaceMembershipInline,)

    @admin.display(description="Deletion")
    def deletion(self, obj: Workspace) -> str:
        return (
            "Not here. The organization owner deletes a workspace through "
            f"DELETE /api/v1/workspaces/{obj.pk} (exact name, recent sign-in; blockers are "
            "checked and a workspace.deleted record is kept)."
        )

    def get_inlines(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.inlines if obj is not None else ()


class MembershipAddForm(ServiceForm):
    class Meta:
        model = WorkspaceMembership
        fields = ("workspace", "user", "role")

    def call_service(self) -> WorkspaceMembership:
        data = self.cleaned_data
        return services.workspace_member_add(
            actor=_actor(self.request),
            workspace_id=data["workspace"].pk,
            user_id=data["user"].pk,
            role=data["role"],
        )


class MembershipChangeForm(ServiceForm):
    class Meta:
        model = WorkspaceMembership
        fields = ("role", "status")

    def call_service(self) -> WorkspaceMembership:
        data = self.cleaned_data
        return services.workspace_member_update(
            actor=_actor(self.request),
            workspace_id=self.instance.workspace_id,
            user_id=self.instance.user_id,
            role=data["role"],
            status=data["status"],
            instance_admin=True,
        )


@admin.register(WorkspaceMembership)
class WorkspaceMembershipAdmin(ServiceAdmin):
    """Adds, role and status changes and removals go through the member services: each writes
    its access-audit event (actor: the signed-in instance administrator) in the same
    transaction, and the last active admin of a workspace is kept."""

    list_display = ("user", "workspace", "role", "status", "updated_at")
    list_select_related = ("user", "workspace")
    list_filter = ("role", "status")
    search_fields = ("user__email", "workspace__name")
    raw_id_fields = ("workspace", "user")
    form = MembershipChangeForm
    add_form = MembershipAddForm
    change_readonly_fields = ("workspace", "user", "created_at", "updated_at")
    actions = ("remove_members",)

    @admin.action(
        description="Remove selected members (audited; their workspace tokens are revoked)"
    )
    def remove_members(self, request: HttpRequest, queryset: QuerySet[WorkspaceMembership]) -> None:
        _run_each(
            request,
            queryset.select_related("user", "workspace"),
            lambda m: services.workspace_member_remove(
                actor=_actor(request),
                workspace_id=m.workspace_id,
                user_id=m.user_id,
                instance_admin=True,
            ),
            "Removed members",
        )


# --- Invitations and tokens -----------------------------------------------------------------


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin[Invitation]):
    """Invitations are created through the API (the accept token is shown once) and revoked
    here (audited); never deleted."""

    list_display = ("email", "workspace", "role", "status", "delivery", "created_at", "expires_at")
    list_select_related = ("workspace",)
    list_filter = ("status", "role", "delivery")
    search_fields = ("email", "workspace__name")
    exclude = ("token_hash",)
    readonly_fields = (
        "workspace",
        "email",
        "role",
        "status",
        "delivery",
        "invited_by",
        "created_at",
        "expires_at",
        "accepted_at",
        "accepted_by",
    )
    actions = ("revoke_invitations",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Revoke selected invitations (audited)")
    def revoke_invitations(self, request: HttpRequest, queryset: QuerySet[Invitation]) -> None:
        _run_each(
            request,
            queryset,
            lambda i: services.invitation_revoke(
                actor=_actor(request), invitation_id=i.pk, instance_admin=True
            ),
            "Revoked invitations",
        )


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[ApiToken]):
    list_display = ("id", "name", "user", "workspace", "status", "expires_at", "last_used_at")
    list_select_related = ("user", "workspace")
    search_fields = ("id", "name", "user__email")
    exclude = ("secret_hash",)
    readonly_fields = (
        "id",
        "user",
        "name",
        "permissions",
        "workspace",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    )
    actions = ("revoke_tokens",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # tokens are created in developer settings or by create_api_token

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoked, never deleted

    @admin.action(description="Revoke selected tokens")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        _run_each(
            request,
            queryset.select_related("user"),
            lambda t: services.api_token_revoke(user=t.user, token_id=t.pk),
            "Revoked tokens",
        )


@admin.register(AccessAuditEvent)
class AccessAuditEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "action", "workspace_id", "subject_email", "role", "status")
    list_filter = ("action",)
    search_fields = ("workspace_id", "subject_email", "subject_user_id", "subject_account_id")


admin.site.register(Plan)
# Every admin page says which release runs (the operator checks it after an upgrade).
admin.site.site_header = f"Herald administration · {version.label()}"
