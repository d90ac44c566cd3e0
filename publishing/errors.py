from config.errors import ConflictError, DomainError


class ReadinessBlockedError(ConflictError):
    """Provider readiness blocks this operation now; the ``readiness`` member carries the decision
    (see docs/readiness.md)."""

    title = "Blocked by provider readiness"
    code = "readiness_blocked"
    default_detail = "Provider readiness blocks this operation now."


class PublicationStateError(ConflictError):
    """The publication cannot do this in its current status (for example editing a published
    publication, or retrying a destination that did not fail)."""

    title = "Publication state conflict"
    code = "publication_state"
    default_detail = "The publication cannot do this in its current status."


class IdempotencyKeyReusedError(ConflictError):
    """This Idempotency-Key was already used with a different request body or path; use a new
    key for a new request."""

    title = "Idempotency key reused"
    code = "idempotency_key_reused"
    default_detail = "This Idempotency-Key was used with a different request."


class ProviderConnectError(DomainError):
    """The social provider refused or failed the request (connecting or checking an account)."""

    title = "Provider error"
    status, code, default_detail = (
        502,
        "provider_error",
        "The provider refused or failed the request.",
    )


class MediaInUseError(ConflictError):
    """The media is attached to a publication that is not finished; detach it first."""

    title = "Media in use"
    code = "media_in_use"
    default_detail = "The media is attached to a publication that is not finished."
