"""Stand-in YouTube Data API v3 and Google OAuth 2 (developers.google.com/youtube,
developers.google.com/identity): an auto-approving consent page that requires PKCE (S256) and
gives a refresh token only for ``access_type=offline`` with ``prompt=consent``; a token
endpoint (client credentials in the form; the code verifier checked; 1-hour access tokens; a
refresh answers a new access token and no refresh token, as Google does); revoke (the refresh
token ends the whole grant; an unknown token is ``400 invalid_token``); ``channels.list``
(``mine=true``, the uploads playlist); the resumable upload (the session URI in ``Location``;
``PUT`` chunks with ``Content-Range``, every chunk but the last a multiple of ``chunk_unit``;
``308`` with ``Range: bytes=0-N`` until the last byte, then ``201`` and the video resource;
``bytes */TOTAL`` asks the status; a session older than ``session_seconds`` answers 404);
``thumbnails.set``; ``videos.list`` (statistics), ``videos.delete``; ``playlistItems.list`` of
the uploads playlist, newest first; ``videoCategories.list``. Every call costs its quota units
out of ``quota_left`` (None: unlimited), and a call that would overspend answers ``403
quotaExceeded``. Errors in Google's shape ``{"error": {"code", "message", "errors": [{"domain",
"reason", "message"}], "status"}}``.

Faults beyond the shared ones (:meth:`set_faults` keys): ``interrupt_chunks`` (``{"count",
"keep"}``: the next chunks keep only ``keep`` bytes and answer 503, as a connection that broke
mid-chunk), ``lose_answers`` (``{"count", "seconds"}``: the next chunks are stored in full,
then the answer is held ``seconds``, past the client's timeout), ``upload_limit`` (the next
session start answers ``uploadLimitExceeded``).

Run alone: ``python -m tests.providers.youtube.standin --port 8410``.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from tests.providers.standin import Reply, Request, Route, StandIn, serve_main

CLIENT_ID = "youtube-standin-client-id.apps.googleusercontent.com"
CLIENT_SECRET = "youtube-standin-client-secret-0123456789"
CHANNEL = {"id": "UCherald000000000000000a", "title": "Herald Channel", "handle": "@heraldchannel"}
ACCESS_SECONDS = 3599
CHUNK_UNIT = 256 * 1024
CATEGORIES = {"1": "Film & Animation", "10": "Music", "22": "People & Blogs", "27": "Education"}
UNASSIGNABLE = {"18": "Short Movies"}
COSTS = {
    ("POST", "videos"): 1600,
    ("POST", "thumbnails"): 50,
    ("DELETE", "videos"): 50,
}


def google_error(status: int, reason: str, message: str, domain: str = "youtube.video") -> Reply:
    names = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}
    body = {
        "error": {
            "code": status,
            "message": message,
            "errors": [{"message": message, "domain": domain, "reason": reason}],
            "status": names.get(status, "UNKNOWN"),
        }
    }
    return Reply(status, body)


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class YouTubeStandIn(StandIn):
    provider = "youtube"
    permanent_status = 400

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.codes: dict[str, dict[str, Any]] = {}
        self.access: dict[str, dict[str, Any]] = {}  # token -> {"refresh", "expires", "scope"}
        self.refresh: dict[str, dict[str, Any]] = {}
        self.chunk_unit = CHUNK_UNIT
        self.session_seconds = 7 * 24 * 3600.0
        self.thumbnails_allowed = True
        self.quota_left: int | None = None
        self._next = 0
        self.clear_data()

    def clear_data(self) -> None:
        self.sessions: dict[str, dict[str, Any]] = {}
        self.videos: dict[str, dict[str, Any]] = {}
        self.uploads_order: list[str] = []  # newest last
        self.interrupt = {"count": 0, "keep": 0}
        self.lose = {"count": 0, "seconds": 3.0}
        self.upload_limit = 0

    def configure_extra(self, spec: dict[str, Any]) -> None:
        with self.lock:
            if isinstance(spec.get("interrupt_chunks"), dict):
                self.interrupt.update(spec["interrupt_chunks"])
            if isinstance(spec.get("lose_answers"), dict):
                self.lose.update(spec["lose_answers"])
            if "upload_limit" in spec:
                self.upload_limit = int(spec["upload_limit"] or 0)

    def fixtures(self) -> dict[str, Any]:
        return {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "api_url": self.url}

    def app_settings(self, daily_quota: int = 10_000) -> dict[str, Any]:
        """The ``PROVIDER_OAUTH_APPS["youtube"]`` entry that points Herald at this stand-in."""
        return {
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "api_url": self.url,
            "upload_url": self.url,
            "authorize_url": f"{self.url}/o/oauth2/v2/auth",
            "token_url": f"{self.url}/token",
            "revoke_url": f"{self.url}/revoke",
            "scopes": "",
            "daily_quota": str(daily_quota),
        }

    def build_routes(self) -> list[Route]:
        return [
            Route("GET", r"/o/oauth2/v2/auth", self.authorize, auth=False),
            Route("POST", r"/token", self.token, auth=False),
            Route("POST", r"/revoke", self.revoke, auth=False),
            Route("GET", r"/youtube/v3/channels", self.channels),
            Route("POST", r"/upload/youtube/v3/videos", self.start_upload),
            Route("PUT", r"/upload/youtube/v3/videos", self.put_upload, auth=False),
            Route("POST", r"/upload/youtube/v3/thumbnails/set", self.set_thumbnail),
            Route("GET", r"/youtube/v3/videos", self.list_videos),
            Route("DELETE", r"/youtube/v3/videos", self.delete_video),
            Route("GET", r"/youtube/v3/playlistItems", self.playlist_items),
            Route("GET", r"/youtube/v3/videoCategories", self.categories),
        ]

    # --- error shapes -------------------------------------------------------------------------

    def error_reply(self, status: int, message: str) -> Reply:
        reason = {404: "notFound", 503: "backendError", 500: "backendError"}.get(
            status, "badRequest"
        )
        return google_error(status, reason, message, domain="global")

    def rate_limited_reply(self, retry_after: float) -> Reply:
        return google_error(429, "rateLimitExceeded", "Rate limit exceeded.", domain="usageLimits")

    def unauthorized_reply(self) -> Reply:
        return google_error(
            401, "authError", "Request had invalid authentication credentials.", domain="global"
        )

    # --- helpers ------------------------------------------------------------------------------

    def _id(self, prefix: str = "") -> str:
        with self.lock:
            self._next += 1
            return (
                prefix
                + base64.urlsafe_b64encode(
                    hashlib.sha256(f"{self._next}-{time.time()}".encode()).digest()
                ).decode()[:11]
            )

    def _grant(self, request: Request) -> dict[str, Any] | None:
        with self.lock:
            grant = self.access.get(request.bearer)
            if grant is None or grant["expires"] <= time.time():
                return None
            return grant

    def _authorized(self, request: Request, cost: int = 1) -> Reply | None:
        """The token, then the call's quota units (an invalid request costs too)."""
        if self._grant(request) is None:
            return self.unauthorized_reply()
        with self.lock:
            if self.quota_left is not None:
                if self.quota_left < cost:
                    self.counters["quota_refusals"] += 1
                    return google_error(
                        403,
                        "quotaExceeded",
                        "The request cannot be completed because you have exceeded your quota.",
                        domain="youtube.quota",
                    )
                self.quota_left -= cost
            self.counters["units_spent"] += cost
        return None

    def expire_access_tokens(self) -> None:
        with self.lock:
            for grant in self.access.values():
                grant["expires"] = 0

    def expire_sessions(self) -> None:
        with self.lock:
            for session in self.sessions.values():
                session["created"] = 0.0

    def add_upload(self, title: str, description: str = "", published: str = "") -> str:
        """A video uploaded elsewhere (the channel's own history)."""
        video_id = self._id()
        with self.lock:
            self.videos[video_id] = self._video(
                video_id, {"title": title, "description": description}, {}
            )
            if published:
                self.videos[video_id]["snippet"]["publishedAt"] = published
            self.uploads_order.append(video_id)
        return video_id

    def set_statistics(self, video_id: str, *, views: int, likes: int, comments: int) -> None:
        with self.lock:
            self.videos[video_id]["statistics"] = {
                "viewCount": str(views),
                "likeCount": str(likes),
                "favoriteCount": "0",
                "commentCount": str(comments),
            }

    @staticmethod
    def _video(video_id: str, snippet: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        return {
            "kind": "youtube#video",
            "id": video_id,
            "snippet": {**snippet, "channelId": CHANNEL["id"], "publishedAt": _now_iso()},
            "status": {"uploadStatus": "uploaded", **status},
            "statistics": {"viewCount": "0", "likeCount": "0", "commentCount": "0"},
        }

    # --- OAuth --------------------------------------------------------------------------------

    def authorize(self, request: Request) -> Reply:
        q = {k: v[0] for k, v in request.query.items()}
        if q.get("client_id") != CLIENT_ID or not q.get("redirect_uri"):
            return Reply(400, "Error 401: invalid_client", {"Content-Type": "text/html"})
        if q.get("response_type") != "code":
            return Reply(400, "unsupported_response_type", {"Content-Type": "text/html"})
        if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return Reply(400, "invalid_request: code_challenge", {"Content-Type": "text/html"})
        code = "4/" + secrets.token_urlsafe(24)
        offline = q.get("access_type") == "offline" and q.get("prompt") == "consent"
        with self.lock:
            self.codes[code] = {
                "redirect_uri": q["redirect_uri"],
                "challenge": q["code_challenge"],
                "scope": q.get("scope", "").split(),
                "offline": offline,
            }
        location = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
        return Reply(302, b"", {"Location": location})

    def _issue(self, scope: list[str], refresh: str) -> dict[str, Any]:
        access = "ya29." + secrets.token_urlsafe(40)
        with self.lock:
            self.access[access] = {
                "refresh": refresh,
                "scope": scope,
                "expires": time.time() + ACCESS_SECONDS,
            }
        return {
            "access_token": access,
            "expires_in": ACCESS_SECONDS,
            "scope": " ".join(scope),
            "token_type": "Bearer",
        }

    @staticmethod
    def _invalid_grant(description: str) -> Reply:
        return Reply(400, {"error": "invalid_grant", "error_description": description})

    def token(self, request: Request) -> Reply:
        fields = request.fields()
        if fields.get("client_id") != CLIENT_ID or fields.get("client_secret") != CLIENT_SECRET:
            return Reply(401, {"error": "invalid_client", "error_description": "Unauthorized"})
        grant_type = fields.get("grant_type")
        if grant_type == "authorization_code":
            with self.lock:
                code = self.codes.pop(str(fields.get("code", "")), None)
            if code is None or code["redirect_uri"] != fields.get("redirect_uri"):
                return self._invalid_grant("Bad Request")
            verifier = str(fields.get("code_verifier") or "")
            digest = hashlib.sha256(verifier.encode()).digest()
            if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != code["challenge"]:
                return self._invalid_grant("Invalid code verifier.")
            refresh = "1//" + secrets.token_urlsafe(40) if code["offline"] else ""
            body = self._issue(code["scope"], refresh)
            if refresh:
                with self.lock:
                    self.refresh[refresh] = {"scope": code["scope"]}
                body["refresh_token"] = refresh
                body["refresh_token_expires_in"] = 604799  # an app in testing mode
            self.bump("tokens_issued")
            return Reply(200, body)
        if grant_type == "refresh_token":
            token = str(fields.get("refresh_token", ""))
            with self.lock:
                grant = self.refresh.get(token)
            if grant is None:
                return self._invalid_grant("Token has been expired or revoked.")
            self.bump("refreshes")
            return Reply(200, self._issue(grant["scope"], token))  # no new refresh token
        return Reply(400, {"error": "unsupported_grant_type"})

    def revoke(self, request: Request) -> Reply:
        token = str(request.fields().get("token", ""))
        with self.lock:
            if token in self.refresh:
                del self.refresh[token]
                for access in [a for a, g in self.access.items() if g["refresh"] == token]:
                    del self.access[access]
            elif token in self.access:
                del self.access[token]
            else:
                return Reply(400, {"error": "invalid_token", "error_description": "Bad Request"})
        self.bump("tokens_revoked")
        return Reply(200, {})

    # --- channels, categories -----------------------------------------------------------------

    def channels(self, request: Request) -> Reply:
        if (refused := self._authorized(request)) is not None:
            return refused
        if request.query.get("mine") != ["true"]:
            return google_error(400, "missingRequiredParameter", "No filter selected.")
        channel = {
            "kind": "youtube#channel",
            "id": CHANNEL["id"],
            "snippet": {
                "title": CHANNEL["title"],
                "customUrl": CHANNEL["handle"],
                "thumbnails": {"default": {"url": f"{self.url}/avatar/{CHANNEL['id']}.jpg"}},
            },
            "contentDetails": {
                "relatedPlaylists": {"likes": "", "uploads": "UU" + CHANNEL["id"][2:]}
            },
        }
        return Reply(200, {"kind": "youtube#channelListResponse", "items": [channel]})

    def categories(self, request: Request) -> Reply:
        if (refused := self._authorized(request)) is not None:
            return refused
        items = [
            {"id": key, "snippet": {"title": title, "assignable": True}}
            for key, title in CATEGORIES.items()
        ] + [
            {"id": key, "snippet": {"title": title, "assignable": False}}
            for key, title in UNASSIGNABLE.items()
        ]
        return Reply(200, {"kind": "youtube#videoCategoryListResponse", "items": items})

    # --- the resumable upload -----------------------------------------------------------------

    def _metadata_error(self, body: Any) -> Reply | None:
        if not isinstance(body, dict):
            return google_error(400, "invalidVideoMetadata", "The request metadata is invalid.")
        snippet = body.get("snippet") or {}
        status = body.get("status") or {}
        title = str(snippet.get("title") or "")
        if not title or len(title) > 100 or "<" in title or ">" in title:
            return google_error(
                400,
                "invalidTitle",
                "The request metadata specifies an invalid or empty video title.",
            )
        description = str(snippet.get("description") or "")
        if len(description.encode()) > 5000 or "<" in description or ">" in description:
            return google_error(
                400,
                "invalidDescription",
                "The request metadata specifies an invalid video description.",
            )
        if str(snippet.get("categoryId") or "") not in CATEGORIES:
            return google_error(
                400,
                "invalidCategoryId",
                "The snippet.categoryId property specifies an invalid category ID.",
            )
        tags = snippet.get("tags") or []
        if sum(len(t) + (2 if " " in t else 0) for t in tags) + max(len(tags) - 1, 0) > 500:
            return google_error(
                400, "invalidTags", "The request metadata specifies invalid video keywords."
            )
        if status.get("privacyStatus") not in ("private", "unlisted", "public"):
            return google_error(400, "invalidVideoMetadata", "The privacy status is invalid.")
        if not isinstance(status.get("selfDeclaredMadeForKids"), bool):
            return google_error(400, "invalidVideoMetadata", "selfDeclaredMadeForKids is required.")
        return None

    def start_upload(self, request: Request) -> Reply:
        if (refused := self._authorized(request, COSTS[("POST", "videos")])) is not None:
            return refused
        if request.query.get("uploadType") != ["resumable"]:
            return google_error(400, "badRequest", "Only resumable uploads in this stand-in.")
        with self.lock:
            if self.upload_limit > 0:
                self.upload_limit -= 1
                return google_error(
                    400,
                    "uploadLimitExceeded",
                    "The user has exceeded the number of videos they may upload.",
                )
        if (fault := self.gate_post()) is not None:
            return fault
        if (invalid := self._metadata_error(request.json)) is not None:
            return invalid
        try:
            size = int(request.headers.get("X-Upload-Content-Length") or "")
        except ValueError:
            return google_error(400, "badRequest", "X-Upload-Content-Length is required.")
        upload_id = secrets.token_urlsafe(24)
        with self.lock:
            self.sessions[upload_id] = {
                "size": size,
                "type": request.headers.get("X-Upload-Content-Type") or "",
                "resource": request.json,
                "notify": request.query.get("notifySubscribers", ["true"])[0],
                "data": bytearray(),
                "created": time.time(),
                "video": None,
            }
        self.bump("sessions_started")
        location = f"{self.url}/upload/youtube/v3/videos?uploadType=resumable&upload_id={upload_id}"
        return Reply(200, b"", {"Location": location, "X-GUploader-UploadID": upload_id})

    def _status_reply(self, session: dict[str, Any]) -> Reply:
        if session["video"] is not None:
            return Reply(200, self.videos[session["video"]])
        held = len(session["data"])
        headers = {"Range": f"bytes=0-{held - 1}"} if held else {}
        return Reply(308, b"", headers)

    def put_upload(self, request: Request) -> Reply:
        upload_id = (request.query.get("upload_id") or [""])[0]
        with self.lock:
            session = self.sessions.get(upload_id)
            if session is None or time.time() - session["created"] > self.session_seconds:
                self.counters["sessions_gone"] += 1
                return google_error(
                    404, "notFound", "Upload session not found or expired.", domain="global"
                )
        content_range = str(request.headers.get("Content-Range") or "")
        if content_range == f"bytes */{session['size']}":
            self.bump("status_queries")
            with self.lock:
                return self._status_reply(session)
        return self._chunk(session, content_range, request.body)

    def _chunk(self, session: dict[str, Any], content_range: str, body: bytes) -> Reply:
        try:
            span, total = content_range.removeprefix("bytes ").split("/")
            first, last = (int(x) for x in span.split("-"))
        except ValueError:
            return google_error(400, "badRequest", "Invalid Content-Range.")
        size = session["size"]
        with self.lock:
            held = len(session["data"])
            if session["video"] is not None:
                return self._status_reply(session)
            if int(total) != size or first != held or last - first + 1 != len(body):
                self.counters["range_mismatches"] += 1
                return google_error(
                    400, "badRequest", "Content-Range does not continue the upload."
                )
            if last + 1 < size and len(body) % self.chunk_unit:
                return google_error(400, "badRequest", "Chunks must be multiples of 256 KiB.")
            if self.interrupt["count"] > 0:
                self.interrupt["count"] -= 1
                keep = min(int(self.interrupt["keep"]), len(body))
                session["data"] += body[:keep]
                self.counters["chunks_interrupted"] += 1
                return google_error(503, "backendError", "Backend Error", domain="global")
            session["data"] += body
            self.counters["chunks"] += 1
            lost = self.lose["count"] > 0
            if lost:
                self.lose["count"] -= 1
            if len(session["data"]) == size:
                self._finish(session)
            reply = self._status_reply(session)
        if lost:
            self.bump("answers_lost")
            self._stopping.wait(float(self.lose["seconds"]))
        return reply

    def _finish(self, session: dict[str, Any]) -> None:
        """The last byte is in: the video exists (one per session, whatever is asked later)."""
        video_id = self._id()
        resource = session["resource"]
        video = self._video(
            video_id, dict(resource.get("snippet") or {}), dict(resource.get("status") or {})
        )
        self.videos[video_id] = video
        self.uploads_order.append(video_id)
        session["video"] = video_id
        self.posts.append(
            {
                "id": video_id,
                "title": video["snippet"].get("title"),
                "description": video["snippet"].get("description"),
                "status": video["status"],
                "tags": video["snippet"].get("tags"),
                "categoryId": video["snippet"].get("categoryId"),
                "notify": session["notify"],
                "bytes": bytes(session["data"]),
                "type": session["type"],
            }
        )
        self.counters["posts_accepted"] += 1

    # --- thumbnails, videos, uploads ----------------------------------------------------------

    def set_thumbnail(self, request: Request) -> Reply:
        if (refused := self._authorized(request, COSTS[("POST", "thumbnails")])) is not None:
            return refused
        video_id = (request.query.get("videoId") or [""])[0]
        with self.lock:
            video = self.videos.get(video_id)
        if video is None:
            return google_error(
                404, "videoNotFound", "The video that you are trying to update cannot be found."
            )
        if not self.thumbnails_allowed:
            return google_error(
                403,
                "forbidden",
                "The authenticated user doesn't have permissions to upload and set custom video thumbnails.",
            )
        if len(request.body) > 2 * 1024 * 1024:
            return google_error(413, "mediaBodyTooLarge", "The thumbnail image is too large.")
        if request.content_type not in ("image/jpeg", "image/png"):
            return google_error(400, "invalidImage", "The provided image content is invalid.")
        with self.lock:
            video["thumbnail"] = {"type": request.content_type, "bytes": bytes(request.body)}
        self.bump("thumbnails_set")
        return Reply(
            200, {"kind": "youtube#thumbnailSetResponse", "items": [{"default": {"url": ""}}]}
        )

    def list_videos(self, request: Request) -> Reply:
        if (refused := self._authorized(request)) is not None:
            return refused
        ids = ",".join(request.query.get("id") or []).split(",")
        parts = set(",".join(request.query.get("part") or []).split(","))
        with self.lock:
            items = []
            for video_id in ids:
                video = self.videos.get(video_id)
                if video is None:
                    continue
                item: dict[str, Any] = {"kind": "youtube#video", "id": video_id}
                for part in ("snippet", "status", "statistics"):
                    if part in parts:
                        item[part] = video[part]
                items.append(item)
        return Reply(200, {"kind": "youtube#videoListResponse", "items": items})

    def delete_video(self, request: Request) -> Reply:
        if (refused := self._authorized(request, COSTS[("DELETE", "videos")])) is not None:
            return refused
        video_id = (request.query.get("id") or [""])[0]
        with self.lock:
            if self.videos.pop(video_id, None) is None:
                return google_error(
                    404, "videoNotFound", "The video that you are trying to delete cannot be found."
                )
            self.uploads_order.remove(video_id)
        self.bump("videos_deleted")
        return Reply(204)

    def playlist_items(self, request: Request) -> Reply:
        if (refused := self._authorized(request)) is not None:
            return refused
        if request.query.get("playlistId") != ["UU" + CHANNEL["id"][2:]]:
            return google_error(404, "playlistNotFound", "The playlist cannot be found.")
        limit = int((request.query.get("maxResults") or ["5"])[0])
        with self.lock:
            newest = list(reversed(self.uploads_order))
            items = [
                {
                    "kind": "youtube#playlistItem",
                    "snippet": {
                        "title": self.videos[v]["snippet"].get("title", ""),
                        "description": self.videos[v]["snippet"].get("description", ""),
                        "publishedAt": self.videos[v]["snippet"]["publishedAt"],
                        "resourceId": {"kind": "youtube#video", "videoId": v},
                    },
                }
                for v in newest[:limit]
            ]
        body: dict[str, Any] = {"kind": "youtube#playlistItemListResponse", "items": items}
        if len(newest) > limit:
            body["nextPageToken"] = "CAUQAA"
        return Reply(200, body)


if __name__ == "__main__":
    serve_main(YouTubeStandIn)
