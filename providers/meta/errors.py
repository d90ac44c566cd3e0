"""Graph API errors as Meta documents them (developers.facebook.com/docs/graph-api/guides/
error-handling, and the Instagram Platform's error codes): the error object
``{"error": {"message", "type", "code", "error_subcode", "error_user_title", "error_user_msg",
"is_transient", "fbtrace_id"}}`` mapped to Herald's error kinds.

* 190 (and 102, 10 and 200-299: a token or a permission that is gone) -> ``AUTH``: the account
  must be connected again (``reconnect_required``).
* 4 (app), 17 (user), 32 (Page), 613 and 80001-80014 (business use case limits) -> rate limited:
  Herald pauses the app or the object (``providers.meta.usage``) until Meta's
  ``estimated_time_to_regain_access`` (else ``Retry-After``, else five minutes).
* 368 (blocked for a policy reason) and subcode 2207051 (suspected spam) -> failed, never retried.
* Subcodes 2207xxx (Instagram content publishing): the rule that was broken, in words; the few
  Meta calls temporary ("try again") are retried, the publishing limit (2207042) waits.
* 1, 2 and ``is_transient`` -> retried.
* 100 with subcode 33 (the object does not exist) -> :func:`gone`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import requests

from providers.base import ErrorKind
from providers.http_errors import ErrorDetail, ProviderHTTPError, default_error_detail
from providers.meta import usage as meta_usage
from providers.retry_after import parse_retry_after

AUTH_CODES = frozenset({102, 190, 10})  # session / token invalid; permission not granted
APP_RATE_CODES = frozenset({4})  # the app's platform limit
RATE_CODES = frozenset({4, 17, 32, 613, 341, *range(80001, 80015)})
POLICY_CODES = frozenset({368})  # temporarily blocked for policy violations
TRANSIENT_CODES = frozenset({1, 2})  # unknown / service: temporary
GONE = (100, 33)  # the object does not exist, or cannot be reached with this token

# Instagram content publishing subcodes: (kind, the rule in words). Meta's own wording where it
# says what to do; "try again" ones are transient.
_T, _P, _R = ErrorKind.TRANSIENT, ErrorKind.PERMANENT, ErrorKind.RATE_LIMITED
SUBCODES: dict[int, tuple[ErrorKind, str]] = {
    2207001: (_T, "Instagram had a server error; try again."),
    2207003: (_T, "Downloading the media took too long; try again."),
    2207004: (_P, "The image is too large to download: it must be at most 8 MiB."),
    2207005: (_P, "The image format is not supported: use JPEG (or PNG where accepted)."),
    2207006: (_P, "The media was not found (a missing permission or an expired container)."),
    2207008: (_T, "Temporary error publishing the container; try again."),
    2207009: (_P, "The aspect ratio is not supported: feed images must be 4:5 to 1.91:1."),
    2207010: (_P, "The caption is too long: at most 2,200 characters, 30 hashtags, 20 @ tags."),
    2207020: (_T, "The media container expired (24 hours); a new container is needed."),
    2207023: (_P, "The media type is not one of those expected (IMAGE, VIDEO, REELS, STORIES)."),
    2207024: (_P, "The video is too short for this format."),
    2207026: (_P, "The video format is not supported: MP4 or MOV, H.264 or HEVC, AAC audio."),
    2207027: (_T, "The media is not ready for publishing yet; wait until it is FINISHED."),
    2207028: (_P, "The carousel could not be published: it needs 2 to 10 finished items."),
    2207032: (_T, "Creating the media container failed; try again."),
    2207035: (_P, "Product tags are not supported on this media."),
    2207042: (_R, "The account reached its content publishing limit for the last 24 hours."),
    2207050: (
        _P,
        "The Instagram account is inactive, checkpointed or restricted: sign in to "
        "the Instagram app and complete what it asks.",
    ),
    2207051: (_P, "Instagram restricted this action as suspected spam (not retried)."),
    2207052: (_P, "The media could not be fetched from its URL: it must be publicly reachable."),
    2207053: (_T, "An unknown upload error occurred; try again with a new container."),
    2207057: (_P, "The thumbnail offset is outside the video's duration."),
}


@dataclass(frozen=True)
class GraphError:
    """The fields of one Graph API error object (zeros and "" when absent)."""

    code: int = 0
    subcode: int = 0
    message: str = ""
    user_message: str = ""
    type: str = ""
    transient: bool = False
    fbtrace_id: str = ""

    @property
    def code_text(self) -> str:
        if not self.code and not self.subcode:
            return ""
        return f"{self.code}/{self.subcode}" if self.subcode else str(self.code)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def graph_error(body: Any) -> GraphError:
    """The error object of an answer (also the OAuth endpoints' flat ``error_type`` shape)."""
    if not isinstance(body, dict):
        return GraphError()
    error = body.get("error")
    if not isinstance(error, dict):
        if not (body.get("error_type") or body.get("error_message")):
            return GraphError()
        error = {
            "type": body.get("error_type"),
            "message": body.get("error_message"),
            "code": body.get("code"),
        }
    return GraphError(
        code=_int(error.get("code")),
        subcode=_int(error.get("error_subcode")),
        message=str(error.get("message") or "")[:400],
        user_message=str(error.get("error_user_msg") or "")[:400],
        type=str(error.get("type") or ""),
        transient=error.get("is_transient") is True,
        fbtrace_id=str(error.get("fbtrace_id") or "")[:64],
    )


def classify(error: GraphError, status: int) -> tuple[ErrorKind | None, str]:
    """The kind an error object means (None: let the HTTP status decide) and the words to
    show: the broken rule for a known subcode, else Meta's message."""
    words = error.user_message or error.message
    if error.subcode in SUBCODES:
        kind, rule = SUBCODES[error.subcode]
        return kind, rule + (f" ({words})" if words and words not in rule else "")
    if error.code in POLICY_CODES:
        return ErrorKind.PERMANENT, f"Blocked by Meta for a policy reason (not retried): {words}"
    if error.code in RATE_CODES or status == 429:
        return ErrorKind.RATE_LIMITED, words
    if error.code in AUTH_CODES or 200 <= error.code <= 299:
        return ErrorKind.AUTH, words
    if status >= 500:  # the status decides (a 5xx or 504 after a publish: ambiguous)
        return None, words
    if error.code in TRANSIENT_CODES or error.transient:
        return ErrorKind.TRANSIENT, words
    return None, words


def regain_seconds(
    headers: Mapping[str, str], object_ids: tuple[str, ...] = (), *, code: int = 0
) -> float:
    """How long a rate-limited caller should wait: the longest ``estimated_time_to_regain_
    access`` in the usage headers (of ``object_ids``, or any when none given), else
    ``Retry-After``, else the default pause."""
    readings = meta_usage.read_usage(headers)
    waits = [
        u.regain_seconds
        for u in readings
        if u.regain_seconds > 0 and (not object_ids or not u.object_id or u.object_id in object_ids)
    ]
    if waits:
        return min(max(waits), meta_usage.MAX_PAUSE_SECONDS)
    said = parse_retry_after(headers)
    return said if said is not None else meta_usage.DEFAULT_PAUSE_SECONDS


def parse_error(response: requests.Response, *, token_endpoint: bool = False) -> ErrorDetail:
    """The :class:`ErrorDetail` of a failed Graph answer. The message keeps Meta's
    ``fbtrace_id`` (what Meta support asks for). A refusal from a token endpoint (a bad code,
    an expired token) is a grant to renew by connecting again."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    error = graph_error(body)
    if not error.code and not error.message:
        return default_error_detail(response)
    kind, words = classify(error, response.status_code)
    if error.fbtrace_id:
        words = f"{words} [fbtrace_id {error.fbtrace_id}]" if words else error.fbtrace_id
    if kind is ErrorKind.RATE_LIMITED:
        wait = regain_seconds(response.headers, code=error.code)
        return ErrorDetail(message=words, kind=kind, retry_after=wait, code=error.code_text)
    if kind is None and token_endpoint and 400 <= response.status_code < 500:
        return ErrorDetail(message=words, kind=ErrorKind.AUTH, code="invalid_grant")
    return ErrorDetail(message=words, kind=kind, code=error.code_text)


def parse_token_error(response: requests.Response) -> ErrorDetail:
    return parse_error(response, token_endpoint=True)


def codes(exc: ProviderHTTPError) -> tuple[int, int]:
    """(code, subcode) of a Graph error raised by the HTTP client (zeros when unknown)."""
    code, _, subcode = exc.code.partition("/")
    return _int(code) if code.lstrip("-").isdigit() else 0, _int(subcode) if subcode else 0


def gone(exc: ProviderHTTPError) -> bool:
    """Graph's answer for an object that does not exist (code 100, subcode 33) or a 404."""
    return exc.status == 404 or codes(exc) == GONE
