"""The threads stand-in and adapter fixtures shared by this folder's test modules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from providers import get_adapter
from providers.base import (
    AccountContext,
)
from providers.threads import ThreadsAdapter
from tests.providers import grant
from tests.providers.threads.standin import (
    MediaHost,
    ThreadsStandIn,
)


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadsStandIn]:
    with ThreadsStandIn() as standin:
        yield standin


@pytest.fixture(scope="module")
def host() -> Iterator[MediaHost]:
    with MediaHost() as media_host:
        yield media_host


@pytest.fixture(autouse=True)
def _fresh(server: ThreadsStandIn, settings: Any) -> None:
    server.reset()
    server.container_polls = 1
    server.deny = False
    server.clock_offset = 0.0
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 2.0
    settings.HERALD_DISABLED_PROVIDERS = []
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "threads": server.app_settings(),
    }


@pytest.fixture
def adapter(monkeypatch: Any) -> ThreadsAdapter:
    adapter = get_adapter("threads")
    assert isinstance(adapter, ThreadsAdapter)
    monkeypatch.setattr(adapter, "container_poll_seconds", 0.01)
    return adapter


@pytest.fixture
def account(adapter: ThreadsAdapter) -> AccountContext:
    return grant(adapter)
