"""Bearer API tokens and browser sessions, with a failed-authentication rate limit."""

from __future__ import annotations

import hashlib
import math
import time
from datetime import timedelta
from typing import Any, NoReturn

from django.conf import settings
from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from config.limits import client_ip, read_count, read_mark, set_mark, window_hit
from config.queries import CompiledQuery, Param
from workspaces.errors import RecentAuthenticationRequiredError
from workspaces.models import ApiToken, User
from workspaces.tokens import parse_token, secret_matches

__all__ = [
    "BearerTokenAuthentication",
    "CsrfSessionAuthentication",
    "check_password_within_budget",
    "client_ip",
    "password_wait",
    "record_password_failure",
    "record_token_failure",
    "token_failures_exhausted",
]

LAST_USED_RESOLUTION = timedelta(seconds=60)

# The token and its user, read on every bearer request: compiled by the ORM once per process.
# Validity (revocation, expiry, the user's state) is still read from the database every time.
TOKEN_WITH_USER = CompiledQuery(
    lambda: ApiToken.objects.select_related("user").filter(pk=Param("token_id", ApiToken, "id"))[:1]
)

# --- The failure budgets ---------------------------------------------------------------------
# Kept in the limits store (Redis, or the instance's SQLite file), so every process of the instance
# shares them; the client address is config.limits.client_ip (an IPv6 client is its /64). A budget
# refuses guesses, never a credential that works because somebody else guessed:
#
# * Bearer tokens are unguessable, so a valid one always authenticates. Bad ones (malformed,
#   unknown, wrong secret, revoked, expired) are counted per client address per clock minute;
#   once HERALD_AUTH_FAILURES_PER_MINUTE are spent, further bad tokens get 429 instead of 401.
# * Passwords (the sign-in pages, the password change, the password confirming a workspace
#   deletion) are counted per (client address, account) per clock minute, refusing every attempt
#   on that pair once spent, and per account over a day: after
#   HERALD_ACCOUNT_FAILURES_BEFORE_BACKOFF failures each further one makes the account wait twice
#   as long as the previous (1 s, 2 s, 4 s ... up to HERALD_ACCOUNT_BACKOFF_MAX_SECONDS), from
#   every address, the right password included: that is what stops guessing one account from
#   many addresses. The account is the e-mail as typed (case-folded), whether or not an account
#   has it, so the answers do not tell which addresses have one.
# * Failures against addresses without an account are also counted per client address per
#   minute; once spent, every wrong password from that address is answered 429 (with or without an
#   account, so the answer still tells nothing), while a right one still signs in.

ACCOUNT_FAILURE_WINDOW_SECONDS = 24 * 3600
MINUTE_KEY_SECONDS = 120  # a clock minute's counter outlives the minute a little


