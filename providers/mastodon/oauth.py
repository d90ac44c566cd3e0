"""Mastodon OAuth 2 (authorization code with PKCE, S256): the scopes Herald asks for, whether an
instance app must be (re-)registered, and the authorization URL."""

from __future__ import annotations

from urllib.parse import urlencode

SCOPES = ("read", "write")


def needs_registration(app: dict[str, str], *, redirect_uri: str, instance: str) -> bool:
    return (
        not app.get("client_id")
        or app.get("redirect_uri", redirect_uri) != redirect_uri
        or app.get("instance_url", instance) != instance
    )


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
