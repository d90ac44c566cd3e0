"""Instagram Login through Herald's connect API and token lifecycle, against the instagram
stand-in: ``POST /accounts/connect`` with ``mode=instagram_login`` (an unknown mode is a 422 at
``body.mode``), the browser through Herald's start page and Instagram's window, the callback
storing the account (API base graph.instagram.com, a long-lived token that expires), then the
token lifecycle refreshing it (single flight) and marking it ``reconnect_required`` when
Instagram refuses."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from providers import credentials
from publishing.models import Account
from publishing.services.tokens import RefreshOutcome, account_token_refresh
from readiness import services as readiness
from tests.problem_asserts import assert_invalid
from tests.providers.instagram.standin import DAY, IG_USER, InstagramStandIn
from tests.publishing_support import API, follow_authorization, ok

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def server() -> Iterator[InstagramStandIn]:
    with InstagramStandIn() as standin:
        yield standin


@pytest.fixture(autouse=True)
def _apps(server: InstagramStandIn, settings: Any) -> None:
    server.reset()
    settings.HERALD_DISABLED_PROVIDERS = []
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "instagram": server.app_settings(),
    }


def connect(client: APIClient, workspace: Any, server: InstagramStandIn) -> Account:
    started = ok(
        client.post(
            f"{API}/accounts/connect",
            {"workspace_id": str(workspace.pk), "provider": "instagram", "mode": "instagram_login"},
            format="json",
        )
    )
    browser = APIClient()
    grant = follow_authorization(started["authorization_url"], browser)
    body = ok(browser.get(f"{API}/accounts/oauth/callback", grant))
    return Account.objects.get(pk=body["id"])


def test_instagram_login_connects_and_the_lifecycle_refreshes_it(
    owner_client: APIClient, workspace: Any, server: InstagramStandIn
) -> None:
    account = connect(owner_client, workspace, server)
    assert (account.provider, account.external_id) == ("instagram", IG_USER["user_id"])
    assert account.username == IG_USER["username"]
    assert account.instance_url == server.url
    assert account.token_expires_at is not None
    assert "instagram_business_content_publish" in account.granted_scopes
    stored = credentials.decrypt(account.credentials_encrypted)
    assert stored["login"] == "instagram"
    # Its scope evidence is Instagram Login's own scopes, not Facebook Login's.
    decision = readiness.decide_account(
        account=account, operation="publish_immediate", profile="instagram.post"
    )
    assert decision.as_dict()["facts"]["authorization"] == {"status": "valid"}
    assert stored["ig_user_id"] == IG_USER["user_id"]
    # A day later the token is old enough to be refreshed: 60 days again.
    server.age(DAY + 60)
    stored["issued_at"] = str(int(stored["issued_at"]) - DAY - 60)
    Account.objects.filter(pk=account.pk).update(credentials_encrypted=credentials.encrypt(stored))
    expiry = account.token_expires_at
    assert account_token_refresh(account_id=account.pk, force=True) == RefreshOutcome.REFRESHED
    account.refresh_from_db()
    assert account.token_expires_at is not None
    assert expiry is not None
    assert account.token_expires_at > expiry
    fresh = credentials.decrypt(account.credentials_encrypted)
    assert fresh["access_token"] != stored["access_token"]
    assert fresh["ig_user_id"] == IG_USER["user_id"]
    assert server.counters["refreshes"] == 1
    # The person removed the app: Instagram refuses; the account must be connected again.
    server.revoke_subject(IG_USER["user_id"])
    fresh["issued_at"] = "1"
    Account.objects.filter(pk=account.pk).update(credentials_encrypted=credentials.encrypt(fresh))
    outcome = account_token_refresh(account_id=account.pk, force=True)
    assert outcome == RefreshOutcome.RECONNECT_REQUIRED
    account.refresh_from_db()
    assert account.status == Account.Status.RECONNECT_REQUIRED


def test_an_unknown_mode_is_refused_at_its_field(owner_client: APIClient, workspace: Any) -> None:
    for provider, mode in (("instagram", "tiktok_login"), ("mastodon", "instagram_login")):
        response = owner_client.post(
            f"{API}/accounts/connect",
            {"workspace_id": str(workspace.pk), "provider": provider, "mode": mode},
            format="json",
        )
        body = assert_invalid(response, "body.mode")
        assert f"{provider} has no connection mode {mode}." == body["errors"][0]["message"]


def test_instagram_is_connectable_with_either_app_and_says_which_to_set(
    owner_client: APIClient, workspace: Any, settings: Any, server: InstagramStandIn
) -> None:
    only_instagram_login = {**server.app_settings(), "client_id": "", "client_secret": ""}
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "instagram": only_instagram_login,
    }
    assert connect(owner_client, workspace, server).provider == "instagram"
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "instagram": {**only_instagram_login, "instagram_client_secret": ""},
    }
    response = owner_client.post(
        f"{API}/accounts/connect",
        {"workspace_id": str(workspace.pk), "provider": "instagram", "mode": "instagram_login"},
        format="json",
    )
    assert response.status_code == 409, response.content
    detail = response.json()["detail"]
    assert "HERALD_META_APP_ID and HERALD_META_APP_SECRET (Facebook Login)" in detail
    assert "HERALD_INSTAGRAM_CLIENT_ID and HERALD_INSTAGRAM_CLIENT_SECRET" in detail