def _minute() -> int:
    return int(timezone.now().timestamp() // 60)


def _rest_of_minute() -> int:
    return 60 - int(timezone.now().timestamp()) % 60


def _account(identifier: str) -> str:
    """A fixed-length store key for the account named ``identifier`` (never the e-mail itself)."""
    return hashlib.sha256(identifier.strip().casefold().encode()).hexdigest()[:32]


def _throttled(wait: int, detail: str) -> exceptions.Throttled:
    return exceptions.Throttled(wait=max(1, wait), detail=detail)


# Bearer tokens


def _token_failure_key(request: Any) -> str:
    return f"authfail:token:{client_ip(request)}:{_minute()}"


def token_failures_exhausted(request: Any) -> bool:
    """True once the client has presented as many bad tokens as the limit allows this minute."""
    return read_count(_token_failure_key(request)) >= settings.HERALD_AUTH_FAILURES_PER_MINUTE


def record_token_failure(request: Any) -> None:
    window_hit(_token_failure_key(request), MINUTE_KEY_SECONDS)


# Passwords


def _pair_key(request: Any, identifier: str) -> str:
    return f"authfail:pw:{client_ip(request)}:{_account(identifier)}:{_minute()}"


def _unknown_key(request: Any) -> str:
    return f"authfail:pw-unknown:{client_ip(request)}:{_minute()}"


def password_wait(request: Any, identifier: str) -> int:
    """Seconds before a password for ``identifier`` may be tried from this client (0: now). Read
    before the password is checked, so a refusal says nothing about it."""
    until = read_mark(f"authwait:{_account(identifier)}")
    if until:
        return max(1, math.ceil(until - time.time()))
    if read_count(_pair_key(request, identifier)) >= settings.HERALD_AUTH_FAILURES_PER_MINUTE:
        return _rest_of_minute()
    return 0


def record_password_failure(request: Any, identifier: str, *, account_exists: bool) -> int:
    """Count one wrong password for ``identifier`` from this client. Returns the seconds to
    answer 429 for instead of "wrong" (0: answer "wrong"): the client has spent its budget of
    failures against addresses without an account."""
    window_hit(_pair_key(request, identifier), MINUTE_KEY_SECONDS)
    failures, _ = window_hit(
        f"authfail:account:{_account(identifier)}", ACCOUNT_FAILURE_WINDOW_SECONDS
    )
    beyond = failures - settings.HERALD_ACCOUNT_FAILURES_BEFORE_BACKOFF
    if beyond > 0:
        delay = min(2 ** min(beyond - 1, 30), settings.HERALD_ACCOUNT_BACKOFF_MAX_SECONDS)
        set_mark(f"authwait:{_account(identifier)}", time.time() + delay)
    limit = settings.HERALD_AUTH_FAILURES_PER_MINUTE
    if account_exists:
        spent = read_count(_unknown_key(request)) >= limit
    else:
        spent = window_hit(_unknown_key(request), MINUTE_KEY_SECONDS)[0] > limit
    return _rest_of_minute() if spent else 0


def check_password_within_budget(request: Any, user: User, password: str) -> None:
    """Confirm ``user``'s password inside the password budgets: 429 while the client or the
    account must wait (the right password included, and before it is even checked), 403 when it
    is wrong (a counted failure). The answer says nothing about the password beyond "wrong"."""
    wait = password_wait(request, user.email)
    if wait:
        raise _throttled(wait, "Too many failed password attempts.")
    if not user.check_password(password):
        record_password_failure(request, user.email, account_exists=True)
        raise RecentAuthenticationRequiredError("The current password is wrong.")


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer hrld_…``, with the per-client budget of bad tokens.

    A valid token always authenticates, whatever other requests from its address did. A bad
    one is answered 401 and counted; once the client has spent its budget of the minute, 429.
    Throttling valid tokens would refuse their owners because of somebody else's failures and
    protect nothing: a token's secret cannot be guessed.
    """

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[User, ApiToken] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            self._fail(request, "Malformed Authorization header; use 'Bearer <token>'.")
        parsed = parse_token(value.strip())
        if parsed is None:
            self._fail(request, "Malformed API token.")
        token_id, secret = parsed
        found = TOKEN_WITH_USER.instances(token_id=token_id)
        token = found[0] if found else None
        if token is None or not secret_matches(secret, token.secret_hash):
            self._fail(request, "Unknown API token.")
        if token.revoked_at is not None:
            self._fail(request, "This API token has been revoked.")
        now = timezone.now()
        if token.expires_at is not None and token.expires_at <= now:
            self._fail(request, "This API token has expired.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("The token's user is inactive.")
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now
        return token.user, token

    @staticmethod
    def _fail(request: Request, message: str) -> NoReturn:
        """429 once the client has spent its budget of bad tokens; otherwise count it, 401."""
        if token_failures_exhausted(request):
            raise _throttled(_rest_of_minute(), "Too many failed authentication attempts.")
        record_token_failure(request)
        raise exceptions.AuthenticationFailed(message)

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class CsrfSessionAuthentication(authentication.SessionAuthentication):
    """Browser session; unsafe methods need the CSRF token (DRF enforces it for sessions)."""

    def enforce_csrf(self, request: Request) -> None:
        try:
            super().enforce_csrf(request)
        except exceptions.PermissionDenied as exc:
            # A stable problem ``code`` so clients can tell a CSRF failure from a role problem.
            raise exceptions.PermissionDenied(str(exc.detail), code="csrf_failed") from exc
