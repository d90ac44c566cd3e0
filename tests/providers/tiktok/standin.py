"""Stand-in TikTok Login Kit and Content Posting API (developers.tiktok.com): an
auto-approving authorization page that requires ``client_key`` and PKCE (S256); the token
endpoint (``client_key`` and ``client_secret`` in the form, the code verifier checked, access
tokens of 24 hours and refresh tokens of 365 days, a refresh answering a new pair and ending the
old refresh token); revoke; ``user/info``; ``creator_info/query``; ``video/init`` with
``FILE_UPLOAD`` enforcing the chunk rules (``chunk_size`` between ``min_chunk`` and
``max_chunk``, a video under ``min_chunk`` one chunk of its own size, ``total_chunk_count`` the
size divided by the chunk size rounded down, the last chunk at most ``max_last_chunk``), the
privacy level against the creator's options (``privacy_level_option_mismatch``), an unaudited
app only ``SELF_ONLY`` (``unaudited_client_can_only_post_to_private_accounts``) and a rate
limit per user token per minute (``init_per_minute``, 429 ``rate_limit_exceeded``); ``PUT``
chunks to the upload URL with ``Content-Range`` (206 until the last, then 201); the status
going ``PROCESSING_UPLOAD`` for ``processing_polls`` fetches (``PROCESSING_DOWNLOAD`` for a video pulled from a verified
URL by ``PULL_FROM_URL``), then ``PUBLISH_COMPLETE`` (or
``FAILED`` with a ``fail_reason``); ``video/query``. Errors in TikTok's shape ``{"data": {},
"error": {"code", "message", "log_id"}}``.

Faults beyond the shared ones (:meth:`set_faults` keys): ``fail_processing`` (the next upload
fails with that ``fail_reason``), ``posting_cap`` (the next inits answer
``spam_risk_too_many_posts``), ``interrupt_chunks`` (the next chunks answer 503, not stored).

Run alone: ``python -m tests.providers.tiktok.standin --port 8411``.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import time
from typing import Any
from urllib.parse import urlencode

from tests.providers.standin import Reply, Request, Route, StandIn, serve_main

CLIENT_KEY = "awtiktokstandinkey"
CLIENT_SECRET = "tiktok-standin-secret-0123456789"
CREATOR = {"open_id": "-000tiktokopenid", "username": "heraldcreator", "nickname": "Herald"}
ACCESS_SECONDS = 86400
REFRESH_SECONDS = 31536000
_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")


def tiktok_error(status: int, code: str, message: str) -> Reply:
    return Reply(
        status, {"data": {}, "error": {"code": code, "message": message, "log_id": "standin"}}
    )


def ok(data: dict[str, Any]) -> Reply:
    return Reply(200, {"data": data, "error": {"code": "ok", "message": "", "log_id": "standin"}})


class TikTokStandIn(StandIn):
    provider = "tiktok"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.codes: dict[str, dict[str, Any]] = {}
        self.access: dict[str, dict[str, Any]] = {}
        self.refresh: dict[str, dict[str, Any]] = {}
        self.min_chunk = 5 * 1024 * 1024
        self.max_chunk = 64 * 1024 * 1024
        self.max_last_chunk = 128 * 1024 * 1024
        self.audited = False
        self.init_per_minute = 6
        self.processing_polls = 2
        # URL prefixes verified with TikTok for PULL_FROM_URL (None: the stand-in's own).
        self.verified_prefixes: list[str] | None = None
        self.creator: dict[str, Any] = {}
        self.clear_data()

    def clear_data(self) -> None:
        self.uploads: dict[str, dict[str, Any]] = {}
        self.inits: dict[str, list[float]] = {}
        self.fail_processing = ""
        self.posting_cap = 0
        self.interrupt = 0
        self.creator = {
            "creator_avatar_url": "",
            "creator_username": CREATOR["username"],
            "creator_nickname": CREATOR["nickname"],
            "privacy_level_options": ["PUBLIC_TO_EVERYONE", "MUTUAL_FOLLOW_FRIENDS", "SELF_ONLY"],
            "comment_disabled": False,
            "duet_disabled": False,
            "stitch_disabled": True,
            "max_video_post_duration_sec": 300,
        }

    def configure_extra(self, spec: dict[str, Any]) -> None:
        with self.lock:
            if "fail_processing" in spec:
                self.fail_processing = str(spec["fail_processing"] or "")
            if "posting_cap" in spec:
                self.posting_cap = int(spec["posting_cap"] or 0)
            if "interrupt_chunks" in spec:
                self.interrupt = int(spec["interrupt_chunks"] or 0)

    def fixtures(self) -> dict[str, Any]:
        return {"client_id": CLIENT_KEY, "client_secret": CLIENT_SECRET, "api_url": self.url}

    def app_settings(self, audited: bool = False) -> dict[str, Any]:
        """The ``PROVIDER_OAUTH_APPS["tiktok"]`` entry that points Herald at this stand-in."""
        return {
            "client_id": CLIENT_KEY,
            "client_secret": CLIENT_SECRET,
            "api_url": self.url,
            "authorize_url": f"{self.url}/v2/auth/authorize/",
            "token_url": f"{self.url}/v2/oauth/token/",
            "revoke_url": f"{self.url}/v2/oauth/revoke/",
            "scopes": "",
            "audited": "true" if audited else "false",
        }

    def build_routes(self) -> list[Route]:
        return [
            Route("GET", r"/v2/auth/authorize/", self.authorize, auth=False),
            Route("POST", r"/v2/oauth/token/", self.token, auth=False),
            Route("POST", r"/v2/oauth/revoke/", self.revoke, auth=False),
            Route("GET", r"/v2/user/info/", self.user_info),
            Route("POST", r"/v2/post/publish/creator_info/query/", self.creator_info),
            Route("POST", r"/v2/post/publish/video/init/", self.video_init),
            Route("PUT", r"/upload/(?P<upload_id>[\w-]+)/", self.put_chunk, auth=False),
            Route("POST", r"/v2/post/publish/content/init/", self.content_init),
            Route("POST", r"/v2/post/publish/status/fetch/", self.status_fetch),
            Route("POST", r"/v2/video/query/", self.video_query),
        ]

    def error_reply(self, status: int, message: str) -> Reply:
        code = {404: "not_found", 500: "internal_error", 503: "internal_error"}.get(
            status, "invalid_params"
        )
        return tiktok_error(status, code, message)

    def rate_limited_reply(self, retry_after: float) -> Reply:
        return tiktok_error(429, "rate_limit_exceeded", "API rate limit exceeded.")

    def unauthorized_reply(self) -> Reply:
        return tiktok_error(
            401, "access_token_invalid", "The access token is invalid or not found in the request."
        )

    # --- helpers ------------------------------------------------------------------------------

    def _grant(self, request: Request) -> dict[str, Any] | None:
        with self.lock:
            grant = self.access.get(request.bearer)
            if grant is None or grant["expires"] <= time.time():
                return None
            return grant

    def expire_access_tokens(self) -> None:
        with self.lock:
            for grant in self.access.values():
                grant["expires"] = 0

    def upload(self, publish_id: str) -> dict[str, Any]:
        with self.lock:
            return self.uploads[publish_id]

    # --- OAuth --------------------------------------------------------------------------------

    def authorize(self, request: Request) -> Reply:
        q = {k: v[0] for k, v in request.query.items()}
        if q.get("client_key") != CLIENT_KEY or not q.get("redirect_uri"):
            return Reply(400, "client_key", {"Content-Type": "text/html"})
        if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return Reply(400, "code_challenge", {"Content-Type": "text/html"})
        code = secrets.token_urlsafe(24)
        with self.lock:
            self.codes[code] = {
                "redirect_uri": q["redirect_uri"],
                "challenge": q["code_challenge"],
                "scope": q.get("scope", ""),
            }
        location = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
        return Reply(302, b"", {"Location": location})

    def _issue(self, scope: str) -> dict[str, Any]:
        access = "act." + secrets.token_urlsafe(40)
        refresh = "rft." + secrets.token_urlsafe(40)
        with self.lock:
            self.access[access] = {"refresh": refresh, "expires": time.time() + ACCESS_SECONDS}
            self.refresh[refresh] = {"scope": scope}
        return {
            "access_token": access,
            "expires_in": ACCESS_SECONDS,
            "open_id": CREATOR["open_id"],
            "refresh_token": refresh,
            "refresh_expires_in": REFRESH_SECONDS,
            "scope": scope,
            "token_type": "Bearer",
        }

    @staticmethod
    def _oauth_error(error: str, description: str) -> Reply:
        return Reply(400, {"error": error, "error_description": description, "log_id": "x"})

    def token(self, request: Request) -> Reply:
        fields = request.fields()
        if fields.get("client_key") != CLIENT_KEY or fields.get("client_secret") != CLIENT_SECRET:
            return self._oauth_error("invalid_client", "Client key or secret is incorrect.")
        grant_type = fields.get("grant_type")
        if grant_type == "authorization_code":
            with self.lock:
                code = self.codes.pop(str(fields.get("code", "")), None)
            if code is None or code["redirect_uri"] != fields.get("redirect_uri"):
                return self._oauth_error("invalid_grant", "Authorization code is expired.")
            digest = hashlib.sha256(str(fields.get("code_verifier") or "").encode()).digest()
            if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != code["challenge"]:
                return self._oauth_error("invalid_grant", "Code verifier is invalid.")
            self.bump("tokens_issued")
            return Reply(200, self._issue(code["scope"]))
        if grant_type == "refresh_token":
            with self.lock:
                grant = self.refresh.pop(str(fields.get("refresh_token", "")), None)
            if grant is None:
                return self._oauth_error("invalid_grant", "Refresh token is invalid or expired.")
            self.bump("refreshes")
            return Reply(200, self._issue(grant["scope"]))
        return self._oauth_error("unsupported_grant_type", "Grant type is not supported.")

    def revoke(self, request: Request) -> Reply:
        fields = request.fields()
        if fields.get("client_key") != CLIENT_KEY:
            return self._oauth_error("invalid_client", "Client key is incorrect.")
        token = str(fields.get("token", ""))
        with self.lock:
            grant = self.access.pop(token, None)
            if grant is None:
                return self._oauth_error("invalid_request", "Token is invalid.")
            self.refresh.pop(grant["refresh"], None)
        self.bump("tokens_revoked")
        return Reply(200, {})

    # --- API ----------------------------------------------------------------------------------

    def user_info(self, request: Request) -> Reply:
        if self._grant(request) is None:
            return self.unauthorized_reply()
        user = {
            "open_id": CREATOR["open_id"],
            "union_id": "union-1",
            "display_name": CREATOR["nickname"],
            "username": CREATOR["username"],
            "avatar_url": f"{self.url}/avatar.jpg",
        }
        fields = (request.query.get("fields") or [""])[0].split(",")
        return ok({"user": {k: v for k, v in user.items() if k in fields}})

    def creator_info(self, request: Request) -> Reply:
        if self._grant(request) is None:
            return self.unauthorized_reply()
        self.bump("creator_info")
        with self.lock:
            return ok(dict(self.creator))

    def _init_limited(self, token: str) -> bool:
        now = time.time()
        with self.lock:
            recent = [t for t in self.inits.get(token, []) if t > now - 60]
            if len(recent) >= self.init_per_minute:
                return True
            self.inits[token] = [*recent, now]
        return False

    def _chunk_problem(self, source: dict[str, Any]) -> str:
        size, chunk = int(source.get("video_size") or 0), int(source.get("chunk_size") or 0)
        count = int(source.get("total_chunk_count") or 0)
        if size <= 0 or chunk <= 0:
            return "video_size and chunk_size are required"
        if size < self.min_chunk:
            return "" if chunk == size and count == 1 else "a small video is one whole chunk"
        if not self.min_chunk <= chunk <= self.max_chunk:
            return "chunk_size is out of range"
        if count != size // chunk:
            return "total_chunk_count does not match"
        if size - chunk * (count - 1) > self.max_last_chunk:
            return "the last chunk is too large"
        return ""

    def _post_problem(self, info: dict[str, Any]) -> Reply | None:
        level = info.get("privacy_level")
        if level not in self.creator["privacy_level_options"]:
            return tiktok_error(400, "privacy_level_option_mismatch", "privacy_level mismatch")
        if not self.audited and level != "SELF_ONLY":
            return tiktok_error(
                403,
                "unaudited_client_can_only_post_to_private_accounts",
                "Unaudited clients can only post to private accounts.",
            )
        if info.get("brand_content_toggle") and level == "SELF_ONLY":
            return tiktok_error(400, "invalid_params", "Branded content cannot be private.")
        return None

    def video_init(self, request: Request) -> Reply:
        grant = self._grant(request)
        if grant is None:
            return self.unauthorized_reply()
        if (fault := self.gate_post()) is not None:
            return fault
        if self._init_limited(request.bearer):
            return self.rate_limited_reply(60)
        with self.lock:
            if self.posting_cap > 0:
                self.posting_cap -= 1
                return tiktok_error(403, "spam_risk_too_many_posts", "Daily post cap reached.")
        body = request.json if isinstance(request.json, dict) else {}
        info, source = body.get("post_info") or {}, body.get("source_info") or {}
        if (refused := self._post_problem(info)) is not None:
            return refused
        if source.get("source") == "PULL_FROM_URL":
            return self._pull(info, str(source.get("video_url") or ""))
        if source.get("source") != "FILE_UPLOAD":
            return tiktok_error(
                400, "invalid_params", "source must be FILE_UPLOAD or PULL_FROM_URL."
            )
        if problem := self._chunk_problem(source):
            self.bump("chunk_rule_refusals")
            return tiktok_error(400, "invalid_params", problem)
        publish_id = "v_pub_file~v2-1." + secrets.token_hex(8)
        upload_id = secrets.token_hex(8)
        with self.lock:
            self.uploads[publish_id] = {
                "upload_id": upload_id,
                "post_info": info,
                "size": int(source["video_size"]),
                "chunk": int(source["chunk_size"]),
                "count": int(source["total_chunk_count"]),
                "chunks": {},
                "status": "PROCESSING_UPLOAD",
                "polls": 0,
            }
        self.bump("inits")
        return ok({"publish_id": publish_id, "upload_url": f"{self.url}/upload/{upload_id}/"})

    def content_init(self, request: Request) -> Reply:
        """Photo posts: ``media_type`` PHOTO, ``post_mode`` DIRECT_POST, 1 to 35 image URLs on
        a verified domain (``url_ownership_unverified`` otherwise), fetched while the status is
        ``PROCESSING_DOWNLOAD``."""
        if self._grant(request) is None:
            return self.unauthorized_reply()
        if (fault := self.gate_post()) is not None:
            return fault
        if self._init_limited(request.bearer):
            return self.rate_limited_reply(60)
        body = request.json if isinstance(request.json, dict) else {}
        info, source = body.get("post_info") or {}, body.get("source_info") or {}
        if body.get("media_type") != "PHOTO" or body.get("post_mode") != "DIRECT_POST":
            return tiktok_error(400, "invalid_params", "media_type PHOTO and DIRECT_POST only.")
        if (refused := self._post_problem(info)) is not None:
            return refused
        urls = [str(u) for u in source.get("photo_images") or []]
        if source.get("source") != "PULL_FROM_URL" or not 1 <= len(urls) <= 35:
            return tiktok_error(400, "invalid_params", "1 to 35 photo_images by PULL_FROM_URL.")
        if len(str(info.get("title") or "")) > 90:
            return tiktok_error(400, "invalid_params", "title is longer than 90 characters.")
        prefixes = self.verified_prefixes if self.verified_prefixes is not None else [self.url]
        if not all(any(u.startswith(p) for p in prefixes) for u in urls):
            return tiktok_error(
                403, "url_ownership_unverified", "The URL's domain is not verified."
            )
        publish_id = "p_pub_url~v2." + secrets.token_hex(8)
        with self.lock:
            self.uploads[publish_id] = {
                "upload_id": "",
                "post_info": info,
                "photo_images": urls,
                "bytes": b"",
                "status": "PROCESSING_DOWNLOAD",
                "polls": 0,
            }
        self.bump("inits")
        return ok({"publish_id": publish_id})

    def _verified(self, url: str) -> bool:
        prefixes = self.verified_prefixes if self.verified_prefixes is not None else [self.url]
        return any(url.startswith(p) for p in prefixes)

    def _pull(self, info: dict[str, Any], url: str) -> Reply:
        """A video TikTok pulls from a verified address (``PROCESSING_DOWNLOAD`` first)."""
        if not self._verified(url):
            return tiktok_error(
                403, "url_ownership_unverified", "The URL's domain is not verified."
            )
        publish_id = "v_pub_url~v2." + secrets.token_hex(8)
        with self.lock:
            self.uploads[publish_id] = {
                "upload_id": "",
                "post_info": info,
                "video_url": url,
                "bytes": b"",
                "status": "PROCESSING_DOWNLOAD",
                "polls": 0,
            }
        self.bump("inits")
        self.bump("pulls")
        return ok({"publish_id": publish_id})

    def put_chunk(self, request: Request, upload_id: str) -> Reply:
        with self.lock:
            found = [(k, u) for k, u in self.uploads.items() if u["upload_id"] == upload_id]
            if self.interrupt > 0:
                self.interrupt -= 1
                return self.error_reply(503, "Upload interrupted (stand-in fault)")
        if not found:
            return self.error_reply(404, "Upload not found")
        publish_id, upload = found[0]
        match = _RANGE.fullmatch(str(request.headers.get("Content-Range") or ""))
        if match is None or int(match.group(3)) != upload["size"]:
            return self.error_reply(400, "Content-Range is missing or wrong")
        first, last = int(match.group(1)), int(match.group(2))
        index = first // upload["chunk"]
        expected_last = (
            upload["size"] - 1 if index == upload["count"] - 1 else first + upload["chunk"] - 1
        )
        if (
            first % upload["chunk"]
            or last != expected_last
            or len(request.body) != last - first + 1
        ):
            self.bump("range_mismatches")
            return self.error_reply(400, "The chunk does not follow the declared chunk plan")
        self.bump("chunks")
        with self.lock:
            upload["chunks"][index] = request.body
            complete = len(upload["chunks"]) == upload["count"]
        if not complete:
            return Reply(206, b"")
        self._completed(publish_id, upload)
        return Reply(201, b"")

    def _completed(self, publish_id: str, upload: dict[str, Any]) -> None:
        data = b"".join(upload["chunks"][i] for i in range(upload["count"]))
        with self.lock:
            upload["bytes"] = data
            if self.fail_processing:
                upload["fail_reason"] = self.fail_processing
                self.fail_processing = ""

    def status_fetch(self, request: Request) -> Reply:
        if self._grant(request) is None:
            return self.unauthorized_reply()
        self.bump("status_fetches")
        body = request.json if isinstance(request.json, dict) else {}
        with self.lock:
            upload = self.uploads.get(str(body.get("publish_id") or ""))
            if upload is None:
                return tiktok_error(400, "invalid_publish_id", "publish_id not found")
            answer = self._advance(str(body["publish_id"]), upload)
        return ok(answer)

    def _advance(self, publish_id: str, upload: dict[str, Any]) -> dict[str, Any]:
        if "bytes" not in upload:
            return {"status": "PROCESSING_UPLOAD", "uploaded_bytes": 0}
        upload["polls"] += 1
        if upload["polls"] <= self.processing_polls:
            if "photo_images" in upload or "video_url" in upload:
                return {"status": "PROCESSING_DOWNLOAD"}
            return {"status": "PROCESSING_UPLOAD", "uploaded_bytes": upload["size"]}
        if upload.get("fail_reason"):
            return {"status": "FAILED", "fail_reason": upload["fail_reason"]}
        if upload["status"] != "PUBLISH_COMPLETE":
            upload["status"] = "PUBLISH_COMPLETE"
            upload["post_id"] = str(7_000_000_000_000_000_000 + len(self.posts))
            self.posts.append(
                {"id": upload["post_id"], "publish_id": publish_id, **upload["post_info"]}
            )
            self.counters["posts_accepted"] += 1
        public = upload["post_info"].get("privacy_level") == "PUBLIC_TO_EVERYONE"
        return {
            "status": "PUBLISH_COMPLETE",
            "publicaly_available_post_id": [int(upload["post_id"])] if public else [],
        }

    def video_query(self, request: Request) -> Reply:
        if self._grant(request) is None:
            return self.unauthorized_reply()
        body = request.json if isinstance(request.json, dict) else {}
        wanted = [str(x) for x in (body.get("filters") or {}).get("video_ids") or []]
        with self.lock:
            videos = [
                {
                    "id": p["id"],
                    "view_count": 42,
                    "like_count": 5,
                    "comment_count": 2,
                    "share_count": 1,
                }
                for p in self.posts
                if p["id"] in wanted
            ]
        return ok({"videos": videos, "cursor": 0, "has_more": False})


if __name__ == "__main__":
    serve_main(TikTokStandIn)
