"""Stand-in Facebook Graph API for Pages (developers.facebook.com/docs/pages-api), on the Meta
base (``tests.providers.meta.standin``: versions, tokens, appsecret_proof, error bodies, usage
headers).

* Facebook Login: the dialog ``/vNN/dialog/oauth`` (auto-approving; ``deny`` refuses), the code
  exchange and ``fb_exchange_token`` at ``/vNN/oauth/access_token`` (short-lived user token 1 h,
  long-lived 60 days), ``/me``, ``/me/permissions`` (what was granted: the dialog's scopes minus
  ``declined``), ``/me/accounts`` with cursor paging: each Page's token is derived from the
  user token that asks (from a long-lived one it never expires, from a short-lived one it
  expires with it), and its linked ``instagram_business_account``.
* Pages: ``/{page}/feed`` (message, link, ``attached_media`` of unpublished photos of the same
  Page), ``/{page}/photos`` (the stand-in GETs ``url`` as Facebook does; an unreachable or
  non-image URL is error 324), ``/{page}/videos`` (``file_url`` fetched; status ``processing``
  for ``video_polls`` reads, then ``ready``, or ``error`` for bytes that are not a video),
  ``/{page}/video_reels`` and ``/{page}/video_stories`` (start, the upload URL told the file's
  URL, finish), ``/{page}/photo_stories``, ``/{page}/published_posts``, ``/{post}/comments``,
  ``GET``/``DELETE /{id}``. Posting needs a Page token of that Page (a user token is error 200).
"""

from __future__ import annotations

import json
import secrets
import threading
from typing import Any
from urllib.parse import urlencode

import requests

from providers.meta import GRAPH_VERSION
from tests.providers.meta.standin import (
    APP_ID,
    APP_SECRET,
    GraphStandIn,
    Reply,
    Request,
    Route,
    graph_error,
)

USER = {"id": "10229000000000001", "name": "Ada Admin"}
PAGES = [
    {
        "id": "101000000000001",
        "name": "Herald HQ",
        "instagram": {"id": "17841400000000001", "username": "herald.hq", "name": "Herald HQ"},
    },
    {"id": "101000000000002", "name": "Herald Labs", "instagram": None},
]
SHORT_SECONDS = 3600
LONG_SECONDS = 60 * 24 * 3600
IMAGE_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"RIFF")
VIDEO_MAGIC = b"ftyp"


