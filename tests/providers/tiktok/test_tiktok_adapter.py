"""The TikTok adapter against its stand-in: connect with client_key and PKCE, refresh (a new
refresh token), revoke, the creator info checked before every post, the video uploaded in
chunks by the declared plan as a long send, its publish status polled, reconcile by the stored
publish_id (never a second init), waits for rate limits and the posting cap, metrics."""

from __future__ import annotations

import io
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
from providers.tiktok import TikTokAdapter
from providers.tiktok.adapter import POSTING_LIMIT
from providers.tiktok.profiles import caption_length, chunk_plan
from tests.providers.tiktok.conftest import MAX_CHUNK, MIN_CHUNK, grant
from tests.providers.tiktok.standin import CREATOR, TikTokStandIn
from tests.video_support import make_video

OPTIONS = {
    "privacy_level": "SELF_ONLY",
    "brand_content_toggle": "false",
    "brand_organic_toggle": "false",
    "disable_stitch": "true",
}


def video_item(data: bytes | None = None, *, seconds: float | None = None) -> MediaItem:
    payload = data if data is not None else make_video(width=320, height=240, seconds=2, noise=True)
    probe = {"duration_seconds": seconds} if seconds else {}
    return MediaItem(
        name="clip.mp4",
        mime_type="video/mp4",
        size=len(payload),
        open=lambda: io.BytesIO(payload),
        probe=probe,
    )


def request(*media: MediaItem, text: str = "Launch day #herald", **options: str) -> PublishRequest:
    return PublishRequest(
        profile="tiktok.video",
        text=text,
        idempotency_key="key-1",
        media=list(media) or [video_item()],
        options={**OPTIONS, **options},
        first_attempt_at=datetime.now(UTC),
    )


def drive_from(
    adapter: TikTokAdapter, account: AccountContext, req: PublishRequest, answer: Any
) -> tuple[PublishResult, list[Pending]]:
    seen: list[Pending] = []
    for _ in range(200):
        if isinstance(answer, PublishResult):
            return answer, seen
        seen.append(answer)
        answer = adapter.resume(account=account, request=req, state=dict(answer.state))
    raise AssertionError(f"still pending: {seen[-3:]}")


def drive(
    adapter: TikTokAdapter, account: AccountContext, req: PublishRequest
) -> tuple[PublishResult, list[Pending]]:
    return drive_from(adapter, account, req, adapter.publish(account=account, request=req))


# --- connect, refresh, revoke -----------------------------------------------------------------


def test_connect_uses_client_key_and_pkce_and_reads_the_creator(
    adapter: TikTokAdapter, server: TikTokStandIn
) -> None:
    start = adapter.begin_authorization(redirect_uri="https://h.example/cb", state="s1")
    assert "client_key=awtiktokstandinkey" in start.authorization_url
    assert "code_challenge_method=S256" in start.authorization_url
    assert "video.publish" in start.authorization_url
    assert start.code_verifier not in start.authorization_url
    account = grant(adapter)
    assert account.external_id == CREATOR["open_id"]
    assert account.username == CREATOR["username"]
    assert account.credentials["refresh_token"].startswith("rft.")
    assert account.credentials["refresh_expires_at"]


def test_a_wrong_code_verifier_is_a_reconnect(adapter: TikTokAdapter) -> None:
    import requests as http

    from tests.providers.tiktok.conftest import REDIRECT

    start = adapter.begin_authorization(redirect_uri=REDIRECT, state="s")
    location = http.get(start.authorization_url, allow_redirects=False, timeout=5)
    code = location.headers["Location"].split("code=")[1].split("&")[0]
    with pytest.raises(ProviderError) as caught:
        adapter.complete_authorization(code=code, redirect_uri=REDIRECT, code_verifier="w" * 50)
    assert caught.value.kind == ErrorKind.AUTH


def test_an_expired_token_is_refreshed_with_a_new_refresh_token(
    adapter: TikTokAdapter, account: AccountContext, server: TikTokStandIn
) -> None:
    old = dict(account.credentials)
    server.expire_access_tokens()
    with pytest.raises(ProviderError) as caught:
        adapter.destination_options(account=account)
    assert caught.value.kind == ErrorKind.AUTH
    refreshed = adapter.refresh(account=account)
    assert refreshed.credentials["refresh_token"] != old["refresh_token"]
    assert refreshed.credentials["access_token"] != old["access_token"]
    assert refreshed.expires_at is not None
    account.credentials = refreshed.credentials
    assert adapter.destination_options(account=account)["privacy_level"]
    with pytest.raises(ProviderError) as caught:  # the old refresh token ended
        adapter.refresh(account=AccountContext(external_id="x", credentials=old))
    assert caught.value.kind == ErrorKind.AUTH


