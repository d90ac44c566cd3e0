"""The stand-ins as separate processes, driven over their HTTP control API (as the Celery
worker tests and benchmarks do)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from providers import get_adapter
from providers.base import AccountContext, ErrorKind, ProviderError, PublishRequest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def process(request) -> Iterator[dict[str, Any]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", f"tests.providers.{request.param}.standin", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        yield info
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def account_for(name: str, info: dict[str, Any]) -> tuple[AccountContext, str]:
    fixtures = info["fixtures"]
    adapter = get_adapter(name)
    if name == "mastodon":
        return AccountContext(
            external_id=fixtures["account_id"],
            instance_url=info["url"],
            credentials={"access_token": fixtures["access_token"]},
        ), "mastodon.post"
    if name == "bluesky":
        connected = adapter.connect_with_credentials(
            fields={
                "handle": "herald.test",
                "app_password": fixtures["accounts"]["herald.test"]["app_password"],
            }
        )
        return AccountContext(
            external_id=connected.external_id,
            credentials=connected.credentials,
            instance_url=connected.instance_url,
            username=connected.username,
        ), "bluesky.post"
    if name == "discord_webhook":
        connected = adapter.connect_with_credentials(
            fields={"webhook_url": fixtures["webhook_url"]}
        )
        return AccountContext(
            external_id=connected.external_id, credentials=connected.credentials
        ), "discord_webhook.message"
    connected = adapter.connect_with_credentials(
        fields={"bot_token": fixtures["bot_token"], "chat_id": fixtures["chat_id"]}
    )
    return AccountContext(
        external_id=connected.external_id, credentials=connected.credentials
    ), "telegram.message"


@pytest.mark.parametrize(
    "process", ["mastodon", "bluesky", "discord_webhook", "telegram"], indirect=True
)
def test_control_api_from_another_process(process, settings) -> None:
    name = process["provider"]
    base = process["url"]
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 2
    settings.HERALD_BLUESKY_SERVICE_URL = base
    settings.HERALD_TELEGRAM_API_URL = base
    account, profile = account_for(name, process)
    adapter = get_adapter(name)

    faults = requests.post(
        f"{base}/__control/faults",
        timeout=5,
        json={"rate_limit": {"count": 1, "retry_after": 2}, "delay_ms": 5},
    ).json()
    assert faults["faults"]["rate_limit"]["count"] == 1
    assert faults["faults"]["delay_ms"] == 5

    request = PublishRequest(profile=profile, text="cross-process", idempotency_key="xp-1")
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request)
    assert caught.value.kind == ErrorKind.RATE_LIMITED
    assert caught.value.retry_after == pytest.approx(2, abs=1)
    adapter.publish(account=account, request=request)

    stats = requests.get(f"{base}/__control/stats", timeout=5).json()
    assert stats["provider"] == name
    assert stats["posts_accepted"] == 1
    assert stats["counters"]["fault_rate_limit"] == 1
    posts = requests.get(f"{base}/__control/posts", timeout=5).json()["posts"]
    assert len(posts) == 1

    cleared = requests.delete(f"{base}/__control/faults", timeout=5).json()
    assert cleared["faults"]["delay_ms"] == 0
    reset = requests.post(f"{base}/__control/reset", timeout=5).json()
    assert reset["posts_accepted"] == 0
    bad = requests.post(f"{base}/__control/faults", data="nope", timeout=5)
    assert bad.status_code == 400
