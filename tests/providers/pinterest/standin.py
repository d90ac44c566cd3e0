"""Stand-in Pinterest API v5 and OAuth (developers.pinterest.com): an auto-approving consent
page (``response_type=code``, comma-separated scopes); the token endpoint with the app's
credentials in HTTP Basic auth (``authorization_code`` and ``refresh_token`` grants; access
tokens expire after ``access_seconds``; a refresh answers a new access token and keeps the
refresh token); ``GET /v5/user_account``; boards and board sections with ``bookmark`` pages;
``POST /v5/pins`` (``image_url``: the image is fetched from its URL, as Pinterest does, and a
URL it cannot fetch is ``400``; ``video_id``: the media must have ``succeeded``);
``POST /v5/media`` answers a one-time S3-style form (``upload_url`` + ``upload_parameters``,
every field required with the file last); ``GET /v5/media/{id}`` goes ``registered`` →
``processing`` (after the upload) → ``succeeded`` after ``processing_checks`` status reads (or
``failed`` for a file that is not a video; fault ``break_uploads``: the next uploads answer
503); ``GET/DELETE /v5/pins/{id}``; ``GET
/v5/boards/{id}/pins`` newest first; ``GET /v5/pins/{id}/analytics``. Errors are
``{"code": <int>, "message"}``; 429 with ``Retry-After`` through the shared faults.

Run alone: ``python -m tests.providers.pinterest.standin --port 8420``.
"""

from __future__ import annotations

import base64
import secrets
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import requests

from tests.providers.standin import Reply, Request, Route, StandIn, serve_main

CLIENT_ID = "1484362"
CLIENT_SECRET = "pinterest-standin-secret-0123456789abcdef"
USER = {"id": "549755885175", "username": "heraldpins", "business_name": "Herald Pins"}
BOARDS = [
    {"id": "1001", "name": "Recipes", "sections": [{"id": "2001", "name": "Desserts"}]},
    {"id": "1002", "name": "Travel", "sections": []},
]


def pin_error(status: int, code: int, message: str) -> Reply:
    return Reply(status, {"code": code, "message": message})


