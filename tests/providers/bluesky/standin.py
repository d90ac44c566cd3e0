"""Stand-in Bluesky PDS (+ the few AppView reads Herald uses): sessions with JWT-shaped tokens
(rotation, expiry), handle resolution, blobs, records (posts, reposts), getPosts, getProfile.

It is also the video service (docs.bsky.app, "Uploading Video"; at the same address): service
tokens from ``com.atproto.server.getServiceAuth`` (bound to an audience and one method),
``app.bsky.video.uploadVideo`` (a token for this PDS's ``did:web`` and ``uploadBlob``; at most
100 MB), ``app.bsky.video.getJobStatus`` (``JOB_STATE_ENCODING`` with its progress for
``video_processing_seconds``, then ``JOB_STATE_COMPLETED`` with the processed video's blob in the
account's repository, or ``JOB_STATE_FAILED`` for a file that is no video or when
``video_fails`` is set; a video seen before answers ``already_exists`` with its blob) and
``app.bsky.video.getUploadLimits`` (``video_daily_videos`` / ``video_daily_bytes`` left).

Duplicate record keys answer HTTP 500 ``InternalServerError``, as current PDS versions do.
Extra fault key: ``{"expire_tokens": true}`` expires every access token issued so far (the next
authenticated call answers 400 ``ExpiredToken``).

Run alone: ``python -m tests.providers.bluesky.standin --port 8402``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import time
from datetime import UTC, datetime
from typing import Any

import grapheme

from tests.providers.standin import Reply, Request, Route, StandIn, serve_main

POST = "app.bsky.feed.post"
REPOST = "app.bsky.feed.repost"
VIDEO_EMBED = "app.bsky.embed.video"
MAX_VIDEO_BYTES = 100 * 1000 * 1000
_RKEY = re.compile(r"^[A-Za-z0-9._:~-]{1,512}$")
_S32 = "234567abcdefghijklmnopqrstuvwxyz"

ACCOUNTS = {
    "herald.test": {
        "did": "did:plc:heraldstandin000000000001",
        "password": "herald-app-pass-0001",
        "display_name": "Herald Test",
    },
    "friend.test": {
        "did": "did:plc:friendstandin000000000002",
        "password": "friend-app-pass-0002",
        "display_name": "A Friend",
    },
}


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _cid(data: Any) -> str:
    raw = data if isinstance(data, bytes) else json.dumps(data, sort_keys=True).encode()
    return (
        "bafyrei" + base64.b32encode(hashlib.sha256(raw).digest()).decode().lower().rstrip("=")[:52]
    )


class BlueskyStandIn(StandIn):
    provider = "bluesky"
    permanent_status = 400

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, access_ttl: int = 7200) -> None:
        super().__init__(host, port)
        self.access_ttl = access_ttl
        self.access: dict[str, dict[str, Any]] = {}
        self.refresh: dict[str, str] = {}
        # A spent refresh token -> (its successor, when it was spent). The AT Protocol reference
        # PDS accepts a just-rotated refresh token again for a grace period and answers it with
        # the same successor; ``refresh_grace_seconds`` 0 (the default) makes rotation strict.
        self.rotated: dict[str, tuple[str, float]] = {}
        self._tid = int(time.time() * 1_000_000)
        self.clear_data()

    def clear_data(self) -> None:
        self.refresh_grace_seconds = 0.0
        self.records: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.blobs: dict[str, dict[str, Any]] = {}
        # The AppView indexes the firehose with a lag: with ``stale_viewer`` set, a deleted
        # repost stays the viewer's ``viewer.repost`` of the post (until data is cleared).
        self.stale_viewer = False
        self.deleted_reposts: dict[tuple[str, str], str] = {}
        self.service_tokens: dict[str, dict[str, Any]] = {}
        self.video_jobs: dict[str, dict[str, Any]] = {}
        self.video_processing_seconds = 0.0
        self.video_fails = False
        self.video_can_upload = True  # False: e.g. the account's e-mail is not verified
        self.video_daily_videos = 25
        self.video_daily_bytes = 10 * 1000 * 1000 * 1000

    def fixtures(self) -> dict[str, Any]:
        return {
            "service_url": self.url,
            "accounts": {
                h: {"did": a["did"], "app_password": a["password"]} for h, a in ACCOUNTS.items()
            },
        }

    def build_routes(self) -> list[Route]:
        x = "/xrpc/"
        return [
            Route("POST", x + "com.atproto.server.createSession", self.create_session),
            Route("POST", x + "com.atproto.server.refreshSession", self.refresh_session),
            Route("POST", x + "com.atproto.server.deleteSession", self.delete_session),
            Route("GET", x + "com.atproto.identity.resolveHandle", self.resolve_handle, auth=False),
            Route("POST", x + "com.atproto.repo.uploadBlob", self.upload_blob),
            Route("POST", x + "com.atproto.repo.createRecord", self.create_record),
            Route("GET", x + "com.atproto.repo.getRecord", self.get_record),
            Route("POST", x + "com.atproto.repo.deleteRecord", self.delete_record),
            Route("GET", x + "app.bsky.feed.getPosts", self.get_posts),
            Route("GET", x + "app.bsky.actor.getProfile", self.get_profile),
            Route("GET", x + "com.atproto.server.getServiceAuth", self.get_service_auth),
            Route("POST", x + "app.bsky.video.uploadVideo", self.upload_video),
            Route("GET", x + "app.bsky.video.getJobStatus", self.get_job_status, auth=False),
            Route("GET", x + "app.bsky.video.getUploadLimits", self.get_upload_limits),
        ]

    # --- error shapes -------------------------------------------------------------------------

    def error_reply(self, status: int, message: str) -> Reply:
        error = {400: "InvalidRequest", 401: "AuthenticationRequired", 404: "NotFound"}.get(
            status, "InternalServerError" if status >= 500 else "InvalidRequest"
        )
        return Reply(status, {"error": error, "message": message})

    def rate_limited_reply(self, retry_after: float) -> Reply:
        return Reply(
            429,
            {"error": "RateLimitExceeded", "message": "Rate Limit Exceeded"},
            {
                "RateLimit-Limit": "5000",
                "RateLimit-Remaining": "0",
                "RateLimit-Reset": str(int(time.time() + retry_after)),
                "RateLimit-Policy": "5000;w=3600",
            },
        )

    def unauthorized_reply(self) -> Reply:
        return Reply(401, {"error": "AuthenticationRequired", "message": "Token has been revoked"})

    def configure_extra(self, spec: dict[str, Any]) -> None:
        if "stale_viewer" in spec:
            with self.lock:
                self.stale_viewer = bool(spec.pop("stale_viewer"))
        if "refresh_grace_seconds" in spec:
            with self.lock:
                self.refresh_grace_seconds = float(spec.pop("refresh_grace_seconds"))
        if spec.get("expire_tokens"):
            with self.lock:
                for session in self.access.values():
                    session["expired"] = True

    # --- sessions -----------------------------------------------------------------------------

    def _jwt(self, did: str, scope: str, ttl: int) -> str:
        now = int(time.time())
        header = _b64url(json.dumps({"typ": "at+jwt", "alg": "HS256"}).encode())
        claims = {
            "scope": scope,
            "sub": did,
            "iat": now,
            "exp": now + ttl,
            "aud": "did:web:standin",
            "jti": secrets.token_hex(8),
        }
        return f"{header}.{_b64url(json.dumps(claims).encode())}.{_b64url(secrets.token_bytes(32))}"

    def _session(self, handle: str, refresh: str = "") -> dict[str, Any]:
        account = ACCOUNTS[handle]
        access = self._jwt(account["did"], "com.atproto.appPass", self.access_ttl)
        refresh = refresh or self._jwt(account["did"], "com.atproto.refresh", 90 * 86400)
        with self.lock:
            self.access[access] = {"did": account["did"], "expired": False}
            self.refresh[refresh] = account["did"]
        return {
            "did": account["did"],
            "handle": handle,
            "accessJwt": access,
            "refreshJwt": refresh,
            "active": True,
            "email": f"{handle}@example.com",
            "didDoc": {
                "@context": ["https://www.w3.org/ns/did/v1"],
                "id": account["did"],
                "alsoKnownAs": [f"at://{handle}"],
                "service": [
                    {
                        "id": "#atproto_pds",
                        "type": "AtprotoPersonalDataServer",
                        "serviceEndpoint": self.url,
                    }
                ],
            },
        }

    @staticmethod
    def _handle_of(did: str) -> str:
        return next((h for h, a in ACCOUNTS.items() if a["did"] == did), did)

    def _did(self, request: Request) -> tuple[str | None, Reply | None]:
        token = request.bearer
        if not token:
            return None, Reply(
                401, {"error": "AuthenticationRequired", "message": "Authentication Required"}
            )
        with self.lock:
            session = self.access.get(token)
        if session is None:
            return None, Reply(
                400, {"error": "InvalidToken", "message": "Token could not be verified"}
            )
        if session["expired"]:
            return None, Reply(400, {"error": "ExpiredToken", "message": "Token has expired"})
        return str(session["did"]), None

    def create_session(self, request: Request) -> Reply:
        body = request.json if isinstance(request.json, dict) else {}
        identifier = str(body.get("identifier") or "").lower()
        handle = next((h for h, a in ACCOUNTS.items() if identifier in (h, a["did"])), None)
        if handle is None or body.get("password") != ACCOUNTS[handle]["password"]:
            return Reply(
                401,
                {"error": "AuthenticationRequired", "message": "Invalid identifier or password"},
            )
        self.bump("sessions_created")
        return Reply(200, self._session(handle))

    def refresh_session(self, request: Request) -> Reply:
        successor = ""
        with self.lock:
            did = self.refresh.pop(request.bearer, None)  # rotation: the old token is spent
            spent = self.rotated.get(request.bearer)
            if did is None and spent is not None:
                successor, spent_at = spent
                fresh = time.monotonic() - spent_at <= self.refresh_grace_seconds
                did = self.refresh.get(successor) if fresh else None
        if did is None:
            return Reply(400, {"error": "InvalidToken", "message": "Token has been revoked"})
        self.bump("sessions_refreshed")
        session = self._session(self._handle_of(did), refresh=successor)
        if not successor:
            with self.lock:
                self.rotated[request.bearer] = (session["refreshJwt"], time.monotonic())
        return Reply(200, session)

    def delete_session(self, request: Request) -> Reply:
        with self.lock:
            did = self.refresh.pop(request.bearer, None)
            if did is not None:
                for token, session in list(self.access.items()):
                    if session["did"] == did:
                        del self.access[token]
        if did is None:
            return Reply(400, {"error": "InvalidToken", "message": "Token could not be verified"})
        self.bump("sessions_deleted")
        return Reply(200, None)

    def resolve_handle(self, request: Request) -> Reply:
        handle = str(request.fields().get("handle") or "").lower()
        if handle not in ACCOUNTS:
            return Reply(400, {"error": "InvalidRequest", "message": "Unable to resolve handle"})
        return Reply(200, {"did": ACCOUNTS[handle]["did"]})

    # --- repo ---------------------------------------------------------------------------------

    def upload_blob(self, request: Request) -> Reply:
        did, denied = self._did(request)
        if denied:
            return denied
        cid = _cid(request.body)
        mime = request.content_type or "application/octet-stream"
        with self.lock:
            self.blobs[cid] = {"size": len(request.body), "mimeType": mime, "did": did}
        self.bump("blobs_uploaded")
        return Reply(
            200,
            {
                "blob": {
                    "$type": "blob",
                    "ref": {"$link": cid},
                    "mimeType": mime,
                    "size": len(request.body),
                }
            },
        )

    def _next_tid(self) -> str:
        with self.lock:
            self._tid = max(self._tid + 1, int(time.time() * 1_000_000))
            value = self._tid << 10
        return "".join(_S32[(value >> (5 * i)) & 31] for i in reversed(range(13)))

    def _validate_post(self, record: dict[str, Any]) -> str | None:
        text = record.get("text")
        if not isinstance(text, str):
            return "Invalid app.bsky.feed.post record: Record/text must be a string"
        if grapheme.length(text) > 300 or len(text.encode()) > 3000:
            return "Invalid app.bsky.feed.post record: Record/text must not be longer than 300 graphemes"
        size = len(text.encode())
        for facet in record.get("facets") or []:
            index = facet.get("index") or {}
            start, end = index.get("byteStart"), index.get("byteEnd")
            if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= size):
                return "Invalid app.bsky.feed.post record: Record/facets has an invalid byte range"
        embed = record.get("embed")
        if embed and embed.get("$type") == VIDEO_EMBED:
            return self._video_embed_problem(embed)
        if embed:
            images = embed.get("images") or []
            if embed.get("$type") != "app.bsky.embed.images" or not 1 <= len(images) <= 4:
                return (
                    "Invalid app.bsky.feed.post record: Record/embed/images must have 1 to 4 items"
                )
            for n, image in enumerate(images):
                blob = self.blobs.get(
                    ((image.get("image") or {}).get("ref") or {}).get("$link", "")
                )
                if blob is None:
                    return f"Invalid app.bsky.feed.post record: Record/embed/images/{n}/image blob not found"
                if blob["size"] > 1_000_000:
                    return f"Invalid app.bsky.feed.post record: Record/embed/images/{n}/image file too large"
        return None

    def create_record(self, request: Request) -> Reply:
        did, denied = self._did(request)
        if denied:
            return denied
        body = request.json if isinstance(request.json, dict) else {}
        collection = str(body.get("collection") or "")
        record = body.get("record") if isinstance(body.get("record"), dict) else None
        if body.get("repo") not in (did, self._handle_of(did or "")):
            return Reply(
                403, {"error": "InvalidRequest", "message": "Repo does not match the session"}
            )
        if record is None or record.get("$type") != collection:
            return self.error_reply(400, "Invalid record: $type must match the collection")
        rkey = str(body.get("rkey") or self._next_tid())
        if not _RKEY.match(rkey) or rkey in (".", ".."):
            return self.error_reply(400, "Invalid record key")
        subject: dict[str, Any] | None = None
        with self.lock:
            if collection == POST:
                fault = self.gate_post()
                if fault is not None:
                    return fault
                problem = self._validate_post(record)
                if problem:
                    return self.error_reply(400, problem)
            if collection == REPOST:
                subject = self.records.get(
                    self._key(str((record.get("subject") or {}).get("uri", "")))
                )
                if subject is None:
                    return self.error_reply(400, "Repost subject not found")
            key = (str(did), collection, rkey)
            if key in self.records:
                self.counters["duplicate_rkeys"] += 1
                return Reply(
                    500, {"error": "InternalServerError", "message": "Internal Server Error"}
                )
            uri = f"at://{did}/{collection}/{rkey}"
            stored = {
                "uri": uri,
                "cid": _cid(record),
                "value": record,
                "indexedAt": _now(),
                "likeCount": 0,
                "replyCount": 0,
                "repostCount": 0,
                "quoteCount": 0,
            }
            self.records[key] = stored
            if collection == POST:
                self.accept_post(
                    {
                        "uri": uri,
                        "rkey": rkey,
                        "text": record["text"],
                        "facets": record.get("facets") or [],
                        "images": len((record.get("embed") or {}).get("images") or []),
                        "video": self._video_summary(record.get("embed") or {}),
                    }
                )
            elif collection == REPOST and subject is not None:
                subject["repostCount"] += 1
                self.counters["reposts"] += 1
        if collection == POST:
            self.stall_if_asked()
        return Reply(
            200,
            {
                "uri": uri,
                "cid": stored["cid"],
                "validationStatus": "valid",
                "commit": {"cid": _cid(uri), "rev": self._next_tid()},
            },
        )

    @staticmethod
    def _key(uri: str) -> tuple[str, str, str]:
        parts = uri.removeprefix("at://").split("/")
        return (parts[0], parts[1], parts[2]) if len(parts) == 3 else ("", "", "")

    def get_record(self, request: Request) -> Reply:
        fields = request.fields()
        repo = str(fields.get("repo") or "")
        did = ACCOUNTS[repo]["did"] if repo in ACCOUNTS else repo
        key = (did, str(fields.get("collection") or ""), str(fields.get("rkey") or ""))
        with self.lock:
            stored = self.records.get(key)
        if stored is None:
            return Reply(
                400,
                {
                    "error": "RecordNotFound",
                    "message": f"Could not locate record: at://{'/'.join(key)}",
                },
            )
        return Reply(200, {"uri": stored["uri"], "cid": stored["cid"], "value": stored["value"]})

    def delete_record(self, request: Request) -> Reply:
        did, denied = self._did(request)
        if denied:
            return denied
        body = request.json if isinstance(request.json, dict) else {}
        key = (str(did), str(body.get("collection") or ""), str(body.get("rkey") or ""))
        with self.lock:
            stored = self.records.pop(key, None)
            if stored is not None and key[1] == REPOST:
                subject_uri = stored["value"]["subject"]["uri"]
                self.deleted_reposts[(str(did), subject_uri)] = stored["uri"]
                subject = self.records.get(self._key(subject_uri))
                if subject is not None:
                    subject["repostCount"] -= 1
                self.counters["reposts_deleted"] += 1
        return Reply(200, {"commit": {"cid": _cid(str(key)), "rev": self._next_tid()}})

    def set_counts(self, uri: str, *, likes: int = 0, replies: int = 0, reposts: int = 0) -> None:
        with self.lock:
            self.records[self._key(uri)].update(
                likeCount=likes, replyCount=replies, repostCount=reposts
            )

    def _viewer_repost(self, viewer: str, uri: str) -> str | None:
        """The viewer's repost record of ``uri`` (``viewer.repost`` of a post view)."""
        for (did, collection, _), stored in self.records.items():
            subject = (stored["value"].get("subject") or {}).get("uri")
            if did == viewer and collection == REPOST and subject == uri:
                return str(stored["uri"])
        return self.deleted_reposts.get((viewer, uri)) if self.stale_viewer else None

    def get_posts(self, request: Request) -> Reply:
        viewer, denied = self._did(request)
        if denied:
            return denied
        uris = request.query.get("uris") or []
        posts = []
        with self.lock:
            for uri in uris:
                stored = self.records.get(self._key(uri))
                if stored is None or self._key(uri)[1] != POST:
                    continue
                author = self._key(uri)[0]
                posts.append(
                    {
                        "uri": stored["uri"],
                        "cid": stored["cid"],
                        "author": {"did": author, "handle": self._handle_of(author)},
                        "record": stored["value"],
                        "indexedAt": stored["indexedAt"],
                        "viewer": {
                            k: v
                            for k, v in {"repost": self._viewer_repost(str(viewer), uri)}.items()
                            if v
                        },
                        **{
                            k: stored[k]
                            for k in ("likeCount", "replyCount", "repostCount", "quoteCount")
                        },
                    }
                )
        return Reply(200, {"posts": posts})

    def get_profile(self, request: Request) -> Reply:
        _, denied = self._did(request)
        if denied:
            return denied
        actor = str(request.fields().get("actor") or "")
        handle = actor if actor in ACCOUNTS else self._handle_of(actor)
        if handle not in ACCOUNTS:
            return Reply(400, {"error": "InvalidRequest", "message": "Profile not found"})
        account = ACCOUNTS[handle]
        return Reply(
            200,
            {
                "did": account["did"],
                "handle": handle,
                "displayName": account["display_name"],
                "avatar": f"{self.url}/avatar/{account['did']}.jpg",
            },
        )

    # --- the video service --------------------------------------------------------------------

    @property
    def did_web(self) -> str:
        """This PDS's ``did:web`` (the audience of a video upload's service token)."""
        return "did:web:" + self.url.split("://", 1)[1].replace(":", "%3A")

    def get_service_auth(self, request: Request) -> Reply:
        did, denied = self._did(request)
        if denied:
            return denied
        fields = request.fields()
        aud, lxm = str(fields.get("aud") or ""), str(fields.get("lxm") or "")
        exp = int(fields.get("exp") or time.time() + 60)
        if not aud.startswith("did:") or not lxm:
            return self.error_reply(400, "aud and lxm are required")
        if exp > time.time() + 3600:
            return Reply(
                400, {"error": "BadExpiration", "message": "expiration too far in the future"}
            )
        token = self._jwt(str(did), "service", int(exp - time.time()))
        with self.lock:
            self.service_tokens[token] = {"did": did, "aud": aud, "lxm": lxm, "exp": exp}
        self.bump("service_tokens")
        return Reply(200, {"token": token})

    def _service_did(self, request: Request, aud: str, lxm: str) -> tuple[str, Reply | None]:
        with self.lock:
            grant = self.service_tokens.get(request.bearer)
        if grant is None or grant["exp"] < time.time():
            return "", Reply(401, {"error": "AuthMissing", "message": "Authentication Required"})
        if grant["aud"] != aud or grant["lxm"] != lxm:
            return "", Reply(
                401, {"error": "BadJwtAudience", "message": "jwt audience does not match"}
            )
        return str(grant["did"]), None

    def upload_video(self, request: Request) -> Reply:
        did, denied = self._service_did(request, self.did_web, "com.atproto.repo.uploadBlob")
        if denied:
            return denied
        if request.fields().get("did") != did or not request.content_type.startswith("video/"):
            return self.error_reply(400, "did and a video Content-Type are required")
        if len(request.body) > MAX_VIDEO_BYTES:
            return Reply(400, {"error": "InvalidRequest", "message": "Video is too large"})
        cid = _cid(request.body)
        job_id = secrets.token_hex(8)
        with self.lock:
            seen = next((j for j in self.video_jobs.values() if j["cid"] == cid), None)
            self.video_jobs[job_id] = {
                "did": did,
                "cid": cid,
                "size": len(request.body),
                "started": time.monotonic(),
                "fails": self.video_fails or request.body[4:8] != b"ftyp",
                "seen": seen is not None and seen["state"] == "JOB_STATE_COMPLETED",
                "state": "JOB_STATE_CREATED",
            }
            self.video_daily_videos -= 1
            self.video_daily_bytes -= len(request.body)
            self.counters["video_upload_bytes"] += len(request.body)
        self.bump("videos_uploaded")
        return Reply(200, {"jobId": job_id, "did": did, "state": "JOB_STATE_CREATED"})

    def _advance(self, job_id: str, job: dict[str, Any]) -> dict[str, Any]:
        """The job's status now (called under the lock)."""
        status: dict[str, Any] = {"jobId": job_id, "did": job["did"]}
        if job["seen"]:
            return status | {
                "state": "JOB_STATE_FAILED",
                "error": "already_exists",
                "message": "Video already processed",
                "blob": self._video_blob(job),
            }
        elapsed = time.monotonic() - job["started"]
        if elapsed < self.video_processing_seconds:
            progress = int(100 * elapsed / self.video_processing_seconds)
            return status | {"state": "JOB_STATE_ENCODING", "progress": progress}
        if job["fails"]:
            job["state"] = "JOB_STATE_FAILED"
            return status | {
                "state": "JOB_STATE_FAILED",
                "error": "invalid_video",
                "message": "Video is not valid",
            }
        job["state"] = "JOB_STATE_COMPLETED"
        return status | {
            "state": "JOB_STATE_COMPLETED",
            "progress": 100,
            "blob": self._video_blob(job),
        }

    def _video_blob(self, job: dict[str, Any]) -> dict[str, Any]:
        """The processed video, stored in the account's repository as the service does."""
        self.blobs[job["cid"]] = {"size": job["size"], "mimeType": "video/mp4", "did": job["did"]}
        return {
            "$type": "blob",
            "ref": {"$link": job["cid"]},
            "mimeType": "video/mp4",
            "size": job["size"],
        }

    def get_job_status(self, request: Request) -> Reply:
        job_id = str(request.fields().get("jobId") or "")
        with self.lock:
            job = self.video_jobs.get(job_id)
            status = self._advance(job_id, job) if job is not None else None
        if status is None:
            return self.error_reply(400, "Job not found")
        self.bump("job_status_reads")
        return Reply(200, {"jobStatus": status})

    def get_upload_limits(self, request: Request) -> Reply:
        _, denied = self._service_did(
            request, "did:web:video.bsky.app", "app.bsky.video.getUploadLimits"
        )
        if denied:
            return denied
        with self.lock:
            body: dict[str, Any] = {
                "canUpload": self.video_can_upload
                and self.video_daily_videos > 0
                and self.video_daily_bytes > 0,
                "remainingDailyVideos": max(self.video_daily_videos, 0),
                "remainingDailyBytes": max(self.video_daily_bytes, 0),
            }
        if not self.video_can_upload:
            body["message"] = "You must verify your email address to upload videos"
            body["error"] = "unconfirmed_email"
        return Reply(200, body)

    def _video_embed_problem(self, embed: dict[str, Any]) -> str | None:
        ref = ((embed.get("video") or {}).get("ref") or {}).get("$link", "")
        blob = self.blobs.get(ref)
        if blob is None or not blob["mimeType"].startswith("video/"):
            return "Invalid app.bsky.feed.post record: Record/embed/video blob not found"
        if blob["size"] > MAX_VIDEO_BYTES:
            return "Invalid app.bsky.feed.post record: Record/embed/video file too large"
        ratio = embed.get("aspectRatio")
        if ratio is not None and not (
            isinstance(ratio.get("width"), int)
            and isinstance(ratio.get("height"), int)
            and ratio["width"] >= 1
            and ratio["height"] >= 1
        ):
            return "Invalid app.bsky.feed.post record: Record/embed/aspectRatio is invalid"
        return None

    @staticmethod
    def _video_summary(embed: dict[str, Any]) -> dict[str, Any] | None:
        if embed.get("$type") != VIDEO_EMBED:
            return None
        return {
            "cid": embed["video"]["ref"]["$link"],
            "alt": embed.get("alt", ""),
            "aspectRatio": embed.get("aspectRatio"),
        }


if __name__ == "__main__":
    serve_main(BlueskyStandIn)
