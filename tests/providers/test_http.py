"""The shared HTTP helper: outcome classification, Retry-After, sanitizing, SSRF guard."""

from __future__ import annotations

import socket
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
import requests
from urllib3.exceptions import MaxRetryError, NewConnectionError, ProtocolError

from providers import get_adapter
from providers.base import ErrorKind, OptionSpec, OutputProfile, ProviderError, PublishRequest
from providers.helpers import precheck
from providers.http import USER_AGENT, HttpClient
from providers.http_errors import ErrorDetail, classify, sanitize
from providers.retry_after import parse_retry_after
from providers.url_safety import check_public_url
from tests.providers.telegram.standin import TelegramStandIn


def response(
    status: int, body: bytes = b"", headers: dict[str, str] | None = None
) -> requests.Response:
    made = requests.Response()
    made.status_code = status
    made._content = body
    made.headers.update(headers or {})
    return made


@pytest.mark.parametrize(
    ("status", "write", "kind"),
    [
        (400, True, ErrorKind.PERMANENT),
        (401, True, ErrorKind.AUTH),
        (403, False, ErrorKind.AUTH),
        (404, True, ErrorKind.PERMANENT),
        (408, True, ErrorKind.TRANSIENT),
        (409, True, ErrorKind.PERMANENT),
        (422, True, ErrorKind.PERMANENT),
        (429, True, ErrorKind.RATE_LIMITED),
        (500, True, ErrorKind.TRANSIENT),
        (502, True, ErrorKind.TRANSIENT),
        (503, True, ErrorKind.TRANSIENT),
        (504, True, ErrorKind.AMBIGUOUS),
        (504, False, ErrorKind.TRANSIENT),
        (301, True, ErrorKind.PERMANENT),
    ],
)
def test_status_mapping(status, write, kind) -> None:
    error = classify(
        provider="X", operation="post", write=write, response=response(status, b'{"error": "nope"}')
    )
    assert error.kind == kind
    assert error.status == status


def test_retry_after_only_on_rate_limits() -> None:
    limited = classify(
        provider="X",
        operation="post",
        write=True,
        response=response(429, headers={"Retry-After": "12"}),
    )
    assert limited.retry_after == 12
    other = classify(
        provider="X",
        operation="post",
        write=True,
        response=response(503, headers={"Retry-After": "12"}),
    )
    assert other.retry_after is None


def test_retry_after_forms() -> None:
    now = time.time()
    date = format_datetime(datetime.fromtimestamp(now, UTC) + timedelta(seconds=90), usegmt=True)
    iso = (
        (datetime.fromtimestamp(now, UTC) + timedelta(seconds=40))
        .isoformat()
        .replace("+00:00", "Z")
    )
    assert parse_retry_after({"Retry-After": "12"}, now=now) == 12
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(90, abs=1)
    assert parse_retry_after({"X-RateLimit-Reset-After": "1.5"}, now=now) == 1.5
    assert parse_retry_after({"RateLimit-Reset": str(int(now) + 20)}, now=now) == pytest.approx(
        20, abs=1
    )
    assert parse_retry_after({"RateLimit-Reset": "20"}, now=now) == 20
    assert parse_retry_after({"X-RateLimit-Reset": iso}, now=now) == pytest.approx(40, abs=1)
    assert parse_retry_after({"X-RateLimit-Reset": "garbage"}, now=now) is None
    assert parse_retry_after({}, now=now) is None


def test_exception_mapping() -> None:
    refused = requests.exceptions.ConnectionError(
        MaxRetryError(None, "/x", reason=NewConnectionError(None, "Connection refused"))  # type: ignore[arg-type]
    )
    reset = requests.exceptions.ConnectionError(
        ProtocolError("Connection aborted.", ConnectionResetError())
    )
    cases = [
        (requests.exceptions.ConnectTimeout(), True, ErrorKind.TRANSIENT),
        (refused, True, ErrorKind.TRANSIENT),
        (requests.exceptions.ReadTimeout(), True, ErrorKind.AMBIGUOUS),
        (requests.exceptions.ReadTimeout(), False, ErrorKind.TRANSIENT),
        (reset, True, ErrorKind.AMBIGUOUS),
        (reset, False, ErrorKind.TRANSIENT),
        (requests.exceptions.ChunkedEncodingError(), True, ErrorKind.AMBIGUOUS),
        (requests.exceptions.InvalidURL(), True, ErrorKind.PERMANENT),
    ]
    for exc, write, kind in cases:
        assert classify(provider="X", operation="post", write=write, exception=exc).kind == kind, (
            exc
        )


