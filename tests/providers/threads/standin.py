"""Stand-in Threads API (developers.facebook.com/docs/threads): the authorization window
(auto-approving), the short-lived token exchange, the long-lived token exchange and refresh (a
long-lived token refreshes once 24 h old; :meth:`ThreadsStandIn.age_tokens` moves the clock),
``/me``, two-step publishing (a container goes IN_PROGRESS -> FINISHED after ``container_polls``
status reads, and EXPIRED when not published within 24 h; an IMAGE or VIDEO container makes the
stand-in GET its ``image_url`` or ``video_url``, as Threads does, and media it cannot fetch, or
a video outside Threads' media specifications, makes the container ERROR with Threads'
``error_message``), carousels of 2-20 finished image or video items, publish, permalink, the user's posts with
cursor paging, insights, delete, and Graph API error objects (code 190 for a bad token, code 4
for rate limits, code 100/33 for a missing object).

Run alone: ``python -m tests.providers.threads.standin --port 8406`` (app credentials in the fixtures).
"""

from __future__ import annotations

import io
import secrets
import threading
import time
import unicodedata
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlencode

import av
import grapheme
import requests

from tests.providers.standin import Reply, Request, Route, StandIn, serve_main

CLIENT_ID = "990602627938098"
CLIENT_SECRET = "threads-standin-app-secret-0123456789"
USER = {"id": "17841400000000001", "username": "herald.hq", "name": "Herald HQ"}
SHORT_SECONDS = 3600
LONG_SECONDS = 60 * 24 * 3600
V = r"/v1\.0"


def threads_length(text: str) -> int:
    """Threads' count as this stand-in enforces it: graphemes, an emoji its UTF-8 bytes."""
    total = 0
    for cluster in grapheme.graphemes(unicodedata.normalize("NFC", text)):
        emoji = any(ord(c) >= 0x1F000 for c in cluster) or "\ufe0f" in cluster
        total += len(cluster.encode()) if emoji else 1
    return total


def _error(status: int, message: str, code: int, subcode: int = 0, kind: str = "") -> Reply:
    error: dict[str, Any] = {
        "message": message,
        "type": kind or ("OAuthException" if code in (4, 190) else "THApiException"),
        "code": code,
        "fbtrace_id": secrets.token_urlsafe(8),
    }
    if subcode:
        error["error_subcode"] = subcode
    return Reply(status, {"error": error})


def _video_facts(data: bytes) -> dict[str, Any] | None:
    """Container, codecs, picture, rate and duration as PyAV reads them; None if unreadable."""
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            stream = container.streams.video[0]
            sound = container.streams.audio[0] if container.streams.audio else None
            return {
                "format": container.format.name,
                "codec": stream.codec_context.name,
                "width": stream.codec_context.width,
                "height": stream.codec_context.height,
                "rate": float(stream.average_rate or 0),
                "seconds": (container.duration or 0) / 1_000_000,
                "audio": sound.codec_context.name if sound else "",
                "channels": sound.codec_context.channels if sound else 0,
            }
    except (av.FFmpegError, IndexError, ValueError):
        return None


def video_spec_error(data: bytes) -> str:
    """Threads' media specifications for video, as the container's ``error_message``: MOV or
    MP4, H.264 or HEVC, 23-60 frames per second, at most 1920 pixels wide, aspect ratio
    0.01:1 to 10:1, at most 5 minutes, AAC sound in 1 or 2 channels; "" when it fits."""
    facts = _video_facts(data)
    if facts is None or "mp4" not in facts["format"] or facts["codec"] not in ("h264", "hevc"):
        return "FAILED_PROCESSING_VIDEO"
    checks = [
        (not 23 <= facts["rate"] <= 60, "INVALID_FRAME_RATE"),
        (facts["width"] > 1920, "FAILED_PROCESSING_VIDEO"),
        (not 0.01 <= facts["width"] / max(facts["height"], 1) <= 10, "INVALID_ASPEC_RATIO"),
        (not 0 < facts["seconds"] <= 300, "INVALID_DURATION"),
        (facts["audio"] not in ("", "aac"), "FAILED_PROCESSING_AUDIO"),
        (facts["channels"] > 2, "INVALID_AUDIO_CHANNELS"),
    ]
    return next((error for failed, error in checks if failed), "")


