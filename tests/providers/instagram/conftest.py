"""The instagram stand-in, a media host and adapter fixtures shared by this folder's tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from providers import get_adapter
from providers.base import AccountContext
from providers.instagram import InstagramAdapter
from tests.providers.instagram.standin import IG_USER, InstagramStandIn
from tests.providers.threads.standin import MediaHost


@pytest.fixture(scope="module")
def server() -> Iterator[InstagramStandIn]:
    with InstagramStandIn() as standin:
        yield standin


@pytest.fixture(scope="module")
def host() -> Iterator[MediaHost]:
    with MediaHost() as media_host:
        yield media_host


@pytest.fixture(autouse=True)
def _fresh(server: InstagramStandIn, settings: Any) -> None:
    server.reset()
    server.container_polls = 1
    server.clock_offset = 0.0
    server.quota_total = 50
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 2.0
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_DISABLED_PROVIDERS = []
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "instagram": server.app_settings(),
    }


@pytest.fixture
def adapter() -> InstagramAdapter:
    adapter = get_adapter("instagram")
    assert isinstance(adapter, InstagramAdapter)
    return adapter


@pytest.fixture
def account(server: InstagramStandIn) -> AccountContext:
    """An account connected through Facebook Login (its Page token)."""
    return AccountContext(
        external_id=IG_USER["user_id"],
        credentials=server.facebook_account(),
        username=IG_USER["username"],
    )
