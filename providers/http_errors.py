"""Classifying provider HTTP failures: the single place that maps an HTTP outcome (a response or
a ``requests`` exception) to a :class:`~providers.base.ProviderError` kind, with the
provider's message sanitized.

Nothing here returns a secret: messages are built from the provider's error string (truncated,
scrubbed) and the host name only, never from ``str(exception)`` (``requests`` puts the full URL,
and therefore Telegram bot tokens and Discord webhook tokens, into its messages).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import requests
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

from providers.base import ErrorKind, NotSupported, ProviderError
from providers.retry_after import parse_retry_after

MAX_DETAIL_CHARS = 200


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
    if exception is not None:
        return _classify_exception(
            exception, provider=provider, operation=operation, write=write, where=host
        )
    assert response is not None  # noqa: S101 - programming error, not input
    return _classify_response(
        response,
        detail or default_error_detail(response),
        provider=provider,
        operation=operation,
        write=write,
        secrets=secrets,
    )


def _classify_exception(
    exception: BaseException, *, provider: str, operation: str, write: bool, where: str
) -> ProviderHTTPError:
    """No answer: refused before the request left (the URL, the address, the connection), or
    lost after it was sent (a timeout, a broken connection: ambiguous after a write)."""
    where = where or "the provider"
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
        return ProviderHTTPError(ErrorKind.PERMANENT, f"{provider}: invalid URL for {operation}.")
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


def _classify_response(
    response: requests.Response,
    detail: ErrorDetail,
    *,
    provider: str,
    operation: str,
    write: bool,
    secrets: tuple[str, ...],
) -> ProviderHTTPError:
    """An answer outside the expected statuses: the parser's kind if it named one, else the
    status's; the provider's own message, sanitized; a wait only for a rate limit."""
    status = response.status_code
    text = sanitize(detail.message, secrets) if detail.message else (response.reason or "")
    text = sanitize(text, secrets)
    message = f"{provider}: {operation} failed (HTTP {status})" + (f": {text}" if text else ".")
    kind = detail.kind if detail.kind is not None else _status_kind(status, write=write)
    if detail.kind is None and 300 <= status < 400:
        message = f"{provider}: {operation} failed: unexpected redirect (HTTP {status})."
    retry_after = detail.retry_after
    if retry_after is None:
        retry_after = parse_retry_after(response.headers)
    return ProviderHTTPError(
        kind,
        message,
        retry_after=retry_after if kind == ErrorKind.RATE_LIMITED else None,
        status=status,
        code=detail.code,
    )


def _status_kind(status: int, *, write: bool) -> ErrorKind:
    if status == 429:
        return ErrorKind.RATE_LIMITED
    if status in (401, 403):
        return ErrorKind.AUTH
    if status in (504, 524):  # gateway timeouts: the origin may have processed the request
        return ErrorKind.AMBIGUOUS if write else ErrorKind.TRANSIENT
    if status >= 500 or status == 408:
        return ErrorKind.TRANSIENT
    return ErrorKind.PERMANENT  # redirects (never followed) and the other refusals


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
