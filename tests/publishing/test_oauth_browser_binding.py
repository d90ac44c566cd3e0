"""An OAuth connect completes only in the browser that started it, and the callback shows only
Herald's words.

The threat: someone starts a connect in their own workspace and sends the link to a victim; the
victim's browser (no Herald session) authorizes at the provider, and the victim's social account
would land in the sender's workspace. The stand-in provider approves at once, like a victim
who is already signed in there and clicks through.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from rest_framework.test import APIClient

from publishing.models import Account, OAuthState
from tests.problem_asserts import assert_problem
from tests.providers.mastodon.standin import MastodonStandIn
from tests.publishing_support import confirm_start, follow_authorization, ok

API = "/api/v1"
CALLBACK = f"{API}/accounts/oauth/callback"
BROWSER = {"HTTP_ACCEPT": "text/html,application/xhtml+xml,*/*;q=0.8"}
PROVIDER_TEXT = "Call +1 555 0100 to unlock your account"

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def mastodon() -> Iterator[MastodonStandIn]:
    with MastodonStandIn() as server:
        yield server


@pytest.fixture(autouse=True)
def _providers(settings: Any) -> None:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_DISABLED_PROVIDERS = []


def _connect(client: APIClient, workspace: Any, server: MastodonStandIn) -> str:
    started = ok(
        client.post(
            f"{API}/accounts/connect",
            {"workspace_id": str(workspace.pk), "provider": "mastodon", "instance_url": server.url},
            format="json",
        )
    )
    return str(started["authorization_url"])


def _navigate(browser: APIClient, url: str) -> Any:
    """Open ``url`` as a browser does: GET, following redirects across Herald (the test client,
    with its cookie jar) and the stand-in provider, up to the first page that is not one."""
    for _ in range(10):
        parts = urlsplit(url)
        if parts.netloc in ("", "testserver"):
            answer = browser.get(parts.path, parse_qs(parts.query), **BROWSER)
            location = answer.get("Location")
        else:
            answer = requests.get(url, allow_redirects=False, timeout=5)
            location = answer.headers.get("Location")
        if answer.status_code not in (301, 302, 303, 307) or not location:
            return answer
        url = location
    raise AssertionError("redirect loop")


def _bound_grant(
    owner_client: APIClient, workspace: Any, server: MastodonStandIn
) -> tuple[APIClient, dict[str, str]]:
    """The owner's own browser, through the start page and the provider, back with a grant."""
    browser = APIClient()
    return browser, follow_authorization(_connect(owner_client, workspace, server), browser)


def test_a_victim_who_opens_the_link_connects_nothing(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn
) -> None:
    link = _connect(owner_client, workspace, mastodon)

    landed = _navigate(APIClient(), link)

    assert not Account.objects.filter(workspace=workspace).exists()
    # The link stops at Herald's page naming who asks and into which workspace.
    assert landed.status_code == 200
    text = landed.content.decode()
    assert "owner@example.com" in text
    assert workspace.name in text
    assert "If someone sent you this link" in text
    # Browsers hold the form's redirect to form-action: the provider, and only it, is allowed.
    assert f"form-action 'self' {mastodon.url};" in landed["Content-Security-Policy"]
    assert landed["X-Frame-Options"] == "DENY"


def test_the_provider_link_completes_only_in_the_browser_that_confirmed(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn
) -> None:
    owner_browser = APIClient()
    provider_url = confirm_start(_connect(owner_client, workspace, mastodon), owner_browser)
    grant = follow_authorization(provider_url)  # e.g. a victim's browser at the provider
    victim = APIClient()

    refused = victim.get(CALLBACK, grant)
    page = victim.get(CALLBACK, grant, **BROWSER)

    assert_problem(refused, 403, "oauth_browser_mismatch")
    assert page.status_code == 403
    assert "Location" not in page  # Herald's own page, no result page
    assert "did not start this connection" in page.content.decode()
    assert not Account.objects.exists()
    assert OAuthState.objects.count() == 1  # still pending for the browser that confirmed
    (name,) = [key for key in owner_browser.cookies if key.startswith("herald_oauth_")]
    wrong = APIClient()  # the cookie's name is no secret; its value is
    wrong.cookies[name] = "x" * 43
    assert_problem(wrong.get(CALLBACK, grant), 403, "oauth_browser_mismatch")
    assert OAuthState.objects.count() == 1
    # The grant the victim carried is the owner's to use: it completes in the owner's browser.
    account = ok(owner_browser.get(CALLBACK, grant))
    assert account["provider"] == "mastodon"
    assert not OAuthState.objects.exists()


