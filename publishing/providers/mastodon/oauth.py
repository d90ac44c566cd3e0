"""Mastodon OAuth 2 (authorization code with PKCE, S256): the scopes Herald asks for, whether an
instance app must be (re-)registered, and the authorization URL."""

from __future__ import annotations

import base64
import hashlib
import secrets
from urllib.parse import urlencode

SCOPES = ("read", "write")


def needs_registration(app: dict[str, str], *, redirect_uri: str, instance: str) -> bool:
    return (
        not app.get("client_id")
        or app.get("redirect_uri", redirect_uri) != redirect_uri
        or app.get("instance_url", instance) != instance
    )


def pkce_pair() -> tuple[str, str]:
    """``(verifier, S256 challenge)``."""
    verifier = secrets.token_urlsafe(64)  # 86 characters of [A-Za-z0-9_-]
    return verifier, _b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def authorization_url(
    instance: str, *, client_id: str, redirect_uri: str, state: str, challenge: str
) -> str:
    query = urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(SCOPES),
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
    )
    return f"{instance}/oauth/authorize?{query}"


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
