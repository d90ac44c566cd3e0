"""drf-spectacular extensions: the two security schemes (bearer token, session), strict request bodies, and
the view that serves the contract as JSON at ``/docs/openapi.json``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerExtension,
    OpenApiSerializerFieldExtension,
)
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import get_doc
from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiJsonRenderer2
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularJSONAPIView
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response


def is_session_only(view: Any) -> bool:
    """Operations that refuse bearer tokens (token management, workspace deletion, ledgers).

    ``view.request`` is drf-spectacular's mock request for the operation being described, so a
    view whose ``session_only`` depends on the method answers for that method. A permission
    class says so the same way (``session_only = True``, e.g. the instance administrator's
    session), so this module needs no app's permission classes.
    """
    try:
        if getattr(view, "session_only", False):
            return True
    except AttributeError:  # a property that needs a request the view does not have
        return False
    return any(getattr(p, "session_only", False) for p in view.get_permissions())


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

    def get_security_requirement(self, auto_schema: Any) -> Any:
        if is_session_only(auto_schema.view):
            return None  # bearer tokens are answered 403 here: not a way in
        return {self.name: []}


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


class StrictSerializerScheme(OpenApiSerializerExtension):
    """Request bodies reject unknown fields, so the contract says so too."""

    target_class = "config.api.request.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_serializer(
            self.target, direction, bypass_extensions=True
        )
        schema["additionalProperties"] = False
        from config.api.request import StrictSerializer

        if schema.get("description") == get_doc(StrictSerializer):
            del schema["description"]  # inherited docstring of the base class, not of this body
        return schema


class BoundedListSerializerScheme(OpenApiSerializerFieldExtension):
    """A nested ``many=True`` serializer keeps its bounds in the contract: drf-spectacular drops
    ``allow_empty=False``, ``min_length`` and ``max_length`` of a ``ListSerializer`` (e.g. the
    1 to 50 destinations of a publication), so a client would send an empty list in vain."""

    target_class = "rest_framework.serializers.ListSerializer"
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> Any:
        schema = auto_schema._unwrap_list_serializer(self.target, direction)
        if not schema:
            return None
        minimum = self.target.min_length or 0
        if not self.target.allow_empty:
            minimum = max(minimum, 1)
        if minimum:
            schema["minItems"] = minimum
        if self.target.max_length is not None:
            schema["maxItems"] = self.target.max_length
        return schema


class DeleteBodyAutoSchema(AutoSchema):
    """For the few DELETE operations that take a JSON body (``DELETE /workspaces/{id}``)."""

    def _get_request_body(self, direction: str = "request") -> Any:
        # drf-spectacular's _get_request_body is unannotated (the ignores below).
        if self.method != "DELETE":
            return super()._get_request_body(direction)  # type: ignore[no-untyped-call]
        self.method = "POST"  # drf-spectacular only describes bodies of PUT, PATCH and POST
        try:
            return super()._get_request_body(direction)  # type: ignore[no-untyped-call]
        finally:
            self.method = "DELETE"


class OpenApiJsonView(SpectacularJSONAPIView):
    """``/docs/openapi.json``: the contract as ``application/json`` (one cached document)."""

    renderer_classes = [OpenApiJsonRenderer2, OpenApiJsonRenderer]
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    throttle_classes: list[Any] = []

    @extend_schema(exclude=True)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        from config.api.schema import openapi_document

        return Response(
            openapi_document(),
            headers={"Content-Disposition": 'inline; filename="openapi.json"'},
        )
