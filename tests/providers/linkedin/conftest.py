"""The linkedin stand-in and adapter fixtures shared by this folder's test modules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from providers import get_adapter
from providers.base import (
    AccountContext,
)
from providers.linkedin import LinkedInAdapter
from tests.providers import grant
from tests.providers.linkedin.standin import ORGANIZATION, LinkedInStandIn

ORG = f"urn:li:organization:{ORGANIZATION['id']}"


@pytest.fixture(scope="module")
def server() -> Iterator[LinkedInStandIn]:
    with LinkedInStandIn() as standin:
        yield standin


@pytest.fixture(autouse=True)
def _fresh(server: LinkedInStandIn, settings: Any) -> None:
    server.reset()
    server.issue_refresh = False
    server.deny = False
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 2.0
    settings.HERALD_DISABLED_PROVIDERS = []
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "linkedin": server.app_settings(),
    }


@pytest.fixture
def adapter() -> LinkedInAdapter:
    adapter = get_adapter("linkedin")
    assert isinstance(adapter, LinkedInAdapter)
    return adapter


@pytest.fixture
def account(adapter: LinkedInAdapter) -> AccountContext:
    return grant(adapter)