def _stamp(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%S+0000")


class ThreadsStandIn(StandIn):
    provider = "threads"
    permanent_status = 400

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, container_polls: int = 1):
        super().__init__(host, port)
        self.container_polls = container_polls  # status reads answered IN_PROGRESS first
        self.deny = False
        self._next_id = 18_000_000_000_000_000
        self.codes: dict[str, dict[str, Any]] = {}
        self.tokens: dict[str, dict[str, Any]] = {}  # token -> {"user", "kind", "issued", ...}
        self.clock_offset = 0.0  # seconds added to "now" (age_tokens)
        self.clear_data()

    def clear_data(self) -> None:
        self.containers: dict[str, dict[str, Any]] = {}
        self.media: dict[str, dict[str, Any]] = {}
        self.fetched: list[dict[str, Any]] = []  # every image_url fetched

    def fixtures(self) -> dict[str, Any]:
        return {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "user": USER} | {
            k: v for k, v in self.app_settings().items() if k.endswith("url")
        }

    def app_settings(self) -> dict[str, str]:
        """The ``PROVIDER_OAUTH_APPS["threads"]`` entry that points Herald at this stand-in."""
        return {
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "api_url": self.url,
            "authorize_url": f"{self.url}/oauth/authorize",
            "token_url": f"{self.url}/oauth/access_token",
            "revoke_url": "",
        }

    def build_routes(self) -> list[Route]:
        item = r"/(?P<object_id>\d+)"
        return [
            Route("GET", r"/oauth/authorize", self.authorize, auth=False),
            Route("POST", r"/oauth/access_token", self.short_token, auth=False),
            Route("GET", r"/access_token", self.long_token, auth=False),
            Route("GET", r"/refresh_access_token", self.refresh_token, auth=False),
            Route("GET", V + r"/me", self.me),
            Route("POST", V + r"/(?P<user_id>\d+)/threads", self.create_container),
            Route("POST", V + r"/(?P<user_id>\d+)/threads_publish", self.publish),
            Route("GET", V + r"/(?P<user_id>\d+)/threads", self.user_posts),
            Route("GET", V + item + "/insights", self.insights),
            Route("GET", V + item, self.get_object),
            Route("DELETE", V + item, self.delete_object),
        ]

    # --- error shapes -------------------------------------------------------------------------

    def error_reply(self, status: int, message: str) -> Reply:
        code = 2 if status >= 500 else 100
        return _error(status, message, code)

    def rate_limited_reply(self, retry_after: float) -> Reply:
        # Graph API throttling: HTTP 400 (not 429) with code 4, type OAuthException.
        return _error(400, "Application request limit reached", 4)

    def unauthorized_reply(self) -> Reply:
        return _error(400, "Error validating access token: Session has expired.", 190, 463)

    # --- helpers ------------------------------------------------------------------------------

    def now(self) -> float:
        return time.time() + self.clock_offset

    def age_tokens(self, seconds: float) -> None:
        """Move the stand-in's clock forward (tokens become older; expiries come closer)."""
        with self.lock:
            self.clock_offset += seconds

    def expire_tokens(self) -> None:
        with self.lock:
            for grant in self.tokens.values():
                grant["expires"] = 0

    def _new_id(self) -> str:
        with self.lock:
            self._next_id += 1
            return str(self._next_id)

    def _user(self, request: Request) -> str | None:
        token = request.bearer or str(request.fields().get("access_token") or "")
        with self.lock:
            grant = self.tokens.get(token)
            if grant is None or grant["expires"] <= self.now():
                return None
            return str(grant["user"])

    def _issue(self, user: str, kind: str) -> tuple[str, int]:
        token = ("THQ" if kind == "short" else "THL") + secrets.token_urlsafe(40)
        seconds = SHORT_SECONDS if kind == "short" else LONG_SECONDS
        with self.lock:
            self.tokens[token] = {
                "user": user,
                "kind": kind,
                "issued": self.now(),
                "expires": self.now() + seconds,
            }
        return token, seconds

    def store_post(self, text: str, *, media_type: str = "TEXT_POST", at: float = 0) -> str:
        """A post made elsewhere (the account's own history)."""
        media_id = self._new_id()
        with self.lock:
            self.media[media_id] = self._new_media(media_id, text, media_type, at or self.now())
        return media_id

    def _new_media(self, media_id: str, text: str, media_type: str, at: float) -> dict[str, Any]:
        return {
            "id": media_id,
            "user": USER["id"],
            "text": text,
            "media_type": media_type,
            "timestamp": at,
            "shortcode": "C" + media_id[-9:],
            "metrics": {"views": 0, "likes": 0, "replies": 0, "reposts": 0, "quotes": 0},
        }

    def set_metrics(self, media_id: str, **counts: int) -> None:
        with self.lock:
            self.media[media_id]["metrics"].update(counts)

    def _render(self, post: dict[str, Any], fields: set[str]) -> dict[str, Any]:
        out: dict[str, Any] = {"id": post["id"]}
        values = {
            "text": post["text"],
            "media_type": post["media_type"],
            "timestamp": _stamp(post["timestamp"]),
            "permalink": f"https://www.threads.net/@{USER['username']}/post/{post['shortcode']}",
            "username": USER["username"],
            "shortcode": post["shortcode"],
        }
        out.update({k: v for k, v in values.items() if k in fields})
        return out

    # --- OAuth --------------------------------------------------------------------------------

    def authorize(self, request: Request) -> Reply:
        q = {k: v[0] for k, v in request.query.items()}
        if q.get("client_id") != CLIENT_ID or not q.get("redirect_uri"):
            return Reply(400, "Invalid platform app", {"Content-Type": "text/html"})
        scopes = q.get("scope", "").split(",")
        if q.get("response_type") != "code" or "threads_basic" not in scopes:
            return Reply(400, "Invalid request", {"Content-Type": "text/html"})
        if self.deny:
            params = {
                "error": "access_denied",
                "error_reason": "user_denied",
                "error_description": "Permissions error",
                "state": q.get("state", ""),
            }
            return Reply(302, b"", {"Location": q["redirect_uri"] + "?" + urlencode(params)})
        code = secrets.token_urlsafe(24)
        with self.lock:
            self.codes[code] = {"redirect_uri": q["redirect_uri"], "scopes": scopes}
        # Threads appends "#_" to the redirect; a browser never sends the fragment on.
        location = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
        return Reply(302, b"", {"Location": location + "#_"})

    def short_token(self, request: Request) -> Reply:
        fields = request.fields()
        if fields.get("client_id") != CLIENT_ID or fields.get("client_secret") != CLIENT_SECRET:
            return _error(400, "Error validating client secret.", 1, kind="OAuthException")
        with self.lock:
            grant = self.codes.pop(str(fields.get("code") or ""), None)
        if (
            fields.get("grant_type") != "authorization_code"
            or grant is None
            or grant["redirect_uri"] != fields.get("redirect_uri")
        ):
            return Reply(
                400,
                {
                    "error_type": "OAuthException",
                    "code": 400,
                    "error_message": "Invalid authorization code",
                },
            )
        token, _seconds = self._issue(USER["id"], "short")
        self.bump("tokens_issued")
        return Reply(200, {"access_token": token, "user_id": int(USER["id"])})

    def long_token(self, request: Request) -> Reply:
        fields = request.fields()
        if fields.get("client_secret") != CLIENT_SECRET:
            return _error(400, "Error validating client secret.", 1, kind="OAuthException")
        with self.lock:
            grant = self.tokens.get(str(fields.get("access_token") or ""))
        if fields.get("grant_type") != "th_exchange_token" or grant is None:
            return self.unauthorized_reply()
        if grant["kind"] != "short" or grant["expires"] <= self.now():
            return self.unauthorized_reply()
        token, seconds = self._issue(grant["user"], "long")
        self.bump("long_lived_issued")
        return Reply(200, {"access_token": token, "token_type": "bearer", "expires_in": seconds})

    def refresh_token(self, request: Request) -> Reply:
        fields = request.fields()
        with self.lock:
            grant = self.tokens.get(str(fields.get("access_token") or ""))
        if fields.get("grant_type") != "th_refresh_token" or grant is None:
            return self.unauthorized_reply()
        if grant["kind"] != "long" or grant["expires"] <= self.now():
            return self.unauthorized_reply()
        if self.now() - grant["issued"] < 24 * 3600:
            self.bump("refresh_too_early")
            return _error(400, "The access token is not yet eligible for refresh.", 190, 467)
        token, seconds = self._issue(grant["user"], "long")
        self.bump("refreshes")
        return Reply(200, {"access_token": token, "token_type": "bearer", "expires_in": seconds})

    # --- profile, containers, posts -----------------------------------------------------------

    def me(self, request: Request) -> Reply:
        if self._user(request) is None:
            return self.unauthorized_reply()
        picture = f"{self.url}/pictures/{USER['id']}.jpg"
        return Reply(200, USER | {"threads_profile_picture_url": picture})

    def _fetch_image(self, url: str) -> tuple[bool, str]:
        """GET the image as Threads does: it must answer 200 with an image type and body."""
        try:
            response = requests.get(url, timeout=5)
        except requests.RequestException:
            return False, "FAILED_DOWNLOADING_IMAGE"
        kind = response.headers.get("Content-Type", "").split(";")[0].strip()
        record = {
            "url": url,
            "status": response.status_code,
            "content_type": kind,
            "size": len(response.content),
            "content_length": response.headers.get("Content-Length"),
        }
        with self.lock:
            self.fetched.append(record)
        if response.status_code != 200 or kind not in ("image/jpeg", "image/png"):
            return False, "FAILED_DOWNLOADING_IMAGE"
        return True, ""

    def create_container(self, request: Request, user_id: str) -> Reply:
        user = self._user(request)
        if user is None:
            return self.unauthorized_reply()
        if user != user_id:
            return _error(400, "Unsupported post request.", 100, 33)
        fields = {k: str(v) for k, v in request.fields().items()}
        media_type = fields.get("media_type", "")
        text = fields.get("text", "")
        if threads_length(text) > 500:
            return _error(400, "The post text is too long (500 characters at most).", 100)
        record: dict[str, Any] = {
            "user": user,
            "media_type": media_type,
            "text": text,
            "polls": 0,
            "state": "IN_PROGRESS",
            "error": "",
            "carousel_item": fields.get("is_carousel_item") == "true",
            "alt_text": fields.get("alt_text", ""),
            "children": [],
            "created": self.now(),
        }
        check = {
            "TEXT": self._text_container,
            "IMAGE": self._image_container,
            "VIDEO": self._video_container,
            "CAROUSEL": self._carousel_container,
        }.get(media_type)
        if check is None:
            return _error(400, "The parameter media_type is invalid.", 100)
        refused = check(fields, record)
        if refused is not None:
            return refused
        container = self._new_id()
        with self.lock:
            self.containers[container] = record
        self.bump("containers")
        return Reply(200, {"id": container})

    @staticmethod
    def _text_container(fields: dict[str, str], record: dict[str, Any]) -> Reply | None:
        if not fields.get("text", "").strip():
            return _error(400, "The parameter text is required.", 100)
        return None

    def _image_container(self, fields: dict[str, str], record: dict[str, Any]) -> Reply | None:
        if not fields.get("image_url"):
            return _error(400, "The parameter image_url is required.", 100)
        fetched, error = self._fetch_image(fields["image_url"])
        if not fetched:
            record.update(state="ERROR", error=error)
        return None

    def _video_container(self, fields: dict[str, str], record: dict[str, Any]) -> Reply | None:
        if not fields.get("video_url"):
            return _error(400, "The parameter video_url is required.", 100)
        error = self._fetch_video(fields["video_url"])
        if error:
            record.update(state="ERROR", error=error)
        return None

    def _carousel_container(self, fields: dict[str, str], record: dict[str, Any]) -> Reply | None:
        children = [c for c in fields.get("children", "").split(",") if c]
        with self.lock:
            known = [self.containers.get(c) for c in children]
        if not 2 <= len(children) <= 20 or any(
            c is None or not c["carousel_item"] or c["state"] != "FINISHED" for c in known
        ):
            return _error(400, "The carousel children are invalid.", 100)
        record["children"] = children
        return None

    def _fetch_video(self, url: str) -> str:
        """GET the video as Threads does and check it against the media specifications; the
        container's ``error_message`` when it fails, else ""."""
        try:
            response = requests.get(url, timeout=5)
        except requests.RequestException:
            return "FAILED_DOWNLOADING_VIDEO"
        kind = response.headers.get("Content-Type", "").split(";")[0].strip()
        with self.lock:
            self.fetched.append(
                {
                    "url": url,
                    "status": response.status_code,
                    "content_type": kind,
                    "size": len(response.content),
                }
            )
        if response.status_code != 200 or kind not in ("video/mp4", "video/quicktime"):
            return "FAILED_DOWNLOADING_VIDEO"
        return video_spec_error(response.content)

    def publish(self, request: Request, user_id: str) -> Reply:
        user = self._user(request)
        if user is None:
            return self.unauthorized_reply()
        creation_id = str(request.fields().get("creation_id") or "")
        with self.lock:
            fault = self.gate_post()
            if fault is not None:
                return fault
            container = self.containers.get(creation_id)
            if container is None or container["user"] != user or user != user_id:
                return _error(400, "Media Not Found", 24, 4279009)
            self._advance(container)
            if container["state"] != "FINISHED" or container["carousel_item"]:
                return _error(400, "The media is not ready for publishing.", 9007, 2207027)
            media_id = self._new_id()
            kind = {
                "TEXT": "TEXT_POST",
                "IMAGE": "IMAGE",
                "VIDEO": "VIDEO",
                "CAROUSEL": "CAROUSEL_ALBUM",
            }
            self.media[media_id] = self._new_media(
                media_id, container["text"], kind[container["media_type"]], self.now()
            )
            container["state"] = "PUBLISHED"
            children = [self.containers[c] for c in container["children"]]
            self.accept_post(
                {
                    "id": media_id,
                    "text": container["text"],
                    "media_type": container["media_type"],
                    "items": len(children) or (0 if container["media_type"] == "TEXT" else 1),
                    "kinds": [c["media_type"] for c in children] or [container["media_type"]],
                    "alt_texts": [c["alt_text"] for c in children] or [container["alt_text"]],
                }
            )
        self.stall_if_asked()
        return Reply(200, {"id": media_id})

    def _missing(self, object_id: str) -> Reply:
        return _error(
            400,
            f"Unsupported get request. Object with ID '{object_id}' does not exist.",
            100,
            33,
            kind="GraphMethodException",
        )

    def _advance(self, container: dict[str, Any]) -> None:
        """IN_PROGRESS until ``container_polls`` status reads; unpublished after 24 h: EXPIRED."""
        if container["state"] in ("IN_PROGRESS", "FINISHED"):
            if self.now() - container["created"] > 24 * 3600:
                container["state"] = "EXPIRED"
            elif container["polls"] > self.container_polls:
                container["state"] = "FINISHED"

    def get_object(self, request: Request, object_id: str) -> Reply:
        if self._user(request) is None:
            return self.unauthorized_reply()
        fields = set(str(request.fields().get("fields") or "id").split(","))
        with self.lock:
            container = self.containers.get(object_id)
            if container is not None:
                self.counters["status_reads"] += 1
                container["polls"] += 1
                self._advance(container)
                body: dict[str, Any] = {"id": object_id, "status": container["state"]}
                if container["error"]:
                    body["error_message"] = container["error"]
                return Reply(200, body)
            post = self.media.get(object_id)
            if post is None:
                return self._missing(object_id)
            return Reply(200, self._render(post, fields))

    def delete_object(self, request: Request, object_id: str) -> Reply:
        if self._user(request) is None:
            return self.unauthorized_reply()
        with self.lock:
            if self.media.pop(object_id, None) is None:
                return self._missing(object_id)
            self.counters["posts_deleted"] += 1
        return Reply(200, {"success": True, "deleted_id": object_id})

    def user_posts(self, request: Request, user_id: str) -> Reply:
        if self._user(request) is None:
            return self.unauthorized_reply()
        fields = request.fields()
        wanted = set(str(fields.get("fields") or "id").split(","))
        limit = max(1, min(int(fields.get("limit") or 25), 100))
        since = float(fields.get("since") or 0)
        offset = int(str(fields.get("after") or "0") or 0)
        with self.lock:
            mine = [
                p for p in self.media.values() if p["user"] == user_id and p["timestamp"] >= since
            ]
            mine.sort(key=lambda p: (p["timestamp"], int(p["id"])), reverse=True)
            page = mine[offset : offset + limit]
            data = [self._render(p, wanted) for p in page]
        self.bump("list_reads")
        body: dict[str, Any] = {"data": data}
        if data:
            body["paging"] = {"cursors": {"before": str(offset), "after": str(offset + limit)}}
            if offset + limit < len(mine):
                body["paging"]["next"] = f"{self.url}/v1.0/{user_id}/threads?after={offset + limit}"
        return Reply(200, body)

    def insights(self, request: Request, object_id: str) -> Reply:
        if self._user(request) is None:
            return self.unauthorized_reply()
        metrics = str(request.fields().get("metric") or "").split(",")
        with self.lock:
            post = self.media.get(object_id)
            if post is None:
                return self._missing(object_id)
            counts = dict(post["metrics"])
        data = [
            {
                "name": name,
                "period": "lifetime",
                "values": [{"value": counts[name]}],
                "title": name.title(),
                "id": f"{object_id}/insights/{name}/lifetime",
            }
            for name in metrics
            if name in counts
        ]
        return Reply(200, {"data": data})


class MediaHost:
    """A public web server for images (Threads fetches media by URL): ``url_for(data, type)``
    serves ``data`` at a fresh path; any other path is a 404."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, str]] = {}
        self.hits: list[str] = []
        host = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                host.hits.append(self.path)
                found = host.files.get(self.path)
                if found is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data, kind = found
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> MediaHost:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def url_for(self, data: bytes, content_type: str = "image/png") -> str:
        path = f"/media/{secrets.token_hex(8)}"
        self.files[path] = (data, content_type)
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"


if __name__ == "__main__":
    serve_main(ThreadsStandIn)
