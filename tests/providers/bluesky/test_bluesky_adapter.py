"""Bluesky adapter against the stand-in PDS (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import pytest

from providers.base import AccountContext, ErrorKind, ProviderError, PublishRequest
from providers.bluesky import (
    bluesky_graphemes,
    bluesky_length,
    record_key_for,
)
from tests.providers import assert_no_secret, media_item, tiny_png
from tests.providers.bluesky.conftest import connect
from tests.providers.bluesky.standin import ACCOUNTS

HERALD = ACCOUNTS["herald.test"]
FRIEND = ACCOUNTS["friend.test"]
FAMILY = "👨\u200d👩\u200d👧\u200d👦"  # one grapheme, seven code points, 25 UTF-8 bytes


def post(text: str = "Hello from Herald", key: str = "dest-1", **kwargs) -> PublishRequest:
    return PublishRequest(profile="bluesky.post", text=text, idempotency_key=key, **kwargs)


def secrets_of(account: AccountContext) -> list[str]:
    return [
        HERALD["password"],
        account.credentials["access_jwt"],
        account.credentials["refresh_jwt"],
    ]


def test_connect_creates_a_session(adapter, server) -> None:
    connected = adapter.connect_with_credentials(
        fields={"handle": "@herald.test", "app_password": HERALD["password"]}
    )
    assert connected.external_id == HERALD["did"]
    assert connected.username == "herald.test"
    assert connected.display_name == "Herald Test"
    assert connected.instance_url == server.url
    assert connected.credentials["pds_url"] == server.url
    assert connected.credentials["access_jwt"].count(".") == 2
    assert connected.credentials["refresh_jwt"]
    assert connected.expires_at is not None


def test_wrong_app_password_is_auth(adapter) -> None:
    with pytest.raises(ProviderError) as caught:
        adapter.connect_with_credentials(
            fields={"handle": "herald.test", "app_password": "nope-nope-nope"}
        )
    assert caught.value.kind == ErrorKind.AUTH
    assert_no_secret(caught.value, ["nope-nope-nope"])


def test_publish_text_with_a_deterministic_record_key(adapter, server, account) -> None:
    result = adapter.publish(account=account, request=post(options={"language": "en"}))
    rkey = record_key_for("dest-1")
    assert result.external_id == f"at://{HERALD['did']}/app.bsky.feed.post/{rkey}"
    assert result.external_url == f"https://bsky.app/profile/herald.test/post/{rkey}"
    assert server.posts_accepted == 1
    assert len(rkey) == 13
    assert rkey[0] in "234567abcdefghij"


def test_facets_use_utf8_byte_offsets(adapter, server, account) -> None:
    url = "https://example.com/ünï?q=1"
    text = f"Olá {FAMILY} @friend.test lies {url}, and @nobody.test too"
    adapter.publish(account=account, request=post(text=text))
    facets = server.posts[0]["facets"]
    raw = text.encode("utf-8")
    features = [
        (f["features"][0]["$type"], raw[f["index"]["byteStart"] : f["index"]["byteEnd"]].decode())
        for f in facets
    ]
    assert features == [
        ("app.bsky.richtext.facet#mention", "@friend.test"),
        ("app.bsky.richtext.facet#link", url),
    ]
    mention = facets[0]["features"][0]
    assert mention["did"] == FRIEND["did"]
    # Byte offsets differ from character offsets because of the non-ASCII text before them.
    assert facets[1]["index"]["byteStart"] > text.index(url)


def test_graphemes_count_as_one(adapter, server, account) -> None:
    assert bluesky_graphemes(FAMILY) == 1
    assert bluesky_graphemes("e\u0301") == 1
    text = "Hi " + FAMILY + "x" * 296  # 300 graphemes, 306 code points
    assert len(text) == 306
    assert bluesky_length(text) == 300
    adapter.publish(account=account, request=post(text=text))
    assert server.posts_accepted == 1
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post(text=text + "!", key="too-long"))
    assert caught.value.kind == ErrorKind.PERMANENT
    # The 3000-byte cap is part of the same count: 200 families are 200 graphemes but 5000 bytes.
    assert bluesky_length(FAMILY * 200) == 500


def test_publish_with_an_image(adapter, server, account) -> None:
    adapter.publish(
        account=account, request=post(media=[media_item(tiny_png(4, 2), alt_text="red")])
    )
    assert server.counters["blobs_uploaded"] == 1
    assert server.posts[0]["images"] == 1
    stored = next(iter(server.records.values()))["value"]
    image = stored["embed"]["images"][0]
    assert image["alt"] == "red"
    assert image["aspectRatio"] == {"width": 4, "height": 2}


def test_oversized_image_is_refused_before_upload(adapter, server, account) -> None:
    big = media_item(b"\x89PNG" + b"0" * 1_000_001)
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post(media=[big]))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert server.counters["blobs_uploaded"] == 0


def test_same_idempotency_key_makes_one_post(adapter, server, account) -> None:
    first = adapter.publish(account=account, request=post(key="same"))
    second = adapter.publish(account=account, request=post(key="same"))
    assert first == second
    assert server.posts_accepted == 1
    assert server.counters["duplicate_rkeys"] == 1  # the PDS refused the second create


@pytest.mark.parametrize("standard_header", [True, False])
def test_rate_limit_carries_retry_after(adapter, server, account, standard_header) -> None:
    server.set_faults(
        rate_limit={"count": 1, "retry_after": 30, "standard_header": standard_header}
    )
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.RATE_LIMITED
    assert caught.value.retry_after == pytest.approx(30, abs=1.5)  # RateLimit-Reset (epoch)


def test_server_error_is_transient(adapter, server, account) -> None:
    server.set_faults(server_error={"count": 1, "status": 502})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.TRANSIENT
    assert server.posts_accepted == 0


def test_accept_then_timeout_is_ambiguous_and_reconciled(adapter, server, account) -> None:
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 2.5})
    request = post(key="slow")
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request)
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    assert server.posts_accepted == 1
    found = adapter.reconcile(account=account, request=request)
    assert found is not None
    assert found.external_id == server.posts[0]["uri"]
    assert adapter.reconcile(account=account, request=post(key="never-sent")) is None
    # A retry after reconcile would not duplicate either.
    assert adapter.publish(account=account, request=request) == found
    assert server.posts_accepted == 1


def test_expired_access_token_is_refreshed_once(adapter, server, account) -> None:
    seen: list[dict[str, str]] = []
    account.on_credentials_changed = seen.append
    old_access = account.credentials["access_jwt"]
    server.set_faults(expire_tokens=True)
    result = adapter.publish(account=account, request=post())
    assert result.external_id
    assert server.posts_accepted == 1
    assert server.counters["sessions_refreshed"] == 1
    assert len(seen) == 1
    assert seen[0]["access_jwt"] != old_access
    assert account.credentials["access_jwt"] == seen[0]["access_jwt"]


def test_revoked_grant_is_auth(adapter, server, account) -> None:
    server.set_faults(reject_tokens=True)
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.AUTH
    assert caught.value.action == "reconnect"
    assert_no_secret(caught.value, secrets_of(account))


def test_revoke_ends_the_session(adapter, server, account) -> None:
    adapter.revoke(account=account)
    assert server.counters["sessions_deleted"] == 1
    with pytest.raises(ProviderError) as caught:
        adapter.refresh(account=account)
    assert caught.value.kind == ErrorKind.AUTH
    assert_no_secret(caught.value, secrets_of(account))


def test_refresh_rotates_tokens(adapter, account) -> None:
    fresh = adapter.refresh(account=account)
    assert fresh.credentials["refresh_jwt"] != account.credentials["refresh_jwt"]
    assert fresh.credentials["pds_url"] == account.credentials["pds_url"]
    assert fresh.external_id == account.external_id


def test_permanent_rejection(adapter, server, account) -> None:
    server.set_faults(
        permanent={"count": 1, "status": 400, "message": "Invalid app.bsky.feed.post record"}
    )
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "InvalidRequest" in caught.value.message
    assert_no_secret(caught.value, secrets_of(account))


def test_metrics(adapter, server, account) -> None:
    result = adapter.publish(account=account, request=post())
    server.set_counts(result.external_id, likes=4, replies=1, reposts=2)
    metrics = adapter.metrics(account=account, external_id=result.external_id)
    assert (metrics.likes, metrics.comments, metrics.reposts) == (4, 1, 2)


def test_repost_and_unrepost(adapter, server, account) -> None:
    friend = connect(adapter, "friend.test")
    original = adapter.publish(account=friend, request=post(text="worth sharing", key="f-1"))
    repost = adapter.repost(account=account, external_id=original.external_id)
    assert "/app.bsky.feed.repost/" in repost.external_id
    assert repost.external_url == original.external_url
    assert adapter.metrics(account=account, external_id=original.external_id).reposts == 1
    again = adapter.repost(account=account, external_id="", source_url=original.external_url)
    assert again.external_id == repost.external_id  # deterministic key: still one repost
    assert server.counters["reposts"] == 1
    adapter.unrepost(account=account, repost_id=repost.external_id)
    assert adapter.metrics(account=account, external_id=original.external_id).reposts == 0


def test_destination_options(adapter, account) -> None:
    options = adapter.destination_options(account=account, language="en")
    assert {"label": "Japanese", "value": "ja"} in options["language"]
