"""Discord incoming-webhook adapter against the stand-in (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from providers import get_adapter
from providers.base import (
    AccountContext,
    ErrorKind,
    NotSupported,
    ProviderError,
    PublishRequest,
)
from providers.discord_webhook import DiscordWebhookAdapter
from tests.providers import assert_no_secret, assert_too_large, media_item
from tests.providers.discord_webhook.standin import (
    CHANNEL_ID,
    GUILD_ID,
    WEBHOOK_ID,
    WEBHOOK_TOKEN,
    DiscordWebhookStandIn,
)
from tests.video_support import make_video


@pytest.fixture(scope="module")
def server() -> Iterator[DiscordWebhookStandIn]:
    with DiscordWebhookStandIn() as standin:
        yield standin


@pytest.fixture(autouse=True)
def _fresh(server: DiscordWebhookStandIn) -> None:
    server.reset()


@pytest.fixture
def adapter(settings) -> DiscordWebhookAdapter:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 1.0
    adapter = get_adapter("discord_webhook")
    assert isinstance(adapter, DiscordWebhookAdapter)
    return adapter


@pytest.fixture
def account(adapter, server) -> AccountContext:
    connected = adapter.connect_with_credentials(fields={"webhook_url": server.webhook_url()})
    return AccountContext(external_id=connected.external_id, credentials=connected.credentials)


def message(text: str = "Hello from Herald", key: str = "dest-1", **kwargs) -> PublishRequest:
    return PublishRequest(
        profile="discord_webhook.message", text=text, idempotency_key=key, **kwargs
    )


def test_connect_reads_the_webhook(adapter, server) -> None:
    connected = adapter.connect_with_credentials(fields={"webhook_url": server.webhook_url() + "/"})
    assert connected.external_id == WEBHOOK_ID
    assert connected.username == "Herald Hook"
    assert connected.account_kind == "webhook"
    assert connected.credentials["webhook_url"] == server.webhook_url()
    assert connected.credentials["guild_id"] == GUILD_ID
    assert connected.credentials["channel_id"] == CHANNEL_ID


def test_wrong_token_or_unknown_webhook_is_auth(adapter, server) -> None:
    for url in (
        f"{server.url}/api/webhooks/{WEBHOOK_ID}/not-the-right-token-at-all",
        f"{server.url}/api/webhooks/999999999999/{WEBHOOK_TOKEN}",
    ):
        with pytest.raises(ProviderError) as caught:
            adapter.connect_with_credentials(fields={"webhook_url": url})
        assert caught.value.kind == ErrorKind.AUTH
        assert_no_secret(caught.value, [WEBHOOK_TOKEN, "not-the-right-token-at-all"])


def test_only_discord_webhook_urls_without_private_mode(settings) -> None:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = False
    adapter = get_adapter("discord_webhook")
    assert isinstance(adapter, DiscordWebhookAdapter)
    good = f"https://discord.com/api/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}"
    assert adapter._webhook_url(good) == good
    assert adapter._webhook_url(
        good.replace("discord.com", "discordapp.com") + "?wait=true"
    ).startswith("https://discordapp.com/api/webhooks/")
    for bad in (
        f"http://discord.com/api/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}",
        f"https://127.0.0.1/api/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}",
        f"https://discord.com.evil.example/api/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}",
        f"https://discord.com:8443/api/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}",
        "https://discord.com/api/users/@me",
    ):
        with pytest.raises(ProviderError) as caught:
            adapter.connect_with_credentials(fields={"webhook_url": bad})
        assert caught.value.kind == ErrorKind.PERMANENT
        assert_no_secret(caught.value, [WEBHOOK_TOKEN])


def test_publish_text_returns_the_message_id(adapter, server, account) -> None:
    result = adapter.publish(account=account, request=message(options={"username": "Herald"}))
    assert result.external_id in server.messages
    assert (
        result.external_url
        == f"https://discord.com/channels/{GUILD_ID}/{CHANNEL_ID}/{result.external_id}"
    )
    assert server.posts_accepted == 1
    assert server.posts[0]["allowed_mentions"] == {"parse": []}
    assert server.messages[result.external_id]["author"]["username"] == "Herald"


def test_publish_with_attachments(adapter, server, account) -> None:
    result = adapter.publish(
        account=account,
        request=message(media=[media_item(name="a.png"), media_item(name="b.png", alt_text="b")]),
    )
    stored = server.messages[result.external_id]
    assert [a["filename"] for a in stored["attachments"]] == ["a.png", "b.png"]
    assert server.posts[0]["files"] == 2


def test_limits_are_checked_before_sending(adapter, server, account) -> None:
    profile = adapter.capabilities.profile("discord_webhook.message")
    assert profile is not None
    assert profile.text_limit == 2000
    adapter.publish(account=account, request=message(text="é" * 2000))
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=message(text="é" * 2001, key="long"))
    assert caught.value.kind == ErrorKind.PERMANENT
    with pytest.raises(ProviderError):
        adapter.publish(account=account, request=message(media=[media_item() for _ in range(11)]))
    assert server.posts_accepted == 1


def test_rate_limit_uses_the_body_retry_after(adapter, server, account) -> None:
    server.set_faults(rate_limit={"count": 1, "retry_after": 2.5, "standard_header": False})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=message())
    assert caught.value.kind == ErrorKind.RATE_LIMITED
    assert caught.value.retry_after == pytest.approx(2.5)


def test_server_error_is_transient(adapter, server, account) -> None:
    server.set_faults(server_error={"count": 1, "status": 500})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=message())
    assert caught.value.kind == ErrorKind.TRANSIENT
    assert_no_secret(caught.value, [WEBHOOK_TOKEN])


def test_accept_then_timeout_stays_ambiguous(adapter, server, account) -> None:
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 2.5})
    request = message(key="slow")
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request)
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    assert server.posts_accepted == 1
    # Without a message id the adapter cannot know, and says so instead of claiming absence.
    with pytest.raises(ProviderError) as reconciled:
        adapter.reconcile(account=account, request=request)
    assert reconciled.value.kind == ErrorKind.AMBIGUOUS
    assert isinstance(reconciled.value, NotSupported)  # delivery hands it to a person
    assert_no_secret(reconciled.value, [WEBHOOK_TOKEN])


def test_reconcile_by_message_id(adapter, server, account) -> None:
    result = adapter.publish(account=account, request=message())
    assert (
        adapter.reconcile(account=account, request=message(), external_id=result.external_id)
        == result
    )
    assert adapter.reconcile(account=account, request=message(), external_id="123") is None


def test_revoked_webhook_is_auth(adapter, server, account) -> None:
    server.set_faults(reject_tokens=True)
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=message())
    assert caught.value.kind == ErrorKind.AUTH
    assert_no_secret(caught.value, [WEBHOOK_TOKEN])


def test_permanent_rejection(adapter, server, account) -> None:
    server.set_faults(permanent={"count": 1, "status": 400, "message": "bad content"})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=message())
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "Invalid Form Body" in caught.value.message


def test_unreachable_webhook_is_transient_and_hides_the_token(adapter, account) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    account.credentials["webhook_url"] = (
        f"http://127.0.0.1:{port}/api/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}"
    )
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=message())
    assert caught.value.kind == ErrorKind.TRANSIENT
    assert_no_secret(caught.value, [WEBHOOK_TOKEN])
    assert caught.value.__suppress_context__  # requests' message (with the URL) is not chained


def test_no_destination_options(adapter, account) -> None:
    assert adapter.destination_options(account=account) == {}


# --- video ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "mime_type"),
    [("mp4", "video/mp4"), ("webm", "video/webm"), ("mov", "video/quicktime")],
)
def test_a_video_is_an_attachment_of_the_message(
    adapter, server, account, kind: str, mime_type: str
) -> None:
    clip = make_video(kind)
    video = media_item(clip, name=f"clip.{kind}", mime_type=mime_type, alt_text="A clip")
    result = adapter.publish(account=account, request=message("New video", media=[video]))
    stored = server.messages[result.external_id]
    assert stored["content"] == "New video"
    assert [(a["filename"], a["content_type"], a["size"]) for a in stored["attachments"]] == [
        (f"clip.{kind}", mime_type, len(clip))
    ]
    assert server.uploads[0]["data"] == clip


def test_videos_and_images_share_one_message(adapter, server, account) -> None:
    clip = make_video("mp4")
    request = message(
        media=[media_item(name="a.png"), media_item(clip, name="clip.mp4", mime_type="video/mp4")]
    )
    adapter.publish(account=account, request=request)
    assert [u["filename"] for u in server.uploads] == ["a.png", "clip.mp4"]
    assert server.posts[0]["files"] == 2


def test_413_from_discord_is_permanent_with_its_message(adapter, server, account) -> None:
    server.max_file_bytes = 2048  # as if the video were past the server's upload limit
    clip = make_video("mp4") + bytes(4096)
    with pytest.raises(ProviderError) as caught:
        adapter.publish(
            account=account,
            request=message(media=[media_item(clip, name="c.mp4", mime_type="video/mp4")]),
        )
    assert_too_large(caught.value, "Request entity too large", [WEBHOOK_TOKEN])
    assert server.posts_accepted == 0


def test_bytes_sent_as_a_video_must_be_one(adapter, server, account) -> None:
    fake = media_item(b"\x00" * 64, name="fake.mp4", mime_type="video/mp4")
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=message(media=[fake]))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert server.posts_accepted == 0
