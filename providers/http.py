"""The one HTTP client every provider adapter uses.

:class:`HttpClient`: ``requests`` sessions (one per thread) with bounded connect/read timeouts,
``User-Agent: Herald/0.1``, no redirects, and an optional socket-level SSRF guard for URLs a user
supplied (Mastodon instance, webhook). A failed call raises the
:class:`~providers.http_errors.ProviderHTTPError` that
:func:`~providers.http_errors.classify` gives it.

Next to it: ``http_errors`` (classification, sanitizing), ``retry_after`` (wait hints),
``url_safety`` (user-supplied URL checks and the connect-time guard) and ``helpers`` (text and
request helpers shared by adapters).

Nothing here logs a secret: only the provider, the operation, the host and the outcome.
"""

from __future__ import annotations

import io
import itertools
import logging
import operator
import re
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
from urllib3.exceptions import HTTPError as Urllib3Error

from providers.base import ErrorKind
from providers.http_errors import (
    BlockedAddressError,
    ErrorDetail,
    ErrorParser,
    ProviderHTTPError,
    classify,
    default_error_detail,
)
from providers.url_safety import GuardedAdapter, allow_any_address, is_public_ip

USER_AGENT = "Herald/0.1"
DEFAULT_READ_TIMEOUT = 10.0
DEFAULT_CONNECT_TIMEOUT = 5.0
# Provider answers are small JSON documents; a larger (or larger once decoded) one is refused.
MAX_ANSWER_BYTES = 2 * 1024 * 1024
_READ_STEP = 64 * 1024
# Nesting deeper than this is refused too: the standard JSON decoder that ``response.json()``
# uses raises RecursionError (not ValueError) on a few thousand brackets.
MAX_ANSWER_DEPTH = 64
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")
_STEPS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")

logger = logging.getLogger("herald.providers")


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
                # Direct connections only, so the guard's vetted address is the real peer.
                session.trust_env = False
                allowed = allow_any_address if self.allow_private else is_public_ip
                adapter = GuardedAdapter(allowed=allowed)
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

        ``user_url``: the URL came from a user (instance, webhook): each connection resolves
        the host once and goes only to a vetted public address (any address when the client
        allows private addresses).
        """
        call = _Call(provider, operation, write, urlsplit(url).hostname or "", tuple(secrets))
        started = time.monotonic()
        try:
            response = self._session(user_url).request(
                method,
                url,
                headers=dict(headers or {}),
                params=params,
                json=json_body,
                data=data,
                files=files,
                timeout=(self.connect_timeout, self.read_timeout),
                allow_redirects=False,
                stream=True,
            )
            complete = _read_answer(
                response, started + self.connect_timeout + 2 * self.read_timeout
            )
        except (requests.RequestException, BlockedAddressError, Urllib3Error, OSError) as exc:
            raise call.failed(exc) from None
        call.log_answer(response, started)
        if response.status_code not in tuple(ok):
            raise call.refused(response, parse_error)
        if not complete:
            raise _unreadable(provider, operation, write, response.status_code)
        return response

    @staticmethod
    def json(response: requests.Response, *, provider: str, operation: str, write: bool) -> Any:
        """The JSON body of a successful response. Unreadable after a write -> AMBIGUOUS."""
        try:
            return response.json()
        except ValueError:
            raise _unreadable(provider, operation, write, response.status_code) from None


@dataclass(frozen=True)
class _Call:
    """One request as its errors and log lines name it (never its URL: it may hold a token)."""

    provider: str
    operation: str
    write: bool
    host: str
    secrets: tuple[str, ...]

    def failed(self, exc: BaseException) -> ProviderHTTPError:
        """No answer (see :func:`classify`), logged without the exception's text."""
        error = self._classify(exception=exc)
        logger.info("provider call failed", extra=self._fields(kind=error.kind.value))
        return error

    def log_answer(self, response: requests.Response, started: float) -> None:
        elapsed_ms = int((time.monotonic() - started) * 1000)
        logger.debug(
            "provider call",
            extra=self._fields(status=response.status_code, elapsed_ms=elapsed_ms),
        )

    def refused(
        self, response: requests.Response, parse_error: ErrorParser | None
    ) -> ProviderHTTPError:
        """An answer outside the expected statuses, with the provider's own error detail (read
        by the adapter's parser when it has one)."""
        detail = parse_error(response) if parse_error else default_error_detail(response)
        error = self._classify(response=response, detail=detail)
        logger.info(
            "provider call refused",
            extra=self._fields(status=response.status_code, kind=error.kind.value),
        )
        return error

    def _classify(
        self,
        *,
        exception: BaseException | None = None,
        response: requests.Response | None = None,
        detail: ErrorDetail | None = None,
    ) -> ProviderHTTPError:
        return classify(
            provider=self.provider,
            operation=self.operation,
            write=self.write,
            response=response,
            exception=exception,
            detail=detail,
            host=self.host,
            secrets=self.secrets,
        )

    def _fields(self, **more: object) -> dict[str, object]:
        """The fields of this call's log lines."""
        return {"provider": self.provider, "operation": self.operation, "host": self.host, **more}


def _unreadable(provider: str, operation: str, write: bool, status: int) -> ProviderHTTPError:
    kind = ErrorKind.AMBIGUOUS if write else ErrorKind.TRANSIENT
    return ProviderHTTPError(kind, f"{provider}: unreadable answer to {operation}.", status=status)


def _read_answer(response: requests.Response, deadline: float) -> bool:
    """Read ``response``'s body, decoded, so that ``content`` and ``json()`` work as without
    streaming; ``False`` (and an empty body) once it passes :data:`MAX_ANSWER_BYTES`. Past
    ``deadline`` (a monotonic time) it raises ``ReadTimeout``: the read timeout bounds each
    socket read only, and an answer may trickle in a byte at a time.

    urllib3 decodes a gzip, deflate, Brotli or zstd answer one step at a time, so a
    compressed bomb costs about one step of memory before it is refused, not its expanded size.
    """
    pieces: list[bytes] = []
    size = 0
    complete = True
    try:
        while piece := response.raw.read1(_READ_STEP, decode_content=True):
            size += len(piece)
            if size > MAX_ANSWER_BYTES:
                pieces, complete = [], False
                break
            pieces.append(piece)
            if time.monotonic() > deadline:
                raise requests.exceptions.ReadTimeout("the answer took too long")
    finally:
        response.close()  # back to the pool when read to the end; dropped when cut short
    body = b"".join(pieces)
    if _too_deep(body):
        body, complete = b"", False
    response.raw = io.BytesIO(body)  # the documented file-like body, now bounded
    return complete


def _too_deep(body: bytes) -> bool:
    """Whether ``body`` nests arrays and objects deeper than :data:`MAX_ANSWER_DEPTH` (brackets
    inside JSON strings do not count): a running sum of +1 per opening and -1 per closing
    bracket, in C (a 2 MiB body of brackets takes about 0.3 s)."""
    if body.count(b"[") + body.count(b"{") <= MAX_ANSWER_DEPTH:
        return False
    brackets = _JSON_STRING.sub(b"", body).translate(None, _NOT_BRACKETS).translate(_STEPS)
    steps = map(operator.sub, brackets, itertools.repeat(1))  # 2 -> +1, 0 -> -1
    return max(itertools.accumulate(steps), default=0) > MAX_ANSWER_DEPTH
