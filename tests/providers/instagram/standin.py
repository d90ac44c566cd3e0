"""Stand-in Instagram Graph API (Meta's Instagram Platform, content publishing), on 127.0.0.1.

Both logins on one server: an Instagram account connected through Facebook Login calls it with
its Page token (``page_token``), one connected through Instagram Login gets its tokens from the
auto-approving authorization window, the short-lived token exchange (``POST /oauth/
access_token``, answered inside ``data`` as Instagram does), the long-lived exchange
(``ig_exchange_token``) and refresh (``ig_refresh_token``, once 24 h old; :meth:`age` moves the
clock). Publishing: ``POST /{ig}/media`` creates a container and fetches its ``image_url`` /
``video_url`` as Instagram does (JPEG only; a feed image's aspect ratio 4:5 to 1.91:1; a video is
checked against the format's duration and frame rate); a container answers ``IN_PROGRESS`` to
``container_polls`` status reads, then ``FINISHED``, ``ERROR`` (with the subcode in ``status``)
for media it refused, ``EXPIRED`` 24 h after creation, ``PUBLISHED`` once published. Carousels
take 2 to 10 ``FINISHED`` items. ``POST /{ig}/media_publish`` counts against the publishing
limit (``quota_total`` posts per rolling 24 h; past it, code 9 subcode 2207042), and
``GET /{ig}/content_publishing_limit`` reports it. Also the account's media and stories
(newest first, cursor paging), permalinks, comments, insights, delete (Facebook Login tokens
only) and Graph error objects (190 for a bad token, 4 for rate limits, 100/33 for a missing
object), each with an ``fbtrace_id``.

Run alone: ``python -m tests.providers.instagram.standin --port 8409``.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import secrets
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import requests
from PIL import Image

from tests.providers.meta.standin import APP_ID, APP_SECRET, GraphStandIn, graph_error
from tests.providers.standin import Reply, Request, Route, serve_main
from tests.providers.threads.standin import _video_facts

# Instagram Login's app: the Instagram app ID and secret of the Meta app (not the Meta app's).
CLIENT_ID = "1290345678901234"
CLIENT_SECRET = "instagram-standin-app-secret-0123456789"
IG_USER = {"user_id": "17841400000000042", "username": "herald.gram", "name": "Herald Gram"}
PAGE_ID = "104000000000042"
SHORT_SECONDS = 3600
LONG_SECONDS = 60 * 24 * 3600
V = r"/v\d+\.\d+"
DAY = 24 * 3600
# The seconds each format takes (Meta's media specifications).
DURATIONS = {"REELS": (3, 900), "STORIES": (3, 60), "VIDEO": (3, 60)}


def _error(status: int, message: str, code: int, subcode: int = 0, kind: str = "") -> Reply:
    return graph_error(status, message, code, subcode, kind=kind)


def _stamp(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%S+0000")


class InstagramStandIn(GraphStandIn):
    provider = "instagram"
    permanent_status = 400

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, container_polls: int = 1):
        super().__init__(host, port)
        self.container_polls = container_polls
        self.quota_total = 50
        self._next_id = 18_100_000_000_000_000
        self.codes: dict[str, dict[str, Any]] = {}
        # A Page token (from a long-lived user token: it does not expire) for the account.
        self.page_token = self.issue("page", IG_USER["user_id"])
        self.clear_data()

    forced: tuple[str, str] | None = None

    def clear_data(self) -> None:
        self.containers: dict[str, dict[str, Any]] = {}
        self.media: dict[str, dict[str, Any]] = {}
        self.comments: list[dict[str, Any]] = []
        self.fetched: list[str] = []
        self.published_at: list[float] = []  # publishes counted by the limit
        self.forced = None

    def fixtures(self) -> dict[str, Any]:
        return {"client_id": CLIENT_ID, "user": IG_USER, "page_token": self.page_token}

    def app_settings(self) -> dict[str, str]:
        """``PROVIDER_OAUTH_APPS["instagram"]`` pointing both logins at this stand-in."""
        return {
            "client_id": APP_ID,
            "client_secret": APP_SECRET,
            "api_url": self.url,
            "instagram_api_url": self.url,
            "graph_version": "",
            "instagram_client_id": CLIENT_ID,
            "instagram_client_secret": CLIENT_SECRET,
            "instagram_authorize_url": f"{self.url}/oauth/authorize",
            "instagram_token_url": f"{self.url}/oauth/access_token",
        }

    def build_routes(self) -> list[Route]:
        user = r"/(?P<user_id>\d+)"
        item = r"/(?P<object_id>\d+)"
        return [
            Route("GET", r"/oauth/authorize", self.authorize, auth=False),
            Route("POST", r"/oauth/access_token", self.short_token, auth=False),
            Route("GET", r"/access_token", self.long_token, auth=False),
            Route("GET", r"/refresh_access_token", self.refresh_token, auth=False),
            Route("GET", V + r"/me", self.me),
            Route("POST", V + user + "/media", self.create_container),
            Route("POST", V + user + "/media_publish", self.publish),
            Route("GET", V + user + "/content_publishing_limit", self.publishing_limit),
            Route("GET", V + user + "/media", self.user_media),
            Route("GET", V + user + "/stories", self.user_stories),
            Route("POST", V + item + "/comments", self.comment),
            Route("GET", V + item + "/insights", self.insights),
            Route("GET", V + item, self.get_object),
            Route("DELETE", V + item, self.delete_object),
            *super().build_routes(),
        ]

    # --- clock, tokens, ids -------------------------------------------------------------------

    def age(self, seconds: float) -> None:
        """Move the stand-in's clock forward (tokens, containers and the limit's window)."""
        self.age_tokens(seconds)

    def _new_id(self) -> str:
        with self.lock:
            self._next_id += 1
            return str(self._next_id)

    def _issue(self, user: str, kind: str) -> tuple[str, int]:
        seconds = {"short": SHORT_SECONDS, "long": LONG_SECONDS}[kind]
        return self.issue(kind, user, seconds), seconds

    def grant(self, request: Request) -> dict[str, Any] | Reply:
        """Instagram Login tokens are proven with the Instagram app's secret, Facebook Login
        ones with the Meta app's (the base checks those)."""
        token = self.token_of(request)
        with self.lock:
            grant = self.tokens.get(token)
        if grant is None or grant["kind"] not in ("short", "long"):
            return super().grant(request)
        if grant.get("revoked") or (grant["expires"] or 0) <= self.now():
            return _error(400, "Error validating access token: Session has expired.", 190, 463)
        proof = str(request.fields().get("appsecret_proof") or "")
        expected = hmac.new(CLIENT_SECRET.encode(), token.encode(), hashlib.sha256).hexdigest()
        if proof and not hmac.compare_digest(proof, expected):
            self.bump("bad_appsecret_proof")
            return _error(400, "Invalid appsecret_proof provided in the API argument", 100)
        return grant

    def _grant(self, request: Request) -> dict[str, Any] | None:
        grant = self.grant(request)
        return None if isinstance(grant, Reply) else grant

    def _user(self, request: Request) -> str | None:
        grant = self._grant(request)
        return None if grant is None else str(grant["subject"])

    def facebook_account(self) -> dict[str, str]:
        """The credentials the Facebook Login connect stores for this account."""
        return {
            "access_token": self.page_token,
            "ig_user_id": IG_USER["user_id"],
            "page_id": PAGE_ID,
            "login": "facebook",
        }

    # --- Instagram Login ----------------------------------------------------------------------

    def authorize(self, request: Request) -> Reply:
        q = {k: v[0] for k, v in request.query.items()}
        scopes = q.get("scope", "").split(",")
        if q.get("client_id") != CLIENT_ID or not q.get("redirect_uri"):
            return Reply(400, "Invalid platform app", {"Content-Type": "text/html"})
        if q.get("response_type") != "code" or "instagram_business_basic" not in scopes:
            return Reply(400, "Invalid request", {"Content-Type": "text/html"})
        code = secrets.token_urlsafe(24)
        with self.lock:
            self.codes[code] = {"redirect_uri": q["redirect_uri"], "scopes": scopes}
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
        token, _ = self._issue(IG_USER["user_id"], "short")
        row = {
            "access_token": token,
            "user_id": IG_USER["user_id"],
            "permissions": ",".join(grant["scopes"]),
        }
        return Reply(200, {"data": [row]})

    def long_token(self, request: Request) -> Reply:
        fields = request.fields()
        if fields.get("client_secret") != CLIENT_SECRET:
            return _error(400, "Error validating client secret.", 1, kind="OAuthException")
        grant = self._grant(request)
        if fields.get("grant_type") != "ig_exchange_token" or grant is None:
            return self.unauthorized_reply()
        if grant["kind"] != "short":
            return self.unauthorized_reply()
        token, seconds = self._issue(grant["subject"], "long")
        self.bump("long_lived_issued")
        return Reply(200, {"access_token": token, "token_type": "bearer", "expires_in": seconds})

    def refresh_token(self, request: Request) -> Reply:
        grant = self._grant(request)
        if request.fields().get("grant_type") != "ig_refresh_token" or grant is None:
            return self.unauthorized_reply()
        if grant["kind"] != "long":
            return self.unauthorized_reply()
        if self.now() - grant["issued"] < DAY:
            return _error(400, "The access token is not yet eligible for refresh.", 190, 467)
        token, seconds = self._issue(grant["subject"], "long")
        self.bump("refreshes")
        return Reply(200, {"access_token": token, "token_type": "bearer", "expires_in": seconds})

    def me(self, request: Request) -> Reply:
        grant = self._grant(request)
        if grant is None:
            return self.unauthorized_reply()
        if grant["kind"] == "page":
            return _error(400, "Tried accessing nonexisting field (user_id)", 100)
        picture = f"{self.url}/pictures/{IG_USER['user_id']}.jpg"
        return Reply(
            200,
            {
                **IG_USER,
                "id": "27000000000000042",
                "account_type": "BUSINESS",
                "profile_picture_url": picture,
            },
        )

    # --- containers ---------------------------------------------------------------------------

    def _fetch(self, url: str) -> tuple[bytes, str] | None:
        try:
            response = requests.get(url, timeout=5)
        except requests.RequestException:
            return None
        with self.lock:
            self.fetched.append(url)
        if response.status_code != 200:
            return None
        return response.content, response.headers.get("Content-Type", "").split(";")[0]

    def _image_error(self, url: str, *, feed: bool) -> str:
        """The ``status`` of a refused image container ("" when it is fine)."""
        fetched = self._fetch(url)
        if fetched is None:
            return (
                "2207052: Media download has failed. The media URI doesn't meet our requirements."
            )
        data, kind = fetched
        try:
            image = Image.open(io.BytesIO(data))
            image_format, (width, height) = image.format, image.size
        except Exception:
            return "2207005: The image format is not supported."
        if kind != "image/jpeg" or image_format != "JPEG":
            return "2207005: The image format is not supported (JPEG only)."
        if feed and not 0.795 <= width / height <= 1.915:
            return "2207009: The submitted image with aspect ratio is out of the allowed range."
        return ""

    def _video_error(self, url: str, media_type: str) -> str:
        fetched = self._fetch(url)
        if fetched is None:
            return "2207052: Media download has failed."
        facts = _video_facts(fetched[0])
        if facts is None or facts["codec"] not in ("h264", "hevc"):
            return "2207026: The video format is not supported."
        low, high = DURATIONS[media_type]
        if not low <= facts["seconds"] + 0.05 <= high:
            return f"2207026: The video is {facts['seconds']:.1f} s; it must be {low}-{high} s."
        if not 23 <= facts["rate"] <= 60:
            return "2207026: The video's frame rate is not supported (23-60)."
        return ""

    def create_container(self, request: Request, user_id: str) -> Reply:
        user = self._user(request)
        if user is None:
            return self.unauthorized_reply()
        if user != user_id:
            return _error(400, "Unsupported post request.", 100, 33)
        fields = {k: str(v) for k, v in request.fields().items() if k != "access_token"}
        caption = fields.get("caption", "")
        if "collaborators" in fields:
            try:
                names = json.loads(fields["collaborators"])
            except ValueError:
                names = None
            if not isinstance(names, list) or len(names) > 3:
                return _error(400, "Invalid parameter collaborators (up to 3 usernames).", 100)
        if fields.get("location_id") and not fields["location_id"].isdigit():
            return _error(400, "INSTAGRAM_PLATFORM_API__INVALID_LOCATION_ID", 100)
        if len(caption) > 2200 or caption.count("#") > 30:
            return _error(400, "The caption is too long or has too many hashtags.", 100, 2207010)
        record: dict[str, Any] = {
            "user": user,
            "fields": fields,
            "media_type": fields.get("media_type") or "IMAGE",
            "caption": caption,
            "polls": 0,
            "state": "IN_PROGRESS",
            "error": "",
            "carousel_item": fields.get("is_carousel_item") == "true",
            "children": [],
            "created": self.now(),
        }
        refused = self._check_container(fields, record)
        if refused is not None:
            return refused
        container = self._new_id()
        with self.lock:
            self.containers[container] = record
        self.bump("containers")
        return Reply(200, {"id": container})

    def _check_container(self, fields: dict[str, str], record: dict[str, Any]) -> Reply | None:
        kind = record["media_type"]
        if kind == "CAROUSEL":
            children = [c for c in fields.get("children", "").split(",") if c]
            with self.lock:
                known = [self.containers.get(c) for c in children]
            if not 2 <= len(children) <= 10 or any(
                c is None or not c["carousel_item"] or c["state"] != "FINISHED" for c in known
            ):
                return _error(400, "The carousel children are invalid.", 100, 2207028)
            record["children"] = children
            return None
        if kind in ("REELS", "VIDEO", "STORIES") and fields.get("video_url"):
            if kind == "VIDEO" and not record["carousel_item"]:
                return _error(400, "The VIDEO media type is for carousel items; use REELS.", 100)
            record["error"] = self._video_error(fields["video_url"], kind)
        elif kind in ("IMAGE", "STORIES") and fields.get("image_url"):
            record["error"] = self._image_error(fields["image_url"], feed=kind == "IMAGE")
        else:
            return _error(400, "The parameter image_url or video_url is required.", 100)
        if fields.get("cover_url"):
            cover = self._image_error(fields["cover_url"], feed=False)
            record["error"] = record["error"] or cover
        if record["error"]:
            record["state"] = "ERROR"
        return None

    def force_state(self, state: str, status: str = "") -> None:
        """Every container in progress ends as ``state`` (ERROR or EXPIRED) at its next read."""
        with self.lock:
            self.forced = (state, status)

    def _advance(self, container: dict[str, Any]) -> None:
        if container["state"] not in ("IN_PROGRESS", "FINISHED"):
            return
        if self.forced is not None:
            container["state"], container["error"] = self.forced
        elif self.now() - container["created"] > DAY:
            container["state"] = "EXPIRED"
        elif container["polls"] > self.container_polls:
            container["state"] = "FINISHED"

    # --- publishing ---------------------------------------------------------------------------

    def _used(self) -> int:
        return sum(1 for at in self.published_at if at > self.now() - DAY)

    def publishing_limit(self, request: Request, user_id: str) -> Reply:
        if self._user(request) != user_id:
            return self.unauthorized_reply()
        with self.lock:
            used = self._used()
        self.bump("limit_reads")
        row = {
            "quota_usage": used,
            "config": {"quota_total": self.quota_total, "quota_duration": DAY},
        }
        return Reply(200, {"data": [row]})

    def fill_quota(self, count: int | None = None) -> None:
        """Publishes made elsewhere (now), up to the limit by default."""
        with self.lock:
            for _ in range(self.quota_total if count is None else count):
                self.published_at.append(self.now())

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
                return _error(400, "Media Not Found", 24, 2207032)
            if self._used() >= self.quota_total:
                self.counters["limit_refusals"] += 1
                return _error(400, "Application request limit reached", 9, 2207042)
            self._advance(container)
            if container["state"] != "FINISHED" or container["carousel_item"]:
                return _error(400, "The media is not ready for publishing.", 9007, 2207027)
            media_id = self._store(container)
            self.published_at.append(self.now())
        self.stall_if_asked()
        return Reply(200, {"id": media_id})

    def _store(self, container: dict[str, Any]) -> str:
        media_id = self._new_id()
        kind = container["media_type"]
        product = {"REELS": "REELS", "STORIES": "STORY"}.get(kind, "FEED")
        if kind == "REELS" and container["fields"].get("share_to_feed") == "false":
            product = "REELS"
        children = [self.containers[c] for c in container["children"]]
        self.media[media_id] = {
            "id": media_id,
            "user": container["user"],
            "caption": container["caption"],
            "media_type": "CAROUSEL_ALBUM" if kind == "CAROUSEL" else kind,
            "media_product_type": product,
            "timestamp": self.now(),
            "shortcode": "C" + media_id[-9:],
            "metrics": {"reach": 0, "views": 0, "likes": 0, "comments": 0, "shares": 0, "saved": 0},
        }
        container["state"] = "PUBLISHED"
        self.accept_post(
            {
                "id": media_id,
                "caption": container["caption"],
                "media_type": kind,
                "fields": dict(container["fields"]),
                "children": [dict(c["fields"]) for c in children],
            }
        )
        return media_id

    def store_post(self, caption: str, *, product: str = "FEED", at: float = 0) -> str:
        """A post made elsewhere (the account's own history)."""
        with self.lock:
            media_id = self._new_id()
            self.media[media_id] = {
                "id": media_id,
                "user": IG_USER["user_id"],
                "caption": caption,
                "media_type": "IMAGE",
                "media_product_type": product,
                "timestamp": at or self.now(),
                "shortcode": "C" + media_id[-9:],
                "metrics": {},
            }
        return media_id

    # --- reads --------------------------------------------------------------------------------

    def _missing(self, object_id: str) -> Reply:
        return _error(
            400,
            f"Unsupported get request. Object with ID '{object_id}' does not exist.",
            100,
            33,
            kind="GraphMethodException",
        )

    def _render(self, post: dict[str, Any], fields: set[str]) -> dict[str, Any]:
        values = {
            "caption": post["caption"],
            "media_type": post["media_type"],
            "media_product_type": post["media_product_type"],
            "timestamp": _stamp(post["timestamp"]),
            "permalink": f"https://www.instagram.com/p/{post['shortcode']}/",
        }
        return {"id": post["id"]} | {k: v for k, v in values.items() if k in fields}

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
                body: dict[str, Any] = {"id": object_id, "status_code": container["state"]}
                body["status"] = container["error"] or container["state"].title()
                return Reply(200, body)
            post = self.media.get(object_id)
            if post is None:
                return self._missing(object_id)
            return Reply(200, self._render(post, fields))

    def _listing(self, request: Request, user_id: str, stories: bool) -> Reply:
        if self._user(request) != user_id:
            return self.unauthorized_reply()
        fields = request.fields()
        wanted = set(str(fields.get("fields") or "id").split(","))
        limit = max(1, min(int(fields.get("limit") or 25), 100))
        offset = int(str(fields.get("after") or "0") or 0)
        with self.lock:
            mine = [
                p
                for p in self.media.values()
                if p["user"] == user_id and (p["media_product_type"] == "STORY") == stories
            ]
            mine.sort(key=lambda p: (p["timestamp"], int(p["id"])), reverse=True)
            data = [self._render(p, wanted) for p in mine[offset : offset + limit]]
        self.bump("list_reads")
        body: dict[str, Any] = {"data": data}
        if data:
            body["paging"] = {"cursors": {"before": str(offset), "after": str(offset + limit)}}
            if offset + limit < len(mine):
                body["paging"]["next"] = f"{self.url}/v23.0/{user_id}/media?after={offset + limit}"
        return Reply(200, body)

    def user_media(self, request: Request, user_id: str) -> Reply:
        return self._listing(request, user_id, stories=False)

    def user_stories(self, request: Request, user_id: str) -> Reply:
        return self._listing(request, user_id, stories=True)

    def comment(self, request: Request, object_id: str) -> Reply:
        if self._user(request) is None:
            return self.unauthorized_reply()
        message = str(request.fields().get("message") or "")
        with self.lock:
            if object_id not in self.media:
                return self._missing(object_id)
            comment_id = self._new_id()
            self.comments.append({"id": comment_id, "media": object_id, "message": message})
        return Reply(200, {"id": comment_id})

    def insights(self, request: Request, object_id: str) -> Reply:
        if self._user(request) is None:
            return self.unauthorized_reply()
        metrics = str(request.fields().get("metric") or "").split(",")
        with self.lock:
            post = self.media.get(object_id)
            if post is None:
                return self._missing(object_id)
            counts = dict(post["metrics"])
        unknown = [m for m in metrics if m not in counts]
        if unknown:
            return _error(
                400, f"(#100) metric[0] must be one of the following values: {unknown}", 100
            )
        data = [
            {"name": name, "period": "lifetime", "values": [{"value": counts[name]}]}
            for name in metrics
        ]
        return Reply(200, {"data": data})

    def set_metrics(self, media_id: str, **counts: int) -> None:
        with self.lock:
            self.media[media_id]["metrics"].update(counts)

    def delete_object(self, request: Request, object_id: str) -> Reply:
        grant = self._grant(request)
        if grant is None:
            return self.unauthorized_reply()
        if grant["kind"] != "page":
            return _error(400, "Application does not have the capability to make this API call.", 3)
        with self.lock:
            if self.media.pop(object_id, None) is None:
                return self._missing(object_id)
            self.counters["posts_deleted"] += 1
        return Reply(200, {"success": True})


if __name__ == "__main__":
    serve_main(InstagramStandIn)
