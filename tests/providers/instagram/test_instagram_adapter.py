"""The instagram adapter against its stand-in: each format through the container flow (the
media fetched from a real HTTP host, the status polled through Pending/resume), ERROR and
EXPIRED containers, the publishing limit wait, ambiguous publishes and their reconcile, first
comments, delete, metrics and the caption rules."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

import pytest
from PIL import Image

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
from providers.instagram import InstagramAdapter
from tests.providers.instagram.standin import DAY, IG_USER, InstagramStandIn
from tests.providers.threads.standin import MediaHost
from tests.video_support import make_video


def jpeg(width: int = 40, height: int = 40) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(buffer, format="JPEG")
    return buffer.getvalue()


def item(host: MediaHost, data: bytes, mime: str = "image/jpeg", alt: str = "") -> MediaItem:
    return MediaItem(
        name="file",
        mime_type=mime,
        size=len(data),
        open=lambda: io.BytesIO(data),
        alt_text=alt,
        url=host.url_for(data, mime),
    )


def video(host: MediaHost, seconds: float = 3) -> MediaItem:
    return item(host, make_video(seconds=seconds, rate=24), "video/mp4")


def request(
    profile: str, media: list[MediaItem], text: str = "Hello #herald", **options: str
) -> PublishRequest:
    return PublishRequest(
        profile=profile,
        text=text,
        idempotency_key="k1",
        media=media,
        options=options,
        first_attempt_at=datetime.now(UTC),
    )


def drive(
    adapter: InstagramAdapter, account: AccountContext, req: PublishRequest
) -> tuple[PublishResult, list[Pending]]:
    """Publish, then resume with each Pending's state (as the delivery engine does)."""
    seen: list[Pending] = []
    result = adapter.publish(account=account, request=req)
    for _ in range(20):
        if isinstance(result, PublishResult):
            return result, seen
        seen.append(result)
        req.send_state = dict(result.state)
        result = adapter.resume(account=account, request=req, state=dict(result.state))
    raise AssertionError("the send never finished")


def test_a_single_image_with_alt_text_and_a_first_comment(
    adapter: InstagramAdapter, account: AccountContext, server: InstagramStandIn, host: MediaHost
) -> None:
    req = request(
        "instagram.post", [item(host, jpeg(), alt="A blue square")], first_comment="More soon"
    )
    result, pending = drive(adapter, account, req)
    assert [p.stage for p in pending] == ["processing", "processing"]  # one IN_PROGRESS read
    assert pending[0].check_after_seconds == adapter.image_check_seconds
    post = server.posts[-1]
    assert post["fields"]["image_url"] == req.media[0].url
    assert post["fields"]["alt_text"] == "A blue square"
    assert post["caption"] == "Hello #herald"
    assert result.external_url.startswith("https://www.instagram.com/p/")
    assert server.comments == [
        {"id": server.comments[0]["id"], "media": result.external_id, "message": "More soon"}
    ]


def test_a_carousel_of_an_image_and_a_video(
    adapter: InstagramAdapter, account: AccountContext, server: InstagramStandIn, host: MediaHost
) -> None:
    req = request(
        "instagram.post",
        [item(host, jpeg()), video(host)],
        collaborators="@ada.l, grace_h",
        location_id="110843418940484",
    )
    result, pending = drive(adapter, account, req)
    assert "children" in pending[0].state
    assert "container" in pending[-1].state
    post = server.posts[-1]
    assert post["media_type"] == "CAROUSEL"
    assert [c.get("media_type", "IMAGE") for c in post["children"]] == ["IMAGE", "VIDEO"]
    assert all(c["is_carousel_item"] == "true" for c in post["children"])
    assert post["fields"]["collaborators"] == '["ada.l", "grace_h"]'
    assert post["fields"]["location_id"] == "110843418940484"
    assert all("collaborators" not in c for c in post["children"])
    assert server.media[result.external_id]["media_type"] == "CAROUSEL_ALBUM"


def test_a_single_video_post_is_a_reel_shared_to_the_feed(
    adapter: InstagramAdapter, account: AccountContext, server: InstagramStandIn, host: MediaHost
) -> None:
    _, pending = drive(adapter, account, request("instagram.post", [video(host)]))
    assert pending[0].check_after_seconds == adapter.video_check_seconds
    assert pending[1].check_after_seconds > pending[0].check_after_seconds
    fields = server.posts[-1]["fields"]
    assert (fields["media_type"], fields["share_to_feed"]) == ("REELS", "true")


def test_a_reel_with_its_cover_off_the_feed(
    adapter: InstagramAdapter, account: AccountContext, server: InstagramStandIn, host: MediaHost
) -> None:
    cover = item(host, jpeg(90, 160))
    req = request(
        "instagram.reel", [video(host), cover], share_to_feed="false", thumb_offset="1500"
    )
    drive(adapter, account, req)
    fields = server.posts[-1]["fields"]
    assert fields["media_type"] == "REELS"
    assert fields["share_to_feed"] == "false"
    assert fields["cover_url"] == cover.url
    assert fields["thumb_offset"] == "1500"


