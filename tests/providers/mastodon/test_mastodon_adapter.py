"""Mastodon adapter against the stand-in instance (real HTTP on 127.0.0.1), video included."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from providers import PROVIDERS, all_adapters, get_adapter
from providers.base import (
    AccountContext,
    ErrorKind,
    MediaItem,
    NotSupported,
    Pending,
    ProviderError,
    PublishRequest,
    PublishResult,
)
from providers.mastodon import MastodonAdapter, mastodon_length
from tests.providers import assert_no_secret, media_item
from tests.providers.mastodon.standin import FIXTURE_TOKEN, MastodonStandIn
from tests.video_support import make_video

REDIRECT = "https://herald.example/api/v1/accounts/oauth/callback"


@pytest.fixture(scope="module")
def server() -> Iterator[MastodonStandIn]:
    with MastodonStandIn() as standin:
        yield standin


@pytest.fixture(autouse=True)
def _fresh(server: MastodonStandIn) -> None:
    server.reset()
    server.media_polls = 0  # images processed at once (200); see the 202 test below


@pytest.fixture
def adapter(settings, monkeypatch) -> MastodonAdapter:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 1.0
    adapter = get_adapter("mastodon")
    assert isinstance(adapter, MastodonAdapter)
    return adapter


@pytest.fixture
def account(server: MastodonStandIn) -> AccountContext:
    return AccountContext(
        external_id="1",
        credentials={"access_token": FIXTURE_TOKEN},
        instance_url=server.url,
        username="herald@127.0.0.1",
    )


def post(text: str = "Hello from Herald", key: str = "dest-1", **kwargs) -> PublishRequest:
    return PublishRequest(profile="mastodon.post", text=text, idempotency_key=key, **kwargs)


def test_registry_knows_the_four_providers(settings) -> None:
    assert PROVIDERS[:4] == ("mastodon", "bluesky", "discord_webhook", "telegram")
    assert (
        "webhook" in PROVIDERS
    )  # the generic signed webhook (tests/providers/webhook/test_webhook_adapter.py)
    assert "feed" in PROVIDERS  # the built-in Herald feed (tests/publishing/test_provider_feed.py)
    assert [a.capabilities.provider for a in all_adapters()] == list(PROVIDERS)
    with pytest.raises(KeyError):
        get_adapter("myspace")


def test_oauth_connect_registers_an_app_and_uses_pkce(adapter, server) -> None:
    start = adapter.begin_authorization(
        redirect_uri=REDIRECT, state="st-1", instance_url=server.url
    )
    assert start.app["client_id"]
    assert start.app["client_secret"]
    query = parse_qs(urlsplit(start.authorization_url).query)
    assert query["code_challenge_method"] == ["S256"]
    assert query["scope"] == ["read write"]
    assert query["state"] == ["st-1"]
    assert 43 <= len(start.code_verifier) <= 128

    # The browser leg: the stand-in approves at once and redirects back with a code.
    redirect = requests.get(start.authorization_url, allow_redirects=False, timeout=5)
    assert redirect.status_code == 302
    code = parse_qs(urlsplit(redirect.headers["Location"]).query)["code"][0]

    connected = adapter.complete_authorization(
        code=code,
        redirect_uri=REDIRECT,
        code_verifier=start.code_verifier,
        instance_url=server.url,
        app=start.app,
    )
    assert connected.external_id == "1"
    assert connected.username == "herald@127.0.0.1"
    assert connected.instance_url == server.url
    assert connected.granted_scopes == ("read", "write")
    assert connected.credentials["access_token"]
    assert server.counters["apps_registered"] == 1

    # The app is reused for the same instance and redirect URI.
    again = adapter.begin_authorization(
        redirect_uri=REDIRECT, state="st-2", instance_url=server.url, app=start.app
    )
    assert again.app == start.app
    assert server.counters["apps_registered"] == 1


def test_token_exchange_with_a_wrong_verifier_is_auth(adapter, server) -> None:
    start = adapter.begin_authorization(redirect_uri=REDIRECT, state="s", instance_url=server.url)
    location = requests.get(start.authorization_url, allow_redirects=False, timeout=5).headers[
        "Location"
    ]
    code = parse_qs(urlsplit(location).query)["code"][0]
    with pytest.raises(ProviderError) as caught:
        adapter.complete_authorization(
            code=code,
            redirect_uri=REDIRECT,
            code_verifier="x" * 64,
            instance_url=server.url,
            app=start.app,
        )
    assert caught.value.kind == ErrorKind.AUTH
    assert_no_secret(caught.value, [code, start.app["client_secret"], "x" * 64])


def test_publish_text(adapter, server, account) -> None:
    result = adapter.publish(
        account=account, request=post(options={"visibility": "unlisted", "language": "en"})
    )
    assert result.external_id
    assert result.external_url == f"{server.url}/@herald/{result.external_id}"
    assert server.posts_accepted == 1
    assert server.posts[0]["visibility"] == "unlisted"
    assert server.posts[0]["idempotency_key"] == "dest-1"


def test_an_image_the_server_processes_later_is_a_long_send(adapter, server, account) -> None:
    """``POST /api/v2/media`` answers 202 for an image, then ``GET /api/v1/media/:id``
    206 twice: the send answers Pending at once (no thread waits in it), each check is one
    status read, and the status is posted once the image is processed, with one upload."""
    server.media_polls = 3  # 202 on upload, then 206 twice, then 200
    request = post(media=[media_item(alt_text="a red pixel")])
    started = time.monotonic()
    pending = adapter.publish(account=account, request=request)
    assert time.monotonic() - started < 0.5, "no polling inside the send"
    assert isinstance(pending, Pending)
    assert pending.stage == "processing"
    assert pending.check_after_seconds == adapter.media_check_seconds
    (media_id,) = pending.state["media_ids"]
    uploaded = server.media[media_id]  # the streamed form carried the file and its alt text
    assert (uploaded["size"], uploaded["description"]) == (request.media[0].size, "a red pixel")
    for _ in range(2):
        pending = adapter.resume(account=account, request=request, state=pending.state)
        assert isinstance(pending, Pending), "206: still processing"
    assert server.posts_accepted == 0
    result = adapter.resume(account=account, request=request, state=pending.state)
    assert isinstance(result, PublishResult)
    assert result.external_id
    assert server.counters["media_uploads"] == 1
    assert server.posts_accepted == 1
    assert server.posts[0]["media"] == 1


def test_media_rules_are_checked_before_any_upload(adapter, server, account) -> None:
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post(media=[media_item() for _ in range(5)]))
    assert caught.value.kind == ErrorKind.PERMANENT
    with pytest.raises(ProviderError):
        adapter.publish(account=account, request=post(media=[media_item(mime_type="image/tiff")]))
    assert server.counters["media_uploads"] == 0


def test_counting_follows_mastodon_rules(adapter, server, account) -> None:
    long_url = "https://example.com/" + "a" * 300
    assert mastodon_length(long_url) == 23
    assert mastodon_length("See https://example.com/x.") == len("See ") + 23 + 1
    assert mastodon_length("hi @someone@very.long.instance.example") == len("hi @someone")
    assert mastodon_length("👨‍👩‍👧‍👦") == 1  # one grapheme cluster
    profile = adapter.capabilities.profile("mastodon.post")
    assert profile is not None
    assert profile.text_limit == 500

    text = "x" * 470 + " " + long_url  # 771 characters, 494 by Mastodon's count
    assert len(text) > 500
    assert mastodon_length(text) == 494
    adapter.publish(account=account, request=post(text=text))
    assert server.posts_accepted == 1

    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post(text="y" * 501, key="other"))
    assert caught.value.kind == ErrorKind.PERMANENT


def test_idempotency_key_is_sent_and_honoured(adapter, server, account) -> None:
    first = adapter.publish(account=account, request=post(key="same-key"))
    second = adapter.publish(account=account, request=post(key="same-key"))
    assert first.external_id == second.external_id
    assert server.posts_accepted == 1
    assert server.counters["idempotent_replays"] == 1


@pytest.mark.parametrize("standard_header", [True, False])
def test_rate_limit_carries_retry_after(adapter, server, account, standard_header) -> None:
    server.set_faults(rate_limit={"count": 1, "retry_after": 7, "standard_header": standard_header})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    error = caught.value
    assert error.kind == ErrorKind.RATE_LIMITED
    assert error.action == "retry"
    assert error.retry_after == pytest.approx(7, abs=1.5)  # X-RateLimit-Reset when no Retry-After
    assert server.posts_accepted == 0
    adapter.publish(account=account, request=post())
    assert server.posts_accepted == 1


@pytest.mark.parametrize(
    ("status", "kind"),
    [(500, ErrorKind.TRANSIENT), (503, ErrorKind.TRANSIENT), (504, ErrorKind.AMBIGUOUS)],
)
def test_server_errors(adapter, server, account, status, kind) -> None:
    server.set_faults(server_error={"count": 1, "status": status})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == kind
    assert caught.value.status == status


def test_accept_then_timeout_is_ambiguous_and_reconciled(adapter, server, account) -> None:
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 2.5})
    request = post(key="slow-1", first_attempt_at=datetime.now(UTC))
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request)
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    assert server.posts_accepted == 1

    found = adapter.reconcile(account=account, request=request)
    assert found is not None
    assert found.external_id == server.posts[0]["id"]
    assert server.posts_accepted == 1

    # Found by id as well; an unknown id is absent.
    assert (
        adapter.reconcile(account=account, request=request, external_id=found.external_id) == found
    )
    assert adapter.reconcile(account=account, request=request, external_id="999") is None


def test_reconcile_resends_with_the_same_key_inside_the_hour(adapter, server, account) -> None:
    # Direct messages do not show in the account's statuses, so the scan cannot see this one:
    # the re-send with the same Idempotency-Key returns the original status instead of a new one.
    request = post(key="dm-1", options={"visibility": "direct"}, first_attempt_at=datetime.now(UTC))
    original = adapter.publish(account=account, request=request)
    found = adapter.reconcile(account=account, request=request)
    assert found is not None
    assert found.external_id == original.external_id
    assert server.posts_accepted == 1
    assert server.counters["idempotent_replays"] == 1


def test_reconcile_reports_absence_only_when_the_window_was_covered(
    adapter, server, account
) -> None:
    old = post(key="never-sent", first_attempt_at=datetime.now(UTC) - timedelta(hours=2))
    assert adapter.reconcile(account=account, request=old) is None
    assert server.posts_accepted == 0


def test_reconcile_without_a_covered_window_says_it_cannot_tell(adapter, server, account) -> None:
    with server.lock:
        for n in range(40):
            server._store("1", text=f"busy account {n}")
    request = post(key="unknown-age")  # no first_attempt_at, 40+ statuses: no certainty
    with pytest.raises(NotSupported) as caught:
        adapter.reconcile(account=account, request=request)
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    assert server.posts_accepted == 0


def test_revoked_grant_is_auth_and_leaks_no_token(adapter, server, account) -> None:
    server.set_faults(reject_tokens=True)
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.AUTH
    assert caught.value.action == "reconnect"
    assert_no_secret(caught.value, [FIXTURE_TOKEN])


def test_permanent_rejection(adapter, server, account) -> None:
    server.set_faults(
        permanent={"count": 1, "status": 422, "message": "Validation failed: nope " + "z" * 400}
    )
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    error = caught.value
    assert error.kind == ErrorKind.PERMANENT
    assert error.action == "edit"
    assert "Validation failed: nope" in error.message
    assert len(error.message) < 300  # provider text truncated to 200 characters
    assert_no_secret(error, [FIXTURE_TOKEN])


def test_unreachable_instance_is_transient(adapter, account) -> None:
    with socket_closed_port() as port:
        account.instance_url = f"http://127.0.0.1:{port}"
        with pytest.raises(ProviderError) as caught:
            adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.TRANSIENT


def test_private_instances_are_refused_by_default(settings, server) -> None:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = False
    adapter = get_adapter("mastodon")
    for url in (
        server.url,
        server.url.replace("http://", "https://"),
        "https://localhost",
        "https://10.1.2.3",
    ):
        with pytest.raises(ProviderError) as caught:
            adapter.begin_authorization(redirect_uri=REDIRECT, state="s", instance_url=url)
        assert caught.value.kind == ErrorKind.PERMANENT
    assert server.counters["apps_registered"] == 0


def test_destination_options(adapter, account) -> None:
    options = adapter.destination_options(account=account, language="de")
    assert [o["value"] for o in options["visibility"]] == [
        "public",
        "unlisted",
        "private",
        "direct",
    ]
    assert options["visibility"][0]["label"] == "Öffentlich"
    assert {"label": "Deutsch", "value": "de"} in options["language"]
    english = adapter.destination_options(account=account, language="xx")
    assert english["visibility"][2]["label"] == "Followers only"
    assert {"label": "German", "value": "de"} in english["language"]


def test_metrics(adapter, server, account) -> None:
    result = adapter.publish(account=account, request=post())
    server.set_counts(result.external_id, favourites=5, replies=2, reblogs=3)
    metrics = adapter.metrics(account=account, external_id=result.external_id)
    assert (metrics.likes, metrics.comments, metrics.reposts, metrics.views) == (5, 2, 3, 0)


def test_repost_and_unrepost(adapter, server, account) -> None:
    original = adapter.publish(account=account, request=post())
    boost = adapter.repost(account=account, external_id=original.external_id)
    assert boost.external_id != original.external_id
    assert boost.external_url == original.external_url
    assert adapter.metrics(account=account, external_id=original.external_id).reposts == 1
    again = adapter.repost(account=account, external_id="", source_url=original.external_url)
    assert again.external_id == boost.external_id  # reblog is idempotent
    adapter.unrepost(account=account, repost_id=boost.external_id)
    assert adapter.metrics(account=account, external_id=original.external_id).reposts == 0


def test_refresh_and_revoke(adapter, server) -> None:
    start = adapter.begin_authorization(redirect_uri=REDIRECT, state="s", instance_url=server.url)
    location = requests.get(start.authorization_url, allow_redirects=False, timeout=5).headers[
        "Location"
    ]
    code = parse_qs(urlsplit(location).query)["code"][0]
    connected = adapter.complete_authorization(
        code=code,
        redirect_uri=REDIRECT,
        code_verifier=start.code_verifier,
        instance_url=server.url,
        app=start.app,
    )
    context = AccountContext(
        external_id=connected.external_id,
        credentials=connected.credentials,
        instance_url=server.url,
        app=start.app,
    )
    assert adapter.refresh(account=context).external_id == "1"
    adapter.revoke(account=context)
    with pytest.raises(ProviderError) as caught:
        adapter.refresh(account=context)
    assert caught.value.kind == ErrorKind.AUTH
    assert_no_secret(
        caught.value, [connected.credentials["access_token"], start.app["client_secret"]]
    )


class socket_closed_port:
    """A port on 127.0.0.1 that nothing listens on."""

    def __enter__(self) -> int:
        import socket

        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        return self.port

    def __exit__(self, *exc: object) -> None:
        return None


# --- Video: a long send (docs/decisions/0020-long-sends.md), real videos ----------------------


def video_item(kind: str = "mp4") -> MediaItem:
    data = make_video(kind)
    mime = {"mp4": "video/mp4", "mov": "video/quicktime", "webm": "video/webm"}[kind]
    return MediaItem(
        name=f"clip.{kind}", mime_type=mime, size=len(data), open=lambda: io.BytesIO(data)
    )


def video_post(item: MediaItem | None = None) -> PublishRequest:
    return PublishRequest(
        profile="mastodon.post",
        text="A clip",
        idempotency_key="dest-video",
        media=[item or video_item()],
    )


def test_a_video_is_a_long_send_resumed_once_processed(adapter, server, account) -> None:
    server.set_faults(video_processing_seconds=0.5)
    request = video_post()

    pending = adapter.publish(account=account, request=request)

    assert isinstance(pending, Pending)
    assert pending.stage == "processing"
    assert pending.check_after_seconds == adapter.media_check_seconds
    (media_id,) = pending.state["media_ids"]
    assert pending.state["waiting"] == [media_id]
    assert server.posts_accepted == 0
    again = adapter.resume(account=account, request=request, state=pending.state)
    assert isinstance(again, Pending), "still processing: asked again later"
    assert again.check_after_seconds > pending.check_after_seconds  # waits longer each time
    time.sleep(0.6)

    result = adapter.resume(account=account, request=request, state=again.state)

    assert isinstance(result, PublishResult)
    assert server.posts_accepted == 1
    assert server.posts[0]["idempotency_key"] == "dest-video"
    assert server.posts[0]["media"] == 1
    assert server.counters["video_uploads"] == 1
    assert server.statuses[result.external_id]["media_ids"] == [media_id]


@pytest.mark.parametrize("kind", ["mov", "webm"])
def test_other_containers_are_uploaded_as_they_are(adapter, server, account, kind) -> None:
    server.set_faults(video_processing_seconds=0)
    request = video_post(video_item(kind))
    pending = adapter.publish(account=account, request=request)
    assert isinstance(pending, Pending)
    assert isinstance(
        adapter.resume(account=account, request=request, state=pending.state), PublishResult
    )


def test_a_failed_processing_is_permanent_with_the_servers_reason(adapter, server, account) -> None:
    server.set_faults(video_processing_seconds=0, video_processing_fails=True)
    request = video_post()
    pending = adapter.publish(account=account, request=request)
    assert isinstance(pending, Pending)

    with pytest.raises(ProviderError) as caught:
        adapter.resume(account=account, request=request, state=pending.state)

    assert caught.value.kind == ErrorKind.PERMANENT
    assert "could not process the media" in caught.value.message
    assert "Error processing thumbnail" in caught.value.message
    assert server.posts_accepted == 0


def test_the_servers_own_size_limit_is_read_before_the_upload(adapter, server, account) -> None:
    item = video_item()
    server.set_faults(video_size_limit=item.size - 1)

    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=video_post(item))

    assert caught.value.kind == ErrorKind.PERMANENT
    assert f"up to {item.size - 1} bytes" in caught.value.message
    assert server.counters["video_uploads"] == 0


def test_the_stand_in_refuses_an_oversized_upload_with_mastodons_body(
    adapter, server, account, monkeypatch
) -> None:
    """A server whose limit the adapter did not read (an older server without
    ``/api/v2/instance``) refuses the upload itself: a permanent 422 with Mastodon's text."""
    item = video_item()
    server.set_faults(video_size_limit=item.size - 1)
    monkeypatch.setattr(adapter, "_check_video_limits", lambda *args: None)

    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=video_post(item))

    assert caught.value.kind == ErrorKind.PERMANENT
    assert "File file size must be less than" in caught.value.message


