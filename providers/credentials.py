"""Provider credentials at rest: Fernet (AES-128-CBC + HMAC) with key rotation.

``HERALD_CREDENTIALS_KEY`` holds one or more comma-separated Fernet keys; the first encrypts,
all decrypt (MultiFernet), so rotating is: prepend a new key, run
``manage.py rotate_credentials``, then drop the old key. On a ``local`` environment without a
key, one is derived from ``SECRET_KEY`` so that ``make run`` needs no set-up; elsewhere a key is
required (a system check fails without it).
"""

from __future__ import annotations

import base64
import functools
import json

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings


class CredentialsKeyError(RuntimeError):
    pass


def _derived_local_key() -> bytes:
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"herald.credentials.local")
    return base64.urlsafe_b64encode(hkdf.derive(settings.SECRET_KEY.encode()))


def configured_keys() -> list[bytes]:
    raw = settings.HERALD_CREDENTIALS_KEY or ""
    keys = [part.strip().encode() for part in raw.split(",") if part.strip()]
    if not keys:
        if settings.HERALD_ENVIRONMENT != "local":
            raise CredentialsKeyError("HERALD_CREDENTIALS_KEY must be set outside local.")
        keys = [_derived_local_key()]
    return keys


@functools.cache
def _cipher(keys: tuple[bytes, ...]) -> MultiFernet:
    try:
        return MultiFernet([Fernet(key) for key in keys])
    except (ValueError, TypeError) as exc:
        raise CredentialsKeyError(
            "HERALD_CREDENTIALS_KEY must be comma-separated Fernet keys "
            "(generate one with: python -c 'from cryptography.fernet import Fernet; "
            "print(Fernet.generate_key().decode())')"
        ) from exc


def cipher() -> MultiFernet:
    return _cipher(tuple(configured_keys()))


def encrypt(values: dict[str, str]) -> str:
    if not values:
        return ""
    return cipher().encrypt(json.dumps(values, sort_keys=True).encode()).decode()


def decrypt(token: str) -> dict[str, str]:
    if not token:
        return {}
    try:
        return dict(json.loads(cipher().decrypt(token.encode())))
    except InvalidToken:
        raise CredentialsKeyError(
            "Stored credentials cannot be decrypted with the configured keys."
        ) from None


def rotate(token: str) -> str:
    """Re-encrypt with the first (newest) key."""
    return cipher().rotate(token.encode()).decode() if token else ""
