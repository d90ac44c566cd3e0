"""Bluesky's video service (providers/bluesky/video.py) step by step against the stand-in with
real videos written by PyAV: a service token bound to the PDS and ``uploadBlob``, the file
streamed to ``app.bsky.video.uploadVideo``, ``getJobStatus`` while the service processes it
(completed with the blob, failed with its reason, ``already_exists``, the time limit), the daily
upload limits, and the post's ``app.bsky.embed.video`` with alt text and aspect ratio."""

from __future__ import annotations

import io
import time

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
from providers.bluesky import BlueskyAdapter, video
from publishing.services.video import probe_video
from tests.providers import media_item, video_media
from tests.providers.bluesky.standin import BlueskyStandIn
from tests.video_support import make_video


@pytest.fixture
def clip() -> bytes:
    return make_video("mp4", width=64, height=36, seconds=2, rate=10)


def test_each_step_streams_the_video_and_posts_it(
    server: BlueskyStandIn, adapter: BlueskyAdapter, account: AccountContext, clip: bytes
) -> None:
    server.video_processing_seconds = 0.4
    reads: list[int] = []
    facts = probe_video(io.BytesIO(clip), "video/mp4", poster=False).facts
    clip += bytes(100_000)  # larger than one read of the HTTP client (players skip the tail)
    item = video_media(clip, reads, alt_text="A grey ramp", probe=facts)

    limits = video.upload_limits(adapter, account)
    assert (limits.can_upload, limits.remaining_videos) == (True, 25)
    video.check_limits(limits, item)
    job = video.upload(adapter, account, item)
    assert job.job_id
    assert job.state == "JOB_STATE_CREATED"
    assert server.counters["video_upload_bytes"] == len(clip)
    assert max(reads) <= 64 * 1024 < len(clip)  # streamed from storage, never read whole

    started = time.time()
    assert video.ready(adapter, job.job_id, started_at=started) is None
    encoding = video.job_status(adapter, job.job_id)
    assert encoding.state == "JOB_STATE_ENCODING"
    assert 0 <= encoding.progress < 100
    time.sleep(0.45)
    blob = video.ready(adapter, job.job_id, started_at=started)
    assert blob is not None
    assert blob["mimeType"] == "video/mp4"

    size = item.display_size()
    assert size == (64, 36)
    embed = video.embed(blob, item.alt_text, size)
    request = PublishRequest(profile="bluesky.post", text="A clip", idempotency_key="vid-1")
    result = adapter.create_post(account, request, embed)
    (accepted,) = server.posts
    assert accepted["video"] == {
        "cid": blob["ref"]["$link"],
        "alt": "A grey ramp",
        "aspectRatio": {"width": 64, "height": 36},
    }
    assert result.external_id == accepted["uri"]


def test_a_turned_video_has_the_shown_aspect_ratio() -> None:
    turned = make_video("mp4", width=64, height=36, rotation=90)
    facts = probe_video(io.BytesIO(turned), "video/mp4", poster=False).facts
    assert video_media(turned, probe=facts).display_size() == (36, 64)
    assert video_media(turned).display_size() is None  # not probed: no aspect ratio
    assert "aspectRatio" not in video.embed({"ref": {"$link": "x"}}, "", None)


def test_the_aspect_ratio_comes_from_the_stored_probe_not_the_file(
    server: BlueskyStandIn, adapter: BlueskyAdapter, account: AccountContext, clip: bytes
) -> None:
    """The worker does not open the video again to learn its size: the facts the probe
    stored travel with the media (here they differ from the file's own 64 x 36)."""
    server.video_processing_seconds = 0
    item = video_media(clip, probe={"width": 1080, "height": 1920, "rotation": 0})
    job = video.upload(adapter, account, item)
    blob = video.ready(adapter, job.job_id, started_at=time.time())
    assert blob is not None
    request = PublishRequest(
        profile="bluesky.post", text="Tall", idempotency_key="vid-probe", media=[item]
    )
    adapter._post_video(account, request, blob)
    (accepted,) = server.posts
    assert accepted["video"]["aspectRatio"] == {"width": 1080, "height": 1920}