def test_reconcile_of_a_video_inside_the_window_sends_again_from_the_start(
    adapter, server, account
) -> None:
    """Nothing found and the key still honoured: ``None``, the engine sends again under the
    same key (uploading again), instead of a re-send that would wait for processing."""
    request = video_post()
    request.first_attempt_at = datetime.now(UTC)

    assert adapter.reconcile(account=account, request=request) is None
    assert server.counters["video_uploads"] == 0


def test_a_large_video_is_uploaded_in_bounded_memory(settings, tmp_path) -> None:
    """A 30 MB video stored on disk goes to ``POST /api/v2/media`` streamed: the Python heap
    of this process grows by a few MB, not by the file (read whole and copied into the
    multipart body, it grew by twice the file). The stand-in runs as its own process so its
    copy of the body is not counted here."""
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 10.0
    stored = tmp_path / "clip.mp4"
    size = 30 * 1024 * 1024
    with stored.open("wb") as handle:
        handle.write(make_video("mp4"))
        handle.truncate(size)  # zero padding after the clip, as players skip a tail
    item = MediaItem(
        name="clip.mp4",
        mime_type="video/mp4",
        size=size,
        open=lambda: stored.open("rb"),
        alt_text="A grey ramp",
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.providers.mastodon.standin", "--port", "0"],
        cwd=Path(__file__).resolve().parents[3],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base = json.loads(proc.stdout.readline())["url"]
        account = AccountContext(
            external_id="1",
            credentials={"access_token": FIXTURE_TOKEN},
            instance_url=base,
            username="herald@127.0.0.1",
        )
        adapter = get_adapter("mastodon")
        tracemalloc.start()
        try:
            pending = adapter.publish(account=account, request=video_post(item))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        stats = requests.get(f"{base}/__control/stats", timeout=5).json()
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
    assert isinstance(pending, Pending)  # the 202 path: processed later, resumed
    assert stats["counters"]["video_uploads"] == 1
    assert peak < 4 * 1024 * 1024, f"heap peak {peak / 1e6:.1f} MB for a {size / 1e6:.0f} MB video"
