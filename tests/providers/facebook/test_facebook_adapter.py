"""The facebook adapter against the Graph stand-in: Facebook Login with candidates, each format,
the first comment, errors, reconcile, delete and metrics."""

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
from providers.facebook import FacebookAdapter
from providers.meta import GRAPH_VERSION
from tests.providers import tiny_png
from tests.providers.facebook.conftest import login
from tests.providers.facebook.standin import PAGES, USER, FacebookStandIn
from tests.providers.meta.standin import APP_SECRET
from tests.providers.threads.standin import MediaHost

PAGE = PAGES[0]["id"]
FAKE_MP4 = b"\x00\x00\x00\x20ftypisom" + b"\x00" * 64


def photo(host: MediaHost, alt: str = "") -> MediaItem:
    data = tiny_png()
    return MediaItem(
        name="p.png",
        mime_type="image/png",
        size=len(data),
        open=lambda: io.BytesIO(data),
        alt_text=alt,
        url=host.url_for(data),
    )


def video(host: MediaHost, data: bytes = FAKE_MP4) -> MediaItem:
    return MediaItem(
        name="v.mp4",
        mime_type="video/mp4",
        size=len(data),
        open=lambda: io.BytesIO(data),
        url=host.url_for(data, "video/mp4"),
    )


def request(profile: str = "facebook.post", text: str = "Hello Pages", **kw: Any) -> PublishRequest:
    return PublishRequest(profile=profile, text=text, idempotency_key="k1", **kw)


def drive(adapter: FacebookAdapter, account: AccountContext, req: PublishRequest) -> PublishResult:
    outcome = adapter.publish(account=account, request=req)
    for _ in range(10):
        if isinstance(outcome, PublishResult):
            return outcome
        assert isinstance(outcome, Pending)
        outcome = adapter.resume(account=account, request=req, state=outcome.state)
    raise AssertionError("still pending")


# --- connect ----------------------------------------------------------------------------------


def test_one_login_offers_every_page_and_linked_instagram_account(
    adapter: FacebookAdapter, server: FacebookStandIn
) -> None:
    found = login(adapter)
    keys = [c.key for c in found.candidates]
    assert keys == [
        f"facebook:{PAGES[0]['id']}",
        "instagram:17841400000000001",
        f"facebook:{PAGES[1]['id']}",
    ]
    page, instagram = found.candidates[0], found.candidates[1]
    assert page.account.credentials["page_id"] == PAGE
    assert page.account.credentials["meta_user_id"] == USER["id"]
    assert page.account.expires_at is None  # derived from a long-lived user token
    assert "pages_manage_posts" in page.account.granted_scopes
    assert "instagram_basic" not in page.account.granted_scopes
    assert set(instagram.account.credentials) == {
        "access_token",
        "ig_user_id",
        "page_id",
        "meta_user_id",
        "login",
    }
    assert instagram.account.credentials["login"] == "facebook"
    assert instagram.account.credentials["access_token"] == page.account.credentials["access_token"]
    assert "instagram_content_publish" in instagram.account.granted_scopes
    assert server.counters["long_lived_issued"] == 1
    assert server.versions_seen == {GRAPH_VERSION}
    # Page tokens never expire, user tokens are not kept.
    grant = server.tokens[page.account.credentials["access_token"]]
    assert grant["kind"] == "page"
    assert grant["expires"] is None


def test_declined_instagram_permissions_offer_only_pages(
    adapter: FacebookAdapter, server: FacebookStandIn
) -> None:
    server.declined = {"instagram_basic"}
    assert [c.provider for c in login(adapter).candidates] == ["facebook", "facebook"]


def test_a_login_without_pages_is_refused(
    adapter: FacebookAdapter, server: FacebookStandIn
) -> None:
    server.declined = {"pages_show_list"}
    with pytest.raises(ProviderError, match="granted no Page"):
        login(adapter)


# --- publish ------------------------------------------------------------------------------------


def test_text_post_with_its_link_and_first_comment(
    adapter: FacebookAdapter, account: AccountContext, server: FacebookStandIn
) -> None:
    req = request(text="Read https://herald.example/news", options={"first_comment": "More below"})
    result = drive(adapter, account, req)
    assert result.external_id.startswith(f"{PAGE}_")
    assert result.external_url == f"https://www.facebook.com/{result.external_id}"
    post = server.posts[-1]
    assert post["link"] == "https://herald.example/news"
    assert server.objects[result.external_id]["comments"]
    assert server.counters["bad_appsecret_proof"] == 0


def test_one_photo_and_many_photos(
    adapter: FacebookAdapter, account: AccountContext, server: FacebookStandIn, host: MediaHost
) -> None:
    one = drive(adapter, account, request(media=[photo(host, alt="A red square")]))
    assert server.posts[-1]["kind"] == "photo"
    assert one.external_id == server.posts[-1]["id"]
    photo_id = server.posts[-1]["photos"][0]
    assert server.objects[photo_id]["alt_text"] == "A red square"
    many = drive(adapter, account, request(media=[photo(host), photo(host), photo(host)]))
    post = server.posts[-1]
    assert post["kind"] == "post"
    assert len(post["photos"]) == 3
    assert many.external_id == post["id"]
    assert server.posts_accepted == 2  # the unpublished photos are not posts


