"""PKCE (RFC 7636) for the OAuth 2 authorization-code flows of every provider that uses it
(Mastodon, X): a verifier kept server-side with the state, and its S256 challenge."""

from __future__ import annotations

import base64
import hashlib
import secrets


def pkce_pair() -> tuple[str, str]:
    """``(verifier, S256 challenge)``."""
    verifier = secrets.token_urlsafe(64)  # 86 characters of [A-Za-z0-9_-]
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