def test_revoke_ends_the_grant_and_is_safe_to_repeat(
    adapter: TikTokAdapter, account: AccountContext, server: TikTokStandIn
) -> None:
    adapter.revoke(account=account)
    assert server.counters["tokens_revoked"] == 1
    with pytest.raises(ProviderError) as caught:
        adapter.refresh(account=account)
    assert caught.value.kind == ErrorKind.AUTH
    adapter.revoke(account=account)


# --- creator info, options --------------------------------------------------------------------


def test_destination_options_come_from_the_creator_info(
    adapter: TikTokAdapter, account: AccountContext, server: TikTokStandIn, settings: Any
) -> None:
    options = adapter.destination_options(account=account)
    assert [p["value"] for p in options["privacy_level"]] == ["SELF_ONLY"]  # not audited
    assert [c["value"] for c in options["disable_stitch"]] == ["true"]
    assert [c["value"] for c in options["disable_comment"]] == ["false", "true"]
    assert options["max_video_post_duration_sec"][0]["value"] == "300"
    audited = TikTokAdapter(app={**server.app_settings(audited=True)})
    levels = [p["value"] for p in audited.destination_options(account=account)["privacy_level"]]
    assert levels == ["PUBLIC_TO_EVERYONE", "MUTUAL_FOLLOW_FRIENDS", "SELF_ONLY"]


@pytest.mark.parametrize(
    ("options", "seconds", "words"),
    [
        ({"disable_stitch": "false"}, None, "turned stitchs off"),
        ({}, 301.0, "longer than the creator's 300 seconds"),
    ],
)
def test_the_creator_info_is_checked_before_every_post(
    adapter: TikTokAdapter,
    account: AccountContext,
    server: TikTokStandIn,
    options: dict[str, str],
    seconds: float | None,
    words: str,
) -> None:
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request(video_item(seconds=seconds), **options))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert words in caught.value.message
    assert server.counters["creator_info"] == 1
    assert server.counters["inits"] == 0


@pytest.mark.parametrize(
    ("options", "text", "words"),
    [
        ({"brand_content_toggle": ""}, "x", "brand_content_toggle is required"),
        ({"privacy_level": ""}, "x", "privacy_level is required"),
        ({"brand_content_toggle": "true"}, "x", "Branded content cannot be private"),
        ({}, "😀" * 1101, "limit is 2200"),
        ({"privacy_level": "PUBLIC_TO_EVERYONE"}, "x", "HERALD_TIKTOK_AUDITED"),
    ],
)
def test_what_tiktok_would_refuse_is_refused_before_any_call(
    adapter: TikTokAdapter,
    account: AccountContext,
    server: TikTokStandIn,
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


def test_tiktok_refuses_a_public_post_from_an_unaudited_app(
    account: AccountContext, server: TikTokStandIn, monkeypatch: Any
) -> None:
    """Herald configured as audited while TikTok says it is not: TikTok's refusal is kept."""
    from tests.providers.tiktok.conftest import shrink

    audited = shrink(TikTokAdapter(app=server.app_settings(audited=True)), monkeypatch)
    with pytest.raises(ProviderError) as caught:
        audited.publish(account=account, request=request(privacy_level="PUBLIC_TO_EVERYONE"))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "unaudited_client_can_only_post_to_private_accounts" in caught.value.message


# --- the upload and the status ----------------------------------------------------------------


def test_chunk_plan_follows_tiktoks_rules() -> None:
    mb = 1024 * 1024
    assert chunk_plan(3 * mb) == (3 * mb, 1)  # under 5 MB: one chunk
    assert chunk_plan(100 * mb) == (64 * mb, 1)  # the remainder joins the last chunk
    assert chunk_plan(130 * mb) == (64 * mb, 2)
    assert chunk_plan(12 * mb, 5 * mb) == (5 * mb, 2)
    assert caption_length("😀a") == 3


def test_a_video_is_uploaded_in_chunks_and_its_status_polled(
    adapter: TikTokAdapter, account: AccountContext, server: TikTokStandIn
) -> None:
    data = make_video(width=320, height=240, seconds=2, noise=True)
    assert len(data) > 2 * MAX_CHUNK
    req = request(video_item(data))
    first = adapter.publish(account=account, request=req)
    assert isinstance(first, Pending)
    assert first.stage == "uploading"
    assert first.state["publish_id"]
    result, pendings = drive_from(adapter, account, req, first)
    upload = server.upload(first.state["publish_id"])
    assert upload["bytes"] == data
    assert upload["count"] == len(data) // MAX_CHUNK
    assert server.counters["chunks"] == upload["count"]
    assert server.counters["range_mismatches"] == 0
    assert server.counters["chunk_rule_refusals"] == 0
    assert server.counters["inits"] == 1
    assert any(p.stage == "processing" for p in pendings)
    assert all("upload_url" not in p.state for p in pendings if p.stage == "processing")
    assert server.posts_accepted == 1
    post = server.posts[0]
    assert post["title"] == "Launch day #herald"
    assert post["disable_stitch"] is True
    assert post["brand_content_toggle"] is False
    # A private post has no public id: the publish id names it.
    assert result.external_id == first.state["publish_id"]


def test_a_small_video_is_one_chunk(
    adapter: TikTokAdapter, account: AccountContext, server: TikTokStandIn
) -> None:
    data = make_video(width=64, height=36, seconds=1)
    assert len(data) < MIN_CHUNK
    drive(adapter, account, request(video_item(data)))
    assert server.counters["chunks"] == 1
    assert server.posts_accepted == 1


def test_a_public_post_links_to_the_video(
    account: AccountContext, server: TikTokStandIn, monkeypatch: Any
) -> None:
    from tests.providers.tiktok.conftest import shrink

    server.audited = True
    audited = shrink(TikTokAdapter(app=server.app_settings(audited=True)), monkeypatch)
    result, _ = drive(audited, account, request(privacy_level="PUBLIC_TO_EVERYONE"))
    assert result.external_id == server.posts[0]["id"]
    assert result.external_url == f"https://www.tiktok.com/video/{result.external_id}"


def test_an_interrupted_chunk_is_sent_again(
    adapter: TikTokAdapter, account: AccountContext, server: TikTokStandIn
) -> None:
    data = make_video(width=320, height=240, seconds=2, noise=True)
    server.set_faults(interrupt_chunks=2)
    req = request(video_item(data))
    _result, pendings = drive(adapter, account, req)
    assert server.posts_accepted == 1
    assert server.upload(pendings[0].state["publish_id"])["bytes"] == data
    assert server.counters["inits"] == 1
    assert any(p.state.get("tries") for p in pendings)


def test_a_failed_post_keeps_tiktoks_reason(
    adapter: TikTokAdapter, account: AccountContext, server: TikTokStandIn
) -> None:
    server.set_faults(fail_processing="frame_rate_check_failed")
    with pytest.raises(ProviderError) as caught:
        drive(adapter, account, request())
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "frame_rate_check_failed" in caught.value.message


# --- waits ------------------------------------------------------------------------------------


def test_the_init_rate_limit_is_a_wait_of_this_account(
    adapter: TikTokAdapter, account: AccountContext, server: TikTokStandIn
) -> None:
    server.init_per_minute = 1
    adapter.publish(account=account, request=request())
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request())
    assert caught.value.kind == ErrorKind.RATE_LIMITED
    assert caught.value.retry_after == 60.0
    assert caught.value.host_wide is False
    assert server.counters["inits"] == 1


