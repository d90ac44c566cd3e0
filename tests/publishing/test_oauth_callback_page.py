"""The OAuth callback: single-use state bound to the user who started the
connect, a browser ends on a page saying what happened, and an OAuth app from the environment
is the readiness "configuration" fact."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from publishing.models import Account, OAuthState
from tests.problem_asserts import assert_problem
from tests.providers.mastodon.standin import MastodonStandIn
from tests.publishing_support import follow_authorization, ok

API = "/api/v1"
BROWSER = {"HTTP_ACCEPT": "text/html,application/xhtml+xml,*/*;q=0.8"}

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def mastodon() -> Iterator[MastodonStandIn]:
    with MastodonStandIn() as server:
        yield server


@pytest.fixture(autouse=True)
def _providers(settings: Any) -> None:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_DISABLED_PROVIDERS = []


def _start(
    client: APIClient, workspace: Any, server: MastodonStandIn
) -> tuple[APIClient, dict[str, str]]:
    """The user's browser through Herald's start page and the provider: it holds the nonce
    cookie the callback requires."""
    browser = APIClient()
    started = ok(
        client.post(
            f"{API}/accounts/connect",
            {"workspace_id": str(workspace.pk), "provider": "mastodon", "instance_url": server.url},
            format="json",
        )
    )
    return browser, follow_authorization(started["authorization_url"], browser)


def test_browser_ends_on_a_page_saying_the_account_is_connected(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn
) -> None:
    browser, grant = _start(owner_client, workspace, mastodon)

    answer = browser.get(f"{API}/accounts/oauth/callback", grant, **BROWSER)

    assert answer.status_code == 303
    assert answer["Location"].startswith("/connections/result/")
    assert "code=" not in answer["Location"]
    page = APIClient().get(answer["Location"])
    assert page.status_code == 200
    text = page.content.decode()
    assert "Mastodon account connected" in text
    account = Account.objects.get(workspace=workspace, provider="mastodon")
    assert account.username in text
    assert account.profile_url.startswith(mastodon.url)
    assert account.granted_scopes


def test_browser_ends_on_a_page_saying_what_went_wrong(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn
) -> None:
    browser, grant = _start(owner_client, workspace, mastodon)
    mastodon.apps.clear()  # the provider no longer knows Herald's app: the exchange fails

    answer = browser.get(f"{API}/accounts/oauth/callback", grant, **BROWSER)

    assert answer.status_code == 303
    page = APIClient().get(answer["Location"])
    assert page.status_code == 400
    assert "did not complete the connection; start it again" in page.content.decode()


def test_a_spent_state_gets_no_result_page(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn
) -> None:
    browser, grant = _start(owner_client, workspace, mastodon)
    ok(browser.get(f"{API}/accounts/oauth/callback", grant))  # the state is spent

    answer = browser.get(f"{API}/accounts/oauth/callback", grant, **BROWSER)

    assert answer.status_code == 404
    assert "unknown or has expired; connect again" in answer.content.decode()


def test_a_result_page_not_issued_by_herald_says_so() -> None:
    page = APIClient().get("/connections/result/forged:value")

    assert page.status_code == 400
    assert "not issued by this Herald instance" in page.content.decode()


def test_a_denied_grant_spends_the_state(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn
) -> None:
    browser, grant = _start(owner_client, workspace, mastodon)

    denied = browser.get(
        f"{API}/accounts/oauth/callback", {"state": grant["state"], "error": "access_denied"}
    )

    assert_problem(denied, 403, "oauth_denied")
    assert "access_denied" in denied.json()["detail"]
    assert not OAuthState.objects.exists()
    assert_problem(browser.get(f"{API}/accounts/oauth/callback", grant), 404, "not_found")


def test_a_browser_signed_in_as_another_user_cannot_complete_the_connect(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    make_user: Any,
    make_session_client: Any,
) -> None:
    browser, grant = _start(owner_client, workspace, mastodon)
    stranger = make_session_client(make_user(email="stranger@example.com"))
    stranger.cookies.update(browser.cookies)  # the same browser, signed in as someone else

    answer = stranger.get(f"{API}/accounts/oauth/callback", grant)

    assert_problem(answer, 403, "oauth_user_mismatch")
    assert not Account.objects.exists()
    assert not OAuthState.objects.exists()  # single use


def test_the_same_user_signed_in_completes_the_connect(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn, session_client: APIClient
) -> None:
    browser, grant = _start(owner_client, workspace, mastodon)
    session_client.cookies.update(browser.cookies)  # the same browser, signed in

    account = ok(session_client.get(f"{API}/accounts/oauth/callback", grant))

    assert account["provider"] == "mastodon"
    assert account["token_expires_at"] is None  # Mastodon tokens do not expire


# --- The provider app from the environment (readiness "configuration") ------------------------


def _x_readiness(client: APIClient, workspace: Any) -> dict[str, Any]:
    catalogue = ok(client.get(f"{API}/account-providers", {"workspace_id": str(workspace.pk)}))
    return next(p for p in catalogue["providers"] if p["provider"] == "x")["readiness"]


def test_x_needs_configuration_until_its_app_is_in_the_environment(
    owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    apps = settings.PROVIDER_OAUTH_APPS
    settings.PROVIDER_OAUTH_APPS = {**apps, "x": {**apps["x"], "client_secret": ""}}
    readiness = _x_readiness(owner_client, workspace)
    assert readiness["state"] == "needs_configuration"
    assert readiness["configured_app_state"] == "missing"
    refused = owner_client.post(
        f"{API}/accounts/connect",
        {"workspace_id": str(workspace.pk), "provider": "x"},
        format="json",
    )
    assert_problem(refused, 409, "readiness_blocked")
    assert "HERALD_X_CLIENT_ID and HERALD_X_CLIENT_SECRET" in refused.json()["detail"]

    settings.PROVIDER_OAUTH_APPS = {
        **apps,
        "x": {**apps["x"], "client_id": "herald-client", "client_secret": "s3cret"},
    }
    readiness = _x_readiness(owner_client, workspace)
    assert readiness["state"] != "needs_configuration"
    assert readiness["configured_app_state"] == "environment"
    assert readiness["connectable"] is True
