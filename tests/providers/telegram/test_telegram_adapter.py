"""Telegram bot adapter against the stand-in Bot API (real HTTP on 127.0.0.1): text, photos,
videos (sendVideo streamed from storage), albums (sendMediaGroup) and the 413 past the bot
upload limit."""

from __future__ import annotations

import io
import socket
from collections.abc import Iterator

import pytest

from providers import get_adapter
from providers.base import (
    AccountContext,
    ErrorKind,
    MediaItem,
    NotSupported,
    ProviderError,
    PublishRequest,
)
from providers.telegram import TelegramAdapter, telegram_length
from publishing.services.video import probe_video
from tests.providers import assert_no_secret, assert_too_large, media_item
from tests.providers.telegram.standin import (
    BOT,
    BOT_TOKEN,
    CHANNEL,
    GROUP,
    PRIVATE,
    TelegramStandIn,
)
from tests.video_support import make_video

OTHER_TOKEN = "987654321:AAnotTheRightTokenButWellFormed_123456"


@pytest.fixture(scope="module")
def server() -> Iterator[TelegramStandIn]:
    with TelegramStandIn() as standin:
        yield standin


@pytest.fixture(autouse=True)
def _fresh(server: TelegramStandIn) -> None:
    server.reset()


@pytest.fixture
def adapter(settings, server) -> TelegramAdapter:
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 1.0
    settings.HERALD_TELEGRAM_API_URL = server.url
    adapter = get_adapter("telegram")
    assert isinstance(adapter, TelegramAdapter)
    return adapter


@pytest.fixture
def account(adapter) -> AccountContext:
    connected = adapter.connect_with_credentials(
        fields={"bot_token": BOT_TOKEN, "chat_id": str(GROUP["id"])}
    )
    return AccountContext(external_id=connected.external_id, credentials=connected.credentials)


def text(body: str = "Hello from Herald", key: str = "dest-1", **kwargs) -> PublishRequest:
    return PublishRequest(profile="telegram.message", text=body, idempotency_key=key, **kwargs)


def test_connect_validates_token_and_chat(adapter) -> None:
    connected = adapter.connect_with_credentials(
        fields={"bot_token": BOT_TOKEN, "chat_id": str(GROUP["id"])}
    )
    assert connected.external_id == f"{BOT['id']}:{GROUP['id']}"
    assert connected.username == "herald_test_bot"
    assert connected.display_name == "Herald Test Group"
    assert connected.account_kind == "bot"
    assert connected.credentials == {"bot_token": BOT_TOKEN, "chat_id": str(GROUP["id"])}
    by_name = adapter.connect_with_credentials(
        fields={"bot_token": BOT_TOKEN, "chat_id": "@heraldnews"}
    )
    assert by_name.credentials["chat_id"] == str(CHANNEL["id"])


def test_connect_failures(adapter) -> None:
    with pytest.raises(ProviderError) as caught:
        adapter.connect_with_credentials(fields={"bot_token": "not a token", "chat_id": "1"})
    assert caught.value.kind == ErrorKind.PERMANENT
    with pytest.raises(ProviderError) as caught:
        adapter.connect_with_credentials(fields={"bot_token": OTHER_TOKEN, "chat_id": "1"})
    assert caught.value.kind == ErrorKind.AUTH
    assert_no_secret(caught.value, [OTHER_TOKEN])
    with pytest.raises(ProviderError) as caught:
        adapter.connect_with_credentials(fields={"bot_token": BOT_TOKEN, "chat_id": "-100555"})
    assert caught.value.kind == ErrorKind.PERMANENT
    assert_no_secret(caught.value, [BOT_TOKEN])


def test_publish_text(adapter, server, account) -> None:
    result = adapter.publish(account=account, request=text())
    assert result.external_id == f"{GROUP['id']}:101"
    assert result.external_url == "https://t.me/c/1234567890/101"
    assert server.posts_accepted == 1
    channel = adapter.publish(
        account=account, request=text(key="d2", options={"chat_id": str(CHANNEL["id"])})
    )
    assert channel.external_url == "https://t.me/heraldnews/101"


def test_publish_photo_with_caption(adapter, server, account) -> None:
    request = PublishRequest(
        profile="telegram.photo", text="A caption", idempotency_key="p1", media=[media_item()]
    )
    result = adapter.publish(account=account, request=request)
    assert result.external_id.endswith(":101")
    assert server.posts[0]["caption"] == "A caption"
    assert server.posts[0]["photo_bytes"] == request.media[0].size
    with pytest.raises(ProviderError) as caught:
        adapter.publish(
            account=account,
            request=PublishRequest(profile="telegram.photo", text="x", idempotency_key="p2"),
        )
    assert caught.value.kind == ErrorKind.PERMANENT  # exactly one image is required


