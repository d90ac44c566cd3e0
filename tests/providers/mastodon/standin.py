"""Stand-in Mastodon instance: apps, OAuth (auto-approving authorize, PKCE S256), accounts,
media (202 + polling), statuses with Idempotency-Key dedupe, boosts, search, and the server's
limits (``GET /api/v2/instance``).

Videos behave as Mastodon documents them: ``POST /api/v2/media`` answers 202 with a null
``url``; ``GET /api/v1/media/:id`` answers 206 while the server processes the video and 200
(with its ``url``) once done, or 422 with an ``error`` when processing failed; a status cannot
attach a video still processing (422). Extra fault keys (``set_faults``; cleared by ``reset``):
``video_processing_seconds`` (how long each video processes, default 1), ``video_processing_fails``
(processing ends in failure), ``video_size_limit`` (bytes; what ``/api/v2/instance`` announces
and the upload enforces, with Mastodon's error body; default 99 MB).

Run alone: ``python -m tests.providers.mastodon.standin --port 8401``.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import secrets
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import grapheme

from tests.providers.standin import Reply, Request, Route, StandIn, serve_main

FIXTURE_TOKEN = "mastodon-fixture-token-0123456789abcdef"
VISIBILITIES = ("public", "unlisted", "private", "direct")
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
VIDEO_TYPES = ("video/mp4", "video/quicktime", "video/webm")
VIDEO_SIZE_LIMIT = 99 * 1024 * 1024
PROCESSING_FAILED = "Error processing thumbnail for uploaded media"
_URL = re.compile(r"https?://[^\s<>\"']+[^\s<>\"'.,:;!?)\]]")
_MENTION = re.compile(r"(?<![=/\w])@([a-z0-9_]+(?:[a-z0-9_.-]*[a-z0-9_])?)(?:@[\w.-]*\w)?", re.I)


def _length(text: str) -> int:
    text = _URL.sub("x" * 23, text)
    text = _MENTION.sub(lambda m: "@" + m.group(1), text)
    return int(grapheme.length(text))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class MastodonStandIn(StandIn):
    provider = "mastodon"
    permanent_status = 422

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, media_polls: int = 0) -> None:
        super().__init__(host, port)
        self.media_polls = media_polls  # GET /api/v1/media/:id answers 206 this many times
        self.apps: dict[str, dict[str, Any]] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.tokens: dict[str, str] = {FIXTURE_TOKEN: "1"}
        self.accounts = {
            "1": {
                "id": "1",
                "username": "herald",
                "acct": "herald",
                "display_name": "Herald Test",
                "bot": False,
            },
            "2": {
                "id": "2",
                "username": "friend",
                "acct": "friend",
                "display_name": "A Friend",
                "bot": False,
            },
        }
        self._next_id = 110_000_000_000_000_000
        self.clear_data()

    def clear_data(self) -> None:
        self.statuses: dict[str, dict[str, Any]] = {}
        self.idempotency: dict[tuple[str, str], str] = {}
        self.media: dict[str, dict[str, Any]] = {}
        self.video = {"processing_seconds": 1.0, "fails": False, "size_limit": VIDEO_SIZE_LIMIT}

    def configure_extra(self, spec: dict[str, Any]) -> None:
        with self.lock:
            if spec.get("clear"):
                self.video = {
                    "processing_seconds": 1.0,
                    "fails": False,
                    "size_limit": VIDEO_SIZE_LIMIT,
                }
            if "video_processing_seconds" in spec:
                self.video["processing_seconds"] = float(spec["video_processing_seconds"])
            if "video_processing_fails" in spec:
                self.video["fails"] = bool(spec["video_processing_fails"])
            if "video_size_limit" in spec:
                self.video["size_limit"] = int(spec["video_size_limit"])

    def fixtures(self) -> dict[str, Any]:
        return {
            "access_token": FIXTURE_TOKEN,
            "account_id": "1",
            "username": "herald",
            "instance_url": self.url,
        }

    def build_routes(self) -> list[Route]:
        status = r"/api/v1/statuses/(?P<status_id>\d+)"
        return [
            Route("POST", r"/api/v1/apps", self.create_app, auth=False),
            Route("GET", r"/oauth/authorize", self.authorize, auth=False),
            Route("POST", r"/oauth/token", self.token),
            Route("POST", r"/oauth/revoke", self.revoke),
            Route("GET", r"/api/v1/accounts/verify_credentials", self.verify_credentials),
            Route("GET", r"/api/v1/accounts/(?P<account_id>\d+)/statuses", self.account_statuses),
            Route("POST", r"/api/v2/media", self.upload_media),
            Route("GET", r"/api/v1/media/(?P<media_id>\d+)", self.media_status),
            Route("POST", r"/api/v1/statuses", self.create_status),
            Route("GET", status, self.get_status),
            Route("GET", status + "/source", self.get_source),
            Route("POST", status + "/reblog", self.reblog),
            Route("POST", status + "/unreblog", self.unreblog),
            Route("GET", r"/api/v2/search", self.search),
            Route("GET", r"/api/v2/instance", self.instance, auth=False),
        ]

    # --- error shapes -------------------------------------------------------------------------

    def error_reply(self, status: int, message: str) -> Reply:
        return Reply(status, {"error": message})

    def rate_limited_reply(self, retry_after: float) -> Reply:
        reset = datetime.fromtimestamp(datetime.now(UTC).timestamp() + retry_after, tz=UTC)
        return Reply(
            429,
            {"error": "Too many requests"},
            {
                "X-RateLimit-Limit": "300",
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset": reset.isoformat(timespec="milliseconds").replace(
                    "+00:00", "Z"
                ),
            },
        )

    def unauthorized_reply(self) -> Reply:
        return Reply(401, {"error": "The access token was revoked"})

    # --- helpers ------------------------------------------------------------------------------

    def _new_id(self) -> str:
        with self.lock:
            self._next_id += 1
            return str(self._next_id)

    def _account_id(self, request: Request) -> str | None:
        with self.lock:
            return self.tokens.get(request.bearer)

    def _account(self, account_id: str) -> dict[str, Any]:
        account = dict(self.accounts[account_id])
        account["url"] = f"{self.url}/@{account['username']}"
        account["avatar"] = f"{self.url}/avatars/{account_id}.png"
        return account

    def _reblogged_by(self, viewer: str | None, status_id: str) -> bool:
        return viewer is not None and any(
            s["account_id"] == viewer and s["reblog_of"] == status_id
            for s in self.statuses.values()
        )

    def render(self, status: dict[str, Any], viewer: str | None = None) -> dict[str, Any]:
        """A Status entity; ``viewer`` (an account id) gets its ``reblogged`` flag, as the
        authenticated account sees it."""
        account = self._account(status["account_id"])
        rendered = {
            "id": status["id"],
            "created_at": status["created_at"],
            "content": "<p>" + html.escape(status["text"]).replace("\n", "<br />") + "</p>",
            "visibility": status["visibility"],
            "language": status["language"],
            "sensitive": False,
            "spoiler_text": "",
            "uri": f"{self.url}/users/{account['username']}/statuses/{status['id']}",
            "url": f"{account['url']}/{status['id']}",
            "account": account,
            "media_attachments": [
                {
                    "id": m,
                    "type": self.media[m]["type"],
                    "url": self._media_url(m),
                    "description": self.media[m]["description"],
                }
                for m in status["media_ids"]
                if m in self.media
            ],
            "favourites_count": status["favourites_count"],
            "replies_count": status["replies_count"],
            "reblogs_count": status["reblogs_count"],
            "reblogged": self._reblogged_by(viewer, status["id"]),
            "favourited": False,
            "reblog": None,
        }
        if status.get("reblog_of"):
            original = self.statuses.get(status["reblog_of"])
            rendered["reblog"] = self.render(original, viewer) if original else None
            rendered["content"] = ""
        return rendered

    def set_counts(
        self, status_id: str, *, favourites: int = 0, replies: int = 0, reblogs: int = 0
    ) -> None:
        with self.lock:
            self.statuses[status_id].update(
                favourites_count=favourites, replies_count=replies, reblogs_count=reblogs
            )

    def _store(self, account_id: str, **values: Any) -> dict[str, Any]:
        status: dict[str, Any] = {
            "id": self._new_id(),
            "account_id": account_id,
            "created_at": _now(),
            "text": "",
            "visibility": "public",
            "language": None,
            "media_ids": [],
            "favourites_count": 0,
            "replies_count": 0,
            "reblogs_count": 0,
            "reblog_of": None,
            "idempotency_key": None,
        }
        status.update(values)
        self.statuses[status["id"]] = status
        return status

    # --- OAuth --------------------------------------------------------------------------------

    def create_app(self, request: Request) -> Reply:
        fields = request.fields()
        redirect = fields.get("redirect_uris")
        redirects = redirect if isinstance(redirect, list) else str(redirect or "").split()
        if not fields.get("client_name") or not redirects:
            return self.error_reply(422, "Validation failed: Redirect URI can't be blank")
        client_id = secrets.token_urlsafe(24)
        app = {
            "client_id": client_id,
            "client_secret": secrets.token_urlsafe(32),
            "redirect_uris": redirects,
            "scopes": str(fields.get("scopes") or "read"),
        }
        with self.lock:
            self.apps[client_id] = app
        self.bump("apps_registered")
        return Reply(
            200,
            {
                "id": str(len(self.apps)),
                "name": fields["client_name"],
                "website": None,
                "redirect_uri": "\n".join(redirects),
                "redirect_uris": redirects,
                "client_id": client_id,
                "client_secret": app["client_secret"],
                "vapid_key": "stand-in",
            },
        )

    def authorize(self, request: Request) -> Reply:
        """Auto-approves as the fixture user (account 1) and redirects with a code."""
        q = {k: v[0] for k, v in request.query.items()}
        app = self.apps.get(q.get("client_id", ""))
        if app is None or q.get("redirect_uri") not in app["redirect_uris"]:
            return Reply(400, {"error": "invalid_client"})
        if q.get("response_type") != "code":
            return Reply(400, {"error": "unsupported_response_type"})
        code = secrets.token_urlsafe(24)
        with self.lock:
            self.codes[code] = {
                "client_id": q["client_id"],
                "redirect_uri": q["redirect_uri"],
                "challenge": q.get("code_challenge"),
                "method": q.get("code_challenge_method"),
                "scope": q.get("scope", "read"),
                "account_id": "1",
            }
        location = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
        return Reply(302, b"", {"Location": location})

    def token(self, request: Request) -> Reply:
        fields = request.fields()
        with self.lock:
            grant = self.codes.pop(str(fields.get("code", "")), None)
        app = self.apps.get(str(fields.get("client_id", "")))
        if fields.get("grant_type") != "authorization_code":
            return Reply(400, {"error": "unsupported_grant_type"})
        if app is None or app["client_secret"] != fields.get("client_secret"):
            return Reply(
                401,
                {"error": "invalid_client", "error_description": "Client authentication failed"},
            )
        if (
            grant is None
            or grant["client_id"] != app["client_id"]
            or grant["redirect_uri"] != fields.get("redirect_uri")
        ):
            return Reply(
                400,
                {
                    "error": "invalid_grant",
                    "error_description": "The provided authorization grant is invalid",
                },
            )
        if grant["challenge"]:
            verifier = str(fields.get("code_verifier") or "").encode()
            expected = (
                base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
            )
            if grant["method"] != "S256" or expected != grant["challenge"]:
                return Reply(
                    400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}
                )
        token = secrets.token_urlsafe(32)
        with self.lock:
            self.tokens[token] = grant["account_id"]
        return Reply(
            200,
            {
                "access_token": token,
                "token_type": "Bearer",
                "scope": grant["scope"],
                "created_at": int(datetime.now(UTC).timestamp()),
            },
        )

    def revoke(self, request: Request) -> Reply:
        fields = request.fields()
        app = self.apps.get(str(fields.get("client_id", "")))
        if app is None or app["client_secret"] != fields.get("client_secret"):
            return Reply(403, {"error": "unauthorized_client"})
        with self.lock:
            self.tokens.pop(str(fields.get("token", "")), None)
        self.bump("tokens_revoked")
        return Reply(200, {})

    # --- accounts, media, statuses -------------------------------------------------------------

    def verify_credentials(self, request: Request) -> Reply:
        account_id = self._account_id(request)
        if account_id is None:
            return Reply(401, {"error": "The access token is invalid"})
        return Reply(200, self._account(account_id) | {"source": {"privacy": "public"}})

    def account_statuses(self, request: Request, account_id: str) -> Reply:
        if account_id not in self.accounts:
            return Reply(404, {"error": "Record not found"})
        fields = request.fields()
        limit = min(int(fields.get("limit") or 20), 40)
        exclude_reblogs = str(fields.get("exclude_reblogs", "")).lower() == "true"
        with self.lock:
            mine = [
                s
                for s in self.statuses.values()
                if s["account_id"] == account_id
                and s["visibility"] != "direct"
                and not (exclude_reblogs and s["reblog_of"])
            ]
            mine.sort(key=lambda s: int(s["id"]), reverse=True)
            viewer = self._account_id(request)
            return Reply(200, [self.render(s, viewer) for s in mine[:limit]])

    def instance(self, request: Request) -> Reply:
        """The parts of an Instance entity Herald reads: the server's media limits."""
        with self.lock:
            video_limit = self.video["size_limit"]
        return Reply(
            200,
            {
                "domain": "127.0.0.1",
                "title": "Stand-in",
                "version": "4.3.0",
                "configuration": {
                    "statuses": {"max_characters": 500, "max_media_attachments": 4},
                    "media_attachments": {
                        "supported_mime_types": [*IMAGE_TYPES, *VIDEO_TYPES],
                        "image_size_limit": 16 * 1024 * 1024,
                        "image_matrix_limit": 33_177_600,
                        "video_size_limit": video_limit,
                        "video_frame_rate_limit": 120,
                        "video_matrix_limit": 8_294_400,
                    },
                },
            },
        )

    def _media_url(self, media_id: str) -> str | None:
        media = self.media[media_id]
        return f"{self.url}/media/{media_id}.{media['ext']}" if media["done"] else None

    def _refused_upload(self, upload: Any) -> Reply | None:
        """Mastodon's 422 bodies for what it would refuse: a type it does not take, bytes
        that are not what they claim, a file over the limit."""
        if upload.content_type not in IMAGE_TYPES + VIDEO_TYPES:
            return self.error_reply(
                422,
                "Validation failed: File has contents that are not what they are reported to be",
            )
        if upload.content_type in VIDEO_TYPES:
            if not (upload.data[4:8] == b"ftyp" or upload.data[:4] == b"\x1aE\xdf\xa3"):
                return self.error_reply(
                    422,
                    "Validation failed: File has contents that are not what they are reported to be",
                )
            limit = self.video["size_limit"]
            if len(upload.data) > limit:
                return self.error_reply(
                    422,
                    f"Validation failed: File file size must be less than {limit // (1024 * 1024)} MB",
                )
        elif len(upload.data) > 16 * 1024 * 1024:
            return self.error_reply(
                422, "Validation failed: File file size must be less than 16 MB"
            )
        return None

    def upload_media(self, request: Request) -> Reply:
        if self._account_id(request) is None:
            return Reply(401, {"error": "The access token is invalid"})
        files = [p for p in request.files() if p.name == "file"]
        if not files:
            return self.error_reply(422, "Validation failed: File can't be blank")
        upload = files[0]
        refused = self._refused_upload(upload)
        if refused is not None:
            return refused
        video = upload.content_type in VIDEO_TYPES
        media_id = self._new_id()
        with self.lock:
            self.media[media_id] = {
                "polls": 0,
                "size": len(upload.data),
                "description": request.fields().get("description"),
                "type": "video" if video else "image",
                "ext": "mp4" if video else "png",
                # A video is processed in the background for a while (and maybe fails); an
                # image after media_polls polls.
                "ready_at": time.monotonic() + self.video["processing_seconds"] if video else 0,
                "fails": video and self.video["fails"],
                "done": not video and self.media_polls <= 0,
            }
            body = {
                "id": media_id,
                "type": self.media[media_id]["type"],
                "url": self._media_url(media_id),
                "preview_url": f"{self.url}/media/{media_id}-small.png",
            }
        self.bump("video_uploads" if video else "media_uploads")
        return Reply(200 if body["url"] else 202, body)

    def _advance(self, media: dict[str, Any]) -> None:
        """One poll: an image is done after media_polls polls, a video once its time is up."""
        media["polls"] += 1
        if media["type"] == "video":
            media["done"] = time.monotonic() >= media["ready_at"] and not media["fails"]
        else:
            media["done"] = media["polls"] >= self.media_polls

    def media_status(self, request: Request, media_id: str) -> Reply:
        with self.lock:
            media = self.media.get(media_id)
            if media is None:
                return Reply(404, {"error": "Record not found"})
            self._advance(media)
            if media["fails"] and time.monotonic() >= media["ready_at"]:
                return self.error_reply(422, PROCESSING_FAILED)
            body = {"id": media_id, "type": media["type"], "url": self._media_url(media_id)}
        return Reply(200 if body["url"] else 206, body)

    def create_status(self, request: Request) -> Reply:
        account_id = self._account_id(request)
        if account_id is None:
            return Reply(401, {"error": "The access token is invalid"})
        fields = request.fields()
        key = request.headers.get("Idempotency-Key")
        with self.lock:
            if key and (account_id, key) in self.idempotency:
                self.counters["idempotent_replays"] += 1
                return Reply(200, self.render(self.statuses[self.idempotency[(account_id, key)]]))
            fault = self.gate_post()
            if fault is not None:
                return fault
            text = str(fields.get("status") or "")
            media_ids = fields.get("media_ids") or []
            media_ids = [
                str(m) for m in (media_ids if isinstance(media_ids, list) else [media_ids])
            ]
            visibility = str(fields.get("visibility") or "public")
            if not text.strip() and not media_ids:
                return self.error_reply(422, "Validation failed: Text can't be blank")
            if _length(text) > 500:
                return self.error_reply(
                    422, "Validation failed: Text character limit of 500 exceeded"
                )
            if len(media_ids) > 4:
                return self.error_reply(
                    422, "Validation failed: Media attachments can't be more than 4"
                )
            if visibility not in VISIBILITIES:
                return self.error_reply(
                    422, "Validation failed: Visibility is not included in the list"
                )
            for media_id in media_ids:
                media = self.media.get(media_id)
                if media is None:
                    return self.error_reply(422, "Validation failed: Media attachments are invalid")
                if not media["done"]:
                    return self.error_reply(
                        422,
                        "Cannot attach files that have not finished processing. Try again in a moment!",
                    )
            status = self._store(
                account_id,
                text=text,
                visibility=visibility,
                language=fields.get("language"),
                media_ids=media_ids,
                idempotency_key=key,
            )
            if key:
                self.idempotency[(account_id, key)] = status["id"]
            self.accept_post(
                {
                    "id": status["id"],
                    "text": text,
                    "idempotency_key": key,
                    "media": len(media_ids),
                    "media_ids": media_ids,
                    "visibility": visibility,
                }
            )
            rendered = self.render(status)
        self.stall_if_asked()
        return Reply(200, rendered)

    def _visible(self, request: Request, status_id: str) -> dict[str, Any] | None:
        with self.lock:
            return self.statuses.get(status_id)

    def get_status(self, request: Request, status_id: str) -> Reply:
        status = self._visible(request, status_id)
        if status is None:
            return Reply(404, {"error": "Record not found"})
        viewer = self._account_id(request)
        with self.lock:
            return Reply(200, self.render(status, viewer))

    def get_source(self, request: Request, status_id: str) -> Reply:
        if self._account_id(request) is None:
            return Reply(401, {"error": "The access token is invalid"})
        status = self._visible(request, status_id)
        if status is None:
            return Reply(404, {"error": "Record not found"})
        return Reply(200, {"id": status_id, "text": status["text"], "spoiler_text": ""})

    def reblog(self, request: Request, status_id: str) -> Reply:
        account_id = self._account_id(request)
        if account_id is None:
            return Reply(401, {"error": "The access token is invalid"})
        with self.lock:
            original = self.statuses.get(status_id)
            if original is None:
                return Reply(404, {"error": "Record not found"})
            for status in self.statuses.values():
                if status["account_id"] == account_id and status["reblog_of"] == status_id:
                    return Reply(200, self.render(status, account_id))  # idempotent, like Mastodon
            reblog = self._store(account_id, reblog_of=status_id)
            original["reblogs_count"] += 1
            self.counters["reblogs"] += 1
            return Reply(200, self.render(reblog, account_id))

    def unreblog(self, request: Request, status_id: str) -> Reply:
        account_id = self._account_id(request)
        if account_id is None:
            return Reply(401, {"error": "The access token is invalid"})
        with self.lock:
            original = self.statuses.get(status_id)
            if original is None:
                return Reply(404, {"error": "Record not found"})
            for sid, status in list(self.statuses.items()):
                if status["account_id"] == account_id and status["reblog_of"] == status_id:
                    del self.statuses[sid]
                    original["reblogs_count"] -= 1
                    self.counters["unreblogs"] += 1
            return Reply(200, self.render(original, account_id))

    def search(self, request: Request) -> Reply:
        if self._account_id(request) is None:
            return Reply(401, {"error": "The access token is invalid"})
        q = str(request.fields().get("q") or "")
        viewer = self._account_id(request)
        with self.lock:
            found = [
                self.render(s, viewer)
                for s in self.statuses.values()
                if q in (self.render(s)["url"], self.render(s)["uri"])
            ]
        return Reply(200, {"accounts": [], "statuses": found[:1], "hashtags": []})


if __name__ == "__main__":
    serve_main(MastodonStandIn)