def test_connection_dropped_after_the_request_was_sent_is_ambiguous_for_writes() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]

    def drop() -> None:
        for _ in range(2):
            conn, _ = listener.accept()
            conn.recv(65536)
            conn.close()  # read the request, answer nothing

    thread = threading.Thread(target=drop, daemon=True)
    thread.start()
    client = HttpClient(read_timeout=2, connect_timeout=1)
    with pytest.raises(ProviderError) as write:
        client.request(
            "POST",
            f"http://127.0.0.1:{port}/post",
            provider="X",
            operation="post",
            write=True,
            json_body={"a": 1},
        )
    assert write.value.kind == ErrorKind.AMBIGUOUS
    with pytest.raises(ProviderError) as read:
        client.request(
            "GET", f"http://127.0.0.1:{port}/read", provider="X", operation="read", write=False
        )
    assert read.value.kind == ErrorKind.TRANSIENT
    thread.join(timeout=5)
    listener.close()


def test_sanitize_removes_secrets_and_query_strings() -> None:
    token = "123456:ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdef"
    text = (
        f"failed https://api.example/bot{token}/sendMessage?chat_id=1&secret=s3 "
        "https://discord.com/api/webhooks/1234567/tok_en-VALUE "
        "Authorization: Bearer abc.def.ghi eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln my-app-pass\n"
    )
    clean = sanitize(text, secrets=["my-app-pass"], limit=1000)
    for secret in (
        token,
        "secret=s3",
        "tok_en-VALUE",
        "abc.def.ghi",
        "eyJhbGciOiJIUzI1NiJ9",
        "my-app-pass",
    ):
        assert secret not in clean
    assert "\n" not in clean
    assert len(sanitize("x" * 500)) == 200


def test_provider_message_is_truncated_and_scrubbed() -> None:
    body = b'{"error": "token sekrit-token-123 rejected ' + b"z" * 500 + b'"}'
    error = classify(
        provider="X",
        operation="post",
        write=True,
        response=response(400, body),
        secrets=["sekrit-token-123"],
    )
    assert "sekrit-token-123" not in error.message
    assert len(error.message) <= 250


@pytest.mark.parametrize(
    "url",
    [
        "http://8.8.8.8/",
        "https://127.0.0.1",
        "https://[::1]/",
        "https://[::ffff:127.0.0.1]/",
        "https://169.254.169.254/latest/meta-data",
        "https://10.0.0.8",
        "https://192.168.1.1",
        "https://localhost",
        "https://printer.local",
        "https://user:pw@8.8.8.8",
        "ftp://8.8.8.8",
        "https://",
    ],
)
def test_public_url_guard_refuses(url) -> None:
    with pytest.raises(ProviderError) as caught:
        check_public_url(url, resolve=False)
    assert caught.value.kind == ErrorKind.PERMANENT


def test_public_url_guard_accepts() -> None:
    assert (
        check_public_url("https://8.8.8.8/some/path/", resolve=False) == "https://8.8.8.8/some/path"
    )
    assert check_public_url("https://mastodon.example", resolve=False) == "https://mastodon.example"
    assert check_public_url("http://127.0.0.1:8000/", allow_private=True) == "http://127.0.0.1:8000"


def test_socket_guard_blocks_private_peers_for_user_urls() -> None:
    with TelegramStandIn() as server:
        guarded = HttpClient(read_timeout=1, connect_timeout=1, allow_private=False)
        with pytest.raises(ProviderError) as caught:
            guarded.request(
                "GET",
                f"{server.url}/__control/stats",
                provider="X",
                operation="read",
                write=False,
                user_url=True,
            )
        assert caught.value.kind == ErrorKind.PERMANENT
        # Operator-configured URLs are not guarded; private mode lifts the guard.
        assert (
            guarded.request(
                "GET", f"{server.url}/__control/stats", provider="X", operation="read", write=False
            ).status_code
            == 200
        )
        relaxed = HttpClient(read_timeout=1, connect_timeout=1, allow_private=True)
        assert (
            relaxed.request(
                "GET",
                f"{server.url}/__control/stats",
                provider="X",
                operation="read",
                write=False,
                user_url=True,
            ).status_code
            == 200
        )


