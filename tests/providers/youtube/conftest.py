"""The YouTube tests' fixtures: the stand-in, fresh state for each test (its data, and the
day's quota count), the registry's adapter pointed at it and a channel connected through the
consent page with PKCE."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from providers import get_adapter
from providers.base import AccountContext
from providers.youtube import YouTubeAdapter
from tests.providers.youtube.standin import YouTubeStandIn

REDIRECT = "https://herald.example/api/v1/accounts/oauth/callback"
CHUNK = 1024  # the adapter's chunks in these tests (the stand-in's unit is 1 KiB)


@pytest.fixture(scope="module")
def server() -> Iterator[YouTubeStandIn]:
    with YouTubeStandIn() as standin:
        yield standin


@pytest.fixture(autouse=True)
def _fresh(server: YouTubeStandIn, settings: Any, db: Any) -> None:
    server.reset()
    server.chunk_unit = 1024
    server.quota_left = None
    server.thumbnails_allowed = True
    server.session_seconds = 7 * 24 * 3600.0
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 2.0
    settings.HERALD_DISABLED_PROVIDERS = []
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "youtube": server.app_settings(),
    }


@pytest.fixture
def adapter(monkeypatch: Any) -> YouTubeAdapter:
    adapter = get_adapter("youtube")
    assert isinstance(adapter, YouTubeAdapter)
    monkeypatch.setattr(adapter, "chunk_bytes", CHUNK)
    return adapter


def grant(adapter: YouTubeAdapter) -> AccountContext:
    """Connect the fixture channel through the consent page and the token endpoint."""
    start = adapter.begin_authorization(redirect_uri=REDIRECT, state="st")
    location = requests.get(start.authorization_url, allow_redirects=False, timeout=5)
    assert location.status_code == 302, location.text
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
def account(adapter: YouTubeAdapter) -> AccountContext:
    return grant(adapter)