def test_the_posting_cap_holds_the_send(
    adapter: TikTokAdapter, account: AccountContext, server: TikTokStandIn
) -> None:
    server.set_faults(posting_cap=1)
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request())
    assert caught.value.kind == ErrorKind.RATE_LIMITED
    assert caught.value.wait_reason == POSTING_LIMIT
    assert caught.value.retry_after == 3600.0
    assert caught.value.host_wide is False


# --- reconcile, metrics, delete ---------------------------------------------------------------


def test_reconcile_goes_on_from_the_stored_publish_id_never_a_second_init(
    adapter: TikTokAdapter, account: AccountContext, server: TikTokStandIn
) -> None:
    data = make_video(width=320, height=240, seconds=2, noise=True)
    req = request(video_item(data))
    pending = adapter.publish(account=account, request=req)
    assert isinstance(pending, Pending)
    pending = adapter.resume(account=account, request=req, state=dict(pending.state))
    assert isinstance(pending, Pending)
    assert pending.state["next"] == 1
    req.send_state = dict(pending.state)  # the worker dies here
    answer = adapter.reconcile(account=account, request=req)
    assert isinstance(answer, Pending)
    assert answer.state["next"] == 1
    _, pendings = drive_from(adapter, account, req, answer)
    req.send_state = {"publish_id": pendings[-1].state["publish_id"]}
    found = adapter.reconcile(account=account, request=req)
    assert isinstance(found, PublishResult)
    assert server.counters["inits"] == 1
    assert server.posts_accepted == 1
    assert server.upload(pendings[-1].state["publish_id"])["bytes"] == data


def test_reconcile_of_a_failed_post_allows_a_new_send(
    adapter: TikTokAdapter, account: AccountContext, server: TikTokStandIn
) -> None:
    server.set_faults(fail_processing="file_format_check_failed")
    req = request()
    pending = adapter.publish(account=account, request=req)
    assert isinstance(pending, Pending)
    server.processing_polls = 0
    state = dict(pending.state)
    while "upload_url" in state:
        answer = adapter.resume(account=account, request=req, state=state)
        assert isinstance(answer, Pending)
        state = dict(answer.state)
    req.send_state = state
    assert adapter.reconcile(account=account, request=req) is None
    assert adapter.reconcile(account=account, request=request()) is None  # no init answered


