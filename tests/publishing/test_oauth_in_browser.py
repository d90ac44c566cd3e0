"""The OAuth connect in a real browser (headless Chromium, tests/browser.py): the start page's
nonce cookie (HttpOnly, SameSite=Lax, scoped to the callback's path, set from another path) comes
back with the provider's cross-site redirect, the Content-Security-Policy lets the confirmation
form lead to the provider, and a browser that did not confirm gets Herald's refusal page.

Herald runs at ``localhost``, the provider stand-in at ``127.0.0.1``: two sites, so the way back
is a cross-site top-level navigation, as with a real provider.

Skipped where Chromium is not installed (.ci/run installs Debian's ``chromium``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "websocket", reason="websocket-client is not installed (pip install -e '.[dev]')"
)

from publishing.models import Account, OAuthState
from publishing.services.accounts import account_connect
from tests.browser import Chromium, chromium_path
from tests.providers.mastodon.standin import MastodonStandIn
from tests.publishing_support import bind_browser
from workspaces.access import Actor

CHROMIUM = chromium_path()

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"
    ),
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    assert CHROMIUM is not None
    with Chromium(CHROMIUM, tmp_path_factory.mktemp("chromium-profile")) as chromium:
        yield chromium


@pytest.fixture(scope="module")
def mastodon() -> Iterator[MastodonStandIn]:
    with MastodonStandIn() as server:
        yield server


@pytest.fixture(autouse=True)
def _fresh(settings: Any, browser: Chromium) -> None:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_DISABLED_PROVIDERS = []
    browser.send("Network.clearBrowserCookies")


def _start(live_server: Any, user: Any, workspace: Any, mastodon: MastodonStandIn) -> str:
    assert "localhost" in live_server.url  # two sites
    assert "127.0.0.1" in mastodon.url
    _, authorization_url = account_connect(
        actor=Actor(user=user),
        workspace_id=workspace.pk,
        provider="mastodon",
        redirect_uri=f"{live_server.url}/api/v1/accounts/oauth/callback",
        instance_url=mastodon.url,
    )
    assert authorization_url is not None
    return authorization_url


def _text(browser: Chromium) -> str:
    return str(browser.evaluate("document.body.innerText"))


def test_the_person_who_confirms_connects_through_a_real_browser(
    browser: Chromium,
    live_server: Any,
    user: Any,
    workspace: Any,
    mastodon: MastodonStandIn,
    tmp_path: Path,
) -> None:
    start = _start(live_server, user, workspace, mastodon)
    assert browser.navigate(start) == 200
    assert "Continue only if" in _text(browser)
    # The page's script cannot read the nonce cookie (it is not even set yet, and HttpOnly).
    assert "herald_oauth_" not in str(browser.evaluate("document.cookie"))

    # Confirm -> 303 to the provider (127.0.0.1) -> 302 back to the callback (localhost) with
    # the cookie -> 303 to the result page.
    status = browser.submit("document.querySelector('form').submit()")

    assert status == 200, _text(browser)
    assert "Mastodon account connected" in _text(browser)
    assert "/connections/result/" in str(browser.evaluate("location.pathname"))
    assert Account.objects.filter(workspace=workspace, provider="mastodon").exists()
    assert not OAuthState.objects.exists()
    assert not browser.csp_violations()


def test_a_browser_that_did_not_confirm_is_refused_and_the_connect_stays_pending(
    browser: Chromium,
    live_server: Any,
    user: Any,
    workspace: Any,
    mastodon: MastodonStandIn,
) -> None:
    # The sender confirmed in their own browser and passes the provider's link on.
    _, provider_url = bind_browser(_start(live_server, user, workspace, mastodon))

    status = browser.navigate(provider_url)  # the victim's browser, authorized at once

    assert status == 403
    assert "did not start this connection" in _text(browser)
    assert "/api/v1/accounts/oauth/callback" in str(browser.evaluate("location.pathname"))
    assert not Account.objects.exists()
    assert OAuthState.objects.count() == 1
