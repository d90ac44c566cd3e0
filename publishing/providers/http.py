"""The one HTTP helper every provider adapter uses.

* :class:`HttpClient`: ``requests`` sessions (one per thread) with bounded connect/read timeouts,
  ``User-Agent: Herald/0.1``, no redirects, and an optional socket-level SSRF guard for URLs a
  user supplied (Mastodon instance, Discord webhook).
* :func:`classify`: the single place that maps an HTTP outcome (a response or a ``requests``
  exception) to a :class:`~publishing.providers.base.ProviderError` kind.
* :func:`check_public_url`: validation of user-supplied URLs (https, public addresses only).
* A few text helpers shared by adapters (URL matching, language options, request pre-checks).

Nothing here logs or returns a secret: error messages are built from the provider's error string
(truncated, scrubbed) and the host name only, never from ``str(exception)`` (``requests`` puts the
full URL, and therefore Telegram bot tokens and Discord webhook tokens, into its messages).
"""

from __future__ import annotations

import email.utils
import ipaddress
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.exceptions import HTTPError as Urllib3Error

from publishing.providers.base import (
    ErrorKind,
    MediaItem,
    NotSupported,
    OutputProfile,
    ProviderError,
    ProviderInputError,
    PublishRequest,
)

USER_AGENT = "Herald/0.1"
DEFAULT_READ_TIMEOUT = 10.0
DEFAULT_CONNECT_TIMEOUT = 5.0
MAX_DETAIL_CHARS = 200

logger = logging.getLogger("herald.providers")


# --- Errors -----------------------------------------------------------------------------------


