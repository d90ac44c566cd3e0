"""Bearer API tokens and browser sessions (spec §5), with a failed-authentication rate limit."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, NoReturn

from django.conf import settings
from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from config.limits import client_ip, read_count, window_hit
from config.queries import CompiledQuery, Param
from workspaces.errors import RecentAuthenticationRequiredError
from workspaces.models import ApiToken, User
from workspaces.tokens import parse_token, secret_matches

__all__ = [
    "BearerTokenAuthentication",
    "CsrfSessionAuthentication",
    "check_failure_budget",
    "check_password_within_budget",
    "client_ip",
    "failure_budget_exhausted",
    "record_failure",
]

LAST_USED_RESOLUTION = timedelta(seconds=60)

# The token and its user, read on every bearer request: compiled by the ORM once per process.
# Validity (revocation, expiry, the user's state) is still read from the database every time.
TOKEN_WITH_USER = CompiledQuery(
    lambda: ApiToken.objects.select_related("user").filter(pk=Param("token_id", ApiToken, "id"))[:1]
)

# --- The failed-authentication budget ------------------------------------------------------
# One budget per client address (config.limits.client_ip) per clock minute, shared by every place
# that checks a secret: bearer tokens, the sign-in pages (/login/, /admin/login/:
# workspaces.signin) and the password that confirms a workspace deletion. Kept in the limits
# store (Redis, or the instance's SQLite file), so every process of the instance shares it.


def _failure_key(ip: str) -> str:
    minute = int(timezone.now().timestamp() // 60)
    return f"authfail:{ip}:{minute}"


def failure_budget_exhausted(request: Any) -> bool:
    """True once the client has failed authentication as often as the limit allows this minute."""
    failures = read_count(_failure_key(client_ip(request)))
    return bool(failures >= settings.HERALD_AUTH_FAILURES_PER_MINUTE)


def check_failure_budget(request: Any) -> None:
    """429 once the client has spent its failed-authentication budget for this minute."""
    if failure_budget_exhausted(request):
        raise _budget_exhausted()


def _budget_exhausted() -> exceptions.Throttled:
    wait = 60 - int(timezone.now().timestamp()) % 60
    return exceptions.Throttled(wait=wait, detail="Too many failed authentication attempts.")


def record_failure(request: Any) -> None:
    """Count one failed authentication against the client's budget of this minute."""
    window_hit(_failure_key(client_ip(request)), 120)


def check_password_within_budget(request: Any, user: User, password: str) -> None:
    """Confirm ``user``'s password inside the client's failure budget: 429 while the budget is
    spent (the right password included, and before it is even checked), 403 when it is wrong (a
    counted failure). The answer says nothing about the password beyond "wrong"."""
    check_failure_budget(request)
    if not user.check_password(password):
        record_failure(request)
        raise RecentAuthenticationRequiredError("The current password is wrong.")


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer hrld_…`` (spec §5), with the per-client failed-authentication limit.

    A client over its failure budget gets a 429 whatever token it presents, a correct one
    included: the budget is read after the token lookup, and a failure reads it before answering
    401, then records the failure. A request refused that way is not counted against the user's
    API rate (the throttle runs after authentication).
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
            check_failure_budget(request)
            raise exceptions.AuthenticationFailed("The token's user is inactive.")
        check_failure_budget(request)
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now
        return token.user, token

    @staticmethod
    def _fail(request: Request, message: str) -> NoReturn:
        """429 while the client's failure budget is spent; otherwise record the failure, 401."""
        check_failure_budget(request)
        record_failure(request)
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