def test_counting_is_utf16(adapter, server, account) -> None:
    assert telegram_length("😀") == 2
    assert telegram_length("é") == 1
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=text("😀" * 2049))
    assert caught.value.kind == ErrorKind.PERMANENT
    adapter.publish(account=account, request=text("😀" * 2048))
    assert server.posts_accepted == 1


def test_rate_limit_uses_the_body_retry_after(adapter, server, account) -> None:
    server.set_faults(rate_limit={"count": 1, "retry_after": 4, "standard_header": False})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=text())
    assert caught.value.kind == ErrorKind.RATE_LIMITED
    assert caught.value.retry_after == 4
    assert_no_secret(caught.value, [BOT_TOKEN])


def test_server_error_is_transient(adapter, server, account) -> None:
    server.set_faults(server_error={"count": 1, "status": 502})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=text())
    assert caught.value.kind == ErrorKind.TRANSIENT


def test_accept_then_timeout_is_ambiguous_and_cannot_be_reconciled(
    adapter, server, account
) -> None:
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 2.5})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=text())
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    assert server.posts_accepted == 1
    assert_no_secret(caught.value, [BOT_TOKEN])
    with pytest.raises(NotSupported):
        adapter.reconcile(account=account, request=text())


def test_revoked_token_is_auth(adapter, server, account) -> None:
    server.set_faults(reject_tokens=True)
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=text())
    assert caught.value.kind == ErrorKind.AUTH
    assert_no_secret(caught.value, [BOT_TOKEN])


def test_permanent_rejection(adapter, server, account) -> None:
    server.set_faults(
        permanent={"count": 1, "status": 400, "message": "Bad Request: not enough rights"}
    )
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=text())
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "not enough rights" in caught.value.message


def test_unreachable_api_hides_the_token(settings, account) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 1.0
    settings.HERALD_TELEGRAM_API_URL = f"http://127.0.0.1:{port}"
    with pytest.raises(ProviderError) as caught:
        get_adapter("telegram").publish(account=account, request=text())
    assert caught.value.kind == ErrorKind.TRANSIENT
    assert_no_secret(caught.value, [BOT_TOKEN])


def test_destination_options_list_seen_chats(adapter, account) -> None:
    options = adapter.destination_options(account=account)
    assert options["chat_id"][0] == {"label": "Herald Test Group", "value": str(GROUP["id"])}
    values = {o["value"]: o["label"] for o in options["chat_id"]}
    assert values[str(CHANNEL["id"])] == "Herald News"
    assert values[str(PRIVATE["id"])] == "Ada Lovelace"
    assert len(values) == 3


# --- video ------------------------------------------------------------------------------------


