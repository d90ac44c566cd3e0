from config.errors import ConflictError, DomainError


class ReadinessBlockedError(ConflictError):
    code = "readiness_blocked"
    default_detail = "Provider readiness blocks this operation now."


class PublicationStateError(ConflictError):
    code = "publication_state"
    default_detail = "The publication cannot do this in its current status."


class IdempotencyKeyReusedError(ConflictError):
    code = "idempotency_key_reused"
    default_detail = "This Idempotency-Key was used with a different request."


class ProviderConnectError(DomainError):
    status, code, default_detail = 502, "provider_error", "The provider refused or failed the request."


class MediaInUseError(ConflictError):
    code = "media_in_use"
    default_detail = "The media is attached to a publication that is not finished."
