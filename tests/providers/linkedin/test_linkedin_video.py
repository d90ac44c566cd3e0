"""LinkedIn's Videos API protocol (providers/linkedin/video.py) step by step against the stand-in
with real videos written by PyAV: initializeUpload with the size and owner, one PUT per byte
range read from storage a part at a time, finalizeUpload with the ETags, the status while
LinkedIn processes the video (success, failure, a file that is no video, the time limit), and
the post naming the video."""

from __future__ import annotations

import io
import time
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
from providers.linkedin import LinkedInAdapter, video
from tests.providers import media_item, tiny_png
from tests.providers.linkedin.standin import MEMBER, VIDEO_PART_BYTES, LinkedInStandIn
from tests.video_support import make_video

PERSON = f"urn:li:person:{MEMBER['sub']}"
# The adapter tests' fixtures: the stand-in, fresh state, the adapter and a connected member.


class RecordingFile(io.BytesIO):
    """A stored file that remembers the size of every read (the upload must read by parts)."""

    def __init__(self, data: bytes, reads: list[int]) -> None:
        super().__init__(data)
        self.reads = reads

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        self.reads.append(len(chunk))
        return chunk


def video_item(data: bytes, reads: list[int] | None = None, name: str = "clip.mp4") -> MediaItem:
    log = reads if reads is not None else []
    return MediaItem(
        name=name,
        mime_type="video/mp4",
        size=len(data),
        open=lambda: RecordingFile(data, log),
    )


@pytest.fixture(autouse=True)
def _video_defaults(server: LinkedInStandIn) -> None:
    server.video_part_bytes = VIDEO_PART_BYTES
    server.video_processing_seconds = 0.0
    server.video_fails = False


@pytest.fixture
def clip() -> bytes:
    return make_video("mp4", seconds=3, rate=10)


def _token(account: AccountContext) -> str:
    return account.credentials["access_token"]


