"""The TikTok tests' fixtures: the stand-in with small chunk bounds (so a generated video
spans several chunks), fresh state for each test, the registry's adapter pointed at it and a
creator connected through the authorization page with PKCE."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from providers import get_adapter
from providers.base import AccountContext
from providers.tiktok import TikTokAdapter
from tests.providers.tiktok.standin import TikTokStandIn

REDIRECT = "https://herald.example/api/v1/accounts/oauth/callback"
MIN_CHUNK = 4096  # the stand-in's and the adapter's chunk bounds in these tests
MAX_CHUNK = 8192


@pytest.fixture(scope="module")
def server() -> Iterator[TikTokStandIn]:
    with TikTokStandIn() as standin:
        yield standin


@pytest.fixture(autouse=True)
def _fresh(server: TikTokStandIn, settings: Any, db: Any) -> None:
    server.reset()
    server.min_chunk, server.max_chunk, server.max_last_chunk = MIN_CHUNK, MAX_CHUNK, 2 * MAX_CHUNK
    server.audited = False
    server.init_per_minute = 6
    server.processing_polls = 2
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 2.0
    settings.HERALD_DISABLED_PROVIDERS = []
    settings.PROVIDER_OAUTH_APPS = {**settings.PROVIDER_OAUTH_APPS, "tiktok": server.app_settings()}


def shrink(adapter: TikTokAdapter, monkeypatch: Any) -> TikTokAdapter:
    monkeypatch.setattr(adapter, "chunk_bytes", MAX_CHUNK)
    monkeypatch.setattr(adapter, "min_chunk", MIN_CHUNK)
    monkeypatch.setattr(adapter, "status_check_seconds", 0.0)
    return adapter


@pytest.fixture
def adapter(monkeypatch: Any) -> TikTokAdapter:
    adapter = get_adapter("tiktok")
    assert isinstance(adapter, TikTokAdapter)
    return shrink(adapter, monkeypatch)


def grant(adapter: TikTokAdapter) -> AccountContext:
    """Connect the fixture creator through the authorization page and the token endpoint."""
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
def account(adapter: TikTokAdapter) -> AccountContext:
    return grant(adapter)
