"""OpenAPI helpers: the ``$schema`` field, the shared problem response and the schema views."""

from __future__ import annotations

import copy
import functools
from typing import Any

from django.http import HttpRequest, JsonResponse
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.utils import OpenApiResponse, extend_schema_field, inline_serializer
from rest_framework import serializers

from config.api.problems import PROBLEM_CONTENT_TYPE, problem_response
from config.api.schema_urls import schema_url

# --- $schema --------------------------------------------------------------------------------


def component_name(serializer_class: type) -> str:
    annotation = getattr(serializer_class, "_spectacular_annotation", {}) or {}
    if annotation.get("component_name"):
        return str(annotation["component_name"])
    meta_ref = getattr(getattr(serializer_class, "Meta", None), "ref_name", None)
    name = str(meta_ref or serializer_class.__name__)
    return name.removesuffix("Serializer")


@extend_schema_field({"type": "string", "format": "uri", "readOnly": True})
class SchemaUrlField(serializers.Field):  # type: ignore[type-arg]
    """``$schema``: absolute URL of the JSON schema of the enclosing object."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["source"] = "*"
        kwargs["read_only"] = True
        super().__init__(**kwargs)

    def to_representation(self, value: Any) -> str:
        return schema_url(component_name(type(self.parent)), self.context.get("request"))


class ResponseSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """Base of every response object: adds ``$schema`` first."""

    def get_fields(self) -> dict[str, serializers.Field]:  # type: ignore[type-arg]
        fields = super().get_fields()
        return {"$schema": SchemaUrlField(), **fields}


class ResponseModelSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    def get_fields(self) -> dict[str, serializers.Field]:  # type: ignore[type-arg]
        fields = super().get_fields()
        return {"$schema": SchemaUrlField(), **fields}


def with_schema(data: dict[str, Any], name: str, request: Any) -> dict[str, Any]:
    return {"$schema": schema_url(name, request), **data}


# --- Problems --------------------------------------------------------------------------------

PROBLEM = inline_serializer(
    name="ErrorModel",
    fields={
        "$schema": serializers.URLField(read_only=True),
        "type": serializers.CharField(),
        "title": serializers.CharField(),
        "status": serializers.IntegerField(),
        "detail": serializers.CharField(),
        "instance": serializers.CharField(),
        "code": serializers.CharField(),
        "errors": inline_serializer(
            name="ErrorDetail",
            fields={
                "location": serializers.CharField(),
                "message": serializers.CharField(),
                "value": serializers.JSONField(required=False),
            },
            many=True,
            required=False,
        ),
    },
)

_DESCRIPTIONS = {
    400: "Malformed request (e.g. a body that is not JSON)",
    401: "Credentials missing, malformed, unknown, expired or revoked",
    403: "Permission, workspace access, role or plan insufficient",
    404: "Unknown path or resource",
    405: "Method not allowed",
    409: "Conflict with the current state (revision, name, lifecycle)",
    413: "Request body too large",
    422: "Request does not match the schema",
    429: "Rate limited; see Retry-After",
    500: "Unexpected error",
    502: "An upstream service failed",
    503: "A dependency is unavailable",
    504: "An upstream service timed out",
}


def problems(*codes: int) -> dict[tuple[int, str], OpenApiResponse]:
    return {
        (code, PROBLEM_CONTENT_TYPE): OpenApiResponse(PROBLEM, description=_DESCRIPTIONS[code])
        for code in codes
    }


def postprocess_problem_responses(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """Every authenticated operation can answer 401/403/429; every API operation 500."""
    problem_ref = {"$ref": "#/components/schemas/ErrorModel"}
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            secured = operation.get("security") not in (None, [], [{}])
            wanted = ["429", "500"]
            if secured:
                wanted = ["401", "403", *wanted]
            for code in wanted:
                responses.setdefault(
                    code,
                    {
                        "description": _DESCRIPTIONS[int(code)],
                        "content": {PROBLEM_CONTENT_TYPE: {"schema": problem_ref}},
                    },
                )
    return result


# --- Schema documents -----------------------------------------------------------------------


@functools.cache
def openapi_document() -> dict[str, Any]:
    generator = SchemaGenerator()
    return generator.get_schema(request=None, public=True)  # type: ignore[no-any-return]


def _rewrite_refs(node: Any, request: HttpRequest) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith("#/components/schemas/"):
                out[key] = schema_url(value.rsplit("/", 1)[1], request)
            else:
                out[key] = _rewrite_refs(value, request)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(item, request) for item in node]
    return node


def json_schema_view(request: HttpRequest, name: str) -> JsonResponse:
    components = openapi_document().get("components", {}).get("schemas", {})
    if name not in components:
        return problem_response(request, 404, "not_found", f"No schema named {name}.")
    document = _rewrite_refs(copy.deepcopy(components[name]), request)
    document = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_url(name, request),
        "title": name,
        **document,
    }
    response = JsonResponse(document, content_type="application/schema+json")
    response["Cache-Control"] = "public, max-age=300"
    return response
