"""API token format: ``hrld_<8 hex id>_<43-char secret>``; only SHA-256 of the secret is stored."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

TOKEN_RE = re.compile(r"^hrld_(?P<id>[0-9a-f]{8})_(?P<secret>[A-Za-z0-9_\-]{43})$")


def new_token() -> tuple[str, str, str]:
    """Return (token_id, full_token, secret_hash)."""
    token_id = secrets.token_hex(4)
    secret = secrets.token_urlsafe(32)
    return token_id, f"hrld_{token_id}_{secret}", hash_secret(secret)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def parse_token(raw: str) -> tuple[str, str] | None:
    match = TOKEN_RE.match(raw)
    if not match:
        return None
    return match.group("id"), match.group("secret")


def secret_matches(secret: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(secret), stored_hash)