@pytest.mark.parametrize("kind", ["image", "video"])
def test_a_story_has_no_caption(
    kind: str,
    adapter: InstagramAdapter,
    account: AccountContext,
    server: InstagramStandIn,
    host: MediaHost,
) -> None:
    media = item(host, jpeg(90, 160)) if kind == "image" else video(host)
    result, _ = drive(adapter, account, request("instagram.story", [media]))
    fields = server.posts[-1]["fields"]
    assert fields["media_type"] == "STORIES"
    assert "caption" not in fields
    assert server.media[result.external_id]["media_product_type"] == "STORY"


def test_a_refused_container_fails_with_the_rule_in_words(
    adapter: InstagramAdapter, account: AccountContext, server: InstagramStandIn, host: MediaHost
) -> None:
    wide = item(host, jpeg(300, 100))  # 3:1 is outside the feed's 4:5 to 1.91:1
    with pytest.raises(ProviderError) as caught:
        drive(adapter, account, request("instagram.post", [wide]))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "aspect ratio" in caught.value.message
    assert "2207009" in caught.value.message
    assert server.posts_accepted == 0


def test_a_video_too_short_for_a_reel_is_refused(
    adapter: InstagramAdapter, account: AccountContext, server: InstagramStandIn, host: MediaHost
) -> None:
    with pytest.raises(ProviderError) as caught:
        drive(adapter, account, request("instagram.reel", [video(host, seconds=1)]))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "video format" in caught.value.message


@pytest.mark.parametrize(
    ("state", "kind"), [("ERROR", ErrorKind.PERMANENT), ("EXPIRED", ErrorKind.TRANSIENT)]
)
def test_error_and_expired_containers(
    state: str,
    kind: ErrorKind,
    adapter: InstagramAdapter,
    account: AccountContext,
    server: InstagramStandIn,
    host: MediaHost,
) -> None:
    server.force_state(state, "2207053: unknown upload error" if state == "ERROR" else "")
    with pytest.raises(ProviderError) as caught:
        drive(adapter, account, request("instagram.post", [item(host, jpeg())]))
    assert caught.value.kind == kind
    assert server.posts_accepted == 0


def test_a_spent_publishing_limit_waits_before_any_container(
    adapter: InstagramAdapter, account: AccountContext, server: InstagramStandIn, host: MediaHost
) -> None:
    server.fill_quota()
    req = request("instagram.post", [item(host, jpeg())])
    held = adapter.publish(account=account, request=req)
    assert isinstance(held, Pending)
    assert (held.stage, held.reason) == ("waiting", "publishing_limit")
    assert held.check_after_seconds == adapter.limit_check_seconds
    assert server.counters["containers"] == 0
    again = adapter.resume(account=account, request=req, state=dict(held.state))
    assert isinstance(again, Pending)
    assert again.stage == "waiting"
    assert again.state["hold_since"] == held.state["hold_since"]
    server.age(DAY + 1)  # the window moves on: slots free
    result = adapter.resume(account=account, request=req, state=dict(again.state))
    assert isinstance(result, Pending)
    assert result.stage == "processing"
    req.send_state = dict(result.state)
    final = adapter.resume(account=account, request=req, state=dict(result.state))
    final = adapter.resume(account=account, request=req, state=dict(final.state))  # type: ignore[union-attr]
    assert isinstance(final, PublishResult)
    assert server.posts_accepted == 1


def test_a_limit_spent_after_the_containers_keeps_them_and_waits(
    adapter: InstagramAdapter, account: AccountContext, server: InstagramStandIn, host: MediaHost
) -> None:
    req = request("instagram.post", [item(host, jpeg())])
    first = adapter.publish(account=account, request=req)
    assert isinstance(first, Pending)
    with server.lock:  # other tools published 50 posts almost a day ago
        server.published_at = [server.now() - DAY + 60] * server.quota_total
    state = dict(first.state)
    held: Any = None
    for _ in range(3):
        held = adapter.resume(account=account, request=req, state=state)
        state = dict(held.state)
        if held.stage == "waiting":
            break
    assert held.stage == "waiting"
    assert held.state["finished"] is True
    assert held.state["container"] == first.state["container"]
    again = adapter.resume(account=account, request=req, state=dict(held.state))
    assert isinstance(again, Pending)
    assert again.state["hold_since"] == held.state["hold_since"]  # the wait's bound holds
    server.age(120)
    result = adapter.resume(account=account, request=req, state=dict(held.state))
    assert isinstance(result, PublishResult)
    assert server.posts_accepted == 1
    assert server.counters["containers"] == 1