class ProviderHTTPError(ProviderError):
    """A :class:`ProviderError` raised by :class:`HttpClient`, with the provider's error code
    (e.g. Bluesky ``ExpiredToken``, Discord ``10015``) for adapters that branch on it."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        retry_after: float | None = None,
        status: int | None = None,
        code: str = "",
    ) -> None:
        super().__init__(kind, message, retry_after=retry_after, status=status)
        self.code = code


class CannotReconcile(NotSupported):
    """Reconcile asked, but the provider cannot say whether the post exists, and asking again
    will not change that (no idempotency key, no search, window not covered).

    A :class:`NotSupported` (so callers that hand ``NotSupported`` to a person do the right
    thing) of kind ``AMBIGUOUS``: the destination stays ``ambiguous``; nothing is re-sent.
    """

    def __init__(self, message: str) -> None:
        ProviderError.__init__(self, ErrorKind.AMBIGUOUS, message)


class BlockedAddressError(Exception):
    """A guarded connection reached a non-public address (raised from the socket layer)."""


@dataclass(frozen=True)
class ErrorDetail:
    """What an adapter's error parser extracted from a provider's error response."""

    message: str = ""
    kind: ErrorKind | None = None  # overrides the status-based kind (e.g. Discord 10015 -> AUTH)
    retry_after: float | None = None  # from the body (Discord, Telegram)
    code: str = ""


ErrorParser = Callable[[requests.Response], ErrorDetail]

_SECRETISH = [
    (re.compile(r"(https?://[^\s?#]+)\?\S*"), r"\1"),  # never a query string
    (re.compile(r"/bot\d+:[A-Za-z0-9_-]+"), "/bot[redacted]"),  # Telegram token in a path
    (re.compile(r"(/webhooks/\d+/)[A-Za-z0-9_.-]+"), r"\1[redacted]"),  # Discord webhook token
    (re.compile(r"(?i)bearer\s+\S+"), "Bearer [redacted]"),
    (re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+\.?[A-Za-z0-9_-]*"), "[redacted]"),  # JWTs
]


def sanitize(text: str, secrets: Iterable[str] = (), limit: int = MAX_DETAIL_CHARS) -> str:
    """A provider string made safe for storage and display: secrets removed, one line, short."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    for pattern, replacement in _SECRETISH:
        text = pattern.sub(replacement, text)
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait, from ``Retry-After`` (seconds or HTTP date) or a provider reset header.

    Understood: ``Retry-After``; Discord ``X-RateLimit-Reset-After`` (seconds);
    ``RateLimit-Reset`` (Bluesky: epoch seconds; IETF draft: delta seconds);
    ``X-RateLimit-Reset`` (Mastodon: ISO 8601 time; others: epoch seconds).
    """
    now = time.time() if now is None else now
    lowered = {k.lower(): v.strip() for k, v in headers.items()}

    def number(value: str) -> float | None:
        try:
            return float(value)
        except ValueError:
            return None

    def until(moment: float) -> float:
        return max(0.0, round(moment - now, 3))

    value = lowered.get("retry-after")
    if value:
        seconds = number(value)
        if seconds is not None:
            return max(0.0, seconds)
        try:
            return until(email.utils.parsedate_to_datetime(value).timestamp())
        except (TypeError, ValueError, IndexError):
            pass
    value = lowered.get("x-ratelimit-reset-after")
    if value and (seconds := number(value)) is not None:
        return max(0.0, seconds)
    for name in ("ratelimit-reset", "x-ratelimit-reset"):
        value = lowered.get(name)
        if not value:
            continue
        seconds = number(value)
        if seconds is not None:
            # Large values are absolute epoch times, small ones are deltas.
            return until(seconds) if seconds > 1_000_000_000 else max(0.0, seconds)
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            continue
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return until(moment.timestamp())
    return None


def _chain(exc: BaseException) -> Iterable[object]:
    """The exception, its arguments, ``reason`` and causes (bounded), for classification."""
    seen: list[object] = []
    stack: list[object] = [exc]
    while stack and len(seen) < 32:
        item = stack.pop()
        if item is None or any(item is s for s in seen):
            continue
        seen.append(item)
        if isinstance(item, BaseException):
            stack.extend(a for a in item.args if isinstance(a, BaseException))
            stack.append(getattr(item, "reason", None))
            stack.append(item.__cause__)
            stack.append(item.__context__)
    return seen


def _failed_before_sending(exc: BaseException) -> bool:
    return any(
        isinstance(
            item,
            NewConnectionError  # also urllib3's NameResolutionError (DNS)
            | ConnectTimeoutError
            | ConnectionRefusedError
            | socket.gaierror
            | requests.exceptions.ConnectTimeout
            | requests.exceptions.SSLError
            | requests.exceptions.ProxyError,
        )
        for item in _chain(exc)
    )


def classify(
    *,
    provider: str,
    operation: str,
    write: bool,
    response: requests.Response | None = None,
    exception: BaseException | None = None,
    detail: ErrorDetail | None = None,
    host: str = "",
    secrets: Iterable[str] = (),
) -> ProviderHTTPError:
    """Map one failed HTTP outcome to a sanitized :class:`ProviderHTTPError`.

    ``write`` says whether the request creates something at the provider (a post): an outcome
    after such a request was sent is ``AMBIGUOUS``, never ``TRANSIENT``.
    """
    secrets = tuple(secrets)
    where = host or "the provider"
    if exception is not None:
        if isinstance(exception, BlockedAddressError):
            return ProviderHTTPError(
                ErrorKind.PERMANENT, f"{provider}: {where} is not a public address."
            )
        if isinstance(
            exception,
            requests.exceptions.InvalidURL
            | requests.exceptions.MissingSchema
            | requests.exceptions.InvalidSchema,
        ):
            return ProviderHTTPError(
                ErrorKind.PERMANENT, f"{provider}: invalid URL for {operation}."
            )
        if _failed_before_sending(exception):
            return ProviderHTTPError(
                ErrorKind.TRANSIENT, f"{provider}: could not connect to {where} ({operation})."
            )
        if isinstance(exception, requests.exceptions.ReadTimeout):
            if write:
                return ProviderHTTPError(
                    ErrorKind.AMBIGUOUS,
                    f"{provider}: no answer from {where} after sending {operation}; "
                    "it may have been accepted.",
                )
            return ProviderHTTPError(
                ErrorKind.TRANSIENT, f"{provider}: {where} timed out ({operation})."
            )
        # Connection reset/aborted, truncated body, ...: the request (or part of it) was sent.
        if write:
            return ProviderHTTPError(
                ErrorKind.AMBIGUOUS,
                f"{provider}: connection to {where} broke after sending {operation}; "
                "it may have been accepted.",
            )
        return ProviderHTTPError(
            ErrorKind.TRANSIENT, f"{provider}: connection to {where} failed ({operation})."
        )

    assert response is not None  # noqa: S101 - programming error, not input
    status = response.status_code
    detail = detail or default_error_detail(response)
    text = sanitize(detail.message, secrets) if detail.message else (response.reason or "")
    text = sanitize(text, secrets)
    message = f"{provider}: {operation} failed (HTTP {status})" + (f": {text}" if text else ".")
    retry_after = detail.retry_after
    if retry_after is None:
        retry_after = parse_retry_after(response.headers)

    if detail.kind is not None:
        kind = detail.kind
    elif status == 429:
        kind = ErrorKind.RATE_LIMITED
    elif status in (401, 403):
        kind = ErrorKind.AUTH
    elif status in (504, 524):  # gateway timeouts: the origin may have processed the request
        kind = ErrorKind.AMBIGUOUS if write else ErrorKind.TRANSIENT
    elif status >= 500 or status == 408:
        kind = ErrorKind.TRANSIENT
    elif 300 <= status < 400:
        kind = ErrorKind.PERMANENT
        message = f"{provider}: {operation} failed: unexpected redirect (HTTP {status})."
    else:
        kind = ErrorKind.PERMANENT
    return ProviderHTTPError(
        kind,
        message,
        retry_after=retry_after if kind == ErrorKind.RATE_LIMITED else None,
        status=status,
        code=detail.code,
    )


def default_error_detail(response: requests.Response) -> ErrorDetail:
    """The provider's own error string from common JSON shapes (never an HTML page)."""
    try:
        body = response.json()
    except ValueError:
        return ErrorDetail()
    if not isinstance(body, dict):
        return ErrorDetail()
    parts = []
    for key in ("error_description", "error", "message", "description", "detail"):
        value = body.get(key)
        if isinstance(value, str) and value and value not in parts:
            parts.append(value)
    code = body.get("code") or body.get("error") or ""
    return ErrorDetail(message=" - ".join(parts[:2]), code=str(code))