def test_the_upload_token_is_bound_to_the_pds_and_upload_blob(
    server: BlueskyStandIn, adapter: BlueskyAdapter, account: AccountContext, clip: bytes
) -> None:
    assert video.pds_audience("http://127.0.0.1:8402") == "did:web:127.0.0.1%3A8402"
    assert video.pds_audience(server.url) == server.did_web
    wrong = video.service_token(adapter, account, aud=server.did_web, lxm=video.LIMITS_SCOPE)
    with pytest.raises(ProviderError) as refused:
        adapter._request(
            "POST",
            adapter.video_url,
            "app.bsky.video.uploadVideo",
            operation="video upload",
            token=wrong,
            params={"did": account.external_id, "name": "clip.mp4"},
            headers={"Content-Type": "video/mp4"},
            data=clip,
        )
    assert refused.value.status == 401
    assert server.counters["videos_uploaded"] == 0


@pytest.mark.parametrize("failing", ["processing", "not a video"])
def test_a_failed_job_is_permanent_with_its_reason(
    server: BlueskyStandIn,
    adapter: BlueskyAdapter,
    account: AccountContext,
    clip: bytes,
    failing: str,
) -> None:
    data = clip
    if failing == "processing":
        server.video_fails = True
    else:
        data = b"\x00\x00\x00\x20notavideo" * 100
    job = video.upload(adapter, account, video_media(data))
    with pytest.raises(ProviderError) as failed:
        video.ready(adapter, job.job_id, started_at=time.time())
    assert failed.value.kind == ErrorKind.PERMANENT
    assert failed.value.message == "Bluesky: the video could not be processed: Video is not valid"


def test_a_video_processed_before_answers_its_blob(
    adapter: BlueskyAdapter, account: AccountContext, clip: bytes
) -> None:
    first = video.upload(adapter, account, video_media(clip))
    blob = video.ready(adapter, first.job_id, started_at=time.time())
    again = video.upload(adapter, account, video_media(clip))
    status = video.job_status(adapter, again.job_id)
    assert (status.state, status.error) == ("JOB_STATE_FAILED", "already_exists")
    assert video.finished_blob(status) == blob


def test_processing_past_the_limit_is_transient(
    server: BlueskyStandIn, adapter: BlueskyAdapter, account: AccountContext, clip: bytes
) -> None:
    server.video_processing_seconds = 60
    job = video.upload(adapter, account, video_media(clip))
    assert video.ready(adapter, job.job_id, started_at=time.time()) is None
    with pytest.raises(ProviderError) as slow:
        video.ready(adapter, job.job_id, started_at=time.time() - 16 * 60)
    assert slow.value.kind == ErrorKind.TRANSIENT
    assert "still processing after 15 minutes" in slow.value.message


def test_upload_limits_refuse_what_the_service_would(
    server: BlueskyStandIn, adapter: BlueskyAdapter, account: AccountContext, clip: bytes
) -> None:
    item = video_media(clip)
    server.video_daily_bytes = len(clip) - 1
    with pytest.raises(ProviderError) as too_big:
        video.check_limits(video.upload_limits(adapter, account), item)
    assert too_big.value.kind == ErrorKind.PERMANENT
    server.video_daily_bytes = 10**9
    server.video_daily_videos = 0
    with pytest.raises(ProviderError) as spent:
        video.check_limits(video.upload_limits(adapter, account), item)
    assert "Publish it again tomorrow" in spent.value.message
    server.video_daily_videos = 3
    server.video_can_upload = False
    with pytest.raises(ProviderError) as unverified:
        video.check_limits(video.upload_limits(adapter, account), item)
    assert "verify your email" in unverified.value.message
    assert server.counters["videos_uploaded"] == 0


