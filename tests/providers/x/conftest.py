"""The X tests' fixtures: the stand-in, fresh state for each test, the registry's adapter pointed
at it (the operator's app) and a user connected through the authorize page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from providers import get_adapter
from providers.base import AccountContext
from providers.x import XAdapter
from tests.providers.x.standin import XStandIn

REDIRECT = "https://herald.example/api/v1/accounts/oauth/callback"


@pytest.fixture(scope="module")
def server() -> Iterator[XStandIn]:
    with XStandIn() as standin:
        yield standin


@pytest.fixture(autouse=True)
def _fresh(server: XStandIn, settings: Any) -> None:
    server.reset()
    server.media_polls = 0
    server.deny = False
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 2.0
    settings.HERALD_DISABLED_PROVIDERS = []
    settings.PROVIDER_OAUTH_APPS = {**settings.PROVIDER_OAUTH_APPS, "x": server.app_settings()}


@pytest.fixture
def adapter(monkeypatch: Any) -> XAdapter:
    adapter = get_adapter("x")
    assert isinstance(adapter, XAdapter)
    monkeypatch.setattr(adapter, "media_poll_cap", 0.01)
    return adapter


def grant(adapter: XAdapter) -> AccountContext:
    """Connect the fixture user through the authorize page and the token endpoint."""
    start = adapter.begin_authorization(redirect_uri=REDIRECT, state="st")
    location = requests.get(start.authorization_url, allow_redirects=False, timeout=5)
    code = parse_qs(urlsplit(location.headers["Location"]).query)["code"][0]
    connected = adapter.complete_authorization(
        code=code, redirect_uri=REDIRECT, code_verifier=start.code_verifier
    )
    return AccountContext(
        external_id=connected.external_id,
        credentials=dict(connected.credentials),
        username=connected.username,
    )


@pytest.fixture
def account(adapter: XAdapter) -> AccountContext:
    return grant(adapter)
