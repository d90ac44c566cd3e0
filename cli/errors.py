"""Errors the CLI and the tool interface report, each as one line a person can act on.

Every error carries the exit code of ``herald`` (documented in ``herald --help``).
"""

from __future__ import annotations

from typing import Any

from cli.redact import redact

EXIT_OK = 0
EXIT_FAILED = 1  # a check failed: a probe, or a publication's destinations did not all publish
EXIT_USAGE = 2  # bad command line or missing local configuration (click uses 2 as well)
EXIT_AUTH = 3  # no token, or the instance refused it (401) or refused the operation (403)
EXIT_REJECTED = 4  # the instance rejected the request (404, 409, 422, 429, other 4xx)
EXIT_UNAVAILABLE = 5  # unreachable, TLS failure, time-out, or a server error (5xx)

EXIT_CODES_HELP = f"""\b
Exit codes:
  {EXIT_OK}  success
  {EXIT_FAILED}  a check failed (a health probe, or a publication that did not publish)
  {EXIT_USAGE}  usage error or missing configuration (no instance, profile or workspace)
  {EXIT_AUTH}  not signed in, token refused (401) or permission denied (403)
  {EXIT_REJECTED}  request rejected by the instance (404, 409, 422, 429, …)
  {EXIT_UNAVAILABLE}  instance unreachable, TLS failure, time-out or server error (5xx)"""


class HeraldError(Exception):
    """Base: ``str(error)`` is one redacted line."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str) -> None:
        super().__init__(redact(" ".join(message.split())))


class UsageProblem(HeraldError):
    """Local configuration is missing or wrong (no instance, unknown profile, …)."""

    exit_code = EXIT_USAGE


class NotSignedIn(HeraldError):
    exit_code = EXIT_AUTH

    def __init__(self, message: str = "") -> None:
        super().__init__(
            message or "No API token; run `herald auth login`, pass --token or set HERALD_TOKEN."
        )


class ConnectionFailed(HeraldError):
    """The instance could not be reached at all."""

    exit_code = EXIT_UNAVAILABLE


class TLSFailed(ConnectionFailed):
    pass


class TimedOut(ConnectionFailed):
    pass


class ApiError(HeraldError):
    """An error response of the instance, usually an RFC 9457 problem."""

    exit_code = EXIT_REJECTED

    def __init__(self, status: int, body: dict[str, Any] | None, fallback: str = "") -> None:
        self.status = status
        self.body: dict[str, Any] = body or {}
        self.code = str(self.body.get("code") or "")
        self.title = str(self.body.get("title") or fallback or "Error")
        self.detail = str(self.body.get("detail") or "")
        raw_errors = self.body.get("errors")
        self.errors: list[dict[str, Any]] = raw_errors if isinstance(raw_errors, list) else []
        super().__init__(self._line())

    def _line(self) -> str:
        text = f"{self.status} {self.title}"
        if self.detail and self.detail != self.title:
            text += f": {self.detail.rstrip('.')}"
        if self.errors:
            parts = []
            for error in self.errors[:10]:
                if isinstance(error, dict):
                    parts.append(
                        f"{error.get('location', '?')}: {error.get('message', '')}".strip()
                    )
            more = f" (+{len(self.errors) - 10} more)" if len(self.errors) > 10 else ""
            text += " — " + "; ".join(parts) + more
        if self.code:
            text += f" [{self.code}]"
        hint = self.hint()
        return f"{text}. {hint}" if hint else text

    def hint(self) -> str:
        return ""


class Unauthorized(ApiError):
    exit_code = EXIT_AUTH

    def hint(self) -> str:
        return "The token is missing, expired or revoked: run `herald auth login` with a new one."


class Forbidden(ApiError):
    exit_code = EXIT_AUTH


class NotFound(ApiError):
    pass


class Conflict(ApiError):
    pass


class InvalidRequest(ApiError):
    pass


class RateLimited(ApiError):
    def __init__(self, status: int, body: dict[str, Any] | None, retry_after: str | None) -> None:
        self.retry_after = retry_after
        super().__init__(status, body)

    def hint(self) -> str:
        return f"Retry in {self.retry_after} s." if self.retry_after else ""


class ServerError(ApiError):
    exit_code = EXIT_UNAVAILABLE


def api_error_for(
    status: int, body: dict[str, Any] | None, *, reason: str = "", retry_after: str | None = None
) -> ApiError:
    if status == 429:
        return RateLimited(status, body, retry_after)
    kinds: dict[int, type[ApiError]] = {
        401: Unauthorized,
        403: Forbidden,
        404: NotFound,
        409: Conflict,
        422: InvalidRequest,
    }
    kind = kinds.get(status) or (ServerError if status >= 500 else ApiError)
    return kind(status, body, reason)