# --- SSRF guard -------------------------------------------------------------------------------

_LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".home.arpa", ".lan")


def is_public_ip(value: str) -> bool:
    try:
        address = ipaddress.ip_address(value.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return bool(address.is_global) and not address.is_multicast


# getaddrinfo's answers for a name that does not exist (not a resolver that failed to answer).
_NO_SUCH_HOST = frozenset(
    getattr(socket, name) for name in ("EAI_NONAME", "EAI_NODATA") if hasattr(socket, name)
)


def check_public_url(
    url: str,
    *,
    allow_private: bool = False,
    provider: str = "provider",
    what: str = "URL",
    resolve: bool = True,
    field: str | None = None,
) -> str:
    """Validate a user-supplied URL; returns it normalized (no fragment, no trailing slash).

    Without ``allow_private``: https only, no user info, and the host (literal or every DNS
    answer) must be a public address. With it (tests, private deployments): http or https, any
    host. The socket-level guard of :class:`HttpClient` re-checks the address actually used.

    With ``field`` (the URL is the user's input) a refusal is a :class:`ProviderInputError` at
    that field; without it (the URL came from a provider) a :class:`ProviderHTTPError`.
    """

    def refusal(message: str) -> ProviderError:
        if field:
            return ProviderInputError(field, message)
        return ProviderHTTPError(ErrorKind.PERMANENT, message)

    bad = refusal(f"{provider}: the {what} is not a valid https URL.")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise bad from None
    host = (parts.hostname or "").lower()
    if not host or parts.username or parts.password:
        raise bad
    if parts.scheme not in (("http", "https") if allow_private else ("https",)):
        raise bad
    normalized = urlunsplit(
        (parts.scheme, parts.netloc.lower(), parts.path.rstrip("/"), parts.query, "")
    )
    if allow_private:
        return normalized
    blocked = refusal(f"{provider}: the {what} must point to a public internet address.")
    if host in _LOCAL_NAMES or host.endswith(_LOCAL_SUFFIXES):
        raise blocked
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        is_literal = False
    else:
        is_literal = True
    if is_literal:
        if not is_public_ip(host.strip("[]")):
            raise blocked
        return normalized
    if resolve:
        try:
            answers = socket.getaddrinfo(host, port or 443, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            message = f"{provider}: the {what} host {host} could not be resolved."
            if isinstance(exc, UnicodeError) or (
                isinstance(exc, socket.gaierror) and exc.errno in _NO_SUCH_HOST
            ):
                raise refusal(message) from None  # the name does not exist: the input is wrong
            raise ProviderHTTPError(ErrorKind.PERMANENT, message) from None
        if not answers or not all(is_public_ip(str(a[4][0])) for a in answers):
            raise blocked
    return normalized


class _GuardMixin:
    def _new_conn(self) -> socket.socket:
        sock: socket.socket = super()._new_conn()  # type: ignore[misc]
        try:
            peer = str(sock.getpeername()[0])
        except OSError:
            peer = ""
        if not is_public_ip(peer):
            sock.close()
            raise BlockedAddressError("non-public address")
        return sock


class _GuardedHTTPConnection(_GuardMixin, HTTPConnection):
    pass


class _GuardedHTTPSConnection(_GuardMixin, HTTPSConnection):
    pass


class _GuardedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _GuardedHTTPConnection


class _GuardedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _GuardedHTTPSConnection


class _GuardedAdapter(HTTPAdapter):
    """Refuses, at connect time, any peer address that is not public (defeats DNS rebinding)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _GuardedHTTPPool,
            "https": _GuardedHTTPSPool,
        }


# --- The client -------------------------------------------------------------------------------


class HttpClient:
    """Bounded, sanitized HTTP for adapters. Thread-safe (one ``requests.Session`` per thread)."""

    def __init__(
        self,
        *,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        allow_private: bool = False,
        user_agent: str = USER_AGENT,
    ) -> None:
        self.read_timeout = float(read_timeout)
        self.connect_timeout = float(connect_timeout)
        self.allow_private = allow_private
        self.user_agent = user_agent
        self._local = threading.local()

    def _session(self, guarded: bool) -> requests.Session:
        name = "guarded" if guarded else "plain"
        session: requests.Session | None = getattr(self._local, name, None)
        if session is None:
            session = requests.Session()
            session.headers["User-Agent"] = self.user_agent
            if guarded:
                # Direct connections only, so the guard sees the real peer address.
                session.trust_env = False
                adapter = _GuardedAdapter()
                session.mount("http://", adapter)
                session.mount("https://", adapter)
            setattr(self._local, name, session)
        return session

    def request(
        self,
        method: str,
        url: str,
        *,
        provider: str,
        operation: str,
        write: bool,
        user_url: bool = False,
        ok: Iterable[int] = (200, 201, 202, 204),
        headers: Mapping[str, str] | None = None,
        params: Any = None,
        json_body: Any = None,
        data: Any = None,
        files: Any = None,
        secrets: Iterable[str] = (),
        parse_error: ErrorParser | None = None,
    ) -> requests.Response:
        """Send one request; return the response if its status is in ``ok``, else raise a
        :class:`ProviderHTTPError` classified by :func:`classify`.

        ``user_url``: the URL came from a user (instance, webhook): connections are guarded
        against non-public addresses unless the client allows private addresses.
        """
        host = urlsplit(url).hostname or ""
        started = time.monotonic()
        try:
            response = self._session(user_url and not self.allow_private).request(
                method,
                url,
                headers=dict(headers or {}),
                params=params,
                json=json_body,
                data=data,
                files=files,
                timeout=(self.connect_timeout, self.read_timeout),
                allow_redirects=False,
            )
        except (requests.RequestException, BlockedAddressError, Urllib3Error, OSError) as exc:
            error = classify(
                provider=provider,
                operation=operation,
                write=write,
                exception=exc,
                host=host,
                secrets=secrets,
            )
            logger.info(
                "provider call failed",
                extra={
                    "provider": provider,
                    "operation": operation,
                    "host": host,
                    "kind": error.kind.value,
                },
            )
            raise error from None
        elapsed_ms = int((time.monotonic() - started) * 1000)
        logger.debug(
            "provider call",
            extra={
                "provider": provider,
                "operation": operation,
                "host": host,
                "status": response.status_code,
                "elapsed_ms": elapsed_ms,
            },
        )
        if response.status_code in tuple(ok):
            return response
        detail = parse_error(response) if parse_error else default_error_detail(response)
        error = classify(
            provider=provider,
            operation=operation,
            write=write,
            response=response,
            detail=detail,
            host=host,
            secrets=secrets,
        )
        logger.info(
            "provider call refused",
            extra={
                "provider": provider,
                "operation": operation,
                "host": host,
                "status": response.status_code,
                "kind": error.kind.value,
            },
        )
        raise error

    @staticmethod
    def json(response: requests.Response, *, provider: str, operation: str, write: bool) -> Any:
        """The JSON body of a successful response. Unreadable after a write -> AMBIGUOUS."""
        try:
            return response.json()
        except ValueError:
            kind = ErrorKind.AMBIGUOUS if write else ErrorKind.TRANSIENT
            raise ProviderHTTPError(
                kind, f"{provider}: unreadable answer to {operation}.", status=response.status_code
            ) from None


# --- Helpers shared by adapters ---------------------------------------------------------------

URL_RE = re.compile(r"(?<![\w@/.])https?://[^\s<>\"'`]+", re.IGNORECASE)
_TRAILING = ".,:;!?'\")]}»…"


def find_urls(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, url)`` of http(s) URLs in ``text`` (character offsets), trailing
    punctuation excluded unless it closes a parenthesis opened inside the URL."""
    found = []
    for match in URL_RE.finditer(text):
        url = match.group(0)
        while url and url[-1] in _TRAILING:
            if url[-1] == ")" and url.count("(") >= url.count(")"):
                break
            url = url[:-1]
        if len(url) > len("https://"):
            found.append((match.start(), match.start() + len(url), url))
    return found


def read_media(item: MediaItem, *, provider: str, max_bytes: int) -> bytes:
    stream = item.open()
    try:
        payload = stream.read(max_bytes + 1)
    finally:
        stream.close()
    if len(payload) > max_bytes:
        raise ProviderError(
            ErrorKind.PERMANENT, f"{provider}: {item.name} is larger than {max_bytes} bytes."
        )
    return bytes(payload)


def precheck(profile: OutputProfile, request: PublishRequest, *, provider: str) -> None:
    """Refuse, before any upload, what the profile says the provider will refuse."""
    rule = profile.media
    if len(request.media) > rule.max_count:
        raise ProviderError(
            ErrorKind.PERMANENT, f"{provider}: at most {rule.max_count} media item(s) per post."
        )
    if rule.required and not request.media:
        raise ProviderError(ErrorKind.PERMANENT, f"{provider}: this format needs an image.")
    for item in request.media:
        if item.mime_type not in rule.mime_types:
            raise ProviderError(
                ErrorKind.PERMANENT, f"{provider}: media type {item.mime_type} is not accepted."
            )
        if item.size > rule.max_bytes:
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{provider}: {item.name} is larger than {rule.max_bytes} bytes.",
            )
    if profile.text_required and not request.text.strip():
        raise ProviderError(ErrorKind.PERMANENT, f"{provider}: text is required.")
    if not request.text.strip() and not request.media:
        raise ProviderError(ErrorKind.PERMANENT, f"{provider}: nothing to publish.")
    length = profile.text_counter(request.text)
    if length > profile.text_limit:
        raise ProviderError(
            ErrorKind.PERMANENT,
            f"{provider}: text is {length} long ({profile.counting_rule}); "
            f"the limit is {profile.text_limit}.",
        )
    for spec in profile.options:
        value = request.options.get(spec.name)
        if value in (None, ""):
            if spec.required and spec.default is None:
                raise ProviderError(
                    ErrorKind.PERMANENT, f"{provider}: option {spec.name} is required."
                )
            continue
        if spec.choices and value not in spec.choices:
            raise ProviderError(
                ErrorKind.PERMANENT, f"{provider}: option {spec.name} has an unsupported value."
            )
        if len(value) > spec.max_length:
            raise ProviderError(ErrorKind.PERMANENT, f"{provider}: option {spec.name} is too long.")


# ISO 639-1 code -> (English name, endonym). Used for language destination options.
LANGUAGES: dict[str, tuple[str, str]] = {
    "ar": ("Arabic", "العربية"),
    "bg": ("Bulgarian", "Български"),
    "ca": ("Catalan", "Català"),
    "cs": ("Czech", "Čeština"),
    "cy": ("Welsh", "Cymraeg"),
    "da": ("Danish", "Dansk"),
    "de": ("German", "Deutsch"),
    "el": ("Greek", "Ελληνικά"),
    "en": ("English", "English"),
    "eo": ("Esperanto", "Esperanto"),
    "es": ("Spanish", "Español"),
    "eu": ("Basque", "Euskara"),
    "fa": ("Persian", "فارسی"),
    "fi": ("Finnish", "Suomi"),
    "fr": ("French", "Français"),
    "ga": ("Irish", "Gaeilge"),
    "gl": ("Galician", "Galego"),
    "he": ("Hebrew", "עברית"),
    "hi": ("Hindi", "हिन्दी"),
    "hu": ("Hungarian", "Magyar"),
    "id": ("Indonesian", "Bahasa Indonesia"),
    "is": ("Icelandic", "Íslenska"),
    "it": ("Italian", "Italiano"),
    "ja": ("Japanese", "日本語"),
    "ko": ("Korean", "한국어"),
    "nl": ("Dutch", "Nederlands"),
    "no": ("Norwegian", "Norsk"),
    "pl": ("Polish", "Polski"),
    "pt": ("Portuguese", "Português"),
    "ro": ("Romanian", "Română"),
    "ru": ("Russian", "Русский"),
    "sk": ("Slovak", "Slovenčina"),
    "sv": ("Swedish", "Svenska"),
    "th": ("Thai", "ไทย"),
    "tr": ("Turkish", "Türkçe"),
    "uk": ("Ukrainian", "Українська"),
    "vi": ("Vietnamese", "Tiếng Việt"),
    "zh": ("Chinese", "中文"),
}


def language_options(language: str = "en") -> list[dict[str, str]]:
    """Language choices. Labels: English names for English (and unknown) requests, otherwise each
    language's own name (readable by its speakers whatever the UI language)."""
    english = (
        not language
        or language.lower().split("-")[0] not in LANGUAGES
        or language.lower().startswith("en")
    )
    items = [
        {"label": names[0] if english else names[1], "value": code}
        for code, names in LANGUAGES.items()
    ]
    return sorted(items, key=lambda item: item["label"].casefold())


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
