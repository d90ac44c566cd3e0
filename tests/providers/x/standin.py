"""Stand-in X API v2 (docs.x.com): OAuth 2 authorization code with PKCE on one confidential app
(auto-approving authorize page, token endpoint with HTTP Basic client authentication and
rotating refresh tokens, revoke), users/me, the v2 chunked media upload (initialize, append,
finalize, STATUS polling, metadata; videos in segments of at most 5 MB, reassembled and checked
at finalize, then processed for ``video_processing_seconds``: ``pending``, ``in_progress``, then
``succeeded``, or ``failed`` with X's error for a file that is no MP4/MOV or when
``video_fails`` is set), posts (create, lookup, delete, the user's timeline with
t.co links), 429 with ``x-rate-limit-reset`` and X's error shapes.

Run alone: ``python -m tests.providers.x.standin --port 8405`` (app credentials in the fixtures).
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import secrets
import time
import unicodedata
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import grapheme

from tests.providers.standin import Reply, Request, Route, StandIn, serve_main

CLIENT_ID = "x-standin-client-id"
CLIENT_SECRET = "x-standin-client-secret-0123456789"
USER = {"id": "1850000000000000001", "username": "herald_hq", "name": "Herald HQ"}
ACCESS_SECONDS = 7200
_URL = re.compile(r"https?://[^\s<>\"']+[^\s<>\"'.,:;!?)\]]")
_LIGHT = ((0x0000, 0x10FF), (0x2000, 0x200D), (0x2010, 0x201F), (0x2032, 0x2037))
IMAGE_TYPES = ("image/jpeg", "image/png", "image/webp", "image/gif")
VIDEO_TYPES = ("video/mp4", "video/quicktime")
VIDEO_CATEGORIES = ("tweet_video", "amplify_video")
MAX_VIDEO_BYTES = 512 * 1024 * 1024
MAX_SEGMENT_BYTES = 5 * 1024 * 1024
SEGMENTS_DO_NOT_ADD_UP = "Segments do not add up to provided total file size."
INVALID_MEDIA = {"code": 1, "name": "InvalidMedia", "message": "Unsupported video format"}


def weighted_length(text: str) -> int:
    """X's count, as this stand-in enforces it (http(s) links and the common cases only)."""
    text = _URL.sub("\x00", unicodedata.normalize("NFC", text))
    total = 0
    for cluster in grapheme.graphemes(text):
        if cluster == "\x00":
            total += 23
        elif any(ord(c) >= 0x1F000 for c in cluster) or "\ufe0f" in cluster:
            total += 2
        else:
            total += sum(1 if any(a <= ord(c) <= b for a, b in _LIGHT) else 2 for c in cluster)
    return total


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _problem(status: int, title: str, detail: str, kind: str = "about:blank") -> Reply:
    return Reply(status, {"title": title, "detail": detail, "type": kind, "status": status})


