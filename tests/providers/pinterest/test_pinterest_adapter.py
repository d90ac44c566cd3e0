"""The Pinterest adapter against its stand-in: connect (Basic auth at the token endpoint),
refresh keeping the refresh token, boards and sections, image Pins fetched from their URL,
video Pins (register, S3-style form upload, processing, cover), no second Pin on retry,
reconcile through the board's Pins, delete, analytics and errors."""

from __future__ import annotations

import io
from datetime import UTC, datetime

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
from providers.pinterest import PinterestAdapter
from tests.providers import tiny_png
from tests.providers.pinterest.conftest import grant
from tests.providers.pinterest.standin import USER, PinterestStandIn
from tests.video_support import make_video


def image_item(server: PinterestStandIn, *, alt: str = "A red square") -> MediaItem:
    data = tiny_png(200, 300)
    server.public["red.png"] = data
    return MediaItem(
        name="red.png",
        mime_type="image/png",
        size=len(data),
        open=lambda: io.BytesIO(data),
        alt_text=alt,
        url=f"{server.url}/public/red.png",
    )


def video_item(data: bytes | None = None) -> MediaItem:
    payload = data if data is not None else make_video(width=320, height=240, seconds=4)
    return MediaItem(
        name="clip.mp4", mime_type="video/mp4", size=len(payload), open=lambda: io.BytesIO(payload)
    )


def request(
    item: MediaItem, *, profile: str = "pinterest.image", text: str = "Best cake", **options: str
) -> PublishRequest:
    return PublishRequest(
        profile=profile,
        text=text,
        idempotency_key="key-1",
        media=[item],
        options={"board_id": "1001", "title": "Cake", **options},
        first_attempt_at=datetime.now(UTC),
    )


def drive(
    adapter: PinterestAdapter, account: AccountContext, req: PublishRequest
) -> tuple[PublishResult, list[Pending]]:
    answer = adapter.publish(account=account, request=req)
    seen: list[Pending] = []
    for _ in range(20):
        if isinstance(answer, PublishResult):
            return answer, seen
        seen.append(answer)
        answer = adapter.resume(account=account, request=req, state=dict(answer.state))
    raise AssertionError(f"still pending: {seen[-3:]}")


def test_connect_uses_basic_auth_and_reads_the_user(
    adapter: PinterestAdapter, server: PinterestStandIn
) -> None:
    start = adapter.begin_authorization(redirect_uri="https://h.example/cb", state="s1")
    assert "scope=boards%3Aread%2Cpins%3Aread%2Cpins%3Awrite%2Cuser_accounts%3Aread" in (
        start.authorization_url
    )
    account = grant(adapter)
    assert account.external_id == USER["id"]
    assert account.username == USER["username"]
    assert account.credentials["refresh_token"].startswith("pinr_")


def test_a_wrong_client_secret_is_refused(server: PinterestStandIn) -> None:
    bad = PinterestAdapter(app={**server.app_settings(), "client_secret": "wrong"})
    with pytest.raises(ProviderError) as caught:
        bad.complete_authorization(code="x", redirect_uri="https://h.example/cb", code_verifier="")
    assert caught.value.kind == ErrorKind.AUTH
    assert "wrong" not in str(caught.value)


def test_refresh_after_expiry_keeps_the_refresh_token(
    adapter: PinterestAdapter, server: PinterestStandIn, account: AccountContext
) -> None:
    server.expire_access_tokens()
    with pytest.raises(ProviderError) as caught:
        adapter.destination_options(account=account)
    assert caught.value.kind == ErrorKind.AUTH
    refreshed = adapter.refresh(account=account)
    assert refreshed.credentials["refresh_token"] == account.credentials["refresh_token"]
    assert refreshed.credentials["access_token"] != account.credentials["access_token"]
    fresh = AccountContext(external_id=account.external_id, credentials=refreshed.credentials)
    assert adapter.destination_options(account=fresh)["board_id"]


