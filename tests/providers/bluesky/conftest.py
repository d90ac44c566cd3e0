"""The Bluesky tests' fixtures: the stand-in (PDS and video service), fresh state for each test,
the registry's adapter pointed at it and a connected account."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from providers import get_adapter
from providers.base import AccountContext
from providers.bluesky import BlueskyAdapter
from tests.providers.bluesky.standin import ACCOUNTS, BlueskyStandIn


@pytest.fixture(scope="module")
def server() -> Iterator[BlueskyStandIn]:
    with BlueskyStandIn() as standin:
        yield standin


@pytest.fixture(autouse=True)
def _fresh(server: BlueskyStandIn) -> None:
    server.reset()


@pytest.fixture
def adapter(settings, server) -> BlueskyAdapter:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 1.0
    settings.HERALD_BLUESKY_SERVICE_URL = server.url
    settings.HERALD_BLUESKY_VIDEO_URL = server.url  # the stand-in is the video service too
    adapter = get_adapter("bluesky")
    assert isinstance(adapter, BlueskyAdapter)
    return adapter


def connect(adapter: BlueskyAdapter, handle: str = "herald.test") -> AccountContext:
    connected = adapter.connect_with_credentials(
        fields={"handle": handle, "app_password": ACCOUNTS[handle]["password"]}
    )
    return AccountContext(
        external_id=connected.external_id,
        credentials=dict(connected.credentials),
        instance_url=connected.instance_url,
        username=connected.username,
    )


@pytest.fixture
def account(adapter) -> AccountContext:
    return connect(adapter)
