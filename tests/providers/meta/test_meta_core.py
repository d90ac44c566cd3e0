"""The shared Meta core against the Graph stand-in base: errors mapped as Meta documents them,
usage headers that pause before a limit, the pinned (and overridable) Graph version,
``appsecret_proof``, ``signed_request`` verification and the Meta app's configuration."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from config import oauth_apps
from providers.base import (
    Capabilities,
    ConnectionMode,
    ErrorKind,
    ProviderError,
)
from providers.http import HttpClient
from providers.meta import GRAPH_VERSION, MetaGraphAdapter, appsecret_proof
from providers.meta import errors as meta_errors
from providers.meta import usage as meta_usage
from providers.meta.signed_request import SignedRequestError, parse_signed_request, sign
from tests.providers.meta.standin import (
    APP_ID,
    APP_SECRET,
    GraphStandIn,
    Reply,
    Request,
    Route,
    signed_request,
)

PAGE = "101000000000001"
OTHER_PAGE = "101000000000002"


class CoreStandIn(GraphStandIn):
    """The base plus one write (``POST /{page}/feed``) and one read of a Page."""

    def build_routes(self) -> list[Route]:
        return [
            Route("POST", self.v(r"/(?P<page>\d+)/feed"), self.feed),
            Route("GET", self.v(r"/(?P<page>\d+)"), self.page),
            *super().build_routes(),
        ]

    def feed(self, request: Request, page: str, **_: str) -> Reply:
        grant = self.grant(request)
        if isinstance(grant, Reply):
            return grant
        self.accept_post({"page": page, "message": request.fields().get("message")})
        return Reply(200, {"id": f"{page}_{len(self.posts)}"})

    def page(self, request: Request, page: str, **_: str) -> Reply:
        grant = self.grant(request)
        if isinstance(grant, Reply):
            return grant
        return Reply(200, {"id": page, "name": "A Page"})


class Probe(MetaGraphAdapter):
    label = "Meta probe"
    capabilities = Capabilities(
        provider="meta_probe", display_name="Meta probe", connection=ConnectionMode.OAUTH2
    )

    def publish(self, **_: Any) -> Any:  # not used here
        raise NotImplementedError

    def read(self, token: str, object_id: str = PAGE) -> dict[str, Any]:
        response = self._graph(
            "GET", f"/{object_id}", operation="page lookup", token=token, object_id=object_id
        )
        body: dict[str, Any] = self._json(response, "page lookup")
        return body

    def post(self, token: str, page: str = PAGE) -> dict[str, Any]:
        response = self._graph(
            "POST",
            f"/{page}/feed",
            operation="post",
            token=token,
            object_id=page,
            write=True,
            data={"message": "hello"},
        )
        body: dict[str, Any] = self._json(response, "post", write=True)
        return body


@pytest.fixture(scope="module")
def server() -> Iterator[CoreStandIn]:
    with CoreStandIn() as standin:
        yield standin


@pytest.fixture(autouse=True)
def _fresh(server: CoreStandIn) -> None:
    server.reset()


def probe(server: CoreStandIn, **app: Any) -> Probe:
    settings = {
        "client_id": APP_ID,
        "client_secret": APP_SECRET,
        "api_url": server.url,
        **app,
    }
    return Probe(http=HttpClient(read_timeout=2, connect_timeout=2), app=settings)


@pytest.fixture
def token(server: CoreStandIn) -> str:
    return server.issue("page", PAGE)


def _error(call: Any) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        call()
    return caught.value


# --- versions and appsecret_proof ---------------------------------------------------------------


def test_calls_use_the_pinned_version_and_send_a_valid_appsecret_proof(
    server: CoreStandIn, token: str
) -> None:
    server.require_proof = True
    assert probe(server).read(token)["id"] == PAGE
    assert server.versions_seen == {GRAPH_VERSION}
    assert server.counters["bad_appsecret_proof"] == 0
    assert appsecret_proof(token, APP_SECRET) != appsecret_proof(token, "another secret")


def test_the_graph_version_is_overridable_and_checked(server: CoreStandIn, token: str) -> None:
    probe(server, graph_version="v25.0").read(token)
    assert server.versions_seen == {"v25.0"}
    assert probe(server, graph_version="24.0").meta.graph_version == "v24.0"
    with pytest.raises(ValueError, match="HERALD_META_GRAPH_VERSION"):
        probe(server, graph_version="latest")
    assert probe(server).meta.authorize_url == (
        f"https://www.facebook.com/{GRAPH_VERSION}/dialog/oauth"
    )


def test_a_wrong_app_secret_is_refused_by_a_proof_checking_app(
    server: CoreStandIn, token: str
) -> None:
    server.require_proof = True
    error = _error(lambda: probe(server, client_secret="not-the-secret").read(token))
    assert error.kind == ErrorKind.PERMANENT
    assert "appsecret_proof" in error.message
    assert "not-the-secret" not in error.message


# --- errors -------------------------------------------------------------------------------------


def test_190_means_reconnect(server: CoreStandIn) -> None:
    error = _error(lambda: probe(server).read("EAA-not-a-token"))
    assert error.kind == ErrorKind.AUTH
    assert error.action == "reconnect"
    assert "fbtrace_id" in error.message
    expired = server.issue("page", PAGE, seconds=10)
    server.age_tokens(60)
    error = _error(lambda: probe(server).read(expired))
    assert error.kind == ErrorKind.AUTH
    assert getattr(error, "code", "") == "190/463"
    assert expired not in error.message


@pytest.mark.parametrize(
    ("code", "subcode", "kind", "words"),
    [
        (368, 1390008, ErrorKind.PERMANENT, "policy reason (not retried)"),
        (36000, 2207026, ErrorKind.PERMANENT, "MP4 or MOV, H.264 or HEVC"),
        (9, 2207042, ErrorKind.RATE_LIMITED, "content publishing limit"),
        (4, 2207051, ErrorKind.PERMANENT, "suspected spam"),
        (-1, 2207001, ErrorKind.TRANSIENT, "try again"),
        (1, 0, ErrorKind.TRANSIENT, "An error occurred"),
        (2, 0, ErrorKind.TRANSIENT, "An error occurred"),
        (200, 0, ErrorKind.AUTH, "An error occurred"),
        (100, 0, ErrorKind.PERMANENT, "An error occurred"),
    ],
)
def test_error_codes_map_as_meta_documents_them(
    server: CoreStandIn, token: str, code: int, subcode: int, kind: ErrorKind, words: str
) -> None:
    server.fail_next(code, subcode, path="/feed")
    error = _error(lambda: probe(server).post(token))
    assert error.kind == kind
    assert words in error.message
    assert server.posts_accepted == 0


def test_a_server_error_after_a_write_is_not_a_plain_retry(server: CoreStandIn, token: str) -> None:
    server.fail_next(2, status=504, path="/feed", transient=True)
    assert _error(lambda: probe(server).post(token)).kind == ErrorKind.AMBIGUOUS
    server.fail_next(2, status=503, method="GET", transient=True)
    assert _error(lambda: probe(server).read(token)).kind == ErrorKind.TRANSIENT


def test_gone_is_code_100_subcode_33(server: CoreStandIn, token: str) -> None:
    server.fail_next(100, 33, message="Object with ID does not exist", path=PAGE)
    with pytest.raises(ProviderError) as caught:
        probe(server).read(token)
    assert meta_errors.gone(caught.value)  # type: ignore[arg-type]


# --- rate limits and usage pauses -----------------------------------------------------------


def test_code_4_pauses_the_whole_app_and_nothing_more_is_sent(
    server: CoreStandIn, token: str
) -> None:
    adapter = probe(server)
    server.fail_next(4, path="/feed")
    error = _error(lambda: adapter.post(token))
    assert error.kind == ErrorKind.RATE_LIMITED
    assert error.retry_after == meta_usage.DEFAULT_PAUSE_SECONDS
    assert error.host_wide is True
    before = server.requests
    for call in (lambda: adapter.post(token, OTHER_PAGE), lambda: adapter.read(token)):
        refused = _error(call)
        assert refused.kind == ErrorKind.RATE_LIMITED
        assert "nothing was sent" in refused.message
        assert 0 < (refused.retry_after or 0) <= meta_usage.DEFAULT_PAUSE_SECONDS
    assert server.requests == before  # refused here, not by Meta


def test_a_page_limit_pauses_that_page_for_the_regain_time_only(
    server: CoreStandIn, token: str
) -> None:
    adapter = probe(server)
    server.fail_next(32, path="/feed", regain_minutes=7, object_id=PAGE)
    error = _error(lambda: adapter.post(token))
    assert error.kind == ErrorKind.RATE_LIMITED
    assert error.retry_after == 7 * 60
    assert error.host_wide is False  # the engine does not pause graph.facebook.com for it
    assert _error(lambda: adapter.post(token)).host_wide is False
    other = server.issue("page", OTHER_PAGE)
    assert adapter.post(other, OTHER_PAGE)["id"].startswith(OTHER_PAGE)


def test_usage_headers_pause_before_the_limit(server: CoreStandIn, token: str) -> None:
    adapter = probe(server)
    server.set_usage(app={"call_count": 62, "total_time": 40, "total_cputime": 12})
    adapter.read(token)
    adapter.read(token)  # 62 % is under the threshold: no pause
    server.set_usage(
        business={
            PAGE: [
                {
                    "type": "pages",
                    "call_count": 93,
                    "total_cputime": 10,
                    "total_time": 11,
                    "estimated_time_to_regain_access": 0,
                }
            ]
        }
    )
    assert adapter.post(token)["id"]  # this answer succeeds and says 93 %
    refused = _error(lambda: adapter.post(token))
    assert refused.kind == ErrorKind.RATE_LIMITED
    assert refused.host_wide is False
    assert server.posts_accepted == 1
    other = server.issue("page", OTHER_PAGE)
    assert adapter.read(other, OTHER_PAGE)["id"] == OTHER_PAGE


def test_the_threshold_is_configurable(server: CoreStandIn, token: str) -> None:
    server.set_usage(app={"call_count": 75, "total_time": 1, "total_cputime": 1})
    relaxed = probe(server)
    relaxed.read(token)
    relaxed.read(token)
    strict = probe(server, usage_pause_percent="70")
    strict.read(token)
    assert _error(lambda: strict.read(token)).host_wide is True


def test_usage_readings_are_parsed_from_every_header() -> None:
    readings = meta_usage.read_usage(
        {
            "x-app-usage": json.dumps({"call_count": 12, "total_time": 97, "total_cputime": 3}),
            "X-Page-Usage": json.dumps({"call_count": 40}),
            "X-Business-Use-Case-Usage": json.dumps(
                {
                    "17841400000000001": [
                        {
                            "type": "instagram",
                            "call_count": 5,
                            "total_time": 99,
                            "estimated_time_to_regain_access": 12,
                        },
                    ],
                    "broken": "not a list of objects",
                }
            ),
        },
        page_id=PAGE,
    )
    by_header = {(u.header, u.object_id): u for u in readings}
    app = by_header[("x-app-usage", "")]
    assert app.percent == 97
    assert app.pause_seconds(90) == meta_usage.DEFAULT_PAUSE_SECONDS
    assert by_header[("x-page-usage", PAGE)].pause_seconds(90) == 0
    instagram = by_header[("x-business-use-case-usage", "17841400000000001")]
    assert instagram.kind == "instagram"
    assert instagram.pause_seconds(90) == 12 * 60
    assert meta_usage.read_usage({"X-App-Usage": "{not json"}) == []


def test_pause_marks_are_shared_and_expire() -> None:
    meta_usage.pause(APP_ID, PAGE, 0.3)
    left, what = meta_usage.paused_for(APP_ID, (PAGE, OTHER_PAGE))
    assert what == PAGE
    assert 0 < left <= 0.3
    assert meta_usage.paused_for(APP_ID, (OTHER_PAGE,)) == (0.0, "")
    assert meta_usage.paused_for("another app", (PAGE,)) == (0.0, "")
    time.sleep(0.35)
    assert meta_usage.paused_for(APP_ID, (PAGE,))[0] == 0


def test_errors_read_without_a_json_body_fall_back_to_the_status() -> None:
    response = requests.Response()
    response.status_code = 502
    response._content = b"<html>Bad gateway</html>"
    assert meta_errors.parse_error(response).kind is None


# --- signed_request -------------------------------------------------------------------------------


def test_a_signed_request_from_meta_is_verified_and_read() -> None:
    value = signed_request({"user_id": "10229999", "issued_at": int(time.time())})
    payload = parse_signed_request(value, APP_SECRET, max_age_seconds=600)
    assert payload["user_id"] == "10229999"
    # Herald's own signer makes what Meta makes.
    again = sign({"user_id": "1", "issued_at": 1}, APP_SECRET)
    assert parse_signed_request(again, APP_SECRET)["user_id"] == "1"


@pytest.mark.parametrize(
    "mangle",
    [
        lambda v: signed_request({"user_id": "1", "issued_at": int(time.time())}, "wrong secret"),
        lambda v: v.split(".")[0] + "." + signed_request({"user_id": "2"}).split(".")[1],
        lambda v: v.replace(".", ""),
        lambda v: v + ".extra",
        lambda v: "",
        lambda v: "!!!." + v.split(".")[1],
        lambda v: "x" * 9000,
    ],
    ids=["other-secret", "swapped-payload", "one-part", "three-parts", "empty", "not-b64", "long"],
)
def test_a_forged_or_malformed_signed_request_is_refused(mangle: Any) -> None:
    value = signed_request({"user_id": "1", "issued_at": int(time.time())})
    with pytest.raises(SignedRequestError):
        parse_signed_request(mangle(value), APP_SECRET)


def test_a_signed_request_with_another_algorithm_or_too_old_is_refused() -> None:
    import base64
    import hashlib
    import hmac

    body = base64.urlsafe_b64encode(json.dumps({"algorithm": "HMAC-SHA1"}).encode()).rstrip(b"=")
    digest = hmac.new(APP_SECRET.encode(), body, hashlib.sha256).digest()
    value = base64.urlsafe_b64encode(digest).rstrip(b"=").decode() + "." + body.decode()
    with pytest.raises(SignedRequestError, match="algorithm"):
        parse_signed_request(value, APP_SECRET)
    old = signed_request({"user_id": "1", "issued_at": int(time.time()) - 3600})
    with pytest.raises(SignedRequestError, match="too old"):
        parse_signed_request(old, APP_SECRET, max_age_seconds=600)
    assert parse_signed_request(old, APP_SECRET)["user_id"] == "1"
    with pytest.raises(SignedRequestError, match="not configured"):
        parse_signed_request(old, "")


# --- configuration ----------------------------------------------------------------------------


def test_the_meta_app_comes_from_the_environment(monkeypatch: Any, tmp_path: Any) -> None:
    secret_file = tmp_path / "meta-secret"
    secret_file.write_text("from-a-file\n")
    monkeypatch.setenv("HERALD_META_APP_ID", "42")
    monkeypatch.setenv("HERALD_META_APP_SECRET_FILE", str(secret_file))
    monkeypatch.setenv("HERALD_META_GRAPH_VERSION", "v25.0")
    monkeypatch.setenv("HERALD_META_API_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("HERALD_INSTAGRAM_API_URL", "http://127.0.0.1:10")
    monkeypatch.setenv("HERALD_META_USAGE_PAUSE_PERCENT", "80")
    apps = oauth_apps.oauth_apps_from_env()
    # The same Meta app; instagram adds Instagram Login's own app (config/oauth_apps.py).
    assert apps["instagram"].items() >= apps["facebook"].items()
    app = apps["facebook"]
    assert app["client_id"] == "42"
    assert app["client_secret"] == "from-a-file"
    adapter = Probe(app=app)
    assert adapter.meta.graph_version == "v25.0"
    assert adapter.graph_url("/me") == "http://127.0.0.1:9/v25.0/me"
    assert adapter.meta.instagram_api_url == "http://127.0.0.1:10"
    assert adapter.meta.authorize_url == "https://www.facebook.com/v25.0/dialog/oauth"
    assert adapter.meta.usage_pause_percent == 80
    unconfigured = Probe(app={})
    with pytest.raises(ProviderError, match="HERALD_META_APP_ID"):
        unconfigured._require_app()
