"""The facebook stand-in, a public media host and adapter fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from providers import get_adapter
from providers.base import AccountContext, ConnectionCandidates
from providers.facebook import FacebookAdapter
from tests.providers import OAUTH_REDIRECT
from tests.providers.facebook.standin import PAGES, FacebookStandIn
from tests.providers.threads.standin import MediaHost


@pytest.fixture(scope="module")
def server() -> Iterator[FacebookStandIn]:
    with FacebookStandIn() as standin:
        yield standin


@pytest.fixture(scope="module")
def host() -> Iterator[MediaHost]:
    with MediaHost() as media_host:
        yield media_host


@pytest.fixture(autouse=True)
def _fresh(server: FacebookStandIn, settings: Any) -> None:
    server.reset()
    server.deny = False
    server.declined = set()
    server.video_polls = 1
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 2.0
    settings.HERALD_DISABLED_PROVIDERS = []
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "facebook": server.app_settings(),
        "instagram": server.app_settings(),
    }


@pytest.fixture
def adapter(monkeypatch: Any) -> FacebookAdapter:
    adapter = get_adapter("facebook")
    assert isinstance(adapter, FacebookAdapter)
    monkeypatch.setattr(adapter, "video_check_seconds", 0.01)
    return adapter


def login(adapter: FacebookAdapter) -> ConnectionCandidates:
    from tests.publishing_support import follow_authorization

    start = adapter.begin_authorization(redirect_uri=OAUTH_REDIRECT, state="st")
    code = follow_authorization(start.authorization_url)["code"]
    found = adapter.complete_authorization(code=code, redirect_uri=OAUTH_REDIRECT, code_verifier="")
    assert isinstance(found, ConnectionCandidates)
    return found


@pytest.fixture
def account(adapter: FacebookAdapter) -> AccountContext:
    page = next(c for c in login(adapter).candidates if c.key == f"facebook:{PAGES[0]['id']}")
    return AccountContext(
        external_id=page.account.external_id,
        credentials=dict(page.account.credentials),
        username=page.account.username,
        instance_url=page.account.instance_url,
    )