def test_instagrams_own_limit_answer_at_publish_waits_too(
    adapter: InstagramAdapter,
    account: AccountContext,
    server: InstagramStandIn,
    host: MediaHost,
    monkeypatch: Any,
) -> None:
    req = request("instagram.post", [item(host, jpeg())])
    pending = adapter.publish(account=account, request=req)
    assert isinstance(pending, Pending)
    monkeypatch.setattr(adapter, "_limit_hold", lambda *args: None)  # the read said "free"
    server.fill_quota()
    state = dict(pending.state)
    for _ in range(3):
        answer = adapter.resume(account=account, request=req, state=state)
        assert isinstance(answer, Pending)
        state = dict(answer.state)
        if answer.stage == "waiting":
            break
    assert answer.reason == "publishing_limit"
    assert server.counters["limit_refusals"] == 1
    assert server.posts_accepted == 0


def test_a_timeout_after_publish_is_ambiguous_and_reconcile_finds_the_post(
    adapter: InstagramAdapter, account: AccountContext, server: InstagramStandIn, host: MediaHost
) -> None:
    server.store_post("Hello #herald", at=server.now() - 3 * 3600)  # an older twin
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 3})
    req = request("instagram.post", [item(host, jpeg())])
    with pytest.raises(ProviderError) as caught:
        drive(adapter, account, req)
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    found = adapter.reconcile(account=account, request=req)
    assert found is not None
    assert found.external_id == server.posts[-1]["id"]
    assert server.posts_accepted == 1


def test_reconcile_of_a_container_never_published_says_absent(
    adapter: InstagramAdapter, account: AccountContext, server: InstagramStandIn, host: MediaHost
) -> None:
    req = request("instagram.post", [item(host, jpeg())])
    pending = adapter.publish(account=account, request=req)
    assert isinstance(pending, Pending)
    req.send_state = dict(pending.state)
    assert adapter.reconcile(account=account, request=req) is None


def test_reconcile_without_state_searches_recent_media_and_knows_when_it_is_absent(
    adapter: InstagramAdapter, account: AccountContext, server: InstagramStandIn
) -> None:
    req = request("instagram.post", [], text="Only once")
    assert adapter.reconcile(account=account, request=req) is None
    mine = server.store_post("Only once")
    found = adapter.reconcile(account=account, request=req)
    assert found is not None
    assert found.external_id == mine


def test_a_published_container_whose_post_cannot_be_found_cannot_be_reconciled(
    adapter: InstagramAdapter, account: AccountContext, server: InstagramStandIn, host: MediaHost
) -> None:
    req = request("instagram.post", [item(host, jpeg())])
    result, pending = drive(adapter, account, req)
    with server.lock:
        server.media[result.external_id]["caption"] = "edited afterwards"
    req.send_state = dict(pending[-1].state)
    with pytest.raises(CannotReconcile):
        adapter.reconcile(account=account, request=req)


def test_more_than_three_collaborators_are_refused_before_any_call(
    adapter: InstagramAdapter, account: AccountContext, server: InstagramStandIn, host: MediaHost
) -> None:
    req = request("instagram.post", [item(host, jpeg())], collaborators="a b c d")
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=req)
    assert "up to 3 Instagram usernames" in caught.value.message
    assert server.requests == 0


def test_caption_rules_are_checked_before_any_call(
    adapter: InstagramAdapter, account: AccountContext, server: InstagramStandIn, host: MediaHost
) -> None:
    text = " ".join(f"#tag{i}" for i in range(31))
    with pytest.raises(ProviderError) as caught:
        adapter.publish(
            account=account, request=request("instagram.post", [item(host, jpeg())], text)
        )
    assert "30 hashtags" in caught.value.message
    no_url = item(host, jpeg())
    no_url.url = ""
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request("instagram.post", [no_url]))
    assert "HERALD_PUBLIC_URL" in caught.value.message
    assert server.requests == 0


def test_delete_metrics_and_options(
    adapter: InstagramAdapter, account: AccountContext, server: InstagramStandIn, host: MediaHost
) -> None:
    result, _ = drive(adapter, account, request("instagram.post", [item(host, jpeg())]))
    server.set_metrics(
        result.external_id, reach=40, views=55, likes=7, comments=2, shares=3, saved=1
    )
    metrics = adapter.metrics(account=account, external_id=result.external_id)
    assert (metrics.likes, metrics.comments, metrics.reposts, metrics.views) == (7, 2, 3, 55)
    assert (metrics.reach, metrics.saves) == (40, 1)
    adapter.delete(account=account, external_id=result.external_id)
    adapter.delete(account=account, external_id=result.external_id)  # already gone: fine
    assert server.counters["posts_deleted"] == 1
    options = adapter.destination_options(account=account)
    assert [o["value"] for o in options["share_to_feed"]] == ["true", "false"]


def test_a_revoked_page_token_asks_to_reconnect(
    adapter: InstagramAdapter, account: AccountContext, host: MediaHost
) -> None:
    account.credentials["access_token"] = "EAAPrevoked"
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request("instagram.post", [item(host, jpeg())]))
    assert caught.value.kind == ErrorKind.AUTH
    assert IG_USER["user_id"] not in "EAAPrevoked"