class PinterestStandIn(StandIn):
    provider = "pinterest"
    permanent_status = 400

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.access_seconds = 30 * 24 * 3600.0
        self.processing_checks = 2
        self.codes: dict[str, list[str]] = {}
        self.access: dict[str, float] = {}
        self.refresh_tokens: set[str] = set()
        self.clear_data()

    def clear_data(self) -> None:
        self.media: dict[str, dict[str, Any]] = {}
        self.pins: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []
        self.fetched: list[str] = []
        self.public: dict[str, bytes] = {}  # files served at /public/<name> (a public origin)
        self.break_uploads = 0  # the next uploads break after the bytes arrive (S3 answers 503)

    def configure_extra(self, spec: dict[str, Any]) -> None:
        if "break_uploads" in spec:
            with self.lock:
                self.break_uploads = int(spec["break_uploads"] or 0)

    def fixtures(self) -> dict[str, Any]:
        return {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "api_url": self.url}

    def app_settings(self, *, standard_access: bool = True) -> dict[str, Any]:
        """The ``PROVIDER_OAUTH_APPS["pinterest"]`` entry that points Herald at this stand-in
        (an app with Standard access unless told otherwise)."""
        return {
            "audited": "true" if standard_access else "false",
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "api_url": self.url,
            "authorize_url": f"{self.url}/oauth/",
            "token_url": f"{self.url}/v5/oauth/token",
            "revoke_url": "",
            "scopes": "",
        }

    def build_routes(self) -> list[Route]:
        return [
            Route("GET", r"/oauth/", self.authorize, auth=False),
            Route("POST", r"/v5/oauth/token", self.token, auth=False),
            Route("GET", r"/v5/user_account", self.user_account),
            Route("GET", r"/v5/boards", self.boards),
            Route("GET", r"/v5/boards/(?P<board>[^/]+)/sections", self.sections),
            Route("GET", r"/v5/boards/(?P<board>[^/]+)/pins", self.board_pins),
            Route("POST", r"/v5/media", self.register_media),
            Route("POST", r"/s3-upload", self.s3_upload, auth=False),
            Route("GET", r"/v5/media/(?P<media>[^/]+)", self.media_status),
            Route("POST", r"/v5/pins", self.create_pin),
            Route("GET", r"/v5/pins/(?P<pin>[^/]+)/analytics", self.analytics),
            Route("GET", r"/v5/pins/(?P<pin>[^/]+)", self.get_pin),
            Route("DELETE", r"/v5/pins/(?P<pin>[^/]+)", self.delete_pin),
            Route("GET", r"/public/(?P<name>[^/]+)", self.public_file, auth=False),
        ]

    def public_file(self, request: Request, name: str) -> Reply:
        data = self.public.get(name)
        return Reply(200, data, {"Content-Type": "image/png"}) if data else Reply(404, b"")

    def error_reply(self, status: int, message: str) -> Reply:
        return pin_error(status, {404: 50, 429: 8}.get(status, 1), message)

    def rate_limited_reply(self, retry_after: float) -> Reply:
        return pin_error(429, 8, "You have exceeded your rate limit. Try again later.")

    def unauthorized_reply(self) -> Reply:
        return pin_error(401, 2, "Authentication failed.")

    def expire_access_tokens(self) -> None:
        with self.lock:
            for token in self.access:
                self.access[token] = 0

    def _authorized(self, request: Request) -> bool:
        with self.lock:
            return self.access.get(request.bearer, 0) > time.time()

    # --- OAuth ------------------------------------------------------------------------------

    def authorize(self, request: Request) -> Reply:
        q = {k: v[0] for k, v in request.query.items()}
        if q.get("client_id") != CLIENT_ID or q.get("response_type") != "code":
            return Reply(400, "invalid client or response type", {"Content-Type": "text/html"})
        code = secrets.token_hex(20)
        with self.lock:
            self.codes[code] = [q.get("redirect_uri", ""), q.get("scope", "")]
        location = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
        return Reply(302, b"", {"Location": location})

    def _issue(self, refresh: str, scope: str) -> dict[str, Any]:
        access = "pina_" + secrets.token_urlsafe(30)
        with self.lock:
            self.access[access] = time.time() + self.access_seconds
            self.refresh_tokens.add(refresh)
        return {
            "access_token": access,
            "refresh_token": refresh,
            "response_type": "authorization_code",
            "token_type": "bearer",
            "expires_in": int(self.access_seconds),
            "refresh_token_expires_in": 365 * 24 * 3600,
            "scope": scope,
        }

    def token(self, request: Request) -> Reply:
        expected = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if (request.headers.get("Authorization") or "") != f"Basic {expected}":
            return pin_error(401, 2, "Authentication failed.")
        form = {k: v[0] for k, v in request.form.items()}
        if form.get("grant_type") == "authorization_code":
            with self.lock:
                found = self.codes.pop(form.get("code", ""), None)
            if found is None or found[0] != form.get("redirect_uri"):
                return Reply(400, {"error": "invalid_grant", "error_description": "Invalid code"})
            return Reply(200, self._issue("pinr_" + secrets.token_urlsafe(30), found[1]))
        if form.get("grant_type") == "refresh_token":
            refresh = form.get("refresh_token", "")
            if refresh not in self.refresh_tokens:
                return Reply(400, {"error": "invalid_grant", "error_description": "Bad token"})
            answer = self._issue(refresh, "boards:read,pins:read,pins:write,user_accounts:read")
            answer.pop("refresh_token")
            answer["response_type"] = "refresh_token"
            return Reply(200, answer)
        return Reply(400, {"error": "unsupported_grant_type"})

    # --- reading ------------------------------------------------------------------------------

    def user_account(self, request: Request) -> Reply:
        if not self._authorized(request):
            return self.unauthorized_reply()
        return Reply(200, {**USER, "account_type": "BUSINESS", "profile_image": ""})

    @staticmethod
    def _page(request: Request, items: list[dict[str, Any]]) -> Reply:
        size = int((request.query.get("page_size") or ["25"])[0])
        start = int((request.query.get("bookmark") or ["0"])[0] or 0)
        chunk = items[start : start + size]
        more = start + size < len(items)
        return Reply(200, {"items": chunk, "bookmark": str(start + size) if more else None})

    def boards(self, request: Request) -> Reply:
        if not self._authorized(request):
            return self.unauthorized_reply()
        return self._page(request, [{"id": b["id"], "name": b["name"]} for b in BOARDS])

    def sections(self, request: Request, board: str) -> Reply:
        if not self._authorized(request):
            return self.unauthorized_reply()
        found = next((b for b in BOARDS if b["id"] == board), None)
        if found is None:
            return pin_error(404, 40, "Board not found.")
        return self._page(request, list(found["sections"]))

    def board_pins(self, request: Request, board: str) -> Reply:
        if not self._authorized(request):
            return self.unauthorized_reply()
        with self.lock:
            pins = [self.pins[p] for p in reversed(self.order) if self.pins[p]["board_id"] == board]
        return self._page(request, pins)

    # --- video upload -----------------------------------------------------------------------

    def register_media(self, request: Request) -> Reply:
        if not self._authorized(request):
            return self.unauthorized_reply()
        if (request.json or {}).get("media_type") != "video":
            return pin_error(400, 1, "Invalid media_type.")
        media_id = str(int(time.time() * 1000)) + secrets.token_hex(2)
        key = f"uploads/{media_id}.mp4"
        fields = {
            "x-amz-date": "20261128T000000Z",
            "x-amz-signature": secrets.token_hex(32),
            "x-amz-security-token": secrets.token_urlsafe(20),
            "x-amz-algorithm": "AWS4-HMAC-SHA256",
            "key": key,
            "policy": base64.b64encode(b'{"conditions": []}').decode(),
            "x-amz-credential": "AKIA/20261128/us-east-1/s3/aws4_request",
            "Content-Type": "multipart/form-data",
        }
        with self.lock:
            self.media[media_id] = {"status": "registered", "fields": fields, "checks": 0}
        self.bump("media_registered")
        return Reply(
            201,
            {
                "media_id": media_id,
                "media_type": "video",
                "upload_url": f"{self.url}/s3-upload",
                "upload_parameters": fields,
            },
        )

    def s3_upload(self, request: Request) -> Reply:
        """S3's form POST: every field of the registration, then ``file``; 204 No Content."""
        with self.lock:
            if self.break_uploads > 0:
                self.break_uploads -= 1
                self.counters["uploads_broken"] += 1
                return Reply(503, b"<Error><Code>SlowDown</Code></Error>")
        fields = request.fields()
        files = request.files()
        if not files or request.parts[-1].name != "file":
            return Reply(400, b"<Error><Code>InvalidArgument</Code></Error>")
        with self.lock:
            media = next(
                (m for m in self.media.values() if m["fields"]["key"] == fields.get("key")), None
            )
            if media is None or any(fields.get(k) != v for k, v in media["fields"].items()):
                return Reply(403, b"<Error><Code>AccessDenied</Code></Error>")
            data = files[0].data
            media["status"] = "processing"
            media["bytes"] = len(data)
            media["video"] = data[4:8] in (b"ftyp", b"moov", b"wide", b"mdat")
        self.bump("uploads")
        return Reply(204, b"")

    def media_status(self, request: Request, media: str) -> Reply:
        if not self._authorized(request):
            return self.unauthorized_reply()
        with self.lock:
            found = self.media.get(media)
            if found is None:
                return pin_error(404, 50, "Media not found.")
            if found["status"] == "processing":
                found["checks"] += 1
                if found["checks"] >= self.processing_checks:
                    found["status"] = "succeeded" if found.get("video") else "failed"
            return Reply(200, {"media_id": media, "media_type": "video", "status": found["status"]})

    # --- pins ---------------------------------------------------------------------------------

    def _media_problem(self, source: dict[str, Any]) -> str:
        kind = source.get("source_type")
        if kind == "image_url":
            url = str(source.get("url") or "")
            try:
                fetched = requests.get(url, timeout=5)
            except requests.RequestException:
                return "Sorry! We couldn't fetch the image."
            if fetched.status_code != 200 or not fetched.content:
                return "Sorry! We couldn't fetch the image."
            with self.lock:
                self.fetched.append(url)
            return ""
        if kind == "video_id":
            with self.lock:
                media = self.media.get(str(source.get("media_id") or ""))
            if media is None or media["status"] != "succeeded":
                return "The video is not ready."
            if "cover_image_url" not in source and "cover_image_key_frame_time" not in source:
                return "A video Pin needs a cover image."
            return ""
        return "Invalid media_source."

    def create_pin(self, request: Request) -> Reply:
        if not self._authorized(request):
            return self.unauthorized_reply()
        gated = self.gate_post()
        if gated is not None:
            return gated
        body = request.json if isinstance(request.json, dict) else {}
        if not any(b["id"] == body.get("board_id") for b in BOARDS):
            return pin_error(404, 40, "Board not found.")
        for key, limit in (("title", 100), ("description", 500), ("alt_text", 500)):
            if len(str(body.get(key) or "")) > limit:
                return pin_error(400, 1, f"Invalid parameters: {key} too long.")
        problem = self._media_problem(body.get("media_source") or {})
        if problem:
            return pin_error(400, 1, problem)
        pin_id = str(int(time.time() * 1000)) + secrets.token_hex(3)
        pin = {
            "id": pin_id,
            "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S"),
            "board_id": body["board_id"],
            "board_section_id": body.get("board_section_id"),
            "title": body.get("title") or "",
            "description": body.get("description") or "",
            "link": body.get("link"),
            "alt_text": body.get("alt_text"),
            "media_source": body.get("media_source"),
        }
        with self.lock:
            self.pins[pin_id] = pin
            self.order.append(pin_id)
        self.accept_post(pin)
        self.stall_if_asked()
        return Reply(201, pin)

    def get_pin(self, request: Request, pin: str) -> Reply:
        if not self._authorized(request):
            return self.unauthorized_reply()
        with self.lock:
            found = self.pins.get(pin)
        return Reply(200, found) if found else pin_error(404, 50, "Pin not found.")

    def delete_pin(self, request: Request, pin: str) -> Reply:
        if not self._authorized(request):
            return self.unauthorized_reply()
        with self.lock:
            found = self.pins.pop(pin, None)
            if found is not None:
                self.order.remove(pin)
        return Reply(204, b"") if found else pin_error(404, 50, "Pin not found.")

    def analytics(self, request: Request, pin: str) -> Reply:
        if not self._authorized(request):
            return self.unauthorized_reply()
        with self.lock:
            found = self.pins.get(pin)
        if found is None:
            return pin_error(404, 50, "Pin not found.")
        metrics = found.get("metrics") or {"IMPRESSION": 0, "SAVE": 0, "PIN_CLICK": 0}
        return Reply(200, {"all": {"daily_metrics": [], "summary_metrics": metrics}})


if __name__ == "__main__":
    serve_main(PinterestStandIn)
