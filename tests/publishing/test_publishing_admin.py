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
