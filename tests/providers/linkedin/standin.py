"""Stand-in LinkedIn API (learn.microsoft.com/linkedin): OAuth 2 authorization code on one
confidential app (auto-approving authorize page; token endpoint with the client credentials in
the form; 60-day access tokens, a refresh token only when ``issue_refresh`` is set, as for apps
LinkedIn enrolled in programmatic refresh; revoke), OpenID ``/v2/userinfo``, and the versioned
REST API (every ``/rest`` call must carry ``LinkedIn-Version: YYYYMM`` and
``X-Restli-Protocol-Version: 2.0.0``): the Images API (initializeUpload, then PUT the bytes),
the Videos API (initializeUpload answers one upload URL per 4 MB byte range, each PUT answers
an ETag, finalizeUpload needs every part's ETag in order, then the video is PROCESSING for
``video_processing_seconds`` and AVAILABLE, or PROCESSING_FAILED when ``video_fails`` is set or
the parts do not make a video PyAV can read), posts (create answering the URN in ``x-restli-id``, get, delete, by author with
``r_member_social`` / ``r_organization_social``), organizationAcls, organizations,
socialActions; 429 and LinkedIn's error shape ``{"status", "serviceErrorCode", "code",
"message"}``. Commentary is stored as sent (little format); :meth:`plain_text` unescapes it.

Run alone: ``python -m tests.providers.linkedin.standin --port 8406``.
"""

from __future__ import annotations

import hashlib
import io
import re
import secrets
import time
from typing import Any
from urllib.parse import unquote, urlencode

import av

from tests.providers.standin import Reply, Request, Route, StandIn, serve_main

CLIENT_ID = "linkedin-standin-client-id"
CLIENT_SECRET = "linkedin-standin-client-secret-0123456789"
MEMBER = {"sub": "782bbtaQ", "name": "Ada Herald", "given_name": "Ada", "family_name": "Herald"}
ORGANIZATION = {"id": 2414183, "localizedName": "Herald Inc."}
ACCESS_SECONDS = 60 * 24 * 3600
VIDEO_PART_BYTES = 4 * 1024 * 1024  # the Videos API splits an upload into 4 MB parts
_VERSION = re.compile(r"^\d{6}(\.\d{2})?$")
_RESERVED = set("\\|{}@[]()<>#*_~")


def _error(status: int, message: str, service_code: int = 0, code: str = "") -> Reply:
    body: dict[str, Any] = {"status": status, "message": message}
    if service_code:
        body["serviceErrorCode"] = service_code
    if code:
        body["code"] = code
    return Reply(status, body)


def _is_video(data: bytes) -> bool:
    """An MP4 with a video stream PyAV can decode a frame of (what LinkedIn's processing needs)."""
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            if "mp4" not in container.format.name or not container.streams.video:
                return False
            return next(container.decode(video=0), None) is not None
    except (av.FFmpegError, StopIteration, ValueError):
        return False


def plain_text(commentary: str) -> str:
    return re.sub(r"\\(.)", r"\1", commentary, flags=re.DOTALL)


def unescaped_reserved(commentary: str) -> list[str]:
    """Reserved characters sent without a backslash (LinkedIn would not show them as text);
    ``#word`` hashtags and link characters are LinkedIn's own elements and allowed."""
    text = re.sub(r"https?://\S+", "", commentary)
    text = re.sub(r"(?:(?<=\s)|^)#(?=\w)", "", text)
    found = []
    escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in _RESERVED:
            found.append(char)
    return found


