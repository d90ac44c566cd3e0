"""Discord webhook video: Execute Webhook with the video as an attachment (``files[n]`` and
``payload_json.attachments``), streamed from storage, and the stand-in's 413 past the upload
limit (real HTTP on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from providers import get_adapter
from providers.base import AccountContext, ErrorKind, ProviderError, PublishRequest
from providers.discord_webhook import DiscordWebhookAdapter
from tests.providers import assert_no_secret, media_item
from tests.providers.discord_webhook.standin import WEBHOOK_TOKEN, DiscordWebhookStandIn
from tests.video_support import make_video


@pytest.fixture(scope="module")
def server() -> Iterator[DiscordWebhookStandIn]:
    with DiscordWebhookStandIn() as standin:
        yield standin


@pytest.fixture(autouse=True)
def _fresh(server: DiscordWebhookStandIn) -> Iterator[None]:
    server.reset()
    yield
    server.max_file_bytes = 10 * 1024 * 1024


@pytest.fixture
def adapter(settings) -> DiscordWebhookAdapter:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 2.0
    adapter = get_adapter("discord_webhook")
    assert isinstance(adapter, DiscordWebhookAdapter)
    return adapter


@pytest.fixture
def account(adapter, server) -> AccountContext:
    connected = adapter.connect_with_credentials(fields={"webhook_url": server.webhook_url()})
    return AccountContext(external_id=connected.external_id, credentials=connected.credentials)


def message(*media, text: str = "New video", key: str = "d1") -> PublishRequest:
    return PublishRequest(
        profile="discord_webhook.message", text=text, idempotency_key=key, media=list(media)
    )


@pytest.mark.parametrize(
    ("kind", "mime_type"),
    [("mp4", "video/mp4"), ("webm", "video/webm"), ("mov", "video/quicktime")],
)
def test_a_video_is_an_attachment_of_the_message(
    adapter, server, account, kind: str, mime_type: str
) -> None:
    clip = make_video(kind)
    video = media_item(clip, name=f"clip.{kind}", mime_type=mime_type, alt_text="A clip")
    result = adapter.publish(account=account, request=message(video))
    stored = server.messages[result.external_id]
    assert stored["content"] == "New video"
    assert [(a["filename"], a["content_type"], a["size"]) for a in stored["attachments"]] == [
        (f"clip.{kind}", mime_type, len(clip))
    ]
    assert server.uploads[0]["data"] == clip


def test_videos_and_images_share_one_message(adapter, server, account) -> None:
    clip = make_video("mp4")
    request = message(
        media_item(name="a.png"), media_item(clip, name="clip.mp4", mime_type="video/mp4")
    )
    adapter.publish(account=account, request=request)
    assert [u["filename"] for u in server.uploads] == ["a.png", "clip.mp4"]
    assert server.posts[0]["files"] == 2


def test_413_from_discord_is_permanent_with_its_message(adapter, server, account) -> None:
    server.max_file_bytes = 2048  # as if the video were past the server's upload limit
    clip = make_video("mp4") + bytes(4096)
    with pytest.raises(ProviderError) as caught:
        adapter.publish(
            account=account, request=message(media_item(clip, name="c.mp4", mime_type="video/mp4"))
        )
    assert caught.value.kind == ErrorKind.PERMANENT
    assert caught.value.status == 413
    assert "Request entity too large" in caught.value.message
    assert_no_secret(caught.value, [WEBHOOK_TOKEN])
    assert server.posts_accepted == 0


def test_bytes_sent_as_a_video_must_be_one(adapter, server, account) -> None:
    fake = media_item(b"\x00" * 64, name="fake.mp4", mime_type="video/mp4")
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=message(fake))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert server.posts_accepted == 0