def test_the_start_link_binds_one_browser_only(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn
) -> None:
    link = _connect(owner_client, workspace, mastodon)
    confirm_start(link, APIClient())

    path = urlsplit(link).path
    second = APIClient()

    assert second.get(path, **BROWSER).status_code == 404
    assert second.post(path).status_code == 404
    assert not second.cookies


def test_the_nonce_cookie_is_httponly_lax_short_lived_and_scoped_to_the_callback(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn
) -> None:
    path = urlsplit(_connect(owner_client, workspace, mastodon)).path

    confirmed = APIClient().post(path, secure=True)

    assert confirmed.status_code == 303
    assert confirmed["Location"].startswith(f"{mastodon.url}/oauth/authorize?")
    assert confirmed["Cache-Control"] == "no-store"
    assert confirmed["Referrer-Policy"] == "same-origin"
    (cookie,) = confirmed.cookies.values()
    assert cookie.key.startswith("herald_oauth_")
    assert len(cookie.value) >= 43  # 32 random bytes
    assert cookie["httponly"] is True
    assert cookie["secure"] is True
    assert cookie["samesite"] == "Lax"
    assert cookie["path"] == CALLBACK
    assert 0 < int(cookie["max-age"]) <= 900
    stored = OAuthState.objects.get()
    assert cookie.value not in stored.browser_nonce_hash  # only its hash is stored


def test_another_site_cannot_confirm_the_start_page_for_the_person(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn
) -> None:
    path = urlsplit(_connect(owner_client, workspace, mastodon)).path
    browser = APIClient(enforce_csrf_checks=True)

    forged = browser.post(path)  # an auto-submitted form from another site: no CSRF token

    assert forged.status_code == 403
    assert OAuthState.objects.get().browser_nonce_hash == ""


def test_an_unknown_state_gets_a_plain_page_and_no_result(db: Any) -> None:
    answer = APIClient().get(CALLBACK, {"state": "unknown", "code": "x"}, **BROWSER)
    denied = APIClient().get(CALLBACK, {"state": "unknown", "error": "access_denied"}, **BROWSER)

    for response in (answer, denied):
        assert response.status_code == 404
        assert "Location" not in response
        assert "/connections/result/" not in response.content.decode()
    assert_problem(APIClient().get(CALLBACK, {"state": "unknown", "code": "x"}), 404, "not_found")


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ("access_denied", "declined"),
        ("invalid_scope", "permissions Herald asked for"),
        ("temporarily_unavailable", "temporarily unavailable"),
        (PROVIDER_TEXT, "The provider did not grant access."),
    ],
)
def test_a_provider_error_shows_only_herald_words(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    error: str,
    expected: str,
) -> None:
    browser, grant = _bound_grant(owner_client, workspace, mastodon)
    query = {"state": grant["state"], "error": error, "error_description": PROVIDER_TEXT}

    answer = browser.get(CALLBACK, query, **BROWSER)

    assert answer.status_code == 303
    page = browser.get(answer["Location"])
    text = page.content.decode()
    assert page.status_code == 400
    assert expected in text
    assert PROVIDER_TEXT not in text
    assert not OAuthState.objects.exists()  # a denial spends the state


def test_a_provider_error_in_json_shows_only_herald_words(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn
) -> None:
    browser, grant = _bound_grant(owner_client, workspace, mastodon)

    denied = browser.get(
        CALLBACK, {"state": grant["state"], "error": PROVIDER_TEXT, "error_description": "x y z"}
    )

    assert_problem(denied, 403, "oauth_denied")
    assert PROVIDER_TEXT not in denied.content.decode()
    assert "x y z" not in denied.content.decode()


def test_a_failed_code_exchange_shows_no_provider_text(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn
) -> None:
    browser, grant = _bound_grant(owner_client, workspace, mastodon)

    answer = browser.get(CALLBACK, {"state": grant["state"], "code": "forged"}, **BROWSER)

    page = browser.get(answer["Location"])
    assert page.status_code == 400
    text = page.content.decode()
    assert "did not complete the connection" in text
    # The stand-in's error_description for an unknown code.
    assert "authorization grant is invalid" not in text
    assert "invalid_grant" not in text
