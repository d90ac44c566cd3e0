"""Telegram video: sendVideo, albums of photos and videos (sendMediaGroup), the upload streamed
from storage, and the stand-in's 413 past the bot upload limit (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from providers import get_adapter
from providers.base import AccountContext, ErrorKind, MediaItem, ProviderError, PublishRequest
from providers.telegram import TelegramAdapter
from tests.providers import assert_no_secret, media_item
from tests.providers.telegram.standin import BOT_TOKEN, GROUP, TelegramStandIn
from tests.video_support import make_video


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


@pytest.fixture(scope="module")
def server() -> Iterator[TelegramStandIn]:
    with TelegramStandIn() as standin:
        yield standin


@pytest.fixture(autouse=True)
def _fresh(server: TelegramStandIn) -> Iterator[None]:
    server.reset()
    yield
    server.max_upload_bytes = 50 * 1024 * 1024


@pytest.fixture
def adapter(settings, server) -> TelegramAdapter:
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 2.0
    settings.HERALD_TELEGRAM_API_URL = server.url
    adapter = get_adapter("telegram")
    assert isinstance(adapter, TelegramAdapter)
    return adapter


@pytest.fixture
def account() -> AccountContext:
    return AccountContext(
        external_id=f"1:{GROUP['id']}",
        credentials={"bot_token": BOT_TOKEN, "chat_id": str(GROUP["id"])},
    )


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
    assert caught.value.kind == ErrorKind.PERMANENT
    assert caught.value.status == 413
    assert "Request Entity Too Large" in caught.value.message
    assert_no_secret(caught.value, [BOT_TOKEN])
    assert server.posts_accepted == 0


def test_bytes_that_are_not_a_video_are_refused_by_telegram(adapter, server, account) -> None:
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=media_request(video_item(b"not a video")))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "VIDEO_FILE_INVALID" in caught.value.message
