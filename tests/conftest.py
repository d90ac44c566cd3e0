"""Fixtures of the tests/ folder (the project-wide ones are in the root conftest.py).

The stand-in providers (tests/providers/), one fresh server per test on 127.0.0.1, with the
adapters allowed to reach it (``provider_settings``) and the settings that name a provider's
service pointed at it: ``mastodon``, ``bluesky``, ``discord`` (a Discord incoming webhook),
``telegram`` and ``webhook_receiver`` (a receiver of Herald's generic signed webhook).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.providers.bluesky.standin import BlueskyStandIn
from tests.providers.discord_webhook.standin import DiscordWebhookStandIn
from tests.providers.mastodon.standin import MastodonStandIn
from tests.providers.telegram.standin import TelegramStandIn
from tests.providers.webhook.standin import WebhookReceiverStandIn
from tests.shipped_support import installed_herald


@pytest.fixture(scope="session")
def installed_herald_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``bin`` folder of a fresh virtual environment, outside the checkout, with the wheel the
    Dockerfile builds installed in it (tests/shipped_support.py); built once per session."""
    return installed_herald(tmp_path_factory)


# --- Stand-in providers ---------------------------------------------------------------------------


@pytest.fixture
def mastodon(provider_settings: Any) -> Iterator[MastodonStandIn]:
    """A Mastodon instance; accounts connect with ``instance_url=mastodon.url``."""
    with MastodonStandIn() as server:
        yield server


@pytest.fixture
def bluesky(provider_settings: Any) -> Iterator[BlueskyStandIn]:
    """The Bluesky PDS, as ``HERALD_BLUESKY_SERVICE_URL``."""
    with BlueskyStandIn() as server:
        provider_settings.HERALD_BLUESKY_SERVICE_URL = server.url
        yield server


@pytest.fixture
def discord(provider_settings: Any) -> Iterator[DiscordWebhookStandIn]:
    """Discord's incoming webhooks; accounts connect with ``discord.webhook_url()``."""
    with DiscordWebhookStandIn() as server:
        yield server


@pytest.fixture
def telegram(provider_settings: Any) -> Iterator[TelegramStandIn]:
    """The Telegram Bot API, as ``HERALD_TELEGRAM_API_URL``."""
    with TelegramStandIn() as server:
        provider_settings.HERALD_TELEGRAM_API_URL = server.url
        yield server


@pytest.fixture
def webhook_receiver(provider_settings: Any) -> Iterator[WebhookReceiverStandIn]:
    """A receiver of the generic signed webhook; accounts connect with its ``fixtures()``."""
    with WebhookReceiverStandIn() as server:
        yield server
