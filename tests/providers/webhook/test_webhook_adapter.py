"""Generic webhook adapter against the receiver stand-in (real HTTP on 127.0.0.1), which checks
every signature with the documentation's own example."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests

from providers import PROVIDERS, get_adapter
from providers.base import (
    AccountContext,
    ErrorKind,
    NotSupported,
    ProviderError,
    ProviderInputError,
    PublishRequest,
    describe,
)
from providers.webhook import WebhookAdapter
from tests.providers import assert_no_secret, media_item
from tests.providers.webhook.standin import (
    PATH_TOKEN,
    SECRET,
    WebhookReceiverStandIn,
    documented_signature_check,
)


@pytest.fixture(scope="module")
def server() -> Iterator[WebhookReceiverStandIn]:
    with WebhookReceiverStandIn() as standin:
        yield standin


@pytest.fixture(autouse=True)
def _fresh(server: WebhookReceiverStandIn) -> None:
    server.reset()


@pytest.fixture
def adapter(settings) -> WebhookAdapter:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 1.0
    adapter = get_adapter("webhook")
    assert isinstance(adapter, WebhookAdapter)
    return adapter


@pytest.fixture
def account(adapter, server) -> AccountContext:
    connected = adapter.connect_with_credentials(fields=server.fixtures())
    return AccountContext(external_id=connected.external_id, credentials=connected.credentials)


CREATED = datetime(2026, 11, 24, 23, 30, 0, 123456, tzinfo=UTC)
SCHEDULED = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)


def post(text: str = "Hello from Herald", key: str = "dest-key-1", **kwargs) -> PublishRequest:
    values = {"publication_id": "pub-1", "created_at": CREATED, **kwargs}
    return PublishRequest(profile="webhook.post", text=text, idempotency_key=key, **values)


SECRETS = [SECRET, PATH_TOKEN]


def test_registered_with_capabilities() -> None:
    assert "webhook" in PROVIDERS
    described = describe(get_adapter("webhook"))
    assert described["connection"] == "webhook"
    assert described["credential_fields"] == ["url", "secret"]
    assert described["required_scopes"] == []
    assert [p["key"] for p in described["profiles"]] == ["webhook.post"]


def test_connect_calls_nothing_and_keeps_the_url(adapter, server) -> None:
    connected = adapter.connect_with_credentials(fields=server.fixtures())
    assert server.requests == 0  # no call at connect
    assert connected.credentials == {"url": server.webhook_url(), "secret": SECRET}
    assert connected.account_kind == "webhook"
    assert connected.username == f"127.0.0.1:{server.port}"
    for shown in (connected.username, connected.display_name, connected.external_id):
        assert PATH_TOKEN not in shown
        assert "hooks" not in shown
    again = adapter.connect_with_credentials(
        fields={"url": server.webhook_url(), "secret": "x" * 16}
    )
    assert again.external_id == connected.external_id  # same URL: same account (secret rotation)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"url": "ftp://127.0.0.1/hook", "secret": SECRET}, "url"),
        ({"url": "http://[::1/hook", "secret": SECRET}, "url"),
        ({"url": "not a url", "secret": SECRET}, "url"),
        ({"url": "https://127.0.0.1/" + "a" * 2100, "secret": SECRET}, "url"),
        ({"url": "http://127.0.0.1:9/hook", "secret": "fifteen-chars.."}, "secret"),
        ({"url": "http://127.0.0.1:9/hook", "secret": " " + "s" * 20}, "secret"),
        ({"url": "http://127.0.0.1:9/hook", "secret": ""}, "secret"),
    ],
)
def test_local_checks_name_the_field(adapter, fields, field) -> None:
    with pytest.raises(ProviderInputError) as caught:
        adapter.connect_with_credentials(fields=fields)
    assert caught.value.field == field
    assert_no_secret(caught.value, [v for v in fields.values() if len(v) >= 16])


def test_without_private_mode_only_public_https(settings) -> None:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = False
    adapter = get_adapter("webhook")
    good = "https://93.184.215.14/hooks/herald?token=abc"  # a public literal: no DNS needed
    assert (
        adapter.connect_with_credentials(fields={"url": good, "secret": SECRET}).credentials["url"]
        == good
    )
    for bad in (
        "http://93.184.215.14/hooks/herald",
        "https://127.0.0.1/hooks/herald",
        "https://10.1.2.3/hooks/herald",
        "https://[::1]/hooks/herald",
        "https://localhost/hooks/herald",
        "https://receiver.internal/hooks/herald",
        "https://user:pw@93.184.215.14/hooks/herald",
    ):
        with pytest.raises(ProviderInputError) as caught:
            adapter.connect_with_credentials(fields={"url": bad, "secret": SECRET})
        assert caught.value.field == "url", bad


def test_publish_sends_signed_json(adapter, server, account) -> None:
    media = media_item(name="a.png", alt_text="A pixel")
    media.url = "https://herald.example.com/media/ws/a.png"
    result = adapter.publish(account=account, request=post(media=[media], scheduled_at=SCHEDULED))
    assert result.external_id == "rcv-1"
    assert server.posts_accepted == 1
    assert server.rejected_signatures == 0
    raw = server.raw_bodies[0]
    headers = {k.lower(): v for k, v in server.headers_seen[0].items()}
    assert headers["content-type"] == "application/json"
    assert headers["x-herald-delivery"] == "dest-key-1"
    expected = hmac.new(SECRET.encode(), raw, hashlib.sha256).hexdigest()
    assert headers["x-herald-signature"] == f"sha256={expected}"
    assert documented_signature_check()(raw, headers["x-herald-signature"], SECRET)
    assert not documented_signature_check()(raw + b" ", headers["x-herald-signature"], SECRET)
    assert not documented_signature_check()(raw, headers["x-herald-signature"], "y" * 20)
    assert json.loads(raw) == {
        "id": "dest-key-1",
        "publication_id": "pub-1",
        "text": "Hello from Herald",
        "media": [
            {
                "url": "https://herald.example.com/media/ws/a.png",
                "mime_type": "image/png",
                "name": "a.png",
                "size_bytes": media.size,
                "alt_text": "A pixel",
            }
        ],
        "scheduled_at": "2026-11-25T09:00:00Z",
        "created_at": "2026-11-24T23:30:00.123456Z",
    }
    assert SECRET.encode() not in raw


def test_unicode_text_is_signed_as_sent(adapter, server, account) -> None:
    adapter.publish(account=account, request=post(text='Grüße 👋 \u2028 "quoted"'))
    raw = server.raw_bodies[0]
    assert json.loads(raw)["text"] == 'Grüße 👋 \u2028 "quoted"'
    assert server.rejected_signatures == 0


def test_no_receiver_id_means_the_delivery_key(adapter, server, account) -> None:
    server.set_faults(reply_id=False)
    assert adapter.publish(account=account, request=post(key="k-204")).external_id == "k-204"


def test_media_without_an_absolute_url_is_refused_before_sending(adapter, server, account) -> None:
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post(media=[media_item()]))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "HERALD_PUBLIC_URL" in caught.value.message
    assert server.requests == 0


def test_rate_limit_honours_retry_after(adapter, server, account) -> None:
    server.set_faults(rate_limit={"count": 1, "retry_after": 7})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.RATE_LIMITED
    assert caught.value.retry_after == pytest.approx(7)
    assert server.posts_accepted == 0


def test_server_error_is_transient(adapter, server, account) -> None:
    server.set_faults(server_error={"count": 1, "status": 500})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.TRANSIENT
    assert_no_secret(caught.value, SECRETS)


def test_client_error_is_permanent_without_secrets(adapter, server, account) -> None:
    server.set_faults(
        permanent={"count": 1, "status": 400, "message": f"no thanks {SECRET} {PATH_TOKEN}"}
    )
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "no thanks" in caught.value.message
    assert_no_secret(caught.value, SECRETS)


def test_wrong_secret_is_auth(adapter, server, account) -> None:
    account.credentials["secret"] = "an-older-secret-that-was-rotated"
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.AUTH
    assert server.rejected_signatures == 1
    assert server.posts_accepted == 0
    assert_no_secret(caught.value, [SECRET, "an-older-secret-that-was-rotated", PATH_TOKEN])


def test_timeout_after_sending_is_ambiguous_and_not_reconcilable(adapter, server, account) -> None:
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 2.5})
    request = post(key="slow")
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request)
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    assert server.posts_accepted == 1
    with pytest.raises(NotSupported) as reconciled:  # delivery hands it to a person
        adapter.reconcile(account=account, request=request)
    assert reconciled.value.kind == ErrorKind.AMBIGUOUS
    assert server.requests == 1  # reconcile asked nothing and re-sent nothing


def test_unreachable_receiver_is_transient(adapter, account) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    account.credentials["url"] = f"http://127.0.0.1:{port}/hooks/herald?token={PATH_TOKEN}"
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.TRANSIENT
    assert_no_secret(caught.value, SECRETS)
    assert caught.value.__suppress_context__


def test_receiver_deduplicates_a_repeated_delivery(adapter, server, account) -> None:
    first = adapter.publish(account=account, request=post(key="same"))
    second = adapter.publish(account=account, request=post(key="same"))
    assert first == second
    assert server.posts_accepted == 1
    assert server.counters["duplicates"] == 1


def test_secret_never_logged(adapter, server, account, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    adapter.publish(account=account, request=post())
    server.set_faults(permanent={"count": 1, "status": 400, "message": SECRET})
    with pytest.raises(ProviderError):
        adapter.publish(account=account, request=post(key="k2"))
    assert caplog.records  # provider calls are logged (host only)
    for record in caplog.records:
        text = record.getMessage() + " " + repr(record.__dict__)
        assert SECRET not in text
        assert PATH_TOKEN not in text


def test_receiver_runs_as_a_process(settings) -> None:
    """``python -m tests.providers.webhook.standin`` prints its URL and secret and obeys the control API."""
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 2.0
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.providers.webhook.standin", "--port", "0"],
        cwd=Path(__file__).resolve().parents[3],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        assert info["provider"] == "webhook"
        adapter = get_adapter("webhook")
        connected = adapter.connect_with_credentials(fields=info["fixtures"])
        account = AccountContext(
            external_id=connected.external_id, credentials=connected.credentials
        )
        base = info["url"]
        requests.post(f"{base}/__control/faults", json={"reply_id": False}, timeout=5)
        assert adapter.publish(account=account, request=post(key="xp-1")).external_id == "xp-1"
        posts = requests.get(f"{base}/__control/posts", timeout=5).json()["posts"]
        assert [p["delivery"] for p in posts] == ["xp-1"]
        assert posts[0]["body"]["text"] == "Hello from Herald"
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def test_delete_is_not_supported_and_calls_nothing(adapter, server, account) -> None:
    result = adapter.publish(account=account, request=post())
    with pytest.raises(NotSupported):
        adapter.delete(account=account, external_id=result.external_id)
    assert server.requests == 1  # only the publish