class LinkedInStandIn(StandIn):
    provider = "linkedin"
    permanent_status = 422

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.issue_refresh = False  # refresh tokens only for programmatic-refresh apps
        self.deny = False
        self._next_id = 7_100_000_000_000_000_000
        self.codes: dict[str, dict[str, Any]] = {}
        self.access: dict[str, dict[str, Any]] = {}  # token -> {"user", "expires", "scope"}
        self.refresh: dict[str, dict[str, Any]] = {}
        self.video_part_bytes = VIDEO_PART_BYTES
        self.video_processing_seconds = 0.0
        self.video_fails = False
        self.clear_data()

    def clear_data(self) -> None:
        self.posts_by_urn: dict[str, dict[str, Any]] = {}
        self.images: dict[str, dict[str, Any]] = {}  # image urn -> {"owner", "data"}
        self.social: dict[str, dict[str, int]] = {}
        self.videos: dict[str, dict[str, Any]] = {}  # video urn -> owner, parts, status...

    def fixtures(self) -> dict[str, Any]:
        return {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "api_url": self.url}

    def app_settings(self, scopes: str = "") -> dict[str, str]:
        """The ``PROVIDER_OAUTH_APPS["linkedin"]`` entry that points Herald at this stand-in."""
        return {
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "api_url": self.url,
            "authorize_url": f"{self.url}/oauth/v2/authorization",
            "token_url": f"{self.url}/oauth/v2/accessToken",
            "revoke_url": f"{self.url}/oauth/v2/revoke",
            "scopes": scopes,
        }

    def build_routes(self) -> list[Route]:
        post = r"/rest/posts/(?P<urn>[^/]+)"
        return [
            Route("GET", r"/oauth/v2/authorization", self.authorize, auth=False),
            Route("POST", r"/oauth/v2/accessToken", self.token, auth=False),
            Route("POST", r"/oauth/v2/revoke", self.revoke, auth=False),
            Route("GET", r"/v2/userinfo", self.userinfo),
            Route("POST", r"/rest/images", self.images_initialize),
            Route("PUT", r"/dms-uploads/(?P<image_id>[\w-]+)", self.image_put),
            Route("POST", r"/rest/videos", self.videos_action),
            Route("PUT", r"/dms-uploads/video/(?P<video_id>\w+)/(?P<index>\d+)", self.video_put),
            Route("GET", r"/rest/videos/(?P<urn>[^/]+)", self.get_video),
            Route("POST", r"/rest/posts", self.create_post),
            Route("GET", r"/rest/posts", self.posts_by_author),
            Route("GET", post, self.get_post),
            Route("DELETE", post, self.delete_post),
            Route("GET", r"/rest/organizationAcls", self.organization_acls),
            Route("GET", r"/rest/organizations/(?P<org_id>\d+)", self.organization),
            Route("GET", r"/rest/socialActions/(?P<urn>[^/]+)", self.social_actions),
        ]

    # --- error shapes -------------------------------------------------------------------------

    def error_reply(self, status: int, message: str) -> Reply:
        return _error(status, message)

    def rate_limited_reply(self, retry_after: float) -> Reply:
        return _error(429, "Resource level throttle limit for calls to this resource is reached.")

    def unauthorized_reply(self) -> Reply:
        return _error(401, "Invalid access token", 65600)

    # --- helpers ------------------------------------------------------------------------------

    def _new_id(self) -> str:
        with self.lock:
            self._next_id += 1
            return str(self._next_id)

    def _grant(self, request: Request) -> dict[str, Any] | None:
        with self.lock:
            grant = self.access.get(request.bearer)
            if grant is None or grant["expires"] <= time.time():
                return None
            return grant

    def _rest(self, request: Request) -> tuple[dict[str, Any] | None, Reply | None]:
        """The checks of every versioned call: version headers, then the token."""
        version = request.headers.get("LinkedIn-Version") or ""
        if not version:
            self.bump("version_missing")
            return None, _error(400, "A version must be present.", code="VERSION_MISSING")
        if not _VERSION.match(version):
            return None, _error(
                426, f"Requested version {version} is not active", code="NONEXISTENT_VERSION"
            )
        if request.headers.get("X-Restli-Protocol-Version") != "2.0.0":
            return None, _error(400, "Rest.li protocol version 2.0.0 is required.")
        grant = self._grant(request)
        if grant is None:
            return None, self.unauthorized_reply()
        return grant, None

    @staticmethod
    def _has(grant: dict[str, Any], scope: str) -> bool:
        return scope in grant["scope"]

    def _can_write_as(self, grant: dict[str, Any], author: str) -> bool:
        if author == f"urn:li:person:{grant['user']}":
            return self._has(grant, "w_member_social")
        if author == f"urn:li:organization:{ORGANIZATION['id']}":
            return self._has(grant, "w_organization_social")
        return False

    def _can_read_as(self, grant: dict[str, Any], author: str) -> bool:
        if author == f"urn:li:person:{grant['user']}":
            return self._has(grant, "r_member_social")
        if author == f"urn:li:organization:{ORGANIZATION['id']}":
            return self._has(grant, "r_organization_social")
        return False

    def expire_access_tokens(self) -> None:
        with self.lock:
            for grant in self.access.values():
                grant["expires"] = 0

    def store_post(self, commentary: str, *, author: str = "", created_ms: int = 0) -> str:
        """A post made elsewhere (the author's own history)."""
        urn = f"urn:li:share:{self._new_id()}"
        with self.lock:
            self.posts_by_urn[urn] = {
                "id": urn,
                "author": author or f"urn:li:person:{MEMBER['sub']}",
                "commentary": commentary,
                "createdAt": created_ms or int(time.time() * 1000),
                "content": None,
            }
        return urn

    def set_social(self, urn: str, *, likes: int = 0, comments: int = 0) -> None:
        with self.lock:
            self.social[urn] = {"likes": likes, "comments": comments}

    # --- OAuth --------------------------------------------------------------------------------

    def authorize(self, request: Request) -> Reply:
        q = {k: v[0] for k, v in request.query.items()}
        if q.get("client_id") != CLIENT_ID or not q.get("redirect_uri"):
            return Reply(400, "invalid client_id", {"Content-Type": "text/html"})
        if q.get("response_type") != "code":
            return Reply(400, "invalid response_type", {"Content-Type": "text/html"})
        if self.deny:
            params = {
                "error": "user_cancelled_authorize",
                "error_description": "The user cancelled the authorization",
                "state": q.get("state", ""),
            }
            return Reply(302, b"", {"Location": q["redirect_uri"] + "?" + urlencode(params)})
        code = secrets.token_urlsafe(24)
        with self.lock:
            self.codes[code] = {
                "redirect_uri": q["redirect_uri"],
                "scope": q.get("scope", "").split(),
                "user": MEMBER["sub"],
            }
        location = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
        return Reply(302, b"", {"Location": location})

    def _issue(self, user: str, scope: list[str], refresh_token: str = "") -> dict[str, Any]:
        access = secrets.token_urlsafe(40)
        with self.lock:
            self.access[access] = {
                "user": user,
                "scope": scope,
                "expires": time.time() + ACCESS_SECONDS,
            }
        body: dict[str, Any] = {
            "access_token": access,
            "expires_in": ACCESS_SECONDS,
            "scope": ",".join(scope),
            "token_type": "Bearer",
        }
        if self.issue_refresh:
            refresh = refresh_token or secrets.token_urlsafe(40)
            with self.lock:
                self.refresh[refresh] = {"user": user, "scope": scope}
            body.update(refresh_token=refresh, refresh_token_expires_in=365 * 24 * 3600)
        return body

    def token(self, request: Request) -> Reply:
        fields = request.fields()
        if fields.get("client_id") != CLIENT_ID or fields.get("client_secret") != CLIENT_SECRET:
            return Reply(
                401,
                {"error": "invalid_client", "error_description": "Client authentication failed"},
            )
        grant_type = fields.get("grant_type")
        if grant_type == "authorization_code":
            with self.lock:
                grant = self.codes.pop(str(fields.get("code", "")), None)
            if grant is None or grant["redirect_uri"] != fields.get("redirect_uri"):
                return Reply(
                    400,
                    {
                        "error": "invalid_request",
                        "error_description": "Unable to retrieve access token: appid/redirect "
                        "uri/code verifier does not match authorization code. Or authorization "
                        "code expired.",
                    },
                )
            self.bump("tokens_issued")
            return Reply(200, self._issue(grant["user"], grant["scope"]))
        if grant_type == "refresh_token":
            token = str(fields.get("refresh_token", ""))
            with self.lock:
                grant = self.refresh.get(token)
            if grant is None:
                return Reply(
                    400,
                    {
                        "error": "invalid_grant",
                        "error_description": "The provided authorization grant or refresh token "
                        "is invalid, expired or revoked.",
                    },
                )
            self.bump("refreshes")
            return Reply(200, self._issue(grant["user"], grant["scope"], refresh_token=token))
        return Reply(400, {"error": "unsupported_grant_type"})

    def revoke(self, request: Request) -> Reply:
        fields = request.fields()
        if fields.get("client_id") != CLIENT_ID or fields.get("client_secret") != CLIENT_SECRET:
            return Reply(401, {"error": "invalid_client"})
        with self.lock:
            self.access.pop(str(fields.get("token", "")), None)
        self.bump("tokens_revoked")
        return Reply(200, b"")

    # --- members, images, posts ---------------------------------------------------------------

    def userinfo(self, request: Request) -> Reply:
        grant = self._grant(request)
        if grant is None:
            return self.unauthorized_reply()
        if "openid" not in grant["scope"]:
            return _error(403, "Not enough permissions to access: userinfo.GET.NO_VERSION", 100)
        picture = f"{self.url}/media/{MEMBER['sub']}.jpg"
        return Reply(200, MEMBER | {"picture": picture, "locale": {"country": "US"}})

    def images_initialize(self, request: Request) -> Reply:
        grant, refused = self._rest(request)
        if grant is None:
            return refused or self.unauthorized_reply()
        if request.query.get("action") != ["initializeUpload"]:
            return _error(400, "Unknown action", code="ILLEGAL_ARGUMENT")
        body = request.json if isinstance(request.json, dict) else {}
        owner = str((body.get("initializeUploadRequest") or {}).get("owner") or "")
        if not self._can_write_as(grant, owner):
            return _error(403, f"Not enough permissions to act as {owner}", 100, "ACCESS_DENIED")
        image_id = "C" + secrets.token_hex(8).upper()
        with self.lock:
            self.images[f"urn:li:image:{image_id}"] = {"owner": owner, "data": None}
        self.bump("media_uploads")
        return Reply(
            200,
            {
                "value": {
                    "uploadUrlExpiresAt": int(time.time() * 1000) + 3_600_000,
                    "uploadUrl": f"{self.url}/dms-uploads/{image_id}?ca=vector_feedshare&sync=0",
                    "image": f"urn:li:image:{image_id}",
                }
            },
        )

    def image_put(self, request: Request, image_id: str) -> Reply:
        if self._grant(request) is None:
            return self.unauthorized_reply()
        with self.lock:
            image = self.images.get(f"urn:li:image:{image_id}")
            if image is None or not request.body:
                return _error(400, "Invalid upload")
            image["data"] = request.body
        return Reply(201, b"")

    # --- videos -------------------------------------------------------------------------------

    def videos_action(self, request: Request) -> Reply:
        grant, refused = self._rest(request)
        if grant is None:
            return refused or self.unauthorized_reply()
        body = request.json if isinstance(request.json, dict) else {}
        action = (request.query.get("action") or [""])[0]
        if action == "initializeUpload":
            return self.video_initialize(grant, body.get("initializeUploadRequest") or {})
        if action == "finalizeUpload":
            return self.video_finalize(grant, body.get("finalizeUploadRequest") or {})
        return _error(400, "Unknown action", code="ILLEGAL_ARGUMENT")

    def _instructions(self, video_id: str, size: int) -> list[dict[str, Any]]:
        step = self.video_part_bytes
        return [
            {
                "uploadUrl": f"{self.url}/dms-uploads/video/{video_id}/{index}?ca=vector_feedshare",
                "firstByte": first,
                "lastByte": min(first + step, size) - 1,
            }
            for index, first in enumerate(range(0, size, step))
        ]

    def video_initialize(self, grant: dict[str, Any], ask: dict[str, Any]) -> Reply:
        owner = str(ask.get("owner") or "")
        size = ask.get("fileSizeBytes")
        if not self._can_write_as(grant, owner):
            return _error(403, f"Not enough permissions to act as {owner}", 100, "ACCESS_DENIED")
        if not isinstance(size, int) or size <= 0:
            return _error(400, "/fileSizeBytes :: field is required", code="ILLEGAL_ARGUMENT")
        video_id = "D" + secrets.token_hex(8).upper()
        parts = self._instructions(video_id, size)
        with self.lock:
            self.videos[f"urn:li:video:{video_id}"] = {
                "owner": owner,
                "size": size,
                "ranges": [(p["firstByte"], p["lastByte"]) for p in parts],
                "parts": {},
                "status": "WAITING_UPLOAD",
                "ready_at": 0.0,
            }
        self.bump("video_uploads")
        value = {
            "uploadUrlsExpireAt": int(time.time() * 1000) + 3_600_000,
            "video": f"urn:li:video:{video_id}",
            "uploadInstructions": parts,
            "uploadToken": "",
        }
        return Reply(200, {"value": value})

    def video_put(self, request: Request, video_id: str, index: str) -> Reply:
        if self._grant(request) is None:
            return self.unauthorized_reply()
        with self.lock:
            video = self.videos.get(f"urn:li:video:{video_id}")
            if video is None or int(index) >= len(video["ranges"]):
                return _error(404, "Not Found", code="NOT_FOUND")
            first, last = video["ranges"][int(index)]
            if len(request.body) != last - first + 1:
                return _error(400, "The part does not match its byte range")
            etag = "/ambry-video/" + hashlib.sha256(request.body).hexdigest()[:32]
            video["parts"][int(index)] = (etag, request.body)
            self.counters["video_parts"] += 1
            self.counters["video_part_bytes_max"] = max(
                self.counters["video_part_bytes_max"], len(request.body)
            )
        return Reply(201, b"", {"ETag": etag})

    def video_finalize(self, grant: dict[str, Any], ask: dict[str, Any]) -> Reply:
        urn = str(ask.get("video") or "")
        ids = ask.get("uploadedPartIds")
        with self.lock:
            video = self.videos.get(urn)
            if video is None or not self._can_write_as(grant, video["owner"]):
                return _error(404, "Not Found", code="NOT_FOUND")
            expected = [video["parts"].get(i, ("", b""))[0] for i in range(len(video["ranges"]))]
            if not isinstance(ids, list) or ids != expected or "" in expected:
                return _error(
                    400,
                    "Failed to finalize upload: the uploaded part ids are missing or do not "
                    "match the uploaded parts",
                    code="BAD_REQUEST",
                )
            data = b"".join(video["parts"][i][1] for i in range(len(video["ranges"])))
            video["status"] = "PROCESSING"
            video["ready_at"] = time.time() + self.video_processing_seconds
            video["playable"] = not self.video_fails and _is_video(data)
            video["data"] = data
        self.bump("videos_finalized")
        return Reply(200, b"")

    def _video_status(self, video: dict[str, Any]) -> str:
        if video["status"] == "PROCESSING" and time.time() >= video["ready_at"]:
            video["status"] = "AVAILABLE" if video["playable"] else "PROCESSING_FAILED"
        return str(video["status"])

    def get_video(self, request: Request, urn: str) -> Reply:
        grant, refused = self._rest(request)
        if grant is None:
            return refused or self.unauthorized_reply()
        with self.lock:
            video = self.videos.get(unquote(urn))
            if video is None:
                return _error(404, "Not Found", code="NOT_FOUND")
            self.counters["video_status_reads"] += 1
            body = {
                "id": unquote(urn),
                "owner": video["owner"],
                "status": self._video_status(video),
            }
        if body["status"] == "PROCESSING_FAILED":
            body["processingFailureReason"] = "Invalid video file"
        return Reply(200, body)

    def _content_images(self, content: Any) -> list[dict[str, Any]] | None:
        if not content:
            return []
        if isinstance(content.get("media"), dict):
            return [content["media"]]
        images = (content.get("multiImage") or {}).get("images")
        if isinstance(images, list) and 2 <= len(images) <= 20:
            videos = [i for i in images if str(i.get("id") or "").startswith("urn:li:video:")]
            return None if videos else images
        return None

    def _media_ready(self, urn: str, author: str) -> bool:
        """An uploaded image, or a video LinkedIn has processed (AVAILABLE), of the author."""
        if urn.startswith("urn:li:video:"):
            video = self.videos.get(urn)
            return (
                video is not None
                and video["owner"] == author
                and self._video_status(video) == "AVAILABLE"
            )
        stored = self.images.get(urn)
        return stored is not None and stored["data"] is not None and stored["owner"] == author

    def _media_size(self, urn: str) -> int:
        if urn in self.videos:
            return int(self.videos[urn]["size"])
        return len(self.images[urn]["data"])

    def create_post(self, request: Request) -> Reply:
        grant, refused = self._rest(request)
        if grant is None:
            return refused or self.unauthorized_reply()
        body = request.json if isinstance(request.json, dict) else {}
        author = str(body.get("author") or "")
        commentary = str(body.get("commentary") or "")
        if not self._can_write_as(grant, author):
            return _error(403, f"Not enough permissions to act as {author}", 100, "ACCESS_DENIED")
        if (
            body.get("lifecycleState") != "PUBLISHED"
            or body.get("visibility") not in ("PUBLIC", "CONNECTIONS", "LOGGED_IN")
            or (body.get("distribution") or {}).get("feedDistribution") != "MAIN_FEED"
        ):
            return _error(422, "ERROR :: /lifecycleState :: invalid post", code="UNPROCESSABLE")
        images = self._content_images(body.get("content"))
        with self.lock:
            fault = self.gate_post()
            if fault is not None:
                return fault
            if images is None:
                return _error(422, "ERROR :: /content :: invalid content")
            for image in images:
                if not self._media_ready(str(image.get("id") or ""), author):
                    return _error(422, f"ERROR :: /content :: media {image.get('id')} not ready")
            if len(plain_text(commentary)) > 3000:
                return _error(422, "ERROR :: /commentary :: length exceeds 3000")
            if not commentary.strip() and not images:
                return _error(422, "ERROR :: /commentary :: is required")
            urn = f"urn:li:share:{self._new_id()}"
            self.posts_by_urn[urn] = {
                "id": urn,
                "author": author,
                "commentary": commentary,
                "createdAt": int(time.time() * 1000),
                "content": body.get("content"),
            }
            self.accept_post(
                {
                    "id": urn,
                    "author": author,
                    "commentary": commentary,
                    "text": plain_text(commentary),
                    "unescaped": unescaped_reserved(commentary),
                    "media": len(images),
                    "alt_texts": [str(i.get("altText") or "") for i in images],
                    "sizes": [self._media_size(str(i["id"])) for i in images],
                    "titles": [str(i.get("title") or "") for i in images],
                    "videos": [str(i["id"]) for i in images if str(i["id"]) in self.videos],
                    "version": request.headers.get("LinkedIn-Version"),
                }
            )
        self.stall_if_asked()
        return Reply(201, b"", {"x-restli-id": urn, "x-linkedin-id": urn})

    def _render(self, post: dict[str, Any]) -> dict[str, Any]:
        rendered = {
            "id": post["id"],
            "author": post["author"],
            "commentary": post["commentary"],
            "createdAt": post["createdAt"],
            "lastModifiedAt": post["createdAt"],
            "publishedAt": post["createdAt"],
            "visibility": "PUBLIC",
            "lifecycleState": "PUBLISHED",
            "distribution": {"feedDistribution": "MAIN_FEED"},
        }
        if post["content"]:
            rendered["content"] = post["content"]
        return rendered

    def get_post(self, request: Request, urn: str) -> Reply:
        grant, refused = self._rest(request)
        if grant is None:
            return refused or self.unauthorized_reply()
        with self.lock:
            post = self.posts_by_urn.get(unquote(urn))
            if post is None:
                return _error(404, "Not Found", code="NOT_FOUND")
            return Reply(200, self._render(post))

    def delete_post(self, request: Request, urn: str) -> Reply:
        grant, refused = self._rest(request)
        if grant is None:
            return refused or self.unauthorized_reply()
        with self.lock:
            post = self.posts_by_urn.get(unquote(urn))
            if post is None:
                return _error(404, "Not Found", code="NOT_FOUND")
            if not self._can_write_as(grant, post["author"]):
                return _error(403, "Not enough permissions to delete", 100, "ACCESS_DENIED")
            del self.posts_by_urn[post["id"]]
            self.counters["posts_deleted"] += 1
        return Reply(204, None)

    def posts_by_author(self, request: Request) -> Reply:
        grant, refused = self._rest(request)
        if grant is None:
            return refused or self.unauthorized_reply()
        fields = request.fields()
        author = str(fields.get("author") or "")
        if fields.get("q") != "author" or not author:
            return _error(400, "Invalid finder", code="ILLEGAL_ARGUMENT")
        if not self._can_read_as(grant, author):
            return _error(403, "Not enough permissions to access: posts.FINDER-author", 100)
        start = int(fields.get("start") or 0)
        count = max(1, min(int(fields.get("count") or 10), 100))
        with self.lock:
            mine = [p for p in self.posts_by_urn.values() if p["author"] == author]
            mine.sort(key=lambda p: (p["createdAt"], p["id"]), reverse=True)
            page = [self._render(p) for p in mine[start : start + count]]
        self.bump("author_reads")
        return Reply(
            200, {"elements": page, "paging": {"start": start, "count": count, "links": []}}
        )

    def organization_acls(self, request: Request) -> Reply:
        grant, refused = self._rest(request)
        if grant is None:
            return refused or self.unauthorized_reply()
        if not self._has(grant, "rw_organization_admin"):
            return _error(403, "Not enough permissions to access: organizationAcls", 100)
        fields = request.fields()
        if fields.get("q") != "roleAssignee":
            return _error(400, "Invalid finder", code="ILLEGAL_ARGUMENT")
        acl = {
            "roleAssignee": f"urn:li:person:{grant['user']}",
            "state": "APPROVED",
            "role": "ADMINISTRATOR",
            "organization": f"urn:li:organization:{ORGANIZATION['id']}",
        }
        return Reply(200, {"elements": [acl], "paging": {"start": 0, "count": 10, "total": 1}})

    def organization(self, request: Request, org_id: str) -> Reply:
        grant, refused = self._rest(request)
        if grant is None:
            return refused or self.unauthorized_reply()
        if org_id != str(ORGANIZATION["id"]):
            return _error(404, "Not Found", code="NOT_FOUND")
        return Reply(200, dict(ORGANIZATION) | {"vanityName": "herald-inc"})

    def social_actions(self, request: Request, urn: str) -> Reply:
        grant, refused = self._rest(request)
        if grant is None:
            return refused or self.unauthorized_reply()
        target = unquote(urn)
        with self.lock:
            if target not in self.posts_by_urn:
                return _error(404, "Not Found", code="NOT_FOUND")
            counts = self.social.get(target, {"likes": 0, "comments": 0})
        return Reply(
            200,
            {
                "target": target,
                "likesSummary": {"totalLikes": counts["likes"], "likedByCurrentUser": False},
                "commentsSummary": {
                    "aggregatedTotalComments": counts["comments"],
                    "totalFirstLevelComments": counts["comments"],
                },
            },
        )


if __name__ == "__main__":
    serve_main(LinkedInStandIn)
