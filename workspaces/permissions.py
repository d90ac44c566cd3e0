from __future__ import annotations

from typing import Any

from rest_framework import permissions
from rest_framework.request import Request

from workspaces.models import ApiToken

READ_METHODS = ("GET", "HEAD", "OPTIONS")


class TokenScopePermission(permissions.BasePermission):
    """``api:read`` for reads, ``api:write`` for everything else; session-only views refuse tokens."""

    message = "This API token lacks the required permission."
    code = "token_permission"

    def has_permission(self, request: Request, view: Any) -> bool:
        token = request.auth
        if not isinstance(token, ApiToken):
            return True
        if getattr(view, "session_only", False):
            self.message = (
                "This operation needs a signed-in browser session; API tokens are refused."
            )
            self.code = "session_required"
            return False
        needed = "api:read" if request.method in READ_METHODS else "api:write"
        granted = token.permissions or []
        if needed not in granted:
            self.message = f"This API token lacks the {needed} permission."
            return False
        return True


class IsSuperuserSession(permissions.BasePermission):
    message = "Only an instance administrator's browser session may do this."
    code = "instance_admin_required"
    session_only = True  # API tokens never pass (the OpenAPI document omits bearerAuth)

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(
            request.user
            and request.user.is_authenticated
            and request.user.is_superuser
            and not isinstance(request.auth, ApiToken)
        )