def test_client_defaults_and_registry_settings(settings) -> None:
    client = HttpClient()
    assert (client.read_timeout, client.connect_timeout) == (10.0, 5.0)
    assert client._session(False).headers["User-Agent"] == USER_AGENT == "Herald/0.1"
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 3
    adapter = get_adapter("mastodon")
    assert (adapter.http.read_timeout, adapter.http.connect_timeout) == (3.0, 3.0)  # type: ignore[attr-defined]
    assert adapter.http.allow_private is False  # type: ignore[attr-defined]
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 20
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    adapter = get_adapter("mastodon")
    assert (adapter.http.read_timeout, adapter.http.connect_timeout) == (20.0, 5.0)  # type: ignore[attr-defined]
    assert adapter.http.allow_private is True  # type: ignore[attr-defined]


def test_retry_after_forms_that_cannot_be_read_give_way_to_the_next_header() -> None:
    now = time.time()
    assert parse_retry_after({"Retry-After": "soon", "RateLimit-Reset": "7"}, now=now) == 7
    assert parse_retry_after({"Retry-After": "-3"}, now=now) == 0
    assert parse_retry_after({"X-RateLimit-Reset-After": "x", "RateLimit-Reset": "5"}, now=now) == 5
    naive = datetime.fromtimestamp(now + 30, UTC).replace(tzinfo=None).isoformat()
    assert parse_retry_after({"X-RateLimit-Reset": naive}, now=now) == pytest.approx(30, abs=1)
    past = format_datetime(datetime.fromtimestamp(now - 60, UTC), usegmt=True)
    assert parse_retry_after({"Retry-After": past}, now=now) == 0
    assert parse_retry_after({"RateLimit-Reset": "x", "X-RateLimit-Reset": "4"}, now=now) == 4


def test_a_redirect_is_named_and_a_parser_kind_wins_over_the_status() -> None:
    redirect = classify(
        provider="p", operation="post", write=True, response=response(302), host="h"
    )
    assert (redirect.kind, str(redirect)) == (
        ErrorKind.PERMANENT,
        "p: post failed: unexpected redirect (HTTP 302).",
    )
    overridden = classify(
        provider="p",
        operation="post",
        write=True,
        response=response(302, headers={"Retry-After": "9"}),
        detail=ErrorDetail(message="slow down", kind=ErrorKind.RATE_LIMITED, code="88"),
    )
    assert (overridden.kind, str(overridden), overridden.retry_after, overridden.code) == (
        ErrorKind.RATE_LIMITED,
        "p: post failed (HTTP 302): slow down",
        9,
        "88",
    )


def test_precheck_refuses_text_and_options_in_order() -> None:
    profile = OutputProfile(
        key="p.post",
        text_limit=10,
        text_counter=len,
        text_required=True,
        options=(
            OptionSpec(name="lang", required=True, max_length=2),
            OptionSpec(name="mode", choices=("a", "b"), default="a", required=True),
        ),
    )

    def refusal(**fields: Any) -> str:
        with pytest.raises(ProviderError) as caught:
            precheck(
                profile,
                PublishRequest(profile="p.post", idempotency_key="k", **fields),
                provider="P",
            )
        return str(caught.value)

    assert refusal(text=" ", options={"mode": "zz"}) == "P: text is required."
    assert refusal(text="x" * 11) == "P: text is 11 long (characters); the limit is 10."
    assert refusal(text="hi", options={"lang": ""}) == "P: option lang is required."
    assert refusal(text="hi", options={"lang": "en", "mode": "c"}) == (
        "P: option mode has an unsupported value."
    )
    assert refusal(text="hi", options={"lang": "eng"}) == "P: option lang is too long."
    optional_text = OutputProfile(key="p.post", text_limit=10, text_counter=len)
    with pytest.raises(ProviderError, match=r"^P: nothing to publish\.$"):
        precheck(optional_text, PublishRequest("p.post", " ", "k"), provider="P")
    precheck(
        profile,
        PublishRequest(profile="p.post", text="hi", idempotency_key="k", options={"lang": "en"}),
        provider="P",
    )