def test_job_status_is_read_bare_or_wrapped() -> None:
    bare = video.job_of({"jobId": "j1", "did": "did:plc:x", "state": "JOB_STATE_CREATED"})
    wrapped = video.job_of({"jobStatus": {"jobId": "j1", "state": "JOB_STATE_CREATED"}})
    assert bare.job_id == wrapped.job_id == "j1"
    assert video.finished_blob(bare) is None
    with pytest.raises(ProviderError) as odd:
        video.finished_blob(video.job_of({"jobId": "j", "state": video.COMPLETED}))
    assert odd.value.kind == ErrorKind.TRANSIENT


# --- The long send: publish -> Pending(processing) -> resume -> published -------------------


def _video_post(data: bytes, *more: MediaItem) -> PublishRequest:
    facts = {"width": 64, "height": 36, "rotation": 0}  # what the probe stored
    media = [video_media(data, alt_text="A grey ramp", probe=facts), *more]
    return PublishRequest(profile="bluesky.post", text="A clip", idempotency_key="v-1", media=media)


def test_publish_answers_pending_and_resume_posts_once(
    server: BlueskyStandIn, adapter: BlueskyAdapter, account: AccountContext, clip: bytes
) -> None:
    server.video_processing_seconds = 0.4
    request = _video_post(clip)
    pending = adapter.publish(account=account, request=request)
    assert isinstance(pending, Pending)
    assert pending.stage == "processing"
    assert set(pending.state) == {"job_id", "since", "checks"}
    assert pending.check_after_seconds == 2.0
    again = adapter.resume(account=account, request=request, state=pending.state)
    assert isinstance(again, Pending)
    assert again.check_after_seconds == 3.0
    time.sleep(0.45)
    result = adapter.resume(account=account, request=request, state=again.state)
    assert isinstance(result, PublishResult)
    (accepted,) = server.posts
    assert accepted["uri"] == result.external_id
    assert accepted["video"]["alt"] == "A grey ramp"
    assert accepted["video"]["aspectRatio"] == {"width": 64, "height": 36}
    assert server.counters["videos_uploaded"] == 1
    assert adapter.reconcile(account=account, request=request) == result


def test_a_video_seen_before_is_posted_at_once(
    server: BlueskyStandIn, adapter: BlueskyAdapter, account: AccountContext, clip: bytes
) -> None:
    first = video.upload(adapter, account, video_media(clip))
    video.ready(adapter, first.job_id, started_at=time.time())
    request = _video_post(clip)
    pending = adapter.publish(account=account, request=request)
    assert isinstance(pending, Pending)  # uploadVideo answers the job; its status the blob
    result = adapter.resume(account=account, request=request, state=pending.state)
    assert isinstance(result, PublishResult)
    assert server.posts_accepted == 1


def test_limits_and_failures_refuse_the_send(
    server: BlueskyStandIn, adapter: BlueskyAdapter, account: AccountContext, clip: bytes
) -> None:
    server.video_can_upload = False
    with pytest.raises(ProviderError) as unverified:
        adapter.publish(account=account, request=_video_post(clip))
    assert unverified.value.kind == ErrorKind.PERMANENT
    assert server.counters["videos_uploaded"] == 0
    server.video_can_upload = True
    server.video_fails = True
    request = _video_post(clip)
    pending = adapter.publish(account=account, request=request)
    assert isinstance(pending, Pending)
    with pytest.raises(ProviderError) as failed:
        adapter.resume(account=account, request=request, state=pending.state)
    assert failed.value.kind == ErrorKind.PERMANENT
    with pytest.raises(ProviderError) as mixed:
        adapter.publish(account=account, request=_video_post(clip, media_item()))
    assert mixed.value.message == "Bluesky: a video is posted alone, without images."
    assert server.posts_accepted == 0
