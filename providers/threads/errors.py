"""Threads' Graph API answers: the error object and its codes, post timestamps, and what
"does not exist" looks like (developers.facebook.com/docs/graph-api/guides/error-handling)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import requests

from providers.base import ErrorKind
from providers.http_errors import ErrorDetail, ProviderHTTPError, default_error_detail

# Graph API error codes (developers.facebook.com/docs/graph-api/guides/error-handling).
_AUTH_CODES = {102, 190, 10}  # session / token invalid or expired; permission denied
_RATE_CODES = {4, 17, 32, 613, 341}  # app, user, page and custom rate limits
_TRANSIENT_CODES = {1, 2}  # unknown / service: temporary
_GONE_CODES = {100}  # with subcode 33: the object does not exist


def graph_error(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        return {}
    error = body.get("error")
    if isinstance(error, dict):
        return error
    if body.get("error_type") or body.get("error_message"):  # the OAuth endpoints' flat shape
        return {
            "type": body.get("error_type"),
            "message": body.get("error_message"),
            "code": body.get("code"),
        }
    return {}


def parse_error(response: requests.Response, *, token_endpoint: bool = False) -> ErrorDetail:
    """The Graph API error object ``{"error": {"message", "type", "code", "error_subcode",
    "is_transient"}}``: code 190 (and 102, 10, 200-299) means reconnect; 4, 17, 32, 613 are rate
    limits (whatever the HTTP status, often 400 or 403); 1, 2 or ``is_transient`` are temporary.
    A refusal from a token endpoint (a bad code, an expired long-lived token) is a grant to
    renew by connecting again."""
    detail = default_error_detail(response)
    try:
        body = response.json()
    except ValueError:
        body = {}
    error = graph_error(body)
    message = str(error.get("message") or detail.message)[:400]
    try:
        code = int(error.get("code") or 0)
    except (TypeError, ValueError):
        code = 0
    try:
        subcode = int(error.get("error_subcode") or 0)
    except (TypeError, ValueError):
        subcode = 0
    code_text = f"{code}/{subcode}" if subcode else (str(code) if code else "")
    if code in _RATE_CODES or response.status_code == 429:
        return ErrorDetail(message=message, kind=ErrorKind.RATE_LIMITED, code=code_text)
    if code in _AUTH_CODES or 200 <= code <= 299:
        return ErrorDetail(message=message, kind=ErrorKind.AUTH, code=code_text)
    if response.status_code >= 500:  # the status decides (a 504 after a publish: ambiguous)
        return ErrorDetail(message=message, code=code_text)
    if code in _TRANSIENT_CODES or error.get("is_transient") is True:
        return ErrorDetail(message=message, kind=ErrorKind.TRANSIENT, code=code_text)
    if token_endpoint and 400 <= response.status_code < 500:
        return ErrorDetail(message=message, kind=ErrorKind.AUTH, code="invalid_grant")
    return ErrorDetail(message=message, code=code_text)


def parse_token_error(response: requests.Response) -> ErrorDetail:
    return parse_error(response, token_endpoint=True)


def post_timestamp(post: dict[str, Any]) -> datetime | None:
    """Threads' ``timestamp`` (ISO 8601, ``2024-07-01T12:00:00+0000``)."""
    raw = str(post.get("timestamp") or "")
    if len(raw) > 5 and raw[-5] in "+-" and raw[-3] != ":":
        raw = raw[:-2] + ":" + raw[-2:]
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def gone(exc: ProviderHTTPError) -> bool:
    """Graph's answer for an object that does not exist (code 100, subcode 33) or a 404."""
    return exc.status == 404 or exc.code.split("/")[0] in {str(c) for c in _GONE_CODES}