class CountingReads(io.BytesIO):
    """A stored file that remembers the largest single read asked of it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.largest_read = 0

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        self.largest_read = max(self.largest_read, len(chunk))
        return chunk


def video_item(data: bytes, name: str = "clip.mp4") -> MediaItem:
    return media_item(data, name=name, mime_type="video/mp4")


def media_request(*media: MediaItem, text: str = "", key: str = "v1") -> PublishRequest:
    return PublishRequest(
        profile="telegram.photo", text=text, idempotency_key=key, media=list(media)
    )


def test_a_video_goes_by_send_video_streamed_from_storage(adapter, server, account) -> None:
    data = make_video("mp4", seconds=1, audio=True) + bytes(2 * 1024 * 1024)
    stored = CountingReads(data)
    item = MediaItem(name="clip.mp4", mime_type="video/mp4", size=len(data), open=lambda: stored)
    result = adapter.publish(account=account, request=media_request(item, text="Launch day"))
    assert result.external_id == f"{GROUP['id']}:101"
    post = server.posts[0]
    assert post["caption"] == "Launch day"
    assert post["video_bytes"] == len(data)
    assert post["supports_streaming"] is True
    upload = server.uploads[0]
    assert (upload["kind"], upload["content_type"], upload["filename"]) == (
        "video",
        "video/mp4",
        "clip.mp4",
    )
    assert upload["data"] == data
    assert 0 < stored.largest_read < len(data) // 8  # sent in chunks, never read whole
    assert stored.closed


def test_photos_and_videos_go_as_one_album(adapter, server, account) -> None:
    clip = make_video("mp4")
    request = media_request(
        media_item(name="a.png"), video_item(clip), media_item(name="b.png"), text="Album"
    )
    result = adapter.publish(account=account, request=request)
    post = server.posts[0]
    assert post["kinds"] == ["photo", "video", "photo"]
    assert post["caption"] == "Album"
    assert result.external_id == f"{GROUP['id']}:{post['message_ids'][0]}"
    assert [u["kind"] for u in server.uploads] == ["photo", "video", "photo"]
    assert server.uploads[1]["data"] == clip
    album = [server.messages[(GROUP["id"], m)] for m in post["message_ids"]]
    assert len({m["media_group_id"] for m in album}) == 1
    assert [("caption" in m) for m in album] == [True, False, False]


def test_an_album_holds_at_most_ten_items(adapter, server, account) -> None:
    clip = make_video("mp4")
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=media_request(*[video_item(clip)] * 11))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert server.posts_accepted == 0


def test_a_video_past_the_upload_limit_is_refused_before_sending(adapter, server, account) -> None:
    big = MediaItem(
        name="big.mp4",
        mime_type="video/mp4",
        size=51 * 1024 * 1024,
        open=lambda: io.BytesIO(b""),
    )
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=media_request(big))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert server.posts_accepted == 0


def test_413_from_telegram_is_permanent_with_its_description(adapter, server, account) -> None:
    server.max_upload_bytes = 4096  # as if the video were past 50 MB
    data = make_video("mp4") + bytes(8192)
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=media_request(video_item(data)))
    assert_too_large(caught.value, "Request Entity Too Large", [BOT_TOKEN])
    assert server.posts_accepted == 0


def test_bytes_that_are_not_a_video_are_refused_by_telegram(adapter, server, account) -> None:
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=media_request(video_item(b"not a video")))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "VIDEO_FILE_INVALID" in caught.value.message


def probed_video(data: bytes, name: str = "clip.mp4") -> MediaItem:
    """A video as the delivery hands it over: with the facts and the poster the media probe
    stored (the real probe run on the real file)."""
    probe = probe_video(io.BytesIO(data), "video/mp4")
    poster = probe.poster_jpeg
    return MediaItem(
        name=name,
        mime_type="video/mp4",
        size=len(data),
        open=lambda: io.BytesIO(data),
        probe=probe.facts,
        poster=lambda: io.BytesIO(poster),
    )


def test_send_video_carries_the_probe_facts_and_the_poster(adapter, server, account) -> None:
    """Width and height as shown (a turned video), the length in whole seconds, streaming,
    and the poster scaled to a thumbnail Telegram takes (a JPEG under 200 kB, 320 px a side)."""
    clip = make_video("mp4", width=640, height=360, seconds=2, rate=10, rotation=90)
    adapter.publish(account=account, request=media_request(probed_video(clip), text="Tall"))
    post = server.posts[0]
    assert (post["width"], post["height"], post["duration"]) == ("360", "640", "2")
    assert post["supports_streaming"] is True
    assert post["thumbnail"] is not None
    assert max(post["thumbnail"]["width"], post["thumbnail"]["height"]) == 320
    assert post["thumbnail"]["bytes"] < 200 * 1000
    assert [u["kind"] for u in server.uploads] == ["video"]  # the thumbnail is not a message


def test_album_videos_carry_the_probe_facts_and_the_poster(adapter, server, account) -> None:
    clip = make_video("mp4", width=320, height=240, seconds=1.5, rate=10)
    request = media_request(media_item(name="a.png"), probed_video(clip), text="Album")
    adapter.publish(account=account, request=request)
    post = server.posts[0]
    video_entry = post["entries"][1]
    assert (video_entry["width"], video_entry["height"], video_entry["duration"]) == (320, 240, 2)
    assert video_entry["supports_streaming"] is True
    assert post["thumbnails"][0] is None
    assert post["thumbnails"][1] == {"width": 320, "height": 240, "bytes": ANY_SIZE}


class _AnySize:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, int) and 0 < other < 200 * 1000


ANY_SIZE = _AnySize()


def test_a_video_without_probe_facts_goes_without_them(adapter, server, account) -> None:
    adapter.publish(account=account, request=media_request(video_item(make_video("mp4"))))
    post = server.posts[0]
    assert (post["width"], post["height"], post["duration"], post["thumbnail"]) == (
        None,
        None,
        None,
        None,
    )
