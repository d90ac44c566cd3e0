"""Meta's ``signed_request``: what the deauthorize and data-deletion callbacks receive.

A ``signed_request`` is ``<signature>.<payload>``, both base64url without padding. The payload
is a JSON object (``algorithm``, ``issued_at``, ``user_id``, ...); the signature is the
HMAC-SHA256 of the *encoded* payload with the app secret. Nothing in the payload is trusted
before the signature is checked (compared in constant time) and the algorithm is the one Meta
documents.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any

ALGORITHM = "HMAC-SHA256"
MAX_LENGTH = 8192  # far more than Meta sends; a longer value is refused before decoding


class SignedRequestError(ValueError):
    """The value is malformed, signed with another secret or with another algorithm, or too
    old. The message is fixed text: it never repeats the value."""


def _b64url_decode(part: str) -> bytes:
    if not part or any(c not in _B64URL for c in part):
        raise SignedRequestError("The signed request is not base64url.")
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError) as exc:
        raise SignedRequestError("The signed request is not base64url.") from exc


_B64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=")


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def sign(payload: dict[str, Any], app_secret: str) -> str:
    """A ``signed_request`` for ``payload`` (what Meta sends; tests and stand-ins build theirs
    with it)."""
    body = {"algorithm": ALGORITHM, **payload}
    encoded = b64url_encode(json.dumps(body, separators=(",", ":")).encode())
    digest = hmac.new(app_secret.encode(), encoded.encode("ascii"), hashlib.sha256).digest()
    return f"{b64url_encode(digest)}.{encoded}"


def parse_signed_request(
    value: str,
    app_secret: str,
    *,
    max_age_seconds: float | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The verified payload of ``value``; :class:`SignedRequestError` otherwise.

    ``max_age_seconds``: refuse a payload whose ``issued_at`` is older (or more than a minute in
    the future), so a captured request cannot be replayed forever. None: no age check.
    """
    if not app_secret:
        raise SignedRequestError("The Meta app secret is not configured.")
    if not isinstance(value, str) or not value or len(value) > MAX_LENGTH:
        raise SignedRequestError("The signed request is missing or too long.")
    signature_part, dot, payload_part = value.partition(".")
    if not dot or "." in payload_part:
        raise SignedRequestError("The signed request is not two parts.")
    signature = _b64url_decode(signature_part)
    expected = hmac.new(app_secret.encode(), payload_part.encode("ascii"), hashlib.sha256).digest()
    # Compared before the payload is even parsed: nothing unsigned is looked at.
    if not hmac.compare_digest(signature, expected):
        raise SignedRequestError("The signed request's signature does not match.")
    try:
        payload = json.loads(_b64url_decode(payload_part))
    except (ValueError, UnicodeDecodeError) as exc:
        raise SignedRequestError("The signed request's payload is not JSON.") from exc
    if not isinstance(payload, dict):
        raise SignedRequestError("The signed request's payload is not an object.")
    if str(payload.get("algorithm") or "").upper() != ALGORITHM:
        raise SignedRequestError("The signed request uses an unexpected algorithm.")
    if max_age_seconds is not None:
        _check_age(payload, max_age_seconds, time.time() if now is None else now)
    return payload


def _check_age(payload: dict[str, Any], max_age: float, now: float) -> None:
    try:
        issued = float(payload.get("issued_at"))  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise SignedRequestError("The signed request has no issue time.") from exc
    if issued > now + 60 or now - issued > max_age:
        raise SignedRequestError("The signed request is too old.")
