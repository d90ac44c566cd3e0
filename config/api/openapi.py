"""drf-spectacular extensions: the two security schemes of spec §5."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "workspaces.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "hrld_<id>_<secret>",
            "description": "API token created in the developer settings (shown once).",
        }


class SessionScheme(OpenApiAuthenticationExtension):
    target_class = "workspaces.authentication.CsrfSessionAuthentication"
    name = "sessionAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sessionid",
            "description": "Browser session from /login/ (unsafe methods also need X-CSRFToken).",
        }
