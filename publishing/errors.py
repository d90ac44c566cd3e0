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


class UploadOffsetMismatchError(ConflictError):
    """The PATCH's Upload-Offset is not the upload's current offset (or another PATCH of it is
    in progress); ask HEAD for the offset and resume from there."""

    title = "Upload offset mismatch"
    code = "upload_offset_mismatch"
    default_detail = "Upload-Offset does not match the upload's offset; HEAD it and resume."


class UploadExpiredError(DomainError):
    """The resumable upload expired (see its Upload-Expires) and was removed; start a new one."""

    title = "Upload expired"
    status, code, default_detail = 410, "upload_expired", "The upload expired; start a new one."


class TusVersionError(DomainError):
    """The request's Tus-Resumable header names a tus version this server does not speak
    (the Tus-Version header lists the ones it does)."""

    title = "Unsupported tus version"
    status, code, default_detail = 412, "tus_version", "Send Tus-Resumable: 1.0.0."


class UploadTooLargeError(DomainError):
    """The upload is larger than the instance's limit for media (``HERALD_MAX_VIDEO_BYTES``,
    announced in Tus-Max-Size), or a PATCH carries more bytes than the upload has left."""

    title = "Upload too large"
    status, code, default_detail = 413, "upload_too_large", "The upload exceeds the limit."


class UploadChecksumError(DomainError):
    """The PATCH's ``Upload-Checksum`` names an algorithm this server does not support (the
    OPTIONS answer's ``Tus-Checksum-Algorithm`` lists those it does), or its digest is not the
    base64 of a digest of that algorithm."""

    title = "Unsupported upload checksum"
    status, code, default_detail = (
        400,
        "upload_checksum_unsupported",
        "Send Upload-Checksum as an algorithm of Tus-Checksum-Algorithm, a space, a base64 digest.",
    )


class UploadChecksumMismatchError(DomainError):
    """The PATCH's bytes do not match its ``Upload-Checksum``: they were discarded and the
    upload's offset is unchanged; send the same bytes again."""

    title = "Checksum Mismatch"
    status, code, default_detail = (
        460,
        "upload_checksum_mismatch",
        "The bytes do not match Upload-Checksum; they were discarded. Send them again.",
    )


class UploadContentTypeError(DomainError):
    """A tus PATCH must carry ``Content-Type: application/offset+octet-stream``."""

    title = "Wrong upload Content-Type"
    status, code, default_detail = (
        415,
        "upload_content_type",
        "Send the bytes with Content-Type: application/offset+octet-stream.",
    )


class UploadInterruptedError(DomainError):
    """The body ended before its Content-Length; the bytes received are kept: HEAD the upload
    for its offset and resume."""

    title = "Upload interrupted"
    status, code, default_detail = 400, "upload_interrupted", "The body ended early; resume."


class NoFreeSlotError(ConflictError):
    """The workspace's posting schedule has no free slot for every account of the publication
    within the look-ahead (``publishing.services.posting_queue.HORIZON_DAYS`` days): add slots
    (``PUT /workspaces/{id}/posting-schedule``) or schedule the publication at a time."""

    title = "No free queue slot"
    code = "no_free_slot"
    default_detail = "The posting schedule has no free slot for this publication."