def test_each_step_uploads_by_parts_and_posts_the_video(
    server: LinkedInStandIn, adapter: LinkedInAdapter, account: AccountContext, clip: bytes
) -> None:
    server.video_part_bytes = 1000
    server.video_processing_seconds = 0.3
    reads: list[int] = []
    token = _token(account)

    upload = video.initialize(adapter, token, PERSON, len(clip))
    assert upload.video.startswith("urn:li:video:")
    assert len(upload.parts) == -(-len(clip) // 1000) > 1
    assert upload.parts[-1].last_byte == len(clip) - 1

    etags = video.upload_parts(adapter, token, video_item(clip, reads), upload)
    assert len(etags) == len(upload.parts)
    assert len(set(etags)) == len(etags)
    assert max(reads) <= 1000  # never the whole file at once
    assert server.counters["video_part_bytes_max"] == 1000

    assert video.status(adapter, token, upload.video) == video.WAITING_UPLOAD
    video.finalize(adapter, token, upload, etags)
    started = time.time()
    assert video.status(adapter, token, upload.video) == video.PROCESSING
    assert video.ready(adapter, token, upload.video, started_at=started) is False
    time.sleep(0.35)
    assert video.ready(adapter, token, upload.video, started_at=started) is True

    result = adapter.publish_video_post(account, text="A clip", video=upload.video, title="clip")
    (accepted,) = server.posts
    assert accepted["videos"] == [upload.video]
    assert accepted["titles"] == ["clip"]
    assert accepted["sizes"] == [len(clip)]
    assert accepted["text"] == "A clip"
    assert result.external_id.startswith("urn:li:share:")


def test_finalize_without_every_part_is_refused(
    server: LinkedInStandIn, adapter: LinkedInAdapter, account: AccountContext, clip: bytes
) -> None:
    server.video_part_bytes = 1000
    token = _token(account)
    upload = video.initialize(adapter, token, PERSON, len(clip))
    etags = video.upload_parts(adapter, token, video_item(clip), upload)
    with pytest.raises(ProviderError) as missing:
        video.finalize(adapter, token, upload, etags[:-1])
    assert missing.value.kind == ErrorKind.PERMANENT
    assert missing.value.status == 400
    with pytest.raises(ProviderError):
        video.finalize(adapter, token, upload, list(reversed(etags)))
    video.finalize(adapter, token, upload, etags)  # all of them, in order
    assert video.status(adapter, token, upload.video) in (video.PROCESSING, video.AVAILABLE)


def test_a_post_before_processing_ends_is_refused(
    server: LinkedInStandIn, adapter: LinkedInAdapter, account: AccountContext, clip: bytes
) -> None:
    server.video_processing_seconds = 30
    urn = video.send(adapter, _token(account), PERSON, video_item(clip))
    with pytest.raises(ProviderError) as early:
        adapter.publish_video_post(account, text="Too soon", video=urn, title="clip")
    assert early.value.kind == ErrorKind.PERMANENT
    assert server.posts_accepted == 0


@pytest.mark.parametrize("failing", ["processing", "not a video"])
def test_processing_failure_is_permanent(
    server: LinkedInStandIn,
    adapter: LinkedInAdapter,
    account: AccountContext,
    clip: bytes,
    failing: str,
) -> None:
    data = clip
    if failing == "processing":
        server.video_fails = True
    else:
        data = tiny_png() * 50
    urn = video.send(adapter, _token(account), PERSON, video_item(data))
    assert video.status(adapter, _token(account), urn) == video.FAILED
    with pytest.raises(ProviderError) as failed:
        video.ready(adapter, _token(account), urn, started_at=time.time())
    assert failed.value.kind == ErrorKind.PERMANENT
    assert "could not be processed" in failed.value.message


def test_processing_past_the_limit_is_transient(
    server: LinkedInStandIn, adapter: LinkedInAdapter, account: AccountContext, clip: bytes
) -> None:
    server.video_processing_seconds = 60
    urn = video.send(adapter, _token(account), PERSON, video_item(clip))
    assert video.ready(adapter, _token(account), urn, started_at=time.time()) is False
    with pytest.raises(ProviderError) as slow:
        video.ready(adapter, _token(account), urn, started_at=time.time() - 31 * 60)
    assert slow.value.kind == ErrorKind.TRANSIENT
    assert "still processing after 30 minutes" in slow.value.message


def test_an_owner_the_member_may_not_act_as_is_refused_at_initialize(
    adapter: LinkedInAdapter, account: AccountContext, clip: bytes
) -> None:
    with pytest.raises(ProviderError) as refused:
        video.initialize(adapter, _token(account), "urn:li:organization:1", len(clip))
    assert refused.value.kind == ErrorKind.PERMANENT
    assert refused.value.status == 403


def test_a_stored_file_shorter_than_its_size_is_refused(
    adapter: LinkedInAdapter, account: AccountContext, clip: bytes
) -> None:
    upload = video.initialize(adapter, _token(account), PERSON, len(clip) + 10)
    with pytest.raises(ProviderError) as short:
        video.upload_parts(adapter, _token(account), video_item(clip), upload)
    assert "shorter than its size" in short.value.message


def test_media_content_names_the_video_and_its_title() -> None:
    assert video.media_content("urn:li:video:X", "") == {"media": {"id": "urn:li:video:X"}}
    long_title: Any = "t" * 500
    assert len(video.media_content("urn:li:video:X", long_title)["media"]["title"]) == 400


# --- The long send: publish -> Pending(processing) -> resume -> the post ------------------------


def video_request(item: MediaItem, text: str = "Watch this") -> PublishRequest:
    return PublishRequest(profile="linkedin.post", text=text, idempotency_key="d-1", media=[item])


def test_publish_uploads_then_answers_pending_and_resume_posts_once_available(
    server: LinkedInStandIn, adapter: LinkedInAdapter, account: AccountContext, clip: bytes
) -> None:
    server.video_processing_seconds = 0.3
    request = video_request(video_item(clip, name="launch-day.mp4"))
    pending = adapter.publish(account=account, request=request)
    assert isinstance(pending, Pending)
    assert pending.stage == "processing"
    assert pending.check_after_seconds == adapter.video_check_seconds
    assert pending.state["video"].startswith("urn:li:video:")
    assert server.counters["videos_finalized"] == 1
    assert server.posts_accepted == 0

    again = adapter.resume(account=account, request=request, state=pending.state)
    assert isinstance(again, Pending)  # still PROCESSING: checked later, a little later each time
    assert again.check_after_seconds == adapter.video_check_seconds * 1.5
    time.sleep(0.35)
    result = adapter.resume(account=account, request=request, state=again.state)
    assert isinstance(result, PublishResult)
    (post,) = server.posts
    assert post["videos"] == [pending.state["video"]]
    assert post["titles"] == ["launch-day"]
    assert post["text"] == "Watch this"
    assert server.counters["video_uploads"] == 1  # uploaded once
    found = adapter.reconcile(account=account, request=request, external_id=result.external_id)
    assert found is not None
    assert found.external_id == result.external_id


def test_resume_of_a_video_linkedin_could_not_process_fails_permanently(
    server: LinkedInStandIn, adapter: LinkedInAdapter, account: AccountContext, clip: bytes
) -> None:
    server.video_fails = True
    request = video_request(video_item(clip))
    pending = adapter.publish(account=account, request=request)
    assert isinstance(pending, Pending)
    with pytest.raises(ProviderError) as failed:
        adapter.resume(account=account, request=request, state=pending.state)
    assert failed.value.kind == ErrorKind.PERMANENT
    assert server.posts_accepted == 0


def test_a_video_with_images_is_refused_before_any_upload(
    server: LinkedInStandIn, adapter: LinkedInAdapter, account: AccountContext, clip: bytes
) -> None:
    request = video_request(video_item(clip))
    request.media.append(media_item())
    with pytest.raises(ProviderError) as refused:
        adapter.publish(account=account, request=request)
    assert refused.value.kind == ErrorKind.PERMANENT
    assert "posted alone" in refused.value.message
    assert server.counters["video_uploads"] == 0


def test_a_video_over_the_video_rule_size_is_refused_and_images_keep_their_bound(
    server: LinkedInStandIn, adapter: LinkedInAdapter, account: AccountContext
) -> None:
    big = MediaItem(name="big.mp4", mime_type="video/mp4", size=600 * 1024 * 1024, open=io.BytesIO)
    with pytest.raises(ProviderError) as too_big:
        adapter.publish(account=account, request=video_request(big))
    assert str(500 * 1024 * 1024) in too_big.value.message
    nine_mb = MediaItem(name="p.png", mime_type="image/png", size=9 * 1024 * 1024, open=io.BytesIO)
    with pytest.raises(ProviderError) as image:
        adapter.publish(account=account, request=video_request(nine_mb))
    assert str(8 * 1024 * 1024) in image.value.message
    assert server.counters["video_uploads"] == 0
