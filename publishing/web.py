"""The browser page an OAuth connect ends on (``/connections/result/<outcome>``).

The OAuth callback (``GET /api/v1/accounts/oauth/callback``) answers API clients with JSON; a
browser (``Accept: text/html``) is redirected here instead, to a page that says in words what
happened, errors included. The outcome travels in the URL signed by Herald (never text an
outsider could put on Herald's page), and the page expires after an hour.
"""

from __future__ import annotations

from typing import Any

from django.core import signing
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

SALT = "herald.publishing.oauth-result"
MAX_AGE_SECONDS = 3600


def oauth_result_location(
    *, ok: bool, title: str, detail: str, provider: str = "", username: str = ""
) -> str:
    outcome = {"ok": ok, "title": title, "detail": detail, "provider": provider, "user": username}
    token = signing.dumps(outcome, salt=SALT, compress=True)
    return reverse("connections:oauth-result", args=[token])


def oauth_result(request: HttpRequest, token: str) -> HttpResponse:
    try:
        outcome: dict[str, Any] = signing.loads(token, salt=SALT, max_age=MAX_AGE_SECONDS)
    except signing.SignatureExpired:
        outcome = {
            "ok": False,
            "title": "This page has expired",
            "detail": "The connection finished more than an hour ago; the account list shows "
            "whether it is connected.",
        }
    except signing.BadSignature:
        outcome = {
            "ok": False,
            "title": "Unknown connection result",
            "detail": "This address was not issued by this Herald instance.",
        }
    response = render(
        request,
        "publishing/oauth_result.html",
        {"outcome": outcome},
        status=200 if outcome.get("ok") else 400,
    )
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response
