"""The browser pages an OAuth connect starts and ends on (``/connections/authorize/<state>``,
``/connections/result/<outcome>``).

The connect answer's ``authorization_url`` is the start page: the person confirms there, and that
browser gets an HttpOnly nonce cookie (scoped to the callback's path) before it is sent to the
provider. The callback completes the connect only in that browser, so a link sent to someone
else connects nothing of theirs.

The OAuth callback (``GET /api/v1/accounts/oauth/callback``) answers API clients with JSON; a
browser (``Accept: text/html``) is redirected here instead, to a page that says in words what
happened, errors included. The outcome travels in the URL signed by Herald (never text an
outsider could put on Herald's page), and the page expires after an hour.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from config.error_pages import error_page
from config.errors import NotFoundError
from config.security_headers import POLICY
from providers import get_adapter
from publishing.services import accounts

SALT = "herald.publishing.oauth-result"
_HANDLE = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
_ORIGIN = re.compile(
    r"https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?|https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?"
)
MAX_AGE_SECONDS = 3600


def oauth_result_location(
    *, ok: bool, title: str, detail: str, provider: str = "", username: str = ""
) -> str:
    # A username is the provider's text: it is shown only when it is a plain handle.
    handle = username if _HANDLE.fullmatch(username) else ""
    outcome = {"ok": ok, "title": title, "detail": detail, "provider": provider, "user": handle}
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
    response["Referrer-Policy"] = "same-origin"
    return response


def _private(response: HttpResponse) -> HttpResponse:
    # The start page's URL carries the state: never cached, never sent to another origin as a
    # Referer ("same-origin", not "no-referrer": that would make the form's Origin "null",
    # which CSRF protection refuses).
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "same-origin"
    return response


def _start_unavailable(request: HttpRequest, exc: NotFoundError) -> HttpResponse:
    return _private(
        error_page(request, 404, title="Connection link unavailable", message=exc.detail)
    )


def set_oauth_nonce_cookie(
    request: HttpRequest, response: HttpResponse, *, state: str, nonce: str, max_age: int
) -> None:
    """HttpOnly, Lax (the provider's redirect back is a top-level GET, which Lax cookies
    accompany), sent only to the callback, and Secure wherever the session cookie is."""
    response.set_cookie(
        accounts.oauth_nonce_cookie_name(state),
        nonce,
        max_age=max_age,
        path=reverse("publishing:oauth-callback"),
        secure=request.is_secure() or settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )


@require_http_methods(["GET", "POST"])
def oauth_authorize(request: HttpRequest, state: str) -> HttpResponse:
    """GET: say who started the connect and into which workspace, and ask the person to confirm
    (a form, CSRF-protected, so no other site can confirm for them). POST: bind this browser to
    the pending connect and send it to the provider."""
    if request.method == "POST":
        try:
            nonce, provider_url, max_age = accounts.oauth_bind_browser(state=state)
        except NotFoundError as exc:
            return _start_unavailable(request, exc)
        redirect = HttpResponseRedirect(provider_url, status=303)
        set_oauth_nonce_cookie(request, redirect, state=state, nonce=nonce, max_age=max_age)
        return _private(redirect)
    try:
        pending = accounts.oauth_start_pending(state=state)
    except NotFoundError as exc:
        return _start_unavailable(request, exc)
    context = {
        "provider": get_adapter(pending.provider).capabilities.display_name,
        "instance_url": pending.instance_url,
        "workspace": pending.workspace.name,
        "initiator": pending.user.email,
        "minutes": max(1, settings.HERALD_OAUTH_STATE_SECONDS // 60),
    }
    response = render(request, "publishing/oauth_authorize.html", context)
    # Browsers hold a form's redirect to the policy's form-action too: this page's form may lead
    # to its provider (and nowhere else).
    origin = accounts.oauth_provider_origin(pending)
    if _ORIGIN.fullmatch(origin):
        response["Content-Security-Policy"] = POLICY.replace(
            "form-action 'self'", f"form-action 'self' {origin}"
        )
    return _private(response)
