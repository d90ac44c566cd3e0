"""``herald account connect facebook`` and ``herald account choose``: the CLI starts Facebook
Login, the person confirms Herald's start page and authorizes (the stand-in), the page they land
on names the choice, and the CLI lists the candidates and connects the chosen Page."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from providers import credentials
from providers.meta import GRAPH_VERSION
from publishing.models import Account, ConnectionChoice
from tests.cli_support import (
    Cli,
    forget_remembered_secrets,  # noqa: F401 (autouse fixture)
    json_of,
)
from tests.providers.facebook.standin import PAGES, FacebookStandIn
from workspaces.models import User

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def facebook(settings: Any) -> Iterator[FacebookStandIn]:
    with FacebookStandIn() as standin:
        settings.HERALD_DISABLED_PROVIDERS = []
        settings.PROVIDER_OAUTH_APPS = {
            **settings.PROVIDER_OAUTH_APPS,
            "facebook": standin.app_settings(),
            "instagram": standin.app_settings(),
        }
        yield standin


def test_connect_facebook_and_choose_a_page(
    cli: Cli,
    live_server: Any,
    make_token: Callable[..., str],
    user: User,
    workspace: Any,
    facebook: FacebookStandIn,
) -> None:
    base = ["--instance", str(live_server.url), "--token", make_token(user)]
    started = cli(*base, "account", "connect", "facebook", "--no-browser", "--json")
    assert started.exit_code == 0, started.output  # no waiting for an account: a choice comes
    assert "herald account choose" in started.output
    start_page = json_of(started)["authorization_url"]
    browser = requests.Session()
    browser.headers["Accept"] = "text/html,application/xhtml+xml,*/*;q=0.8"  # a browser
    page = browser.get(start_page, timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None, page.text[:300]
    landed = browser.post(start_page, data={"csrfmiddlewaretoken": token[1]}, timeout=10)
    assert landed.status_code == 200, landed.text[:300]
    assert facebook.versions_seen == {GRAPH_VERSION}
    choice = ConnectionChoice.objects.get()
    assert f"herald account choose {choice.pk}" in landed.text
    assert not Account.objects.exists()

    listed = cli(*base, "account", "choose", str(choice.pk))
    assert listed.exit_code == 0, listed.output
    assert f"facebook:{PAGES[0]['id']}" in listed.output
    assert "instagram:17841400000000001" in listed.output

    chosen = cli(
        *base, "account", "choose", str(choice.pk), "--candidate", f"facebook:{PAGES[0]['id']}"
    )
    assert chosen.exit_code == 0, chosen.output
    assert "Connected facebook account" in chosen.output
    account = Account.objects.get(provider="facebook")
    assert account.external_id == PAGES[0]["id"]
    assert credentials.decrypt(account.credentials_encrypted)["login"] == "facebook"
    again = cli(*base, "account", "choose", str(choice.pk), "--all")
    assert again.exit_code != 0  # spent
