"""X's chunked media upload of a video (providers/x/video.py) step by step against the stand-in
with real videos written by PyAV: initialize with the size, type and ``tweet_video``, several
APPEND segments read from storage one at a time, FINALIZE checked against the total, STATUS
while X processes the video (succeeded, failed with X's error, the time limit), and the post
naming the media id."""

from __future__ import annotations

import time
from typing import Any

import pytest

from providers.base import (
    AccountContext,
    ErrorKind,
    Pending,
    ProviderError,
    PublishRequest,
    PublishResult,
)
from providers.x import XAdapter, video
from tests.providers import media_item, tiny_png, video_media
from tests.providers.x.standin import SEGMENTS_DO_NOT_ADD_UP, XStandIn
from tests.video_support import make_video


@pytest.fixture
def clip() -> bytes:
    return make_video("mp4", seconds=3, rate=10, audio=True)


def _token(account: AccountContext) -> str:
    return account.credentials["access_token"]


def test_each_step_uploads_by_segments_and_posts_the_video(
    server: XStandIn, adapter: XAdapter, account: AccountContext, clip: bytes
) -> None:
    server.video_processing_seconds = 0.4
    reads: list[int] = []
    token = _token(account)
    item = video_media(clip, reads)

    media_id = video.initialize(adapter, token, item)
    assert server.uploads[media_id]["category"] == "tweet_video"
    assert server.uploads[media_id]["total"] == len(clip)
    segments = video.append_segments(adapter, token, media_id, item, segment_bytes=1000)
    assert segments == -(-len(clip) // 1000) > 2
    assert max(reads) <= 1000  # never the whole file at once
    assert server.counters["media_segment_bytes_max"] == 1000

    processing = video.finalize(adapter, token, media_id)
    assert processing.state == "pending"
    started = time.time()
    waiting = video.ready(adapter, token, media_id, started_at=started)
    assert (waiting.state, waiting.done) == ("in_progress", False)
    assert 1 <= waiting.check_after_secs <= 1
    with pytest.raises(ProviderError) as early:
        adapter.create_post(account, token, "Too soon", [media_id])
    assert early.value.kind == ErrorKind.PERMANENT
    time.sleep(0.45)
    assert video.ready(adapter, token, media_id, started_at=started).done

    adapter.describe_media(token, media_id, "A grey ramp")
    result = adapter.create_post(account, token, "A clip", [media_id])
    (accepted,) = server.posts
    assert accepted["sizes"] == [len(clip)]
    assert accepted["alt_texts"] == ["A grey ramp"]
    assert accepted["text"] == "A clip"
    assert result.external_id == accepted["id"]


def test_send_uses_the_adapters_segment_size(
    server: XStandIn, adapter: XAdapter, account: AccountContext, clip: bytes, monkeypatch
) -> None:
    monkeypatch.setattr(adapter, "video_segment_bytes", 2048)
    reads: list[int] = []
    media_id, processing = video.send(adapter, _token(account), video_media(clip, reads))
    assert processing.state == "pending"
    assert server.counters["media_segments"] == -(-len(clip) // 2048)
    assert max(reads) <= 2048
    assert video.ready(adapter, _token(account), media_id, started_at=time.time()).done


def test_finalize_with_missing_bytes_fails_as_x_does(
    server: XStandIn, adapter: XAdapter, account: AccountContext, clip: bytes
) -> None:
    token = _token(account)
    media_id = video.initialize(adapter, token, video_media(clip))
    short = video_media(clip[:-100])  # its segments stop 100 bytes before total_bytes
    video.append_segments(adapter, token, media_id, short, segment_bytes=1000)
    with pytest.raises(ProviderError) as missing:
        video.finalize(adapter, token, media_id)
    assert missing.value.kind == ErrorKind.PERMANENT
    assert missing.value.status == 400
    assert SEGMENTS_DO_NOT_ADD_UP in missing.value.message


def test_a_stored_file_shorter_than_its_size_is_refused(
    adapter: XAdapter, account: AccountContext, clip: bytes
) -> None:
    item = video_media(clip)
    item.size += 10
    media_id = video.initialize(adapter, _token(account), item)
    with pytest.raises(ProviderError) as short:
        video.append_segments(adapter, _token(account), media_id, item, segment_bytes=1000)
    assert "shorter than its size" in short.value.message


@pytest.mark.parametrize("failing", ["processing", "not a video"])
def test_processing_failure_is_permanent_with_xs_reason(
    server: XStandIn, adapter: XAdapter, account: AccountContext, clip: bytes, failing: str
) -> None:
    data = clip
    if failing == "processing":
        server.video_fails = True
    else:
        data = tiny_png() * 50
    media_id, _ = video.send(adapter, _token(account), video_media(data))
    with pytest.raises(ProviderError) as failed:
        video.ready(adapter, _token(account), media_id, started_at=time.time())
    assert failed.value.kind == ErrorKind.PERMANENT
    assert failed.value.message == "X: the video could not be processed: Unsupported video format"
    assert server.posts_accepted == 0


def test_processing_past_the_limit_is_transient(
    server: XStandIn, adapter: XAdapter, account: AccountContext, clip: bytes
) -> None:
    server.video_processing_seconds = 60
    media_id, _ = video.send(adapter, _token(account), video_media(clip))
    assert not video.ready(adapter, _token(account), media_id, started_at=time.time()).done
    with pytest.raises(ProviderError) as slow:
        video.ready(adapter, _token(account), media_id, started_at=time.time() - 16 * 60)
    assert slow.value.kind == ErrorKind.TRANSIENT
    assert "still processing after 15 minutes" in slow.value.message


def test_processing_info_is_read_as_documented() -> None:
    assert video.processing_of(None).done  # no processing_info: nothing left to do
    pending = video.processing_of({"state": "pending", "check_after_secs": 5})
    assert (pending.state, pending.check_after_secs, pending.done) == ("pending", 5.0, False)
    failed = video.processing_of(
        {"state": "failed", "error": {"code": 1, "name": "InvalidMedia", "message": "Bad"}}
    )
    assert failed.error == "Bad"
    with pytest.raises(ProviderError) as odd:
        video.is_done(video.processing_of({"state": "exploded"}))
    assert odd.value.kind == ErrorKind.TRANSIENT


# --- The long send: publish -> Pending(processing) -> resume -> published -------------------


def _video_post(data: bytes, **kwargs: Any) -> PublishRequest:
    media = [video_media(data, alt_text="A grey ramp"), *kwargs.pop("more", [])]
    return PublishRequest(profile="x.post", text="A clip", idempotency_key="v-1", media=media)


def test_publish_answers_pending_and_resume_posts_once(
    server: XStandIn, adapter: XAdapter, account: AccountContext, clip: bytes
) -> None:
    server.video_processing_seconds = 0.4
    request = _video_post(clip)
    pending = adapter.publish(account=account, request=request)
    assert isinstance(pending, Pending)
    assert pending.stage == "processing"
    assert set(pending.state) == {"media_id", "since", "checks"}
    assert pending.check_after_seconds == 1.0  # X's check_after_secs, at least a second
    assert server.posts_accepted == 0
    again = adapter.resume(account=account, request=request, state=pending.state)
    assert isinstance(again, Pending)
    assert again.state["checks"] == 2
    time.sleep(0.45)
    result = adapter.resume(account=account, request=request, state=again.state)
    assert isinstance(result, PublishResult)
    (accepted,) = server.posts
    assert (accepted["id"], accepted["sizes"]) == (result.external_id, [len(clip)])
    assert accepted["alt_texts"] == ["A grey ramp"]
    assert server.counters["media_uploads"] == 1


def test_a_failed_video_fails_the_resume_for_good(
    server: XStandIn, adapter: XAdapter, account: AccountContext, clip: bytes
) -> None:
    server.video_fails = True
    request = _video_post(clip)
    pending = adapter.publish(account=account, request=request)
    assert isinstance(pending, Pending)
    with pytest.raises(ProviderError) as failed:
        adapter.resume(account=account, request=request, state=pending.state)
    assert failed.value.kind == ErrorKind.PERMANENT
    assert server.posts_accepted == 0


def test_a_video_is_posted_alone(adapter: XAdapter, account: AccountContext, clip: bytes) -> None:
    request = _video_post(clip, more=[media_item()])
    with pytest.raises(ProviderError) as mixed:
        adapter.publish(account=account, request=request)
    assert mixed.value.message == "X: a GIF or a video must be the only media item of a post."
