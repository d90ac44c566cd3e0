"""The one HTTP client of a Herald instance, shared by every command and the tool interface.

Problem responses (RFC 9457) become typed exceptions (:mod:`cli.errors`); network failures
become :class:`~cli.errors.ConnectionFailed`, :class:`~cli.errors.TLSFailed` or
:class:`~cli.errors.TimedOut`. The token travels only in the ``Authorization`` header of requests
to the instance it belongs to, and never appears in an exception message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import requests

from cli import cli_version
from cli.errors import (
    ConnectionFailed,
    HeraldError,
    NotSignedIn,
    TimedOut,
    TLSFailed,
    UsageProblem,
    api_error_for,
)
from cli.redact import redact, remember_secret

JSON = dict[str, Any]
API_PREFIX = "/api/v1"
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 30.0


class UnexpectedResponse(HeraldError):
    """The server answered, but not like a Herald instance."""

    exit_code = 5


def normalize_instance(url: str) -> str:
    """The instance origin (plus any path prefix), without ``/api/v1`` or a trailing slash.

    ``https://herald.example.com``, ``https://herald.example.com/`` and
    ``https://herald.example.com/api/v1`` all name the same instance.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageProblem(f"Not an instance URL: {url!r} (expected http(s)://host[:port]).")
    if parts.username or parts.password:
        raise UsageProblem("An instance URL must not carry credentials; use `herald auth login`.")
    if parts.query or parts.fragment:
        raise UsageProblem(f"An instance URL has no query or fragment: {url!r}.")
    path = parts.path.rstrip("/")
    if path.endswith(API_PREFIX):
        path = path[: -len(API_PREFIX)]
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, "", ""))


@dataclass(frozen=True)
class ProbeResult:
    """The outcome of one health probe; never an exception."""

    name: str
    ok: bool
    status_code: int | None = None
    body: JSON = field(default_factory=dict)
    error: str | None = None

    @property
    def reachable(self) -> bool:
        return self.status_code is not None


_TOKEN_CHARACTERS = re.compile(r"\A[\x21-\x7e]{1,512}\Z")  # printable ASCII, no spaces
_SAFE_TO_RESEND = frozenset({"GET", "HEAD"})
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")\]]+)")
_SSL = re.compile(r"\[SSL(?:: [A-Z_]+)?\] ([^'\")]+?)(?: \(_ssl\.c:\d+\))?['\")]")
_CERT = re.compile(r"(certificate verify failed: [^'\")(]+)")
_HOSTNAME = re.compile(r"(hostname '[^']+' doesn't match [^'\"]+)")


def _reason(exc: BaseException) -> str:
    """A short human reason from a requests/urllib3 exception chain."""
    text = str(exc)
    for pattern in (_CERT, _HOSTNAME, _SSL, _ERRNO):
        found = pattern.search(text)
        if found:
            return found.group(1).strip().rstrip(".")
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror
        cause = cause.__cause__ or cause.__context__
    if "Read timed out" in text:
        return "read timed out"
    return type(exc).__name__