class XStandIn(StandIn):
    provider = "x"
    permanent_status = 400

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, media_polls: int = 0) -> None:
        super().__init__(host, port)
        self.media_polls = media_polls  # STATUS answers in_progress this many times (GIFs)
        self.deny = False  # the authorize page answers error=access_denied
        self._next_id = 1_900_000_000_000_000_000
        self.codes: dict[str, dict[str, Any]] = {}
        self.access: dict[str, dict[str, Any]] = {}  # token -> {"user", "expires", "family"}
        self.refresh: dict[str, dict[str, Any]] = {}  # live refresh token -> {"user", "family"}
        self.used_refresh: dict[str, str] = {}  # rotated refresh token -> family
        self.clear_data()

    def clear_data(self) -> None:
        self.posts_by_id: dict[str, dict[str, Any]] = {}
        self.uploads: dict[str, dict[str, Any]] = {}
        self.video_processing_seconds = 0.0  # how long X processes a video after finalize
        self.video_fails = False  # processing ends in ``failed`` (X's InvalidMedia error)

    def fixtures(self) -> dict[str, Any]:
        return {
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "api_url": self.url,
            "authorize_url": f"{self.url}/i/oauth2/authorize",
            "user": USER,
        }

    def app_settings(self) -> dict[str, str]:
        """The ``PROVIDER_OAUTH_APPS["x"]`` entry that points Herald at this stand-in."""
        return {
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "api_url": self.url,
            "authorize_url": f"{self.url}/i/oauth2/authorize",
            "token_url": f"{self.url}/2/oauth2/token",
            "revoke_url": f"{self.url}/2/oauth2/revoke",
        }

    def build_routes(self) -> list[Route]:
        upload = r"/2/media/upload/(?P<media_id>\d+)"
        return [
            Route("GET", r"/i/oauth2/authorize", self.authorize, auth=False),
            Route("POST", r"/2/oauth2/token", self.token, auth=False),
            Route("POST", r"/2/oauth2/revoke", self.revoke, auth=False),
            Route("GET", r"/2/users/me", self.me),
            Route("POST", r"/2/media/upload/initialize", self.media_initialize),
            Route("POST", upload + "/append", self.media_append),
            Route("POST", upload + "/finalize", self.media_finalize),
            Route("GET", r"/2/media/upload", self.media_status),
            Route("POST", r"/2/media/metadata", self.media_metadata),
            Route("POST", r"/2/tweets", self.create_post),
            Route("GET", r"/2/tweets/(?P<post_id>\d+)", self.get_post),
            Route("DELETE", r"/2/tweets/(?P<post_id>\d+)", self.delete_post),
            Route("GET", r"/2/users/(?P<user_id>\d+)/tweets", self.user_posts),
        ]

    # --- error shapes -------------------------------------------------------------------------

    def error_reply(self, status: int, message: str) -> Reply:
        titles = {400: "Invalid Request", 403: "Forbidden", 404: "Not Found Error"}
        return _problem(status, titles.get(status, "Error"), message)

    def rate_limited_reply(self, retry_after: float) -> Reply:
        reply = _problem(429, "Too Many Requests", "Too Many Requests")
        reply.headers.update(
            {
                "x-rate-limit-limit": "100",
                "x-rate-limit-remaining": "0",
                "x-rate-limit-reset": str(int(time.time() + retry_after + 0.999)),
            }
        )
        return reply

    def unauthorized_reply(self) -> Reply:
        return _problem(401, "Unauthorized", "Unauthorized")

    # --- helpers ------------------------------------------------------------------------------

    def _new_id(self) -> str:
        with self.lock:
            self._next_id += 1
            return str(self._next_id)

    def _user(self, request: Request) -> str | None:
        with self.lock:
            grant = self.access.get(request.bearer)
            if grant is None or grant["expires"] <= time.time():
                return None
            return str(grant["user"])

    def _client_ok(self, request: Request) -> bool:
        expected = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        return (request.headers.get("Authorization") or "") == f"Basic {expected}"

    def _issue(self, user: str, scope: str, family: str) -> dict[str, Any]:
        access = secrets.token_urlsafe(32)
        refresh = secrets.token_urlsafe(32)
        with self.lock:
            self.access[access] = {
                "user": user,
                "expires": time.time() + ACCESS_SECONDS,
                "family": family,
            }
            if "offline.access" in scope.split():
                self.refresh[refresh] = {"user": user, "family": family, "scope": scope}
        body = {
            "token_type": "bearer",
            "expires_in": ACCESS_SECONDS,
            "access_token": access,
            "scope": scope,
        }
        if "offline.access" in scope.split():
            body["refresh_token"] = refresh
        return body

    def expire_access_tokens(self) -> None:
        with self.lock:
            for grant in self.access.values():
                grant["expires"] = 0

    def _revoke_family(self, family: str) -> None:
        with self.lock:
            for store in (self.access, self.refresh):
                for token in [t for t, g in store.items() if g["family"] == family]:
                    del store[token]

    def _render(self, post: dict[str, Any], fields: set[str]) -> dict[str, Any]:
        # X's text: links become t.co links, a link to attached media is appended, and
        # &, <, > are HTML-escaped.
        text = _URL.sub(
            lambda m: "https://t.co/" + hashlib.sha256(m.group(0).encode()).hexdigest()[:10],
            post["text"],
        )
        if post["media_ids"]:
            text += " https://t.co/m" + post["id"][-8:]
        rendered: dict[str, Any] = {
            "id": post["id"],
            "text": html.escape(text, quote=False),
            "edit_history_tweet_ids": [post["id"]],
        }
        if "created_at" in fields:
            rendered["created_at"] = post["created_at"]
        if "author_id" in fields:
            rendered["author_id"] = post["user"]
        if "attachments" in fields and post["media_ids"]:
            rendered["attachments"] = {"media_keys": [f"3_{m}" for m in post["media_ids"]]}
        if "public_metrics" in fields:
            rendered["public_metrics"] = dict(post["metrics"])
        return rendered

    def set_metrics(self, post_id: str, **counts: int) -> None:
        with self.lock:
            self.posts_by_id[post_id]["metrics"].update(counts)

    def store_post(self, text: str, *, user: str = USER["id"], created_at: str = "") -> str:
        """A post made elsewhere (the account's own history)."""
        post_id = self._new_id()
        with self.lock:
            self.posts_by_id[post_id] = self._new_post(post_id, user, text, [])
            if created_at:
                self.posts_by_id[post_id]["created_at"] = created_at
        return post_id

    @staticmethod
    def _new_post(post_id: str, user: str, text: str, media_ids: list[str]) -> dict[str, Any]:
        return {
            "id": post_id,
            "user": user,
            "text": text,
            "media_ids": media_ids,
            "created_at": _now(),
            "metrics": {
                "retweet_count": 0,
                "reply_count": 0,
                "like_count": 0,
                "quote_count": 0,
                "bookmark_count": 0,
                "impression_count": 0,
            },
        }

    # --- OAuth --------------------------------------------------------------------------------

    def authorize(self, request: Request) -> Reply:
        """The consent page, approved at once as the fixture user; redirects with a code."""
        q = {k: v[0] for k, v in request.query.items()}
        if q.get("client_id") != CLIENT_ID or not q.get("redirect_uri"):
            return Reply(400, "Something went wrong: invalid client", {"Content-Type": "text/html"})
        if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256":
            return Reply(
                400, "Something went wrong: invalid request", {"Content-Type": "text/html"}
            )
        if self.deny:
            params = {"error": "access_denied", "state": q.get("state", "")}
            return Reply(302, b"", {"Location": q["redirect_uri"] + "?" + urlencode(params)})
        code = secrets.token_urlsafe(24)
        with self.lock:
            self.codes[code] = {
                "redirect_uri": q["redirect_uri"],
                "challenge": q.get("code_challenge", ""),
                "scope": q.get("scope", ""),
                "user": USER["id"],
            }
        location = q["redirect_uri"] + "?" + urlencode({"state": q.get("state", ""), "code": code})
        return Reply(302, b"", {"Location": location})

    def token(self, request: Request) -> Reply:
        if not self._client_ok(request):
            return Reply(
                401,
                {
                    "error": "unauthorized_client",
                    "error_description": "Missing valid authorization header",
                },
            )
        fields = request.fields()
        grant_type = fields.get("grant_type")
        invalid = {"error": "invalid_request"}
        if grant_type == "authorization_code":
            with self.lock:
                grant = self.codes.pop(str(fields.get("code", "")), None)
            verifier = str(fields.get("code_verifier") or "").encode()
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest())
            if (
                grant is None
                or grant["redirect_uri"] != fields.get("redirect_uri")
                or challenge.rstrip(b"=").decode() != grant["challenge"]
            ):
                description = "Value passed for the authorization code was invalid."
                return Reply(400, invalid | {"error_description": description})
            self.bump("tokens_issued")
            return Reply(200, self._issue(grant["user"], grant["scope"], secrets.token_hex(8)))
        if grant_type == "refresh_token":
            token = str(fields.get("refresh_token", ""))
            with self.lock:
                grant = self.refresh.pop(token, None)
                reused = self.used_refresh.get(token)
                if grant is not None:
                    self.used_refresh[token] = grant["family"]
            if grant is None:
                if reused:  # a rotated refresh token came back: the whole grant is revoked
                    self._revoke_family(reused)
                    self.bump("refresh_reuse")
                description = "Value passed for the token was invalid."
                return Reply(400, invalid | {"error_description": description})
            self.bump("refreshes")
            return Reply(200, self._issue(grant["user"], grant["scope"], grant["family"]))
        return Reply(400, {"error": "unsupported_grant_type"})

    def revoke(self, request: Request) -> Reply:
        if not self._client_ok(request):
            return Reply(
                401,
                {
                    "error": "unauthorized_client",
                    "error_description": "Missing valid authorization header",
                },
            )
        token = str(request.fields().get("token", ""))
        with self.lock:
            grant = self.refresh.get(token) or self.access.get(token)
        if grant is not None:
            self._revoke_family(grant["family"])
        self.bump("tokens_revoked")
        return Reply(200, {"revoked": True})

    # --- users, media, posts ------------------------------------------------------------------

    def me(self, request: Request) -> Reply:
        if self._user(request) is None:
            return self.unauthorized_reply()
        return Reply(
            200,
            {"data": USER | {"profile_image_url": f"{self.url}/profile_images/{USER['id']}.png"}},
        )

    def media_initialize(self, request: Request) -> Reply:
        user = self._user(request)
        if user is None:
            return self.unauthorized_reply()
        body = request.json if isinstance(request.json, dict) else {}
        kind = body.get("media_type")
        if kind not in IMAGE_TYPES + VIDEO_TYPES:
            return self.error_reply(400, "media_type is not supported")
        if (kind in VIDEO_TYPES) != (body.get("media_category") in VIDEO_CATEGORIES):
            return self.error_reply(400, "media_category does not match media_type")
        total = int(body.get("total_bytes") or 0)
        bound = MAX_VIDEO_BYTES if kind in VIDEO_TYPES else 15 * 1024 * 1024
        if total <= 0 or total > bound:
            return self.error_reply(400, "total_bytes is invalid")
        media_id = self._new_id()
        with self.lock:
            self.uploads[media_id] = {
                "user": user,
                "type": body["media_type"],
                "category": body.get("media_category"),
                "total": total,
                "segments": {},
                "state": "initialized",
                "polls": 0,
                "alt_text": "",
            }
        self.bump("media_uploads")
        return Reply(
            200,
            {"data": {"id": media_id, "media_key": f"3_{media_id}", "expires_after_secs": 86400}},
        )

    def media_append(self, request: Request, media_id: str) -> Reply:
        if self._user(request) is None:
            return self.unauthorized_reply()
        fields = request.fields()
        files = [p for p in request.parts if p.name == "media"]
        index = int(fields.get("segment_index", -1))
        if files and len(files[0].data) > MAX_SEGMENT_BYTES:
            return self.error_reply(400, "media must be <= 5 MB per segment")
        with self.lock:
            upload = self.uploads.get(media_id)
            if upload is None or upload["state"] != "initialized" or not files:
                return self.error_reply(400, "Invalid media upload session")
            if not 0 <= index <= 999:
                return self.error_reply(400, "segment_index must be between 0 and 999")
            upload["segments"][index] = files[0].data
            self.counters["media_segment_bytes_max"] = max(
                self.counters["media_segment_bytes_max"], len(files[0].data)
            )
        self.bump("media_segments")
        return Reply(200, {"meta": {}})

    def media_finalize(self, request: Request, media_id: str) -> Reply:
        if self._user(request) is None:
            return self.unauthorized_reply()
        with self.lock:
            upload = self.uploads.get(media_id)
            if upload is None:
                return self.error_reply(400, "Invalid media upload session")
            indexes = sorted(upload["segments"])
            data = b"".join(upload["segments"][i] for i in indexes)
            if indexes != list(range(len(indexes))) or len(data) != upload["total"]:
                return self.error_reply(400, SEGMENTS_DO_NOT_ADD_UP)
            upload["data"] = data
            if upload["type"] in VIDEO_TYPES:
                upload["state"] = "pending"
                upload["finalized_at"] = time.monotonic()
                upload["fails"] = self.video_fails or data[4:8] != b"ftyp"
            elif upload["type"] == "image/gif" and self.media_polls > 0:
                upload["state"] = "pending"
            else:
                upload["state"] = "succeeded"
        body: dict[str, Any] = {
            "id": media_id,
            "media_key": f"{7 if upload['type'] in VIDEO_TYPES else 3}_{media_id}",
            "size": len(data),
            "expires_after_secs": 86400,
        }
        if upload["state"] == "pending":
            body["processing_info"] = {"state": "pending", "check_after_secs": 0}
        return Reply(200, {"data": body})

    def _video_processing(self, upload: dict[str, Any]) -> dict[str, Any]:
        """A video's ``processing_info`` now: ``in_progress`` for the processing time, then
        ``succeeded``, or ``failed`` with X's error."""
        elapsed = time.monotonic() - upload["finalized_at"]
        if elapsed < self.video_processing_seconds:
            percent = int(100 * elapsed / self.video_processing_seconds)
            left = self.video_processing_seconds - elapsed
            return {
                "state": "in_progress",
                "check_after_secs": max(1, int(left + 0.999)),
                "progress_percent": percent,
            }
        if upload["fails"]:
            upload["state"] = "failed"
            return {"state": "failed", "progress_percent": 100, "error": dict(INVALID_MEDIA)}
        upload["state"] = "succeeded"
        return {"state": "succeeded", "progress_percent": 100}

    def media_status(self, request: Request) -> Reply:
        if self._user(request) is None:
            return self.unauthorized_reply()
        fields = request.fields()
        media_id = str(fields.get("media_id", ""))
        with self.lock:
            upload = self.uploads.get(media_id)
            if upload is None or fields.get("command") != "STATUS":
                return self.error_reply(400, "Invalid media_id")
            upload["polls"] += 1
            if upload["type"] in VIDEO_TYPES and upload["state"] != "initialized":
                video = {"id": media_id, "processing_info": self._video_processing(upload)}
                return Reply(200, {"data": video})
            if upload["state"] != "succeeded" and upload["polls"] >= self.media_polls:
                upload["state"] = "succeeded"
            state = "succeeded" if upload["state"] == "succeeded" else "in_progress"
        info: dict[str, Any] = {"state": state}
        if state != "succeeded":
            info["check_after_secs"] = 0
        return Reply(200, {"data": {"id": media_id, "processing_info": info}})

    def media_metadata(self, request: Request) -> Reply:
        if self._user(request) is None:
            return self.unauthorized_reply()
        body = request.json if isinstance(request.json, dict) else {}
        text = str(((body.get("metadata") or {}).get("alt_text") or {}).get("text") or "")
        with self.lock:
            upload = self.uploads.get(str(body.get("id", "")))
            if upload is None:
                return self.error_reply(400, "Invalid media id")
            upload["alt_text"] = text
        return Reply(200, {"data": {"associated_metadata": True, "id": body["id"]}})

    def create_post(self, request: Request) -> Reply:
        user = self._user(request)
        if user is None:
            return self.unauthorized_reply()
        body = request.json if isinstance(request.json, dict) else {}
        text = str(body.get("text") or "")
        media_ids = [str(m) for m in ((body.get("media") or {}).get("media_ids") or [])]
        with self.lock:
            fault = self.gate_post()
            if fault is not None:
                return fault
            if not text.strip() and not media_ids:
                return self.error_reply(400, "Post text or media is required")
            if weighted_length(text) > 280:
                return self.error_reply(400, "Your Tweet text is too long.")
            for media_id in media_ids:
                upload = self.uploads.get(media_id)
                if upload is None or upload["user"] != user or upload["state"] != "succeeded":
                    return self.error_reply(400, f"Your media IDs are invalid: {media_id}")
            if any(
                p["user"] == user and p["text"] == text and text for p in self.posts_by_id.values()
            ):
                return _problem(
                    403,
                    "Forbidden",
                    "You are not allowed to create a Tweet with duplicate content.",
                )
            post_id = self._new_id()
            self.posts_by_id[post_id] = self._new_post(post_id, user, text, media_ids)
            self.accept_post(
                {
                    "id": post_id,
                    "text": text,
                    "media": len(media_ids),
                    "alt_texts": [self.uploads[m]["alt_text"] for m in media_ids],
                    "sizes": [len(self.uploads[m]["data"]) for m in media_ids],
                }
            )
        self.stall_if_asked()
        return Reply(
            201, {"data": {"id": post_id, "text": text, "edit_history_tweet_ids": [post_id]}}
        )

    def _fields(self, request: Request) -> set[str]:
        return set(str(request.fields().get("tweet.fields") or "").split(","))

    def get_post(self, request: Request, post_id: str) -> Reply:
        if self._user(request) is None:
            return self.unauthorized_reply()
        with self.lock:
            post = self.posts_by_id.get(post_id)
            if post is None:  # X answers 200 with an errors array for a missing post
                return Reply(
                    200,
                    {
                        "errors": [
                            {
                                "value": post_id,
                                "detail": f"Could not find tweet with id: [{post_id}].",
                                "title": "Not Found Error",
                                "resource_type": "tweet",
                                "parameter": "id",
                                "resource_id": post_id,
                                "type": "https://api.twitter.com/2/problems/resource-not-found",
                            }
                        ]
                    },
                )
            return Reply(200, {"data": self._render(post, self._fields(request))})

    def delete_post(self, request: Request, post_id: str) -> Reply:
        user = self._user(request)
        if user is None:
            return self.unauthorized_reply()
        with self.lock:
            post = self.posts_by_id.get(post_id)
            if post is not None and post["user"] != user:
                return _problem(403, "Forbidden", "You are not allowed to delete this Tweet.")
            if post is not None:
                del self.posts_by_id[post_id]
                self.counters["posts_deleted"] += 1
        return Reply(200, {"data": {"deleted": post is not None}})

    def user_posts(self, request: Request, user_id: str) -> Reply:
        if self._user(request) is None:
            return self.unauthorized_reply()
        fields = request.fields()
        limit = max(5, min(int(fields.get("max_results") or 10), 100))
        start = str(fields.get("start_time") or "")
        offset = int(str(fields.get("pagination_token") or "0") or 0)
        with self.lock:
            mine = [p for p in self.posts_by_id.values() if p["user"] == user_id]
            if start:
                mine = [p for p in mine if p["created_at"] >= start.replace("Z", ".000Z")]
            mine.sort(key=lambda p: int(p["id"]), reverse=True)
            page = mine[offset : offset + limit]
            data = [self._render(p, self._fields(request)) for p in page]
        self.bump("timeline_reads")
        meta: dict[str, Any] = {"result_count": len(data)}
        if data:
            meta.update(newest_id=data[0]["id"], oldest_id=data[-1]["id"])
        if offset + limit < len(mine):
            meta["next_token"] = str(offset + limit)
        return Reply(200, {"data": data, "meta": meta} if data else {"meta": meta})


if __name__ == "__main__":
    serve_main(XStandIn)