def test_metrics_of_a_public_video(
    account: AccountContext, server: TikTokStandIn, monkeypatch: Any
) -> None:
    from tests.providers.tiktok.conftest import shrink

    server.audited = True
    audited = shrink(TikTokAdapter(app=server.app_settings(audited=True)), monkeypatch)
    result, _ = drive(audited, account, request(privacy_level="PUBLIC_TO_EVERYONE"))
    metrics = audited.metrics(account=account, external_id=result.external_id)
    assert (metrics.views, metrics.likes, metrics.comments, metrics.reposts) == (42, 5, 2, 1)


def test_delete_is_not_offered(adapter: TikTokAdapter, account: AccountContext) -> None:
    with pytest.raises(ProviderError) as caught:
        adapter.delete(account=account, external_id="1")
    assert "not implemented" in caught.value.message


# --- photo posts ------------------------------------------------------------------------------


def photo(server: TikTokStandIn, name: str, url: str = "") -> MediaItem:
    data = b"\xff\xd8\xff\xe0photo"
    return MediaItem(
        name=name,
        mime_type="image/jpeg",
        size=len(data),
        open=lambda: io.BytesIO(data),
        url=url or f"{server.url}/media/{name}",
    )


def photo_request(*media: MediaItem, **options: str) -> PublishRequest:
    return PublishRequest(
        profile="tiktok.photo",
        text="Three stills #herald",
        idempotency_key="key-2",
        media=list(media),
        options={**OPTIONS, "title": "Stills", **options},
    )


def test_a_photo_post_is_pulled_from_the_images_urls(
    adapter: TikTokAdapter, account: AccountContext, server: TikTokStandIn
) -> None:
    images = [photo(server, f"{n}.jpg") for n in range(3)]
    options = {k: v for k, v in OPTIONS.items() if k != "disable_stitch"}
    req = photo_request(*images)
    req.options = {**options, "title": "Stills"}
    first = adapter.publish(account=account, request=req)
    assert isinstance(first, Pending)
    assert first.stage == "processing"
    result, pendings = drive_from(adapter, account, req, first)
    post = server.posts[0]
    assert post["title"] == "Stills"
    assert post["description"] == "Three stills #herald"
    assert post["auto_add_music"] is True
    assert "disable_duet" not in post
    assert server.upload(first.state["publish_id"])["photo_images"] == [i.url for i in images]
    assert result.external_id == first.state["publish_id"]
    assert pendings


def test_photos_need_a_verified_public_address(
    adapter: TikTokAdapter, account: AccountContext, server: TikTokStandIn
) -> None:
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=photo_request(photo(server, "a.jpg", url="-")))
    assert "public address" in caught.value.message
    elsewhere = photo(server, "b.jpg", url="https://unverified.example/b.jpg")
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=photo_request(elsewhere))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "url_ownership_unverified" in caught.value.message


def test_a_photo_post_is_images_only_and_titles_are_bounded(
    adapter: TikTokAdapter, account: AccountContext, server: TikTokStandIn
) -> None:
    before = server.requests
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=photo_request(video_item()))
    assert caught.value.kind == ErrorKind.PERMANENT
    with pytest.raises(ProviderError) as caught:
        adapter.publish(
            account=account, request=photo_request(photo(server, "a.jpg"), title="t" * 91)
        )
    assert "too long" in caught.value.message
    assert server.requests == before


def test_a_video_at_a_verified_address_is_pulled_not_uploaded(
    account: AccountContext, server: TikTokStandIn, monkeypatch: Any
) -> None:
    from tests.providers.tiktok.conftest import shrink

    app = {**server.app_settings(), "verified_url_prefixes": f"{server.url}/media/"}
    pulling = shrink(TikTokAdapter(app=app), monkeypatch)
    item = video_item()
    item.url = f"{server.url}/media/clip.mp4"
    first = pulling.publish(account=account, request=request(item))
    assert isinstance(first, Pending)
    assert first.stage == "processing"
    drive_from(pulling, account, request(item), first)
    assert (server.counters["pulls"], server.counters["chunks"]) == (1, 0)
    assert server.upload(first.state["publish_id"])["video_url"] == item.url
    assert server.posts_accepted == 1
    elsewhere = video_item()
    elsewhere.url = "https://cdn.example/clip.mp4"  # not verified: uploaded in chunks
    drive(pulling, account, request(elsewhere))
    assert server.counters["pulls"] == 1
    assert server.counters["chunks"] >= 1