class HeraldClient:
    """A typed client of one instance's API (``<instance>/api/v1``)."""

    def __init__(
        self,
        instance: str,
        token: str | None = None,
        *,
        timeout: tuple[float, float] = (CONNECT_TIMEOUT, READ_TIMEOUT),
        session: requests.Session | None = None,
    ) -> None:
        self.instance = normalize_instance(instance)
        if token and not _TOKEN_CHARACTERS.match(token):
            raise UsageProblem("The API token has characters no token has; copy it again.")
        self._token = token or None
        remember_secret(self._token)  # whatever prints an error or a report never shows it
        self.timeout = timeout
        self.session = session or requests.Session()
        self.session.headers["User-Agent"] = f"herald-cli/{cli_version()}"
        self.session.headers["Accept"] = "application/json, application/problem+json"

    def __repr__(self) -> str:  # never shows the token
        return f"HeraldClient({self.instance!r}, token={'set' if self._token else 'none'})"

    @property
    def has_token(self) -> bool:
        return self._token is not None

    @property
    def api_root(self) -> str:
        return self.instance + API_PREFIX

    # --- transport ------------------------------------------------------------------------

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: JSON | None = None,
        authenticated: bool = True,
        headers: dict[str, str] | None = None,
        data: bytes | None = None,
        url: str | None = None,
    ) -> requests.Response:
        """``data`` is a raw body (a tus PATCH); ``url`` an absolute address on the instance
        (a tus upload's Location) instead of ``path`` under the API root."""
        request_headers = self._headers(headers, authenticated=authenticated)
        target = self._target(path, url)
        clean = {k: v for k, v in (params or {}).items() if v is not None and v != ""}

        def send() -> requests.Response:
            return self.session.request(
                method,
                target,
                params=clean,
                json=body,
                data=data,
                headers=request_headers,
                timeout=self.timeout,
                allow_redirects=False,
            )

        try:
            return _send_resending_reads(method, send)
        except requests.exceptions.RequestException as exc:
            raise self._transport_error(exc) from None

    def _headers(self, headers: dict[str, str] | None, *, authenticated: bool) -> dict[str, str]:
        request_headers = dict(headers or {})
        if authenticated:
            if not self._token:
                raise NotSignedIn()
            request_headers["Authorization"] = f"Bearer {self._token}"
        return request_headers

    def _target(self, path: str, url: str | None) -> str:
        """The API root and ``path``, or ``url`` when it is on this instance (never elsewhere:
        the token goes with it)."""
        if url is None:
            return self.api_root + path
        if not url.startswith(self.instance + "/"):
            raise UnexpectedResponse(f"{self.instance} named an upload URL elsewhere: {url[:200]}")
        return url

    def _transport_error(self, exc: requests.exceptions.RequestException) -> HeraldError:
        """The one-line error a failed request becomes (no traceback, no request details)."""
        if isinstance(exc, requests.exceptions.SSLError):
            return TLSFailed(
                f"TLS failure talking to {self.instance}: {_reason(exc)}. Check the URL and the "
                "instance's certificate (a private CA can be trusted with REQUESTS_CA_BUNDLE)."
            )
        if isinstance(exc, requests.exceptions.Timeout):
            return TimedOut(
                f"{self.instance} did not answer in time ({_reason(exc)}); it may be overloaded "
                "or behind a firewall."
            )
        if isinstance(exc, requests.exceptions.ConnectionError):
            return ConnectionFailed(
                f"Cannot reach {self.instance}: {_reason(exc)}. Check the URL and that the "
                "instance is running."
            )
        return ConnectionFailed(f"Request to {self.instance} failed: {_reason(exc)}.")

    @staticmethod
    def _body(response: requests.Response) -> JSON | None:
        try:
            data = response.json()
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: JSON | None = None,
        authenticated: bool = True,
        headers: dict[str, str] | None = None,
    ) -> JSON:
        """Send one request; the JSON object of a 2xx answer, else a typed exception."""
        response = self._send(
            method, path, params=params, body=body, authenticated=authenticated, headers=headers
        )
        status = response.status_code
        if status >= 400:
            raise api_error_for(
                status,
                self._body(response),
                reason=response.reason or "",
                retry_after=response.headers.get("Retry-After"),
            )
        if 300 <= status < 400:
            raise UnexpectedResponse(
                f"{self.instance} redirected {path} to {response.headers.get('Location', '?')}; "
                "use the instance's final URL (https?)."
            )
        if status == 204 or not response.content:
            return {}
        data = self._body(response)
        if data is None:
            raise UnexpectedResponse(
                f"{self.instance} answered {path} without a JSON object; is this a Herald instance?"
            )
        return data

    def get(self, path: str, **params: Any) -> JSON:
        return self.request("GET", path, params=params)

    def pages(self, path: str, *, limit: int = 100, **params: Any) -> Iterator[JSON]:
        """Every item of a keyset-paginated list, following ``next_cursor``."""
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = self.get(path, limit=limit, cursor=cursor, **params)
            yield from page.get("items", [])
            cursor = page.get("next_cursor")
            if not cursor:
                return
            if cursor in seen:  # a server that never ends its listing
                raise UnexpectedResponse(
                    f"{self.instance} repeated a page cursor of {path}; the listing never ends."
                )
            seen.add(str(cursor))

    # --- probes (no token needed) -----------------------------------------------------------

    def probe(self, name: str) -> ProbeResult:
        """``health`` (liveness) or ``ready`` (readiness); failures are results, not errors."""
        try:
            response = self._send("GET", f"/{name}", authenticated=False)
        except ConnectionFailed as exc:
            return ProbeResult(name, ok=False, error=str(exc))
        body = self._body(response) or {}
        if response.status_code == 200 and body:
            return ProbeResult(name, ok=True, status_code=200, body=body)
        detail = " ".join(str(body.get("detail") or response.reason or "no JSON body").split())
        return ProbeResult(
            name,
            ok=False,
            status_code=response.status_code,
            body=body,
            error=redact(f"{response.status_code} {detail}"),
        )

    def health(self) -> ProbeResult:
        return self.probe("health")

    def ready(self) -> ProbeResult:
        return self.probe("ready")

    # --- identity and workspaces ------------------------------------------------------------

    def me(self) -> JSON:
        return self.get("/me")

    def workspaces(self) -> list[JSON]:
        return list(self.pages("/workspaces"))

    def workspace(self, workspace_id: str) -> JSON:
        return self.get(f"/workspaces/{_segment(workspace_id)}")

    def workspace_usage(self, workspace_id: str) -> JSON:
        return self.get(f"/workspaces/{_segment(workspace_id)}/usage")

    # --- providers and accounts -------------------------------------------------------------

    def account_providers(self, workspace_id: str) -> JSON:
        return self.get("/account-providers", workspace_id=workspace_id)

    def provider_readiness(self, workspace_id: str) -> JSON:
        """The readiness projection, exactly as the API returns it."""
        return self.get("/provider-readiness", workspace_id=workspace_id)

    def accounts(
        self,
        workspace_id: str,
        *,
        limit: int = 20,
        cursor: str | None = None,
        provider: str | None = None,
    ) -> JSON:
        return self.get(
            "/accounts", workspace_id=workspace_id, limit=limit, cursor=cursor, provider=provider
        )

    def media_list(self, workspace_id: str, *, limit: int, cursor: str | None) -> JSON:
        return self.get("/media", workspace_id=workspace_id, limit=limit, cursor=cursor)

    def media(self, media_id: str) -> JSON:
        return self.get(f"/media/{_segment(media_id)}")

    def media_delete(self, media_id: str) -> None:
        self.request("DELETE", f"/media/{_segment(media_id)}")

    def tus(
        self,
        method: str,
        *,
        url: str | None = None,
        headers: dict[str, str],
        data: bytes = b"",
        passthrough: tuple[int, ...] = (404, 409, 410),
    ) -> requests.Response:
        """One tus request (``url`` None: the uploads collection); the answer as it came, for
        the caller to read its headers; a 4xx/5xx other than 404/409/410 is a typed error."""
        response = self._send(
            method,
            "/uploads",
            url=url,
            headers={"Tus-Resumable": "1.0.0", **headers},
            data=data if method in ("POST", "PATCH") else None,
        )
        if response.status_code >= 400 and response.status_code not in passthrough:
            raise api_error_for(
                response.status_code,
                self._body(response),
                reason=response.reason or "",
                retry_after=response.headers.get("Retry-After"),
            )
        return response

    def account(self, account_id: str) -> JSON:
        return self.get(f"/accounts/{_segment(account_id)}")

    def invitation_create(self, workspace_id: str, *, email: str, role: str) -> JSON:
        return self.request(
            "POST",
            f"/workspaces/{_segment(workspace_id)}/invitations",
            body={"email": email, "role": role},
        )

    def account_connect(
        self,
        *,
        workspace_id: str,
        provider: str,
        fields: dict[str, str] | None = None,
        instance_url: str | None = None,
        mode: str | None = None,
    ) -> JSON:
        """``{"account": …, "authorization_url": null}`` (201, credential providers) or
        ``{"account": null, "authorization_url": …}`` (200, OAuth providers)."""
        body: JSON = {"workspace_id": workspace_id, "provider": provider}
        if fields:
            body["fields"] = fields
        if instance_url:
            body["instance_url"] = instance_url
        if mode:
            body["mode"] = mode
        return self.request("POST", "/accounts/connect", body=body)

    def connection_choice(self, choice_id: str) -> JSON:
        """The candidates of a login that reached several accounts (Meta's Facebook Login)."""
        return self.request("GET", f"/accounts/choices/{_segment(choice_id)}")

    def connection_choice_apply(self, choice_id: str, keys: list[str]) -> JSON:
        """Connect the chosen candidates: ``{"accounts": [...]}``."""
        return self.request(
            "POST", f"/accounts/choices/{_segment(choice_id)}", body={"candidates": keys}
        )

    def account_disconnect(self, account_id: str) -> None:
        self.request("DELETE", f"/accounts/{_segment(account_id)}")

    # --- publications -----------------------------------------------------------------------

    def publications(
        self,
        workspace_id: str,
        *,
        limit: int = 20,
        cursor: str | None = None,
        status: str | None = None,
        account_id: str | None = None,
    ) -> JSON:
        return self.get(
            "/publications",
            workspace_id=workspace_id,
            limit=limit,
            cursor=cursor,
            status=status,
            account_id=account_id,
        )

    def publication(self, publication_id: str) -> JSON:
        return self.get(f"/publications/{_segment(publication_id)}")

    def publication_create(
        self,
        *,
        workspace_id: str,
        text: str,
        destinations: list[JSON],
        media_ids: list[str] | None = None,
        voice_profile_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> JSON:
        body: JSON = {"workspace_id": workspace_id, "text": text, "destinations": destinations}
        if media_ids:
            body["media_ids"] = media_ids
        if voice_profile_id:
            body["voice_profile_id"] = voice_profile_id
        return self.request(
            "POST", "/publications", body=body, headers=_idempotency(idempotency_key)
        )

    def publication_schedule(
        self, publication_id: str, *, scheduled_at: str, expected_revision: int | None = None
    ) -> JSON:
        body: JSON = {"scheduled_at": scheduled_at}
        if expected_revision is not None:
            body["expected_revision"] = expected_revision
        return self.request("POST", f"/publications/{_segment(publication_id)}/schedule", body=body)

    def publication_queue(
        self, publication_id: str, *, expected_revision: int | None = None
    ) -> JSON:
        body: JSON = {}
        if expected_revision is not None:
            body["expected_revision"] = expected_revision
        return self.request("POST", f"/publications/{_segment(publication_id)}/queue", body=body)

    def posting_schedule_get(self, workspace_id: str) -> JSON:
        return self.get(f"/workspaces/{_segment(workspace_id)}/posting-schedule")

    def posting_schedule_set(self, workspace_id: str, *, timezone: str, slots: list[JSON]) -> JSON:
        return self.request(
            "PUT",
            f"/workspaces/{_segment(workspace_id)}/posting-schedule",
            body={"timezone": timezone, "slots": slots},
        )

    def publication_publish_now(
        self, publication_id: str, *, expected_revision: int | None = None
    ) -> JSON:
        body: JSON = {}
        if expected_revision is not None:
            body["expected_revision"] = expected_revision
        return self.request(
            "POST", f"/publications/{_segment(publication_id)}/publish-now", body=body
        )

    def publication_events(
        self, publication_id: str, *, limit: int = 50, cursor: str | None = None
    ) -> JSON:
        return self.get(
            f"/publications/{_segment(publication_id)}/events", limit=limit, cursor=cursor
        )

    # --- voice and discovery ----------------------------------------------------------------

    def voice_profiles(
        self, workspace_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> JSON:
        return self.get("/voice-profiles", workspace_id=workspace_id, limit=limit, cursor=cursor)

    def discover_opportunities(
        self,
        *,
        workspace_id: str,
        platforms: list[str],
        focus: str | None = None,
        audience: str | None = None,
        voice_profile_id: str | None = None,
        limit: int | None = None,
    ) -> JSON:
        body: JSON = {"workspace_id": workspace_id, "platforms": platforms}
        optional = {
            "focus": focus,
            "audience": audience,
            "voice_profile_id": voice_profile_id,
            "limit": limit,
        }
        body.update({k: v for k, v in optional.items() if v is not None})
        return self.request("POST", "/publication-opportunities/discover", body=body)


def _segment(value: str) -> str:
    """One URL path segment: an ID can never smuggle ``/`` or ``..`` into the path."""
    text = str(value).strip()
    if text in ("", ".", ".."):
        raise UsageProblem(f"Not an ID: {value!r}.")
    return quote(text, safe="")


def _idempotency(key: str | None) -> dict[str, str]:
    return {"Idempotency-Key": key} if key else {}


def _send_resending_reads(method: str, send: Callable[[], requests.Response]) -> requests.Response:
    """``send()``, once more when a read met a connection reset.

    A kept-alive connection the server closed just as it was reused (gunicorn and proxies close
    idle ones after a few seconds, and polling runs at that pace) is reset; a read is safe to
    send once more, on a fresh connection."""
    try:
        return send()
    except requests.exceptions.ConnectionError as exc:
        refused = (requests.exceptions.Timeout, requests.exceptions.SSLError)
        if method not in _SAFE_TO_RESEND or isinstance(exc, refused):
            raise
        return send()