def _stamp(moment: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%S+0000")


class FacebookStandIn(GraphStandIn):
    provider = "facebook"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.deny = False
        self.declined: set[str] = set()
        self.pages: list[dict[str, Any]] = [dict(p) for p in PAGES]
        self.codes: dict[str, dict[str, Any]] = {}
        self.video_polls = 1
        self._ids = 900_000_000_000_000
        self._id_lock = threading.Lock()
        self.clear_data()
        super().__init__(host, port)

    def clear_data(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}  # posts, photos, videos, comments
        self.fetched: list[str] = []

    def app_settings(self) -> dict[str, str]:
        """The ``PROVIDER_OAUTH_APPS["facebook"]`` entry that points Herald here."""
        return {
            "client_id": APP_ID,
            "client_secret": APP_SECRET,
            "api_url": self.url,
            "authorize_url": f"{self.url}/{GRAPH_VERSION}/dialog/oauth",
            "instagram_api_url": self.url,
            "graph_version": "",
            "usage_pause_percent": "90",
        }

    def fixtures(self) -> dict[str, Any]:
        return {"app_id": APP_ID, "user": USER, "pages": self.pages}

    def new_id(self) -> str:
        with self._id_lock:
            self._ids += 1
            return str(self._ids)

    def build_routes(self) -> list[Route]:
        v, page = self.v, r"/(?P<page>\d+)"
        return [
            Route("GET", v(r"/dialog/oauth"), self.dialog, auth=False),
            Route("GET", v(r"/oauth/access_token"), self.access_token, auth=False),
            Route("GET", v(r"/me/permissions"), self.permissions),
            Route("GET", v(r"/me/accounts"), self.accounts),
            Route("POST", v(page + r"/feed"), self.feed),
            Route("POST", v(page + r"/photos"), self.photos),
            Route("POST", v(page + r"/videos"), self.videos),
            Route("POST", v(page + r"/(?P<edge>video_reels|video_stories)"), self.video_upload),
            Route("POST", v(page + r"/photo_stories"), self.photo_story),
            Route("GET", v(page + r"/published_posts"), self.published_posts),
            Route("POST", v(r"/(?P<post>[\d_]+)/comments"), self.comment),
            Route("GET", v(r"/(?P<post>[\d_]+)/insights"), self.insights),
            Route("POST", r"/rupload/(?P<version>v\d+\.\d+)/(?P<video>\d+)", self.rupload),
            Route("GET", v(r"/(?P<object_id>[\d_]+)"), self.get_object),
            Route("DELETE", v(r"/(?P<object_id>[\d_]+)"), self.delete_object),
            *super().build_routes(),
        ]

    # --- Facebook Login -----------------------------------------------------------------------

    def dialog(self, request: Request, **_: str) -> Reply:
        q = {k: v[0] for k, v in request.query.items()}
        if q.get("client_id") != APP_ID or not q.get("redirect_uri"):
            return Reply(400, "Invalid App ID", {"Content-Type": "text/html"})
        scopes = [s for s in q.get("scope", "").split(",") if s]
        if q.get("response_type") != "code" or not scopes:
            return Reply(400, "Invalid request", {"Content-Type": "text/html"})
        if self.deny:
            params = {
                "error": "access_denied",
                "error_reason": "user_denied",
                "state": q.get("state", ""),
            }
            return Reply(302, b"", {"Location": q["redirect_uri"] + "?" + urlencode(params)})
        code = secrets.token_urlsafe(24)
        with self.lock:
            self.codes[code] = {"redirect_uri": q["redirect_uri"], "scopes": scopes}
        params = {"code": code, "state": q.get("state", "")}
        return Reply(302, b"", {"Location": q["redirect_uri"] + "?" + urlencode(params) + "#_=_"})

    def access_token(self, request: Request, **_: str) -> Reply:
        f = request.fields()
        if f.get("client_id") != APP_ID or f.get("client_secret") != APP_SECRET:
            return graph_error(400, "Error validating client secret.", 1, kind="OAuthException")
        if f.get("grant_type") == "fb_exchange_token":
            with self.lock:
                short = self.tokens.get(str(f.get("fb_exchange_token") or ""))
            if short is None or short["kind"] != "short" or (short["expires"] or 0) <= self.now():
                return self.unauthorized_reply()
            token = self.issue("long", USER["id"], LONG_SECONDS, scopes=short["scopes"])
            self.bump("long_lived_issued")
            return Reply(
                200, {"access_token": token, "token_type": "bearer", "expires_in": LONG_SECONDS}
            )
        with self.lock:
            grant = self.codes.pop(str(f.get("code") or ""), None)
        if grant is None or grant["redirect_uri"] != f.get("redirect_uri"):
            return graph_error(
                400, "Invalid verification code format.", 100, 36007, kind="OAuthException"
            )
        token = self.issue("short", USER["id"], SHORT_SECONDS, scopes=grant["scopes"])
        return Reply(
            200, {"access_token": token, "token_type": "bearer", "expires_in": SHORT_SECONDS}
        )

    def _user_grant(self, request: Request) -> dict[str, Any] | Reply:
        grant = self.grant(request)
        if isinstance(grant, dict) and grant["kind"] not in ("short", "long"):
            return graph_error(400, "(#100) Tried accessing nonexisting field (accounts)", 100)
        return grant

    def permissions(self, request: Request, **_: str) -> Reply:
        grant = self._user_grant(request)
        if isinstance(grant, Reply):
            return grant
        data = [
            {"permission": s, "status": "declined" if s in self.declined else "granted"}
            for s in grant["scopes"]
        ]
        return Reply(200, {"data": data})

    def accounts(self, request: Request, **_: str) -> Reply:
        grant = self._user_grant(request)
        if isinstance(grant, Reply):
            return grant
        granted = set(grant["scopes"]) - self.declined
        if "pages_show_list" not in granted:
            return Reply(200, {"data": []})
        f = request.fields()
        limit = max(1, min(int(f.get("limit") or 25), 100))
        start = int(f.get("after") or 0)
        chosen = self.pages[start : start + limit]
        expires = None if grant["kind"] == "long" else grant["expires"] - self.now()
        data = []
        for page in chosen:
            token = self.issue("page", page["id"], expires, user=grant["subject"])
            entry: dict[str, Any] = {
                "id": page["id"],
                "name": page["name"],
                "access_token": token,
                "tasks": ["CREATE_CONTENT", "MANAGE", "MODERATE"],
                "link": f"https://www.facebook.com/{page['id']}",
            }
            linked = page.get("instagram")
            if (
                linked
                and "instagram_basic" in granted
                and "instagram_business_account" in str(f.get("fields"))
            ):
                entry["instagram_business_account"] = dict(linked)
            data.append(entry)
        body: dict[str, Any] = {"data": data}
        if start + limit < len(self.pages):
            body["paging"] = {
                "cursors": {"after": str(start + limit)},
                "next": f"{self.url}/me/accounts?after={start + limit}",
            }
        return Reply(200, body)

    # --- Page publishing ----------------------------------------------------------------------

    def _page_grant(self, request: Request, page: str) -> dict[str, Any] | Reply:
        grant = self.grant(request)
        if isinstance(grant, Reply):
            return grant
        if grant["kind"] != "page" or grant["subject"] != page:
            return graph_error(
                403,
                "(#200) If posting to a page, requires both pages_read_engagement and "
                "pages_manage_posts as an admin with sufficient administrative permission",
                200,
            )
        return grant

    def _fetch(self, url: str, magic: tuple[bytes, ...] | bytes) -> bytes | None:
        """GET the media as Facebook does; None when it cannot be had or is not of its kind."""
        self.fetched.append(url)
        try:
            answer = requests.get(url, timeout=5)
        except requests.RequestException:
            return None
        data = answer.content if answer.status_code == 200 else b""
        if isinstance(magic, bytes):
            return data if magic in data[:16] else None
        return data if data.startswith(magic) else None

    def _store(self, kind: str, page: str, **fields: Any) -> str:
        object_id = fields.pop("object_id", None) or self.new_id()
        with self.lock:
            self.objects[object_id] = {
                "id": object_id,
                "kind": kind,
                "page": page,
                "created": self.now(),
                **fields,
            }
        return object_id

    def feed(self, request: Request, page: str, **_: str) -> Reply:
        grant = self._page_grant(request, page)
        if isinstance(grant, Reply):
            return grant
        fault = self.gate_post()
        if fault is not None:
            return fault
        f = request.fields()
        attached = f.get("attached_media") or []
        if isinstance(attached, str):
            attached = json.loads(attached)
        photos = []
        for item in attached if isinstance(attached, list) else []:
            item = json.loads(item) if isinstance(item, str) else item
            photo = self.objects.get(str((item or {}).get("media_fbid")))
            if (
                photo is None
                or photo["kind"] != "photo"
                or photo["page"] != page
                or photo["published"]
            ):
                return graph_error(
                    400, "(#100) Invalid media_fbid: not an unpublished photo of this Page", 100
                )
            photos.append(photo["id"])
        if not f.get("message") and not f.get("link") and not photos:
            return graph_error(400, "(#100) Missing message or attachment", 100)
        post = self._store(
            "post",
            page,
            object_id=f"{page}_{self.new_id()}",
            message=f.get("message") or "",
            link=f.get("link") or "",
            photos=photos,
        )
        self.accept_post(
            {
                "kind": "post",
                "id": post,
                "page": page,
                "message": f.get("message") or "",
                "link": f.get("link") or "",
                "photos": photos,
            }
        )
        self.stall_if_asked()
        return Reply(200, {"id": post})

    def photos(self, request: Request, page: str, **_: str) -> Reply:
        grant = self._page_grant(request, page)
        if isinstance(grant, Reply):
            return grant
        f = request.fields()
        published = str(f.get("published", "true")).lower() != "false"
        if published:
            fault = self.gate_post()
            if fault is not None:
                return fault
        if self._fetch(str(f.get("url") or ""), IMAGE_MAGIC) is None:
            return graph_error(
                400, "(#324) Requires upload file: the photo could not be fetched", 324
            )
        photo = self._store(
            "photo", page, published=published, alt_text=f.get("alt_text_custom") or ""
        )
        if not published:
            return Reply(200, {"id": photo})
        post = self._store(
            "post",
            page,
            object_id=f"{page}_{photo}",
            message=f.get("caption") or "",
            link="",
            photos=[photo],
        )
        self.accept_post(
            {
                "kind": "photo",
                "id": post,
                "page": page,
                "message": f.get("caption") or "",
                "photos": [photo],
            }
        )
        return Reply(200, {"id": photo, "post_id": post})

    def videos(self, request: Request, page: str, **_: str) -> Reply:
        grant = self._page_grant(request, page)
        if isinstance(grant, Reply):
            return grant
        fault = self.gate_post()
        if fault is not None:
            return fault
        f = request.fields()
        ok = self._fetch(str(f.get("file_url") or ""), VIDEO_MAGIC) is not None
        video = self._store(
            "video", page, polls=0, ok=ok, state="feed", message=f.get("description") or ""
        )
        self.accept_post(
            {"kind": "video", "id": video, "page": page, "message": f.get("description") or ""}
        )
        return Reply(200, {"id": video})

    def video_upload(self, request: Request, page: str, edge: str, **_: str) -> Reply:
        grant = self._page_grant(request, page)
        if isinstance(grant, Reply):
            return grant
        f = request.fields()
        phase = f.get("upload_phase")
        if phase == "start":
            video = self._store(
                "video", page, polls=0, ok=False, state="uploading", edge=edge, message=""
            )
            version = request.path.split("/")[1]
            return Reply(
                200, {"video_id": video, "upload_url": f"{self.url}/rupload/{version}/{video}"}
            )
        video_row = self.objects.get(str(f.get("video_id") or ""))
        if phase != "finish" or video_row is None or video_row.get("edge") != edge:
            return graph_error(400, "(#100) Invalid upload_phase or video_id", 100)
        if video_row["state"] != "uploaded":
            return graph_error(
                400,
                "(#6000) There was a problem uploading your video file: no file was received",
                6000,
            )
        fault = self.gate_post()
        if fault is not None:
            return fault
        video_row["state"] = "feed"
        video_row["message"] = f.get("description") or ""
        kind = "reel" if edge == "video_reels" else "story"
        self.accept_post(
            {"kind": kind, "id": video_row["id"], "page": page, "message": video_row["message"]}
        )
        if kind == "story":
            return Reply(200, {"success": True, "post_id": f"{page}_{video_row['id']}"})
        return Reply(200, {"success": True})

    def rupload(self, request: Request, video: str, **_: str) -> Reply:
        header = request.headers.get("Authorization") or ""
        token = header[6:].strip() if header.startswith("OAuth ") else ""
        row = self.objects.get(video)
        with self.lock:
            grant = self.tokens.get(token)
        if (
            grant is None
            or row is None
            or grant["kind"] != "page"
            or grant["subject"] != row["page"]
        ):
            return graph_error(400, "Invalid OAuth access token", 190)
        row["ok"] = self._fetch(str(request.headers.get("file_url") or ""), VIDEO_MAGIC) is not None
        row["state"] = "uploaded"
        return Reply(200, {"success": True})

    def photo_story(self, request: Request, page: str, **_: str) -> Reply:
        grant = self._page_grant(request, page)
        if isinstance(grant, Reply):
            return grant
        photo = self.objects.get(str(request.fields().get("photo_id") or ""))
        if photo is None or photo["kind"] != "photo" or photo["published"]:
            return graph_error(400, "(#100) photo_id must be an unpublished photo", 100)
        fault = self.gate_post()
        if fault is not None:
            return fault
        story = f"{page}_{self.new_id()}"
        self._store("story", page, object_id=story, message="")
        self.accept_post({"kind": "story", "id": story, "page": page, "photo": photo["id"]})
        return Reply(200, {"success": True, "post_id": story})

    def comment(self, request: Request, post: str, **_: str) -> Reply:
        target = self.objects.get(post)
        if target is None:
            return graph_error(400, "Unsupported post request. Object does not exist", 100, 33)
        grant = self._page_grant(request, target["page"])
        if isinstance(grant, Reply):
            return grant
        comment = self._store(
            "comment",
            target["page"],
            object_id=f"{post}_{self.new_id()}",
            message=request.fields().get("message") or "",
            parent=post,
        )
        target.setdefault("comments", []).append(comment)
        return Reply(200, {"id": comment})

    def insights(self, request: Request, post: str, **_: str) -> Reply:
        target = self.objects.get(post)
        if target is None or target.get("deleted"):
            return graph_error(400, "Unsupported get request. Object does not exist", 100, 33)
        grant = self._page_grant(request, target["page"])
        if isinstance(grant, Reply):
            return grant
        known = {"post_media_view": target.get("views", 0)}
        data = []
        for metric in str(request.fields().get("metric") or "").split(","):
            if metric not in known:
                return graph_error(400, "(#100) The value must be a valid insights metric", 100)
            data.append(
                {"name": metric, "period": "lifetime", "values": [{"value": known[metric]}]}
            )
        return Reply(200, {"data": data})

    def published_posts(self, request: Request, page: str, **_: str) -> Reply:
        grant = self._page_grant(request, page)
        if isinstance(grant, Reply):
            return grant
        f = request.fields()
        since = float(f.get("since") or 0)
        limit = max(1, min(int(f.get("limit") or 25), 100))
        start = int(f.get("after") or 0)
        posts = sorted(
            (
                o
                for o in self.objects.values()
                if o["page"] == page
                and o["kind"] in ("post", "video")
                and o.get("state", "feed") == "feed"
                and o["created"] >= since
            ),
            key=lambda o: -o["created"],
        )
        window = posts[start : start + limit]
        body: dict[str, Any] = {
            "data": [
                self._render(o, {"id", "message", "created_time", "permalink_url"}) for o in window
            ]
        }
        if start + limit < len(posts):
            body["paging"] = {"cursors": {"after": str(start + limit)}, "next": f"{self.url}/next"}
        return Reply(200, body)

    def store_post(self, page: str, message: str, *, at: float = 0) -> str:
        """A post made elsewhere (the Page's own history)."""
        post = self._store(
            "post", page, object_id=f"{page}_{self.new_id()}", message=message, link="", photos=[]
        )
        if at:
            self.objects[post]["created"] = at
        return post

    def _render(self, obj: dict[str, Any], fields: set[str]) -> dict[str, Any]:
        out: dict[str, Any] = {"id": obj["id"]}
        values: dict[str, Any] = {
            "message": obj.get("message", ""),
            "created_time": _stamp(obj["created"]),
            "permalink_url": f"https://www.facebook.com/{obj['id']}",
        }
        if obj["kind"] == "video":
            values["status"] = self._video_status(obj)
            values["post_id"] = f"{obj['page']}_{obj['id']}"
        if obj["kind"] == "post":
            comments = len(obj.get("comments", []))
            values["reactions"] = {"data": [], "summary": {"total_count": obj.get("reactions", 0)}}
            values["comments"] = {"data": [], "summary": {"total_count": comments}}
            values["shares"] = {"count": obj.get("shares", 0)}
        out.update({k: v for k, v in values.items() if k in fields})
        return out

    def _video_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        if obj["state"] == "uploading":
            return {"video_status": "upload_incomplete"}
        if not obj["ok"]:
            return {
                "video_status": "error",
                "processing_phase": {
                    "status": "error",
                    "error": {"message": "The video file is not a supported format."},
                },
            }
        obj["polls"] += 1
        if obj["polls"] <= self.video_polls:
            return {"video_status": "processing", "processing_phase": {"status": "in_progress"}}
        return {
            "video_status": "ready",
            "processing_phase": {"status": "complete"},
            "publishing_phase": {"status": "complete"},
        }

    def get_object(self, request: Request, object_id: str, **_: str) -> Reply:
        obj = self.objects.get(object_id)
        if obj is None or obj.get("deleted"):
            return graph_error(
                400,
                f"Unsupported get request. Object with ID '{object_id}' does not exist",
                100,
                33,
            )
        grant = self._page_grant(request, obj["page"])
        if isinstance(grant, Reply):
            return grant
        fields = set(str(request.fields().get("fields") or "id").replace("(", ",").split(","))
        fields = {f.split(".")[0].strip() for f in fields}
        return Reply(200, self._render(obj, fields))

    def delete_object(self, request: Request, object_id: str, **_: str) -> Reply:
        obj = self.objects.get(object_id)
        if obj is None or obj.get("deleted"):
            return graph_error(
                400,
                f"Unsupported delete request. Object with ID '{object_id}' does not exist",
                100,
                33,
            )
        grant = self._page_grant(request, obj["page"])
        if isinstance(grant, Reply):
            return grant
        obj["deleted"] = True
        self.bump("deleted")
        return Reply(200, {"success": True})


if __name__ == "__main__":
    from tests.providers.standin import serve_main

    serve_main(FacebookStandIn)
