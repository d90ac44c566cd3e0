"""``herald account connect instagram --mode instagram_login``: the CLI asks for Instagram's own
login, the person confirms Herald's start page and authorizes at Instagram (the stand-in), and
the account appears with the Instagram API base and its long-lived token."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from providers import credentials
from publishing.models import Account
from tests.cli_support import (
    Cli,
    forget_remembered_secrets,  # noqa: F401 (autouse fixture)
    json_of,
)
from tests.providers.instagram.standin import IG_USER, InstagramStandIn
from workspaces.models import User

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def instagram(settings: Any) -> Iterator[InstagramStandIn]:
    with InstagramStandIn() as standin:
        settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
        settings.HERALD_DISABLED_PROVIDERS = []
        settings.PROVIDER_OAUTH_APPS = {
            **settings.PROVIDER_OAUTH_APPS,
            "instagram": standin.app_settings(),
        }
        yield standin


def test_connect_instagram_through_instagram_login(
    cli: Cli,
    live_server: Any,
    make_token: Callable[..., str],
    user: User,
    workspace: Any,
    instagram: InstagramStandIn,
) -> None:
    base = ["--instance", str(live_server.url), "--token", make_token(user)]
    started = cli(
        *base, "account", "connect", "instagram", "--mode", "instagram_login", "--no-wait", "--json"
    )
    assert started.exit_code == 0, started.output
    start_page = json_of(started)["authorization_url"]
    browser = requests.Session()
    page = browser.get(start_page, timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None, page.text[:300]
    # Confirm, then Instagram's window (auto-approving) sends the browser to the callback.
    done = browser.post(start_page, data={"csrfmiddlewaretoken": token[1]}, timeout=10)
    assert done.status_code == 200, done.text[:300]
    account = Account.objects.get(provider="instagram")
    assert (account.external_id, account.instance_url) == (IG_USER["user_id"], instagram.url)
    assert credentials.decrypt(account.credentials_encrypted)["login"] == "instagram"

    unknown = cli(*base, "account", "connect", "instagram", "--mode", "nope", "--no-wait")
    assert unknown.exit_code != 0
    assert "instagram has no connection mode nope." in unknown.output
