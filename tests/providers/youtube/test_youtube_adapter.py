"""The YouTube adapter against its stand-in: connect with PKCE and offline access, refresh
without a new refresh token, revoke, the resumable upload (in chunks, resumed after an
interrupted chunk, a lost answer and an expired session, never two videos), thumbnails,
reconcile through the session and the uploads playlist, delete, metrics, options, errors and
the day's quota."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
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
from providers.http_errors import CannotReconcile
from providers.quota import QUOTA_LEDGER, quota_day
from providers.youtube import YouTubeAdapter
from providers.youtube.adapter import COSTS, QUOTA_EXHAUSTED, UPLOAD_LIMIT
from tests.providers import media_item, tiny_png
from tests.providers.youtube.conftest import CHUNK, grant
from tests.providers.youtube.standin import CHANNEL, YouTubeStandIn
from tests.video_support import make_video

OPTIONS = {"title": "Launch day", "made_for_kids": "false", "privacy": "unlisted"}


def video_item(data: bytes | None = None, *, poster: bytes | None = None) -> MediaItem:
    payload = data if data is not None else make_video(width=320, height=240, seconds=2)
    return MediaItem(
        name="clip.mp4",
        mime_type="video/mp4",
        size=len(payload),
        open=lambda: io.BytesIO(payload),
        poster=(lambda: io.BytesIO(poster)) if poster is not None else None,
    )


def request(
    *media: MediaItem, text: str = "All about it.", profile: str = "youtube.video", **options: str
) -> PublishRequest:
    return PublishRequest(
        profile=profile,
        text=text,
        idempotency_key="key-1",
        media=list(media) or [video_item()],
        options={**OPTIONS, **options},
        first_attempt_at=datetime.now(UTC),
    )


def drive(
    adapter: YouTubeAdapter, account: AccountContext, req: PublishRequest, turns: int = 40
) -> tuple[PublishResult, list[Pending]]:
    """Publish, then resume as the delivery engine would until the video is done."""
    answer = adapter.publish(account=account, request=req)
    seen: list[Pending] = []
    for _ in range(turns):
        if isinstance(answer, PublishResult):
            return answer, seen
        seen.append(answer)
        answer = adapter.resume(account=account, request=req, state=dict(answer.state))
    raise AssertionError(f"still pending after {turns} turns: {seen[-3:]}")


# --- connect, refresh, revoke -----------------------------------------------------------------


def test_connect_asks_offline_access_with_pkce_and_reads_the_channel(
    adapter: YouTubeAdapter, server: YouTubeStandIn
) -> None:
    start = adapter.begin_authorization(redirect_uri="https://h.example/cb", state="s1")
    assert "access_type=offline" in start.authorization_url
    assert "prompt=consent" in start.authorization_url
    assert "code_challenge_method=S256" in start.authorization_url
    assert start.code_verifier
    assert start.code_verifier not in start.authorization_url
    account = grant(adapter)
    assert account.external_id == CHANNEL["id"]
    assert account.username == CHANNEL["handle"]
    assert account.credentials["refresh_token"].startswith("1//")


def test_a_wrong_code_verifier_is_refused_as_a_reconnect(adapter: YouTubeAdapter) -> None:
    import requests as http

    from tests.providers.youtube.conftest import REDIRECT

    start = adapter.begin_authorization(redirect_uri=REDIRECT, state="s")
    location = http.get(start.authorization_url, allow_redirects=False, timeout=5)
    code = location.headers["Location"].split("code=")[1].split("&")[0]
    with pytest.raises(ProviderError) as caught:
        adapter.complete_authorization(
            code=code.replace("%2F", "/"), redirect_uri=REDIRECT, code_verifier="wrong" * 10
        )
    assert caught.value.kind == ErrorKind.AUTH
    assert CHANNEL["id"] not in caught.value.message


def test_refresh_keeps_the_refresh_token_google_does_not_send_again(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    old_refresh = account.credentials["refresh_token"]
    server.expire_access_tokens()
    with pytest.raises(ProviderError) as caught:
        adapter.metrics(account=account, external_id="nothing")
    assert caught.value.kind == ErrorKind.AUTH
    refreshed = adapter.refresh(account=account)
    assert refreshed.credentials["refresh_token"] == old_refresh
    assert refreshed.credentials["access_token"] != account.credentials["access_token"]
    assert refreshed.expires_at is not None
    assert adapter.can_refresh(credentials=refreshed.credentials)
    account.credentials = refreshed.credentials
    assert adapter.destination_options(account=account)["category"]
    assert server.counters["refreshes"] == 1


def test_revoke_ends_the_grant_and_is_safe_to_repeat(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    adapter.revoke(account=account)
    assert server.counters["tokens_revoked"] == 1
    with pytest.raises(ProviderError) as caught:
        adapter.refresh(account=account)
    assert caught.value.kind == ErrorKind.AUTH
    with pytest.raises(ProviderError) as caught:
        adapter.destination_options(account=account)
    assert caught.value.kind == ErrorKind.AUTH
    adapter.revoke(account=account)  # already revoked: nothing to do


# --- the upload -----------------------------------------------------------------------------


def test_a_video_is_uploaded_in_chunks_as_a_long_send(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    data = make_video(width=320, height=240, seconds=2)
    req = request(video_item(data), tags="launch, herald tips", category="27")
    first = adapter.publish(account=account, request=req)
    assert isinstance(first, Pending)
    assert first.stage == "uploading"
    assert server.posts_accepted == 0  # only the session so far: no video yet
    result, _ = drive(adapter, account, req)
    assert server.posts_accepted == 1
    post = server.posts[0]
    assert post["bytes"] == data
    assert result.external_id == post["id"]
    assert result.external_url == f"https://www.youtube.com/watch?v={post['id']}"
    assert post["title"] == "Launch day"
    assert post["description"] == "All about it."
    assert post["tags"] == ["launch", "herald tips"]
    assert post["categoryId"] == "27"
    assert post["status"]["privacyStatus"] == "unlisted"
    assert post["status"]["selfDeclaredMadeForKids"] is False
    assert server.counters["chunks"] == -(-len(data) // CHUNK)


def test_a_short_links_to_shorts(adapter: YouTubeAdapter, account: AccountContext) -> None:
    vertical = video_item(make_video(width=180, height=320, seconds=2))
    result, _ = drive(adapter, account, request(vertical, profile="youtube.short"))
    assert result.external_url.startswith("https://www.youtube.com/shorts/")


def test_an_interrupted_chunk_resumes_from_the_byte_youtube_holds(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    data = make_video(width=320, height=240, seconds=2)
    server.set_faults(interrupt_chunks={"count": 2, "keep": 300})
    result, pendings = drive(adapter, account, request(video_item(data)))
    assert server.posts_accepted == 1
    assert server.posts[0]["bytes"] == data
    assert server.counters["sessions_started"] == 1  # the same session throughout
    assert server.counters["status_queries"] >= 1  # asked what it holds, went on from there
    assert server.counters["range_mismatches"] == 0
    assert any(p.state.get("interrupted") for p in pendings)
    assert result.external_id == server.posts[0]["id"]


def test_a_lost_answer_to_the_last_chunk_finds_the_video_not_a_second_one(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    data = make_video(width=320, height=240, seconds=2)
    chunks = -(-len(data) // CHUNK)
    req = request(video_item(data))
    pending = adapter.publish(account=account, request=req)
    assert isinstance(pending, Pending)
    state = dict(pending.state)
    # Every chunk but the last goes through; the last one's answer never comes.
    adapter.bytes_per_check = CHUNK * (chunks - 1)
    pending = adapter.resume(account=account, request=req, state=state)
    assert isinstance(pending, Pending)
    adapter.bytes_per_check = 1 << 30
    server.set_faults(lose_answers={"count": 1, "seconds": 3})
    pending = adapter.resume(account=account, request=req, state=dict(pending.state))
    assert isinstance(pending, Pending)
    assert pending.state["interrupted"]
    assert server.posts_accepted == 1  # YouTube has the video already
    done = adapter.resume(account=account, request=req, state=dict(pending.state))
    assert isinstance(done, PublishResult)
    assert done.external_id == server.posts[0]["id"]
    assert server.posts_accepted == 1


def test_an_expired_session_starts_a_new_one(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    req = request()
    pending = adapter.publish(account=account, request=req)
    assert isinstance(pending, Pending)
    server.expire_sessions()
    result, _ = drive_from(adapter, account, req, pending)
    assert server.counters["sessions_started"] == 2
    assert server.posts_accepted == 1
    assert result.external_id == server.posts[0]["id"]


def drive_from(
    adapter: YouTubeAdapter, account: AccountContext, req: PublishRequest, answer: Any
) -> tuple[PublishResult, list[Pending]]:
    seen = []
    for _ in range(40):
        if isinstance(answer, PublishResult):
            return answer, seen
        seen.append(answer)
        answer = adapter.resume(account=account, request=req, state=dict(answer.state))
    raise AssertionError("still pending")


def test_the_poster_frame_becomes_the_thumbnail(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    poster = b"\xff\xd8\xff\xe0" + b"poster" * 10
    drive(adapter, account, request(video_item(poster=poster), thumbnail="poster"))
    video = server.videos[server.posts[0]["id"]]
    assert video["thumbnail"] == {"type": "image/jpeg", "bytes": poster}


def test_an_image_sent_with_the_video_becomes_the_thumbnail(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    image = media_item(tiny_png(), name="cover.png")
    drive(adapter, account, request(video_item(), image, thumbnail="image"))
    assert server.videos[server.posts[0]["id"]]["thumbnail"]["type"] == "image/png"


def test_a_refused_thumbnail_leaves_the_video_published(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    server.thumbnails_allowed = False
    image = media_item(tiny_png(), name="cover.png")
    result, _ = drive(adapter, account, request(video_item(), image, thumbnail="image"))
    assert result.external_id == server.posts[0]["id"]
    assert server.posts_accepted == 1


@pytest.mark.parametrize(
    ("options", "text", "words"),
    [
        ({"title": "a <b> title"}, "x", "title may not contain"),
        ({"title": "t" * 101}, "x", "too long"),
        ({"made_for_kids": ""}, "x", "made_for_kids is required"),
        ({"privacy": "friends"}, "x", "unsupported value"),
        ({}, "é" * 2501, "limit is 5000"),
        ({}, "a <script>", "text may not contain"),
        ({"tags": ",".join(["tag with space"] * 32)}, "x", "tags are longer"),
    ],
)
def test_what_youtube_would_refuse_is_refused_before_any_call(
    adapter: YouTubeAdapter,
    account: AccountContext,
    server: YouTubeStandIn,
    options: dict[str, str],
    text: str,
    words: str,
) -> None:
    before = server.requests
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request(text=text, **options))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert words in caught.value.message
    assert server.requests == before


def test_youtube_refusals_keep_their_reason(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request(category="99"))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "invalid category" in caught.value.message


# --- waits: the quota day, the upload limit ---------------------------------------------------


def test_herald_counts_the_quota_and_waits_until_the_day_resets(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn, settings: Any
) -> None:
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "youtube": server.app_settings(daily_quota=3300),
    }
    from providers import get_adapter

    small = get_adapter("youtube")
    assert isinstance(small, YouTubeAdapter)
    small.chunk_bytes = CHUNK
    status = small.quota_status()
    assert status["daily_units"] == 3300
    used_before = status["used_units"]  # the connect's channel lookup
    drive(small, account, request())
    drive(small, account, request())
    status = small.quota_status()
    assert status["used_units"] == used_before + 2 * COSTS["videos.insert"]
    assert status["uploads_remaining"] == 0
    sessions = server.counters["sessions_started"]
    with pytest.raises(ProviderError) as caught:
        small.publish(account=account, request=request())
    assert caught.value.wait_reason == QUOTA_EXHAUSTED
    assert caught.value.kind == ErrorKind.RATE_LIMITED
    assert 0 < (caught.value.retry_after or 0) <= 25 * 3600
    assert server.counters["sessions_started"] == sessions  # YouTube was not asked


def test_quota_exceeded_from_youtube_fills_the_day(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    server.quota_left = 100  # the project spent its units elsewhere
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request())
    assert caught.value.wait_reason == QUOTA_EXHAUSTED
    assert QUOTA_LEDGER.get().used(provider="youtube", day=quota_day()) == adapter.daily_quota
    assert adapter.quota_status()["uploads_remaining"] == 0


def test_the_channels_upload_limit_is_a_wait(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    server.set_faults(upload_limit=1)
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request())
    assert caught.value.wait_reason == UPLOAD_LIMIT
    assert caught.value.retry_after


# --- reconcile, delete, metrics, options ------------------------------------------------------


def test_reconcile_resumes_an_unfinished_session(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    req = request()
    pending = adapter.publish(account=account, request=req)
    assert isinstance(pending, Pending)
    adapter.bytes_per_check = CHUNK  # one chunk in, then the worker "dies"
    pending = adapter.resume(account=account, request=req, state=dict(pending.state))
    assert isinstance(pending, Pending)
    req.send_state = dict(pending.state)
    answer = adapter.reconcile(account=account, request=req)
    assert isinstance(answer, Pending)
    assert answer.state["interrupted"]
    assert answer.state["session"] == pending.state["session"]
    adapter.bytes_per_check = 1 << 30
    result, _ = drive_from(adapter, account, req, answer)
    assert server.posts_accepted == 1
    assert server.counters["sessions_started"] == 1
    assert result.external_id == server.posts[0]["id"]


def test_reconcile_finds_a_finished_session_video(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    req = request()
    pending = adapter.publish(account=account, request=req)
    assert isinstance(pending, Pending)
    result = adapter.resume(account=account, request=req, state=dict(pending.state))
    assert isinstance(result, PublishResult)
    req.send_state = dict(pending.state)
    found = adapter.reconcile(account=account, request=req)
    assert isinstance(found, PublishResult)
    assert found.external_id == result.external_id


def test_reconcile_without_a_session_lists_the_channels_uploads(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    old = (datetime.now(UTC) - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    server.add_upload("Launch day", "All about it.", published=old)  # an older namesake
    req = request()
    assert adapter.reconcile(account=account, request=req) is None
    video_id = server.add_upload("Launch day", "All about it.")
    server.add_upload("Something else")
    found = adapter.reconcile(account=account, request=req)
    assert isinstance(found, PublishResult)
    assert found.external_id == video_id


def test_reconcile_that_cannot_see_far_enough_says_so(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    for index in range(51):
        server.add_upload(f"video {index}")
    with pytest.raises(CannotReconcile):
        adapter.reconcile(account=account, request=request())


def test_delete_and_metrics(
    adapter: YouTubeAdapter, account: AccountContext, server: YouTubeStandIn
) -> None:
    result, _ = drive(adapter, account, request())
    server.set_statistics(result.external_id, views=120, likes=7, comments=3)
    metrics = adapter.metrics(account=account, external_id=result.external_id)
    assert (metrics.views, metrics.likes, metrics.comments) == (120, 7, 3)
    adapter.delete(account=account, external_id=result.external_id)
    adapter.delete(account=account, external_id=result.external_id)  # already gone
    assert server.counters["videos_deleted"] == 1
    with pytest.raises(ProviderError) as caught:
        adapter.metrics(account=account, external_id=result.external_id)
    assert caught.value.kind == ErrorKind.PERMANENT


def test_destination_options_list_assignable_categories(
    adapter: YouTubeAdapter, account: AccountContext
) -> None:
    options = adapter.destination_options(account=account)
    values = [c["value"] for c in options["category"]]
    assert "22" in values
    assert "18" not in values
    assert [p["value"] for p in options["privacy"]] == ["private", "unlisted", "public"]


def test_extra_scopes_are_asked_too(server: YouTubeStandIn, settings: Any) -> None:
    from providers import get_adapter

    app = {
        **server.app_settings(),
        "scopes": "https://www.googleapis.com/auth/yt-analytics.readonly",
    }
    settings.PROVIDER_OAUTH_APPS = {**settings.PROVIDER_OAUTH_APPS, "youtube": app}
    adapter = get_adapter("youtube")
    start = adapter.begin_authorization(redirect_uri="https://h.example/cb", state="s")
    assert "yt-analytics.readonly" in start.authorization_url
    assert "youtube.upload" in start.authorization_url
