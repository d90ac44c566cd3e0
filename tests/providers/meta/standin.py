"""The base of the Meta stand-ins (``tests.providers.facebook.standin``,
``tests.providers.instagram.standin``): a Graph API server on 127.0.0.1 as Meta documents it
(developers.facebook.com/docs/graph-api).

What it does for every subclass:

* versioned paths: :meth:`GraphStandIn.v` builds a route's pattern under ``/vNN.N``; every
  version called is recorded in ``versions_seen`` (tests check the pinned or overridden one);
* the app: :data:`APP_ID` / :data:`APP_SECRET`; tokens issued with :meth:`issue`, read from a
  bearer header or an ``access_token`` parameter by :meth:`grant`; ``appsecret_proof`` checked
  when sent (a wrong one is refused, code 100) and required when ``require_proof`` is set, as
  with Meta's "Require App Secret" switch;
* error bodies as Graph sends them: ``{"error": {"message", "type", "code", "error_subcode",
  "error_user_title", "error_user_msg", "is_transient", "fbtrace_id"}}`` (:func:`graph_error`);
  an invalid token is code 190 (subcode 463 when expired); rate limits are HTTP 400 or 403 with
  code 4 (app), 17 (user), 32 (Page), 613 or 80001 (business use case), never 429;
* usage headers on every answer: ``X-App-Usage`` from ``app_usage`` and
  ``X-Business-Use-Case-Usage`` from ``business_usage`` (:meth:`set_usage`, or the control API's
  ``{"usage": {"app": {...}, "business": {...}}}``);
* :meth:`fail_next`: the next matching requests answer a given Graph error (code, subcode,
  status, with the usage headers of a limit), e.g. 368, 2207026 or 190;
* :func:`signed_request`: what Meta posts to the deauthorize and data-deletion callbacks,
  signed here with its own HMAC code (not Herald's).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import threading
import time
from typing import Any

from tests.providers.standin import Reply, Request, Route, StandIn

APP_ID = "1234567890123456"
APP_SECRET = "meta-standin-app-secret-0123456789abcdef"
VERSION = r"/(?P<version>v\d+\.\d+)"
RATE_LIMIT_MESSAGES = {
    4: "Application request limit reached",
    17: "User request limit reached",
    32: "Page request limit reached",
    613: "Calls to this api have exceeded the rate limit.",
    80001: "There have been too many calls to this Page account. Wait a bit and try again.",
}


def graph_error(
    status: int,
    message: str,
    code: int,
    subcode: int = 0,
    *,
    kind: str = "",
    user_title: str = "",
    user_message: str = "",
    transient: bool | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """A Graph API error answer."""
    error: dict[str, Any] = {
        "message": message,
        "type": kind
        or ("OAuthException" if code in (4, 17, 32, 102, 190, 368) else "GraphMethodException"),
        "code": code,
        "fbtrace_id": "A" + secrets.token_urlsafe(15),
    }
    if subcode:
        error["error_subcode"] = subcode
    if user_title:
        error["error_user_title"] = user_title
    if user_message:
        error["error_user_msg"] = user_message
    if transient is not None:
        error["is_transient"] = transient
    return Reply(status, {"error": error}, dict(headers or {}))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signed_request(payload: dict[str, Any], secret: str = APP_SECRET) -> str:
    """``<HMAC-SHA256 signature>.<payload>``, base64url without padding, as Meta signs it."""
    body = _b64url(json.dumps({"algorithm": "HMAC-SHA256", **payload}).encode())
    signature = hmac.new(secret.encode(), body.encode(), hashlib.sha256).digest()
    return f"{_b64url(signature)}.{body}"


class GraphStandIn(StandIn):
    """Subclasses add their routes (with :meth:`v`) in ``build_routes``."""

    provider = "meta"
    permanent_status = 400

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._graph_lock = threading.Lock()
        self.tokens: dict[str, dict[str, Any]] = {}
        self.require_proof = False
        self.versions_seen: set[str] = set()
        self.app_usage: dict[str, Any] | None = None
        self.business_usage: dict[str, list[dict[str, Any]]] = {}
        self.injected: list[dict[str, Any]] = []
        self.clock_offset = 0.0
        super().__init__(host, port)

    # --- routes and versions ------------------------------------------------------------------

    @staticmethod
    def v(path: str) -> str:
        return VERSION + path

    def build_routes(self) -> list[Route]:
        """``GET /me`` (the token's subject); subclasses put their own routes first."""
        return [Route("GET", self.v(r"/me"), self.me)]

    def me(self, request: Request, **_: str) -> Reply:
        grant = self.grant(request)
        if isinstance(grant, Reply):
            return grant
        return Reply(200, {"id": grant["subject"], "name": grant.get("name") or "Meta user"})

    def dispatch(self, request: Request) -> Reply:
        if request.path.startswith("/__control/"):
            return super().dispatch(request)
        match = re.match(VERSION, request.path)
        if match:
            with self._graph_lock:
                self.versions_seen.add(match.group("version"))
        reply = self._injected(request) or super().dispatch(request)
        for name, value in self.usage_headers().items():
            reply.headers.setdefault(name, value)
        return reply

    # --- clock, tokens, proofs ----------------------------------------------------------------

    def now(self) -> float:
        return time.time() + self.clock_offset

    def age_tokens(self, seconds: float) -> None:
        with self.lock:
            self.clock_offset += seconds

    def issue(self, kind: str, subject: str, seconds: float | None = None, **extra: Any) -> str:
        """A token of ``kind`` ("short", "long", "page", ...) for ``subject`` (a user or Page
        id); ``seconds`` None: it never expires (Page tokens from a long-lived user token)."""
        token = "EAA" + secrets.token_urlsafe(48)
        with self.lock:
            self.tokens[token] = {
                "kind": kind,
                "subject": subject,
                "issued": self.now(),
                "expires": None if seconds is None else self.now() + seconds,
                **extra,
            }
        return token

    def revoke_subject(self, subject: str) -> None:
        """Invalidate every token of ``subject`` (the person removed the app)."""
        with self.lock:
            for grant in self.tokens.values():
                if grant["subject"] == subject or grant.get("user") == subject:
                    grant["revoked"] = True

    @staticmethod
    def token_of(request: Request) -> str:
        return request.bearer or str(request.fields().get("access_token") or "")

    def grant(self, request: Request) -> dict[str, Any] | Reply:
        """The grant of the request's token, or the Graph error Meta answers."""
        token = self.token_of(request)
        with self.lock:
            grant = self.tokens.get(token)
        if grant is None or grant.get("revoked"):
            return graph_error(400, "Invalid OAuth access token - Cannot parse access token", 190)
        if grant["expires"] is not None and grant["expires"] <= self.now():
            return graph_error(400, "Error validating access token: Session has expired.", 190, 463)
        proof = str(request.fields().get("appsecret_proof") or "")
        expected = hmac.new(APP_SECRET.encode(), token.encode(), hashlib.sha256).hexdigest()
        if (proof or self.require_proof) and not hmac.compare_digest(proof, expected):
            self.bump("bad_appsecret_proof")
            return graph_error(400, "Invalid appsecret_proof provided in the API argument", 100)
        return grant

    # --- usage headers and injected errors ----------------------------------------------------

    def set_usage(
        self,
        app: dict[str, Any] | None = None,
        business: dict[str, list[dict[str, Any]]] | None = None,
    ) -> None:
        with self._graph_lock:
            self.app_usage = app
            self.business_usage = dict(business or {})

    def usage_headers(self) -> dict[str, str]:
        with self._graph_lock:
            headers = {}
            if self.app_usage is not None:
                headers["X-App-Usage"] = json.dumps(self.app_usage)
            if self.business_usage:
                headers["X-Business-Use-Case-Usage"] = json.dumps(self.business_usage)
            return headers

    def fail_next(
        self,
        code: int,
        subcode: int = 0,
        *,
        message: str = "",
        status: int = 400,
        count: int = 1,
        method: str = "",
        path: str = "",
        user_message: str = "",
        transient: bool | None = None,
        regain_minutes: int = 0,
        object_id: str = "",
    ) -> None:
        """The next ``count`` requests matching ``method`` and ``path`` (a regular expression
        searched in the path; empty: any) answer this Graph error. A rate-limit code also sets
        the usage header Meta sends with it (``regain_minutes`` for ``object_id``)."""
        with self._graph_lock:
            self.injected.append(
                {
                    "code": code,
                    "subcode": subcode,
                    "message": message or RATE_LIMIT_MESSAGES.get(code, "An error occurred"),
                    "status": status,
                    "count": count,
                    "method": method.upper(),
                    "path": path,
                    "user_message": user_message,
                    "transient": transient,
                    "regain_minutes": regain_minutes,
                    "object_id": object_id,
                }
            )

    def _injected(self, request: Request) -> Reply | None:
        with self._graph_lock:
            for plan in self.injected:
                if plan["method"] and plan["method"] != request.method:
                    continue
                if plan["path"] and not re.search(plan["path"], request.path):
                    continue
                plan["count"] -= 1
                if plan["count"] <= 0:
                    self.injected.remove(plan)
                break
            else:
                return None
        self.bump(f"injected_{plan['code']}")
        headers = {}
        if plan["code"] == 4:
            headers["X-App-Usage"] = json.dumps(
                {"call_count": 100, "total_time": 40, "total_cputime": 30}
            )
        elif plan["regain_minutes"] or plan["code"] in (17, 32, 613, 80001):
            headers["X-Business-Use-Case-Usage"] = json.dumps(
                {
                    plan["object_id"] or "0": [
                        {
                            "type": "pages",
                            "call_count": 100,
                            "total_cputime": 20,
                            "total_time": 20,
                            "estimated_time_to_regain_access": plan["regain_minutes"],
                        }
                    ]
                }
            )
        return graph_error(
            plan["status"],
            plan["message"],
            plan["code"],
            plan["subcode"],
            user_message=plan["user_message"],
            transient=plan["transient"],
            headers=headers,
        )

    # --- the shared error shapes --------------------------------------------------------------

    def error_reply(self, status: int, message: str) -> Reply:
        if status >= 500:
            return graph_error(status, message, 2, transient=True)
        return graph_error(status, message, 100)

    def rate_limited_reply(self, retry_after: float) -> Reply:
        return graph_error(
            400,
            RATE_LIMIT_MESSAGES[4],
            4,
            headers={
                "X-App-Usage": json.dumps({"call_count": 100, "total_time": 12, "total_cputime": 9})
            },
        )

    def unauthorized_reply(self) -> Reply:
        return graph_error(400, "Error validating access token: Session has expired.", 190, 463)

    def configure_extra(self, spec: dict[str, Any]) -> None:
        usage = spec.pop("usage", None)
        if isinstance(usage, dict):
            self.set_usage(usage.get("app"), usage.get("business"))

    def reset(self) -> None:
        super().reset()
        with self._graph_lock:
            self.injected.clear()
            self.versions_seen.clear()
            self.app_usage = None
            self.business_usage = {}
        self.require_proof = False
        self.clock_offset = 0.0
