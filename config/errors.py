"""Domain errors. Services raise these; one handler (config.api.problems) renders them."""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    status = 400
    code = "bad_request"
    default_detail = "The request cannot be acted on."

    def __init__(self, detail: str | None = None, *, code: str | None = None, **extra: Any) -> None:
        self.detail = detail or self.default_detail
        if code:
            self.code = code
        self.extra = extra
        super().__init__(self.detail)


class NotFoundError(DomainError):
    status, code, default_detail = 404, "not_found", "Not found."


class PermissionDeniedError(DomainError):
    status, code, default_detail = 403, "permission_denied", "You do not have access to this resource."


class PlanLimitError(PermissionDeniedError):
    code = "plan_limit"
    default_detail = "The workspace plan limit has been reached."


class ConflictError(DomainError):
    status, code, default_detail = 409, "conflict", "The request conflicts with the current state."


class RevisionConflictError(ConflictError):
    code = "revision_conflict"
    default_detail = "The resource changed; reload it and try again."


class FieldValidationError(DomainError):
    """A 422 raised by a service that knows the exact failing field(s).

    ``errors`` is a list of ``{"location": "body.x", "message": "...", "value": ...}``.
    """

    status, code, default_detail = 422, "invalid", "Request validation failed."

    def __init__(self, errors: list[dict[str, Any]], detail: str | None = None) -> None:
        super().__init__(detail)
        self.errors = errors


class UpstreamError(DomainError):
    status, code, default_detail = 502, "upstream_error", "An upstream service failed."


class ServiceUnavailableError(DomainError):
    status, code, default_detail = 503, "unavailable", "A required dependency is unavailable."


class UpstreamTimeoutError(DomainError):
    status, code, default_detail = 504, "upstream_timeout", "An upstream service timed out."


class RateLimitedError(DomainError):
    status, code, default_detail = 429, "rate_limited", "Too many requests."

    def __init__(self, detail: str | None = None, *, retry_after: int = 1) -> None:
        super().__init__(detail)
        self.retry_after = max(1, int(retry_after))