def test_destination_options_list_boards_and_sections(
    adapter: PinterestAdapter, account: AccountContext
) -> None:
    options = adapter.destination_options(account=account)
    assert options["board_id"] == [
        {"label": "Recipes", "value": "1001"},
        {"label": "Travel", "value": "1002"},
    ]
    assert options["board_section_id"] == [
        {"label": "Recipes / Desserts", "value": "2001", "board_id": "1001"}
    ]


def test_image_pin_is_fetched_from_its_url(
    adapter: PinterestAdapter, server: PinterestStandIn, account: AccountContext
) -> None:
    item = image_item(server)
    result = adapter.publish(
        account=account,
        request=request(item, link="https://example.com/cake", board_section_id="2001"),
    )
    assert isinstance(result, PublishResult)
    assert result.external_url == f"https://www.pinterest.com/pin/{result.external_id}/"
    pin = server.pins[result.external_id]
    assert pin["media_source"] == {"source_type": "image_url", "url": item.url}
    assert (pin["title"], pin["description"], pin["link"]) == (
        "Cake",
        "Best cake",
        "https://example.com/cake",
    )
    assert pin["alt_text"] == "A red square"
    assert pin["board_section_id"] == "2001"
    assert server.fetched == [item.url]


def test_a_pin_without_a_board_is_refused_before_any_call(
    adapter: PinterestAdapter, server: PinterestStandIn, account: AccountContext
) -> None:
    req = request(image_item(server))
    req.options.pop("board_id")
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=req)
    assert caught.value.kind == ErrorKind.PERMANENT
    assert server.posts_accepted == 0


def test_video_pin_uploads_waits_for_processing_and_pins_once(
    adapter: PinterestAdapter, server: PinterestStandIn, account: AccountContext
) -> None:
    result, seen = drive(adapter, account, request(video_item(), profile="pinterest.video"))
    assert [p.stage for p in seen] == ["processing"] * 2
    assert seen[0].state["media_id"]
    pin = server.pins[result.external_id]
    assert pin["media_source"] == {
        "source_type": "video_id",
        "media_id": seen[0].state["media_id"],
        "cover_image_key_frame_time": 0,
    }
    assert server.stats()["counters"]["uploads"] == 1
    assert server.posts_accepted == 1


def test_a_file_that_fails_processing_fails_the_send(
    adapter: PinterestAdapter, server: PinterestStandIn, account: AccountContext
) -> None:
    broken = video_item(b"\x00" * 4096)
    with pytest.raises(ProviderError) as caught:
        drive(adapter, account, request(broken, profile="pinterest.video"))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert server.posts_accepted == 0


def test_rate_limit_is_a_wait_with_retry_after(
    adapter: PinterestAdapter, server: PinterestStandIn, account: AccountContext
) -> None:
    server.set_faults(rate_limit={"count": 1, "retry_after": 7})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request(image_item(server)))
    assert caught.value.kind == ErrorKind.RATE_LIMITED
    assert caught.value.retry_after == 7
    assert server.posts_accepted == 0


def test_a_lost_answer_is_reconciled_from_the_board_without_a_second_pin(
    adapter: PinterestAdapter, server: PinterestStandIn, account: AccountContext
) -> None:
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 3})
    req = request(image_item(server))
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=req)
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    found = adapter.reconcile(account=account, request=req)
    assert isinstance(found, PublishResult)
    assert found.external_id in server.pins
    assert server.posts_accepted == 1
    other = request(image_item(server), text="Another cake")
    assert adapter.reconcile(account=account, request=other) is None


def test_delete_and_metrics(
    adapter: PinterestAdapter, server: PinterestStandIn, account: AccountContext
) -> None:
    result = adapter.publish(account=account, request=request(image_item(server)))
    assert isinstance(result, PublishResult)
    server.pins[result.external_id]["metrics"] = {"IMPRESSION": 120, "SAVE": 7, "PIN_CLICK": 3}
    metrics = adapter.metrics(account=account, external_id=result.external_id)
    assert (metrics.views, metrics.saves) == (120, 7)
    adapter.delete(account=account, external_id=result.external_id)
    assert result.external_id not in server.pins
    adapter.delete(account=account, external_id=result.external_id)  # already gone: no error
    assert (
        adapter.reconcile(
            account=account, request=request(image_item(server)), external_id=result.external_id
        )
        is None
    )


