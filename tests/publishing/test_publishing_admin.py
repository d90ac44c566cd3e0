"""The admin never shows credentials; the delivery overview renders for operators."""

import pytest

from providers import credentials
from publishing.models import Account

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, make_user):
    admin = make_user("root@example.com", is_staff=True, is_superuser=True)
    client.force_login(admin)
    return client


def test_delivery_overview_renders_dispatcher_state(admin_client):
    response = admin_client.get("/admin/publishing/schedulerheartbeat/")
    assert response.status_code == 200
    assert b"The dispatcher has never run" in response.content


def test_account_admin_never_shows_credentials(admin_client, workspace):
    account = Account.objects.create(
        workspace=workspace,
        provider="mastodon",
        external_id="1",
        username="herald",
        credentials_encrypted=credentials.encrypt({"access_token": "super-secret-token"}),
    )
    response = admin_client.get(f"/admin/publishing/account/{account.pk}/change/")
    assert response.status_code == 200
    assert b"super-secret-token" not in response.content
    assert account.credentials_encrypted.encode() not in response.content


READ_ONLY = {
    "publishing.account",
    "publishing.publication",
    "publishing.publicationevent",
    "publishing.media",
    "publishing.schedulerheartbeat",
    "themes.theme",
    "themes.publishedrevision",
    "themes.themeasset",
    "themes.organizationthemesettings",
    "themes.themeassignment",
    "reposts.repostpolicy",
    "reposts.repostgrant",
    "reposts.repostexecution",
    "voice.voiceprofile",
    "workspaces.accessauditevent",
}


def test_read_only_admins_add_change_and_delete_nothing(admin_client, workspace):
    """One ReadOnlyAdmin (config.admin) serves every model whose changes go through the API."""
    from django.contrib import admin
    from django.urls import reverse

    from config.admin import ReadOnlyAdmin
    from voice.models import VoiceProfile
    from workspaces.models import AccessAuditEvent

    read_only = {
        model._meta.label_lower
        for model, model_admin in admin.site._registry.items()
        if isinstance(model_admin, ReadOnlyAdmin)
    }
    assert read_only == READ_ONLY
    for label in sorted(READ_ONLY):
        app_label, model_name = label.split(".")
        add = reverse(f"admin:{app_label}_{model_name}_add")
        assert admin_client.get(add).status_code == 403, label
        assert admin_client.post(add, {}).status_code == 403, label
        if model_name != "schedulerheartbeat":  # its changelist is the delivery overview
            listing = admin_client.get(reverse(f"admin:{app_label}_{model_name}_changelist"))
            assert listing.status_code == 200, label
            assert b'value="delete_selected"' not in listing.content, label
    for row in (VoiceProfile.objects.get(workspace=workspace), AccessAuditEvent.objects.first()):
        opts = row._meta
        change = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk])
        page = admin_client.get(change)
        assert page.status_code == 200
        assert b'name="_save"' not in page.content  # view only
        assert admin_client.post(change, {}).status_code == 403
        delete = reverse(f"admin:{opts.app_label}_{opts.model_name}_delete", args=[row.pk])
        assert admin_client.post(delete, {"post": "yes"}).status_code == 403
        assert type(row).objects.filter(pk=row.pk).exists()
