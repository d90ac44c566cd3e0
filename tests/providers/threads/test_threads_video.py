"""Threads' video containers (providers/threads/video.py) step by step against the stand-in with
real videos written by PyAV, served from a web server as Threads fetches them: a VIDEO container
from ``video_url``, its status IN_PROGRESS -> FINISHED, the ERROR reasons of Threads' media
specifications, EXPIRED, carousels mixing images and videos, the processing time limit, and the
publish of exactly one post."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from providers.base import (
    AccountContext,
    ErrorKind,
    MediaItem,
    Pending,
    ProviderError,
    PublishRequest,
    PublishResult,
)
from providers.threads import ThreadsAdapter, video
from tests.providers import media_item, tiny_png
from tests.providers.threads.standin import USER, MediaHost, ThreadsStandIn
from tests.video_support import make_video

USER_ID = USER["id"]
# The adapter tests' fixtures: the stand-in, the media host, fresh state, the adapter and an
# account.


def hosted_video(host: MediaHost, data: bytes, served_as: str = "video/mp4") -> MediaItem:
    item = media_item(data, name="clip.mp4", mime_type="video/mp4")
    item.url = host.url_for(data, served_as)
    return item


def hosted_image(host: MediaHost) -> MediaItem:
    item = media_item()
    item.url = host.url_for(tiny_png(), "image/png")
    return item


def _token(account: AccountContext) -> str:
    return account.credentials["access_token"]


def clip(**kwargs: Any) -> bytes:
    return make_video("mp4", **({"seconds": 1, "rate": 24, "audio": True} | kwargs))


def test_a_video_container_is_fetched_processed_and_published_once(
    server: ThreadsStandIn, host: MediaHost, adapter: ThreadsAdapter, account: AccountContext
) -> None:
    server.container_polls = 2
    item = hosted_video(host, clip())
    container = adapter._create(_token(account), USER_ID, video.single_fields(item, "A clip"))
    (fetched,) = server.fetched
    assert fetched["url"] == item.url
    assert fetched["content_type"] == "video/mp4"
    started = time.time()
    assert video.read_status(adapter, _token(account), container) == (video.IN_PROGRESS, "")
    assert video.ready(adapter, _token(account), [container], started_at=started) is False
    assert video.ready(adapter, _token(account), [container], started_at=started) is True

    result = adapter.publish_container(account, container)
    (post,) = server.posts
    assert post["media_type"] == "VIDEO"
    assert post["text"] == "A clip"
    assert result.external_url.startswith("https://www.threads.net/@")
    with pytest.raises(ProviderError) as again:
        video.ready(adapter, _token(account), [container], started_at=started)
    assert again.value.kind == ErrorKind.AMBIGUOUS  # PUBLISHED: never a second post
    assert server.posts_accepted == 1


@pytest.mark.parametrize(
    ("data", "served_as", "reason"),
    [
        (clip(rate=10), "video/mp4", "INVALID_FRAME_RATE"),
        (clip(width=200, height=10), "video/mp4", "INVALID_ASPEC_RATIO"),  # 20:1
        (make_video("webm", seconds=1, rate=24), "video/mp4", "FAILED_PROCESSING_VIDEO"),
        (clip(), "text/html", "FAILED_DOWNLOADING_VIDEO"),
        (None, "video/mp4", "FAILED_DOWNLOADING_VIDEO"),
    ],
)
def test_a_video_outside_the_specifications_errors_with_threads_reason(
    host: MediaHost,
    adapter: ThreadsAdapter,
    account: AccountContext,
    data: bytes | None,
    served_as: str,
    reason: str,
) -> None:
    item = hosted_video(host, data or b"", served_as)
    if data is None:
        item.url = item.url.replace("/media/", "/missing/")  # a 404
    container = adapter._create(_token(account), USER_ID, video.single_fields(item, ""))
    status, message = video.read_status(adapter, _token(account), container)
    assert status == "ERROR"
    assert message == reason
    with pytest.raises(ProviderError) as refused:
        video.ready(adapter, _token(account), [container], started_at=time.time())
    assert refused.value.kind == ErrorKind.PERMANENT
    assert message in refused.value.message


def test_an_unpublished_container_expires_after_24_hours(
    server: ThreadsStandIn, host: MediaHost, adapter: ThreadsAdapter, account: AccountContext
) -> None:
    item = hosted_video(host, clip())
    container = adapter._create(_token(account), USER_ID, video.single_fields(item, ""))
    server.age_tokens(25 * 3600)
    assert video.read_status(adapter, _token(account), container)[0] == "EXPIRED"
    with pytest.raises(ProviderError) as expired:
        video.ready(adapter, _token(account), [container], started_at=time.time())
    assert expired.value.kind == ErrorKind.TRANSIENT
    with pytest.raises(ProviderError):
        adapter.publish_container(account, container)
    assert server.posts_accepted == 0


def test_a_carousel_mixes_images_and_videos_once_every_item_finished(
    server: ThreadsStandIn, host: MediaHost, adapter: ThreadsAdapter, account: AccountContext
) -> None:
    token = _token(account)
    items = [hosted_video(host, clip()), hosted_image(host), hosted_video(host, clip(seconds=2))]
    children = video.create_children(adapter, token, USER_ID, items)
    assert len(children) == 3
    with pytest.raises(ProviderError):  # Threads refuses children still in progress
        adapter._create(token, USER_ID, video.carousel_fields(children, "Three"))
    started = time.time()
    while not video.ready(adapter, token, children, started_at=started):
        pass
    carousel = adapter._create(token, USER_ID, video.carousel_fields(children, "Three"))
    while not video.ready(adapter, token, [carousel], started_at=started):
        pass
    adapter.publish_container(account, carousel)
    (post,) = server.posts
    assert post["media_type"] == "CAROUSEL"
    assert post["kinds"] == ["VIDEO", "IMAGE", "VIDEO"]


@pytest.mark.parametrize("count", [1, 21])
def test_a_carousel_needs_2_to_20_items_before_any_call(
    server: ThreadsStandIn,
    host: MediaHost,
    adapter: ThreadsAdapter,
    account: AccountContext,
    count: int,
) -> None:
    items = [hosted_image(host)] * count
    with pytest.raises(ProviderError) as refused:
        video.create_children(adapter, _token(account), USER_ID, items)
    assert refused.value.kind == ErrorKind.PERMANENT
    assert server.counters["containers"] == 0


def test_processing_past_the_limit_is_transient(
    server: ThreadsStandIn, host: MediaHost, adapter: ThreadsAdapter, account: AccountContext
) -> None:
    server.container_polls = 100
    item = hosted_video(host, clip())
    container = adapter._create(_token(account), USER_ID, video.single_fields(item, ""))
    with pytest.raises(ProviderError) as slow:
        video.ready(adapter, _token(account), [container], started_at=time.time() - 6 * 60)
    assert slow.value.kind == ErrorKind.TRANSIENT
    assert "still processing after 5 minutes" in slow.value.message


def test_item_fields_name_the_url_and_carousel_flag(host: MediaHost) -> None:
    item = hosted_video(host, b"x")
    item.alt_text = "a" * 1200
    fields = video.item_fields(item, carousel_item=True)
    assert fields["media_type"] == "VIDEO"
    assert fields["video_url"] == item.url
    assert fields["is_carousel_item"] == "true"
    assert len(fields["alt_text"]) == 1000
    assert video.item_fields(hosted_image(host))["media_type"] == "IMAGE"


# --- The long send: publish -> Pending(processing) -> resume -> the post ------------------------


def video_request(items: list[MediaItem], text: str = "Watch this") -> PublishRequest:
    return PublishRequest(profile="threads.post", text=text, idempotency_key="d-1", media=items)


def resume_until_done(
    adapter: ThreadsAdapter, account: AccountContext, request: PublishRequest, sent: Any
) -> tuple[PublishResult, int]:
    """Resume as the engine does until the post is made; the result and how many resumes."""
    resumes = 0
    while isinstance(sent, Pending):
        assert sent.stage == "processing"
        assert resumes < 10
        sent = adapter.resume(account=account, request=request, state=sent.state)
        resumes += 1
    return sent, resumes


def test_publish_creates_the_video_container_and_resume_publishes_it_once(
    server: ThreadsStandIn, host: MediaHost, adapter: ThreadsAdapter, account: AccountContext
) -> None:
    server.container_polls = 2
    request = video_request([hosted_video(host, clip())])
    pending = adapter.publish(account=account, request=request)
    assert isinstance(pending, Pending)
    assert pending.check_after_seconds == adapter.video_check_seconds
    assert server.counters["containers"] == 1
    result, resumes = resume_until_done(adapter, account, request, pending)
    assert resumes == 3  # IN_PROGRESS twice, then FINISHED and published
    (post,) = server.posts
    assert post["media_type"] == "VIDEO"
    assert post["text"] == "Watch this"
    assert result.external_id == post["id"]
    # An answer lost after the publish: reconcile finds the VIDEO post by its text.
    request.first_attempt_at = datetime.now(UTC)
    found = adapter.reconcile(account=account, request=request)
    assert found is not None
    assert found.external_id == post["id"]


def test_a_mixed_carousel_waits_for_its_items_then_for_its_container(
    server: ThreadsStandIn, host: MediaHost, adapter: ThreadsAdapter, account: AccountContext
) -> None:
    request = video_request([hosted_image(host), hosted_video(host, clip())], "Two")
    pending = adapter.publish(account=account, request=request)
    assert isinstance(pending, Pending)
    assert len(pending.state["children"]) == 2
    result, _ = resume_until_done(adapter, account, request, pending)
    (post,) = server.posts
    assert post["media_type"] == "CAROUSEL"
    assert post["kinds"] == ["IMAGE", "VIDEO"]
    assert post["text"] == "Two"
    assert server.counters["containers"] == 3
    assert result.external_id == post["id"]


def test_resume_of_a_video_threads_refused_fails_with_its_reason(
    server: ThreadsStandIn, host: MediaHost, adapter: ThreadsAdapter, account: AccountContext
) -> None:
    request = video_request([hosted_video(host, clip(rate=10))])
    pending = adapter.publish(account=account, request=request)
    assert isinstance(pending, Pending)
    with pytest.raises(ProviderError) as refused:
        adapter.resume(account=account, request=request, state=pending.state)
    assert refused.value.kind == ErrorKind.PERMANENT
    assert "INVALID_FRAME_RATE" in refused.value.message
    assert server.posts_accepted == 0


def test_a_video_without_a_public_url_is_refused_before_any_call(
    server: ThreadsStandIn, adapter: ThreadsAdapter, account: AccountContext
) -> None:
    item = media_item(clip(), name="clip.mp4", mime_type="video/mp4")
    with pytest.raises(ProviderError) as refused:
        adapter.publish(account=account, request=video_request([item]))
    assert "fetches images and videos by URL" in refused.value.message
    assert server.counters["containers"] == 0