def test_error_body_message_is_reported(
    adapter: PinterestAdapter, server: PinterestStandIn, account: AccountContext
) -> None:
    req = request(image_item(server), board_id="9999")
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=req)
    assert "Board not found" in str(caught.value)
    assert caught.value.kind == ErrorKind.PERMANENT


def test_capabilities_are_exact(adapter: PinterestAdapter) -> None:
    from providers.base import describe

    caps = adapter.capabilities
    assert (caps.supports_refresh, caps.supports_revoke, caps.pkce) == (True, False, False)
    assert caps.required_scopes == ("boards:read", "pins:read", "pins:write", "user_accounts:read")
    image, video = caps.profile("pinterest.image"), caps.profile("pinterest.video")
    assert image is not None
    assert video is not None
    assert (image.media.by_url, video.media.by_url) == (True, False)
    assert (image.media.max_count, video.media.max_count) == (1, 1)
    assert image.video is None
    assert video.video is not None
    assert (video.video.min_seconds, video.video.max_seconds) == (4, 900)
    assert image.text_limit == video.text_limit == 500
    options = {o.name: o for o in image.options}
    assert options["board_id"].required
    assert (options["title"].max_length, options["alt_text"].max_length) == (100, 500)
    described = describe(adapter)
    assert described["provider"] == "pinterest"


def test_a_lost_video_pin_answer_is_reconciled_not_pinned_again(
    adapter: PinterestAdapter, server: PinterestStandIn, account: AccountContext
) -> None:
    req = request(video_item(), profile="pinterest.video")
    answer = adapter.publish(account=account, request=req)
    assert isinstance(answer, Pending)
    state = dict(answer.state)
    answer = adapter.resume(account=account, request=req, state=state)
    assert isinstance(answer, Pending)
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 3})
    with pytest.raises(ProviderError) as caught:
        adapter.resume(account=account, request=req, state=dict(answer.state))
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    req.send_state = dict(answer.state)
    found = adapter.reconcile(account=account, request=req)
    assert isinstance(found, PublishResult)
    assert server.posts_accepted == 1
    assert server.stats()["counters"]["media_registered"] == 1


def test_a_video_not_yet_pinned_goes_on_after_reconcile(
    adapter: PinterestAdapter, server: PinterestStandIn, account: AccountContext
) -> None:
    req = request(video_item(), profile="pinterest.video")
    answer = adapter.publish(account=account, request=req)
    assert isinstance(answer, Pending)
    req.send_state = dict(answer.state)
    again = adapter.reconcile(account=account, request=req)
    assert isinstance(again, Pending)
    assert again.state["media_id"] == answer.state["media_id"]
    assert server.posts_accepted == 0


def test_destination_options_follow_the_bookmark_pages(
    adapter: PinterestAdapter, account: AccountContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(adapter, "page_size", 1)
    options = adapter.destination_options(account=account)
    assert [b["value"] for b in options["board_id"]] == ["1001", "1002"]
    assert [s["value"] for s in options["board_section_id"]] == ["2001"]


def test_an_interrupted_upload_is_sent_again_and_pinned_once(
    adapter: PinterestAdapter, server: PinterestStandIn, account: AccountContext
) -> None:
    """The upload form refused mid-way: the send fails as a retry (no Pin can exist yet, the
    send state holds no media); the retry registers and uploads again, then pins once."""
    server.set_faults(break_uploads=1)
    req = request(video_item(), profile="pinterest.video")
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=req)
    assert caught.value.kind in (ErrorKind.TRANSIENT, ErrorKind.RATE_LIMITED)
    result, _ = drive(adapter, account, req)
    counters = server.stats()["counters"]
    assert (counters["uploads_broken"], counters["uploads"], counters["media_registered"]) == (
        1,
        1,
        2,
    )
    assert server.posts_accepted == 1
    assert result.external_id in server.pins
