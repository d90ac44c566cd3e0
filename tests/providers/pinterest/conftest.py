"""The Pinterest tests' fixtures: the stand-in, fresh state for each test, the registry's
adapter pointed at it and an account connected through the consent page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from providers import get_adapter
from providers.base import AccountContext
from providers.pinterest import PinterestAdapter
from tests.providers.pinterest.standin import PinterestStandIn

REDIRECT = "https://herald.example/api/v1/accounts/oauth/callback"


@pytest.fixture(scope="module")
def server() -> Iterator[PinterestStandIn]:
    with PinterestStandIn() as standin:
        yield standin


@pytest.fixture(autouse=True)
def _fresh(server: PinterestStandIn, settings: Any, db: Any) -> None:
    server.reset()
    server.access_seconds = 30 * 24 * 3600.0
    server.processing_checks = 2
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 2.0
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_DISABLED_PROVIDERS = []
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "pinterest": server.app_settings(),
    }


@pytest.fixture
def adapter() -> PinterestAdapter:
    adapter = get_adapter("pinterest")
    assert isinstance(adapter, PinterestAdapter)
    return adapter


def grant(adapter: PinterestAdapter) -> AccountContext:
    start = adapter.begin_authorization(redirect_uri=REDIRECT, state="st")
    location = requests.get(start.authorization_url, allow_redirects=False, timeout=5)
    assert location.status_code == 302, location.text
    code = parse_qs(urlsplit(location.headers["Location"]).query)["code"][0]
    connected = adapter.complete_authorization(code=code, redirect_uri=REDIRECT, code_verifier="")
    return AccountContext(
        external_id=connected.external_id,
        credentials=dict(connected.credentials),
        username=connected.username,
    )


@pytest.fixture
def account(adapter: PinterestAdapter) -> AccountContext:
    return grant(adapter)