def test_an_unreachable_photo_fails_with_facebooks_reason(
    adapter: FacebookAdapter, account: AccountContext
) -> None:
    item = MediaItem(
        name="x.png",
        mime_type="image/png",
        size=10,
        open=lambda: io.BytesIO(b""),
        url="http://127.0.0.1:9/missing.png",
    )
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request(media=[item]))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "could not be fetched" in caught.value.message


def test_media_without_a_public_url_is_refused_before_any_call(
    adapter: FacebookAdapter, account: AccountContext, server: FacebookStandIn
) -> None:
    data = tiny_png()
    item = MediaItem(
        name="p.png", mime_type="image/png", size=len(data), open=lambda: io.BytesIO(data)
    )
    before = server.requests
    with pytest.raises(ProviderError, match="HERALD_PUBLIC_URL"):
        adapter.publish(account=account, request=request(media=[item]))
    assert server.requests == before


def test_video_post_waits_for_processing_without_a_thread(
    adapter: FacebookAdapter, account: AccountContext, server: FacebookStandIn, host: MediaHost
) -> None:
    server.video_polls = 1  # the first status read says processing, the next ready
    req = request(media=[video(host)])
    first = adapter.publish(account=account, request=req)
    assert isinstance(first, Pending)
    assert first.stage == "processing"
    again = adapter.resume(account=account, request=req, state=first.state)
    assert isinstance(again, Pending)  # one status read per check, nothing waits in between
    done = adapter.resume(account=account, request=req, state=again.state)
    assert isinstance(done, PublishResult)
    assert done.external_id == f"{PAGE}_{first.state['video_id']}"
    assert server.posts_accepted == 1


def test_a_video_facebook_cannot_process_fails_with_the_reason(
    adapter: FacebookAdapter, account: AccountContext, host: MediaHost
) -> None:
    req = request(media=[video(host, b"not a video at all")])
    pending = adapter.publish(account=account, request=req)
    assert isinstance(pending, Pending)
    with pytest.raises(ProviderError, match="not a supported format") as caught:
        adapter.resume(account=account, request=req, state=pending.state)
    assert caught.value.kind == ErrorKind.PERMANENT


def test_reel_and_stories(
    adapter: FacebookAdapter, account: AccountContext, server: FacebookStandIn, host: MediaHost
) -> None:
    reel = drive(adapter, account, request("facebook.reel", "A reel", media=[video(host)]))
    assert server.posts[-1]["kind"] == "reel"
    assert server.posts[-1]["message"] == "A reel"
    assert reel.external_id
    story = drive(adapter, account, request("facebook.story", "", media=[photo(host)]))
    assert server.posts[-1]["kind"] == "story"
    assert story.external_id.startswith(PAGE)
    video_story = drive(adapter, account, request("facebook.story", "", media=[video(host)]))
    assert server.posts[-1]["kind"] == "story"
    assert video_story.external_id.startswith(PAGE)
    assert server.posts_accepted == 3


# --- errors, reconcile, delete, metrics -------------------------------------------------------


def test_an_invalid_page_token_means_reconnect(
    adapter: FacebookAdapter, account: AccountContext, server: FacebookStandIn
) -> None:
    server.revoke_subject(PAGE)
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request())
    assert caught.value.kind == ErrorKind.AUTH
    assert account.credentials["access_token"] not in caught.value.message
    assert APP_SECRET not in caught.value.message


def test_a_policy_block_is_final(
    adapter: FacebookAdapter, account: AccountContext, server: FacebookStandIn
) -> None:
    server.fail_next(
        368, 1390008, message="It looks like you were misusing this feature", path="/feed"
    )
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request())
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "not retried" in caught.value.message


def test_a_timeout_after_the_post_is_ambiguous_and_reconcile_finds_it(
    adapter: FacebookAdapter, account: AccountContext, server: FacebookStandIn
) -> None:
    server.store_post(PAGE, "Older post")
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 2.5})
    started = datetime.now(UTC)
    req = request(text="Exactly once")
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=req)
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    req.first_attempt_at = started
    found = adapter.reconcile(account=account, request=req)
    assert found is not None
    assert found.external_id == server.posts[-1]["id"]
    assert (
        adapter.reconcile(account=account, request=request(text="Never sent"), external_id="")
        is None
    )
    assert (
        adapter.reconcile(account=account, request=req, external_id=found.external_id) is not None
    )
    assert server.posts_accepted == 1


def test_delete_is_idempotent_and_metrics_read_the_post(
    adapter: FacebookAdapter, account: AccountContext, server: FacebookStandIn
) -> None:
    result = drive(adapter, account, request(options={"first_comment": "hi"}))
    server.objects[result.external_id].update(reactions=7, shares=2, views=40)
    metrics = adapter.metrics(account=account, external_id=result.external_id)
    assert (metrics.likes, metrics.comments, metrics.reposts, metrics.views) == (7, 1, 2, 40)
    server.fail_next(10, message="(#10) Requires read_insights", path="/insights")
    without = adapter.metrics(account=account, external_id=result.external_id)
    assert (without.likes, without.views) == (7, 0)
    adapter.delete(account=account, external_id=result.external_id)
    adapter.delete(account=account, external_id=result.external_id)
    assert server.counters["deleted"] == 1
    assert (
        adapter.reconcile(account=account, request=request(), external_id=result.external_id)
        is None
    )
