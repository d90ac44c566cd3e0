"""Domain errors. Services raise these; one handler (config.api.problems) renders them."""

from __future__ import annotations

from typing import Any

_ABSENT: Any = object()


def field_error(location: str, message: str, value: Any = _ABSENT) -> dict[str, Any]:
    """One entry of a 422's ``errors[]``: where (``body.x``, ``query.y``…), what is wrong and,
    only when it is small and not a secret, the offending ``value`` (``None`` is a value)."""
    error: dict[str, Any] = {"location": location, "message": message}
    if value is not _ABSENT:
        error["value"] = value
    return error


class DomainError(Exception):
    """The request is well-formed but cannot be acted on."""

    status = 400
    code = "bad_request"
    title = "Bad request"
    default_detail = "The request cannot be acted on."
    # Each subclass that sets its own ``code`` documents it at /docs/problems/<code>
    # (config.problem_catalogue): ``title`` and ``description`` (or the class docstring).
    description: str | None = None

    def __init__(self, detail: str | None = None, *, code: str | None = None, **extra: Any) -> None:
        self.detail = detail or self.default_detail
        if code:
            self.code = code
        self.extra = extra
        super().__init__(self.detail)


class NotFoundError(DomainError):
    """The path or resource does not exist on this instance, or the caller cannot see it."""

    title = "Not found"
    status, code, default_detail = 404, "not_found", "Not found."


class PermissionDeniedError(DomainError):
    """The caller lacks a permission, role, or workspace access for this operation."""

    title = "Permission denied"
    status, code, default_detail = (
        403,
        "permission_denied",
        "You do not have access to this resource.",
    )


class PlanLimitError(PermissionDeniedError):
    """The workspace plan's limit (members, accounts, scheduled publications) has been reached."""

    title = "Plan limit reached"
    code = "plan_limit"
    default_detail = "The workspace plan limit has been reached."


class ConflictError(DomainError):
    """The request conflicts with the current state of the resource."""

    title = "Conflict"
    status, code, default_detail = 409, "conflict", "The request conflicts with the current state."


class RevisionConflictError(ConflictError):
    """The resource changed since the caller read it (If-Match / revision); reload and retry."""

    title = "Revision conflict"
    code = "revision_conflict"
    default_detail = "The resource changed; reload it and try again."


class FieldValidationError(DomainError):
    """A 422 raised by a service that knows the exact failing field(s).

    ``errors`` is a list of ``{"location": "body.x", "message": "...", "value": ...}``.
    """

    title = "Invalid request"
    description = (
        "The request does not match the endpoint schema or a field's rules; errors[] names each "
        "failing location (body, query, path or header), its message and, when small and not a "
        "secret, the offending value."
    )
    status, code, default_detail = 422, "invalid", "Request validation failed."

    def __init__(self, errors: list[dict[str, Any]], detail: str | None = None) -> None:
        super().__init__(detail)
        self.errors = errors

    @classmethod
    def at(cls, location: str, message: str, value: Any = _ABSENT) -> FieldValidationError:
        """The 422 for one failing field (see ``field_error``)."""
        return cls([field_error(location, message, value)])


class UpstreamError(DomainError):
    """An upstream service (a social provider or the discovery model) failed."""

    title = "Upstream error"
    status, code, default_detail = 502, "upstream_error", "An upstream service failed."


class ServiceUnavailableError(DomainError):
    """A required dependency is unavailable; retry later."""

    title = "Service unavailable"
    status, code, default_detail = 503, "unavailable", "A required dependency is unavailable."


class UpstreamTimeoutError(DomainError):
    """An upstream service (a social provider or the discovery model) timed out."""

    title = "Upstream timeout"
    status, code, default_detail = 504, "upstream_timeout", "An upstream service timed out."


class RateLimitedError(DomainError):
    """Too many requests; retry after the number of seconds in Retry-After."""

    title = "Rate limited"
    status, code, default_detail = 429, "rate_limited", "Too many requests."

    def __init__(self, detail: str | None = None, *, retry_after: int = 1) -> None:
        super().__init__(detail)
        self.retry_after = max(1, int(retry_after))
