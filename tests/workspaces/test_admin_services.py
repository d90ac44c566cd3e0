"""The Django admin obeys the rules of the API: its writes go through the same services (access
changes audited in the same transaction, the same validation), workspaces are deleted only by
the guarded deletion, and publications, delivery history, tokens and invitations are never
hard-deleted; no admin page shows a token hash or a provider credential."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission
from django.test import Client, RequestFactory
from django.urls import reverse
from django.utils import timezone

from providers import credentials
from publishing.models import (
    Account,
    Destination,
    ProviderApp,
    Publication,
    PublicationEvent,
    SchedulerHeartbeat,
)
from tests.admin_support import assert_addition_logged, record_calls
from tests.publishing_support import make_media
from voice.models import VoiceProfile
from workspaces import services
from workspaces.access import Actor
from workspaces.models import (
    AccessAuditEvent,
    ApiToken,
    Organization,
    OrganizationMembership,
    User,
    Workspace,
    WorkspaceMembership,
)

pytestmark = pytest.mark.django_db

CREDENTIAL = "plain-CREDENTIAL-7c1d0e"  # the secret inside every test account's credentials
Action = AccessAuditEvent.Action


@pytest.fixture
def root(make_user: Callable[..., User]) -> User:
    """The instance administrator: a superuser who is a member of no workspace."""
    return make_user("root@example.com", is_staff=True, is_superuser=True)


@pytest.fixture
def admin_client(root: User) -> Client:
    client = Client()
    client.force_login(root)
    return client


def url(name: str, *args: Any) -> str:
    return reverse(f"admin:{name}", args=[str(a) for a in args])


def _join(workspace: Workspace, user: User, role: str) -> WorkspaceMembership:
    """A member who joined by invitation, as through the API."""
    admin = WorkspaceMembership.objects.filter(workspace=workspace, role="admin").first()
    assert admin is not None
    _, token = services.invitation_create(
        actor=Actor(user=admin.user), workspace_id=workspace.pk, email=user.email, role=role
    )
    return services.invitation_accept(actor=Actor(user=user), token=token)


def events(workspace: Workspace, action: str) -> list[AccessAuditEvent]:
    return list(AccessAuditEvent.objects.filter(workspace_id=workspace.pk, action=action))


def errors_of(response: Any) -> str:
    assert response.status_code == 200, response.status_code  # the form again, with errors
    return response.content.decode()


# --- How the admin writes: one service call, kept only if the page saves ------------------------


def test_every_admin_that_writes_through_services_is_a_service_admin() -> None:
    """One mechanism (config.admin): the identity pages and the readiness ledgers."""
    from django.contrib import admin

    from config.admin import ServiceAdmin

    assert {
        model._meta.label_lower
        for model, model_admin in admin.site._registry.items()
        if isinstance(model_admin, ServiceAdmin)
    } == {
        "workspaces.organization",
        "workspaces.workspace",
        "workspaces.workspacemembership",
        "readiness.approvalreview",
        "readiness.runtimecontrol",
        "readiness.certificationrun",
        "readiness.certificationcheck",
    }


def test_a_save_calls_the_service_once(
    admin_client: Client,
    workspace: Workspace,
    make_user: Callable[..., User],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = record_calls(monkeypatch, services, "workspace_member_add")
    newcomer = make_user("newcomer@example.com")
    response = admin_client.post(
        url("workspaces_workspacemembership_add"),
        {"workspace": workspace.pk, "user": newcomer.pk, "role": "viewer"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert [call["user_id"] for call in calls] == [newcomer.pk]


def test_the_admin_goes_on_with_the_row_the_service_saved(
    admin_client: Client, root: User, user: User
) -> None:
    """The success message links to, and the admin log records, the row the service wrote."""

    response = admin_client.post(
        url("workspaces_organization_add"),
        {"name": "\uff22eta", "owner": "owner@example.com"},
        follow=True,
    )
    assert response.status_code == 200
    organization = Organization.objects.get(name="Beta")  # as the service normalized it
    [message] = [str(m) for m in response.context["messages"]]
    assert url("workspaces_organization_change", organization.pk) in message
    assert "Beta" in message
    assert_addition_logged(root, organization)


def test_a_page_that_fails_after_its_form_keeps_no_write(
    admin_client: Client, workspace: Workspace
) -> None:
    """The form is valid and its service call wrote, but the page's inline data is missing: the
    page shows the error and the write is rolled back."""
    response = admin_client.post(
        url("workspaces_workspace_change", workspace.pk),
        {"name": "Renamed", "timezone": "Asia/Tokyo", "plan": "self_hosted"},
    )
    assert "ManagementForm data is missing" in errors_of(response)
    workspace.refresh_from_db()
    assert (workspace.name, workspace.timezone) == ("Main", "UTC")


# --- Workspace memberships ----------------------------------------------------------------


def test_adding_a_member_in_the_admin_is_audited_with_the_administrator_as_actor(
    admin_client: Client, root: User, workspace: Workspace, make_user: Callable[..., User]
) -> None:
    newcomer = make_user("newcomer@example.com")
    response = admin_client.post(
        url("workspaces_workspacemembership_add"),
        {"workspace": workspace.pk, "user": newcomer.pk, "role": "viewer"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    membership = WorkspaceMembership.objects.get(workspace=workspace, user=newcomer)
    assert (membership.role, membership.status) == ("viewer", "active")
    [event] = AccessAuditEvent.objects.filter(
        workspace_id=workspace.pk, action=Action.MEMBER_ADDED, subject_user_id=str(newcomer.pk)
    )
    assert event.actor_user_id == str(root.pk)
    assert (event.role, event.status) == ("viewer", "active")
    # like an accepted invitation, the newcomer joins the organization as a member
    assert OrganizationMembership.objects.get(user=newcomer).role == "member"
    assert not WorkspaceMembership.objects.filter(user=root).exists()  # never made a member


def test_adding_an_existing_member_again_is_refused(
    admin_client: Client, user: User, workspace: Workspace
) -> None:
    response = admin_client.post(
        url("workspaces_workspacemembership_add"),
        {"workspace": workspace.pk, "user": user.pk, "role": "viewer"},
    )
    assert "already" in errors_of(response)
    assert WorkspaceMembership.objects.get(workspace=workspace, user=user).role == "admin"
    assert len(events(workspace, Action.MEMBER_ADDED)) == 1


def test_role_and_status_changes_in_the_admin_are_audited(
    admin_client: Client, root: User, workspace: Workspace, make_user: Callable[..., User]
) -> None:
    editor = _join(workspace, make_user("editor@example.com"), "editor")
    response = admin_client.post(
        url("workspaces_workspacemembership_change", editor.pk),
        {"role": "viewer", "status": "inactive"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    editor.refresh_from_db()
    assert (editor.role, editor.status) == ("viewer", "inactive")
    [changed] = events(workspace, Action.MEMBER_ROLE_CHANGED)
    [deactivated] = events(workspace, Action.MEMBER_DEACTIVATED)
    for event in (changed, deactivated):
        assert event.actor_user_id == str(root.pk)
        assert event.subject_user_id == str(editor.user_id)
        assert (event.previous_role, event.previous_status) == ("editor", "active")
        assert (event.role, event.status) == ("viewer", "inactive")


def test_the_admin_cannot_demote_the_last_active_admin(
    admin_client: Client, user: User, workspace: Workspace
) -> None:
    only_admin = WorkspaceMembership.objects.get(workspace=workspace, user=user)
    response = admin_client.post(
        url("workspaces_workspacemembership_change", only_admin.pk),
        {"role": "viewer", "status": "active"},
    )
    assert "at least one active admin" in errors_of(response)
    only_admin.refresh_from_db()
    assert only_admin.role == "admin"
    assert not events(workspace, Action.MEMBER_ROLE_CHANGED)


def test_removing_members_is_an_audited_action_and_never_a_generic_delete(
    admin_client: Client,
    root: User,
    user: User,
    workspace: Workspace,
    make_user: Callable[..., User],
    make_token: Callable[..., str],
) -> None:
    leaver = _join(workspace, make_user("leaver@example.com"), "editor")
    make_token(leaver.user, workspace=workspace)
    only_admin = WorkspaceMembership.objects.get(workspace=workspace, user=user)
    assert (
        admin_client.get(url("workspaces_workspacemembership_delete", leaver.pk)).status_code == 403
    )
    assert (
        admin_client.post(
            url("workspaces_workspacemembership_delete", leaver.pk), {"post": "yes"}
        ).status_code
        == 403
    )
    listing = admin_client.get(url("workspaces_workspacemembership_changelist"))
    assert b'value="delete_selected"' not in listing.content

    response = admin_client.post(
        url("workspaces_workspacemembership_changelist"),
        {"action": "remove_members", "_selected_action": [leaver.pk, only_admin.pk]},
        follow=True,
    )
    assert response.status_code == 200
    assert "at least one active admin" in response.content.decode()  # reported, not a 500
    assert not WorkspaceMembership.objects.filter(pk=leaver.pk).exists()
    assert WorkspaceMembership.objects.filter(pk=only_admin.pk).exists()
    [removed] = events(workspace, Action.MEMBER_REMOVED)
    assert removed.actor_user_id == str(root.pk)
    assert (removed.subject_user_id, removed.previous_role) == (str(leaver.user_id), "editor")
    assert ApiToken.objects.get(user=leaver.user).revoked_at is not None  # as the API does


def test_membership_inlines_are_read_only(
    admin_client: Client, workspace: Workspace, organization: Organization
) -> None:
    """Workspace and organization pages list members but change none (no form fields)."""
    for page in (
        admin_client.get(url("workspaces_workspace_change", workspace.pk)),
        admin_client.get(url("workspaces_organization_change", organization.pk)),
    ):
        assert page.status_code == 200
        html = page.content.decode()
        assert "owner@example.com" in html
        assert 'name="memberships-0-role"' not in html
        assert 'name="memberships-0-DELETE"' not in html
        assert "memberships-__prefix__" not in html  # no empty form to add one


# --- Workspaces ---------------------------------------------------------------------------


def test_adding_a_workspace_in_the_admin_runs_workspace_create(
    admin_client: Client, root: User, user: User, organization: Organization
) -> None:
    response = admin_client.post(
        url("workspaces_workspace_add"),
        {
            "organization": organization.pk,
            "name": "Second",
            "timezone": "Europe/Berlin",
            "first_admin": "OWNER@example.com",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    workspace = Workspace.objects.get(name="Second")
    assert workspace.timezone == "Europe/Berlin"
    assert workspace.plan_id == "self_hosted"
    membership = WorkspaceMembership.objects.get(workspace=workspace)
    assert (membership.user, membership.role, membership.status) == (user, "admin", "active")
    assert VoiceProfile.objects.filter(workspace=workspace, is_default=True).count() == 1
    [added] = events(workspace, Action.MEMBER_ADDED)
    assert added.actor_user_id == str(root.pk)
    assert (added.subject_user_id, added.role) == (str(user.pk), "admin")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"timezone": "Mars/Olympus_Mons"}, "Unknown IANA time zone."),
        ({"first_admin": "nobody@example.com"}, "No user with this e-mail address."),
        ({"first_admin": "member@example.com"}, "Must be an owner or admin of the organization."),
        ({"name": "main"}, "already exists"),
    ],
)
def test_adding_a_workspace_in_the_admin_validates_as_the_api_does(
    admin_client: Client,
    workspace: Workspace,
    organization: Organization,
    make_user: Callable[..., User],
    fields: dict[str, str],
    message: str,
) -> None:
    _join(workspace, make_user("member@example.com"), "editor")  # an organization member only
    body = {
        "organization": organization.pk,
        "name": "Second",
        "timezone": "UTC",
        "first_admin": "owner@example.com",
        **fields,
    }
    assert message in errors_of(admin_client.post(url("workspaces_workspace_add"), body))
    assert Workspace.objects.count() == 1
    assert VoiceProfile.objects.count() == 1


def test_changing_a_workspace_in_the_admin_validates_the_timezone(
    admin_client: Client, workspace: Workspace
) -> None:
    change = url("workspaces_workspace_change", workspace.pk)
    body = {
        "name": "Main",
        "timezone": "Mars/Olympus_Mons",
        "plan": "self_hosted",
        "memberships-TOTAL_FORMS": "1",
        "memberships-INITIAL_FORMS": "1",
    }
    assert "Unknown IANA time zone." in errors_of(admin_client.post(change, body))
    workspace.refresh_from_db()
    assert workspace.timezone == "UTC"
    response = admin_client.post(change, {**body, "name": "Renamed", "timezone": "Asia/Tokyo"})
    assert response.status_code == 302, response.content.decode()[:2000]
    workspace.refresh_from_db()
    assert (workspace.name, workspace.timezone) == ("Renamed", "Asia/Tokyo")


def test_names_given_in_the_admin_follow_the_api_rules(
    admin_client: Client, user: User, workspace: Workspace, organization: Organization
) -> None:
    """Before: the admin stored "Main\u200b", a fullwidth "\uff2dain" next to "Main" and a
    right-to-left override in organization names, which the API refuses or normalizes."""
    add = url("workspaces_workspace_add")
    base = {"organization": organization.pk, "timezone": "UTC", "first_admin": "owner@example.com"}
    for name in ("Second\u202egpj.exe", "Se\u200bcond", "\u2066Main\u2069"):
        assert "U+" in errors_of(admin_client.post(add, {**base, "name": name}))
    assert "already exists" in errors_of(admin_client.post(add, {**base, "name": "\uff2dain"}))
    assert Workspace.objects.count() == 1
    assert admin_client.post(add, {**base, "name": " \uff33econd "}).status_code == 302
    assert Workspace.objects.filter(name="Second").exists()

    change = url("workspaces_workspace_change", workspace.pk)
    body = {
        "name": "Main\u202e",
        "timezone": "UTC",
        "plan": "self_hosted",
        "memberships-TOTAL_FORMS": "1",
        "memberships-INITIAL_FORMS": "1",
    }
    assert "U+202E" in errors_of(admin_client.post(change, body))
    workspace.refresh_from_db()
    assert workspace.name == "Main"

    org_add = url("workspaces_organization_add")
    assert "U+200B" in errors_of(
        admin_client.post(org_add, {"name": "Be\u200bta", "owner": "owner@example.com"})
    )
    assert admin_client.post(org_add, {"name": "\uff22eta", "owner": user.email}).status_code == 302
    assert Organization.objects.filter(name="Beta").exists()
    org_change = url("workspaces_organization_change", organization.pk)
    renamed = {
        "name": "Acme\u202e",
        "memberships-TOTAL_FORMS": "1",
        "memberships-INITIAL_FORMS": "1",
    }
    assert "U+202E" in errors_of(admin_client.post(org_change, renamed))
    organization.refresh_from_db()
    assert organization.name == "Acme"
    response = admin_client.post(org_change, {**renamed, "name": " Acme \ufb01ne "})
    assert response.status_code == 302, response.content.decode()[:2000]
    organization.refresh_from_db()
    assert organization.name == "Acme fine"


def test_workspaces_are_never_deleted_by_the_admin(
    admin_client: Client, user: User, workspace: Workspace, organization: Organization
) -> None:
    services.workspace_create(actor=Actor(user=user), organization_id=organization.pk, name="Spare")
    assert admin_client.get(url("workspaces_workspace_delete", workspace.pk)).status_code == 403
    assert (
        admin_client.post(
            url("workspaces_workspace_delete", workspace.pk), {"post": "yes"}
        ).status_code
        == 403
    )
    listing = admin_client.get(url("workspaces_workspace_changelist"))
    assert b'value="delete_selected"' not in listing.content
    admin_client.post(
        url("workspaces_workspace_changelist"),
        {"action": "delete_selected", "_selected_action": [workspace.pk], "post": "yes"},
    )
    assert Workspace.objects.filter(pk=workspace.pk).exists()
    page = admin_client.get(url("workspaces_workspace_change", workspace.pk)).content.decode()
    assert f"DELETE /api/v1/workspaces/{workspace.pk}" in page  # where deletion happens instead
    # nor through the rows that would cascade to it
    assert (
        admin_client.post(
            url("workspaces_organization_delete", organization.pk), {"post": "yes"}
        ).status_code
        == 403
    )
    assert (
        admin_client.post(url("workspaces_user_delete", user.pk), {"post": "yes"}).status_code
        == 403
    )
    assert Workspace.objects.filter(pk=workspace.pk).exists()
    assert WorkspaceMembership.objects.filter(user=user).count() == 2


def test_adding_an_organization_in_the_admin_names_its_owner(
    admin_client: Client, user: User
) -> None:
    response = admin_client.post(
        url("workspaces_organization_add"), {"name": "Beta", "owner": "owner@example.com"}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    organization = Organization.objects.get(name="Beta")
    assert OrganizationMembership.objects.get(organization=organization).user == user
    assert OrganizationMembership.objects.get(organization=organization).role == "owner"


# --- Invitations and tokens ---------------------------------------------------------------


def test_invitations_are_revoked_with_an_audit_event_never_deleted(
    admin_client: Client, root: User, user: User, workspace: Workspace
) -> None:
    invitation, _ = services.invitation_create(
        actor=Actor(user=user), workspace_id=workspace.pk, email="guest@example.com", role="viewer"
    )
    assert (
        admin_client.post(
            url("workspaces_invitation_delete", invitation.pk), {"post": "yes"}
        ).status_code
        == 403
    )
    listing = admin_client.get(url("workspaces_invitation_changelist"))
    assert b'value="delete_selected"' not in listing.content
    response = admin_client.post(
        url("workspaces_invitation_changelist"),
        {"action": "revoke_invitations", "_selected_action": [invitation.pk]},
    )
    assert response.status_code == 302
    invitation.refresh_from_db()
    assert invitation.status == "revoked"
    [revoked] = events(workspace, Action.INVITATION_REVOKED)
    assert (revoked.actor_user_id, revoked.invitation_id) == (str(root.pk), str(invitation.pk))
    # revoking again is refused per row, reported, and writes nothing
    again = admin_client.post(
        url("workspaces_invitation_changelist"),
        {"action": "revoke_invitations", "_selected_action": [invitation.pk]},
        follow=True,
    )
    assert "no longer pending" in again.content.decode()
    assert len(events(workspace, Action.INVITATION_REVOKED)) == 1


def test_api_tokens_are_revoked_never_deleted_and_their_hash_is_never_shown(
    admin_client: Client, user: User, make_token: Callable[..., str]
) -> None:
    full = make_token(user)
    token = ApiToken.objects.get(pk=full.split("_")[1])
    page = admin_client.get(url("workspaces_apitoken_change", token.pk))
    assert page.status_code == 200
    assert token.secret_hash not in page.content.decode()
    assert (
        admin_client.post(url("workspaces_apitoken_delete", token.pk), {"post": "yes"}).status_code
        == 403
    )
    listing = admin_client.get(url("workspaces_apitoken_changelist"))
    assert b'value="delete_selected"' not in listing.content
    assert ApiToken.objects.filter(pk=token.pk).exists()


def test_a_staff_user_who_is_not_the_instance_administrator_cannot_act_through_the_services(
    make_user: Callable[..., User], user: User, workspace: Workspace
) -> None:
    staff = make_user("staff@example.com", is_staff=True)
    staff.user_permissions.set(
        Permission.objects.filter(
            codename__in=[
                "add_workspacemembership",
                "change_workspacemembership",
                "view_workspacemembership",
                "view_workspace",
                "view_user",
            ]
        )
    )
    client = Client()
    client.force_login(staff)
    newcomer = User.objects.create_user("n@example.com", "x")
    response = client.post(
        url("workspaces_workspacemembership_add"),
        {"workspace": workspace.pk, "user": newcomer.pk, "role": "viewer"},
    )
    assert "instance administrator" in errors_of(response)
    assert not WorkspaceMembership.objects.filter(user=newcomer).exists()


# --- Publishing -----------------------------------------------------------------------------


def _delivery(workspace: Workspace) -> tuple[Account, Publication, Destination, PublicationEvent]:
    account = Account.objects.create(
        workspace=workspace,
        provider="discord_webhook",
        external_id="hook",
        username="hook",
        credentials_encrypted=credentials.encrypt(
            {"webhook_url": f"https://discord.example/{CREDENTIAL}"}
        ),
    )
    publication = Publication.objects.create(workspace=workspace, status="published", text="Hello")
    destination = Destination.objects.create(
        publication=publication,
        account=account,
        profile="discord_webhook.message",
        status="published",
        idempotency_key="k-1",
        external_id="m-1",
        published_at=timezone.now(),
    )
    event = PublicationEvent.objects.create(
        publication=publication,
        destination=destination,
        kind="destination.published",
        status="published",
    )
    return account, publication, destination, event


def test_publications_and_their_delivery_history_are_never_deleted(
    admin_client: Client, workspace: Workspace
) -> None:
    account, publication, destination, event = _delivery(workspace)
    media = make_media(workspace)
    for name, pk in [
        ("publication", publication.pk),
        ("publicationevent", event.pk),
        ("account", account.pk),
        ("media", media.pk),
    ]:
        assert admin_client.get(url(f"publishing_{name}_delete", pk)).status_code == 403, name
        assert (
            admin_client.post(url(f"publishing_{name}_delete", pk), {"post": "yes"}).status_code
            == 403
        ), name
        listing = admin_client.get(url(f"publishing_{name}_changelist"))
        assert b'value="delete_selected"' not in listing.content, name
    page = admin_client.get(url("publishing_publication_change", publication.pk)).content.decode()
    assert 'name="destinations-0-DELETE"' not in page
    assert Publication.objects.filter(pk=publication.pk).exists()
    assert Destination.objects.filter(pk=destination.pk).exists()
    assert PublicationEvent.objects.filter(pk=event.pk).exists()


# --- Every page of every registered model -------------------------------------------------


def _one_row_of_every_model(
    root: User,
    user: User,
    workspace: Workspace,
    organization: Organization,
    make_user: Callable[..., User],
    make_token: Callable[..., str],
    owner_api: Any,
) -> list[str]:
    """Rows of every registered model, made as the product makes them; returns the secrets."""
    from readiness import ledgers
    from reposts.models import RepostExecution, RepostGrant, RepostPolicy, RepostStage
    from tests.readiness_support import certify
    from tests.themes_support import create_theme, publish
    from themes.models import ThemeAsset

    Group.objects.create(name="operators")
    _join(workspace, make_user("editor@example.com"), "editor")
    other = services.workspace_create(
        actor=Actor(user=user), organization_id=organization.pk, name="Other"
    )
    invitation, accept_token = services.invitation_create(
        actor=Actor(user=user), workspace_id=workspace.pk, email="guest@example.com", role="viewer"
    )
    full_token = make_token(user, workspace=workspace)
    token = ApiToken.objects.get(pk=full_token.split("_")[1])

    account, _, destination, _ = _delivery(workspace)
    app = ProviderApp.objects.create(
        provider="mastodon",
        instance_url="https://mastodon.example",
        redirect_uri="",
        credentials_encrypted=credentials.encrypt({"client_id": "c", "client_secret": CREDENTIAL}),
    )
    mastodon = Account.objects.create(
        workspace=other,
        provider="mastodon",
        external_id="7",
        username="herald",
        app=app,
        instance_url="https://mastodon.example",
        credentials_encrypted=credentials.encrypt({"access_token": CREDENTIAL}),
    )
    make_media(workspace)
    SchedulerHeartbeat.objects.create(name="dispatcher", last_tick_at=timezone.now())

    ledgers.approval_review_append(operator=root, provider="discord_webhook", outcome="approved")
    ledgers.runtime_control_append(
        operator=root, provider="discord_webhook", mode="enabled", reason="rollout"
    )
    certify(root, account, profile="discord_webhook.message", kinds=("local",))

    theme_id = create_theme(owner_api, organization)["draft"]["theme_id"]
    assert publish(owner_api, organization, theme_id, draft=1, published=None).status_code == 201
    reference = {"kind": "organization", "id": theme_id, "version": 1}
    assert (
        owner_api.put(
            "/api/v1/theme-settings/organization",
            {"organization_id": str(organization.pk), "default_reference": reference},
            format="json",
        ).status_code
        == 200
    )
    assert (
        owner_api.put(
            f"/api/v1/theme-assignments/{workspace.pk}", {"reference": reference}, format="json"
        ).status_code
        == 200
    )
    ThemeAsset.objects.create(
        organization=organization,
        name="logo",
        kind="image",
        media_type="image/png",
        size_bytes=10,
        checksum_sha256="0" * 64,
        file="theme-assets/logo.png",
        width=1,
        height=1,
        created_by=str(user.pk),
    )

    policy = RepostPolicy.objects.create(workspace=workspace, name="Best posts")
    RepostGrant.objects.create(source_workspace=workspace, target_account=mastodon, created_by=user)
    now = timezone.now()
    execution = RepostExecution.objects.create(
        workspace=workspace,
        policy=policy,
        destination=destination,
        target_account=mastodon,
        published_at=now,
        evaluate_from=now,
        window_ends_at=now + timedelta(days=1),
        next_check_at=now,
    )
    RepostStage.objects.create(execution=execution, index=0, delay_seconds=0, due_at=now)
    return [
        full_token,
        full_token.split("_", 2)[2],  # the secret may itself contain "_"
        token.secret_hash,
        accept_token,
        invitation.token_hash,
        hashlib.sha256(accept_token.encode()).hexdigest(),
        CREDENTIAL,
        account.credentials_encrypted,
        mastodon.credentials_encrypted,
        app.credentials_encrypted,
    ]


def test_every_admin_page_renders_and_shows_no_secret(
    admin_client: Client,
    root: User,
    user: User,
    workspace: Workspace,
    organization: Organization,
    make_user: Callable[..., User],
    make_token: Callable[..., str],
    bearer_client: Callable[..., Any],
) -> None:
    from django.contrib import admin

    secrets = _one_row_of_every_model(
        root, user, workspace, organization, make_user, make_token, bearer_client(user)
    )
    request = RequestFactory().get("/admin/")
    request.user = root
    models = [entry for app in admin.site.get_app_list(request) for entry in app["models"]]
    assert len(models) >= 27  # every registered model is listed for the superuser
    pages = 0
    for entry in models:
        model = entry["model"]
        opts = model._meta
        rows = list(model._default_manager.all()[:25])
        assert rows, f"give {opts.label} a row in _one_row_of_every_model"
        urls = [entry["admin_url"]]
        if entry.get("add_url"):
            urls.append(entry["add_url"])
        urls += [
            reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk])
            for row in rows
        ]
        for page_url in urls:
            response = admin_client.get(page_url)
            assert response.status_code == 200, (page_url, response.status_code)
            html = response.content.decode()
            for secret in secrets:
                assert secret not in html, (page_url, "shows a secret")
            pages += 1
    assert pages > 60
