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
    # Base of every response object: adds ``$schema`` first. (A comment, not a docstring:
    # drf-spectacular would copy a docstring into every response component's description.)

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
    406: "The Accept header rules out JSON",
    409: "Conflict with the current state (revision, name, lifecycle)",
    413: "Request body too large",
    415: "The body is not application/json",
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


_PROBLEM_REF = {"$ref": "#/components/schemas/ErrorModel"}
_LOCATION_HEADER = {
    "schema": {"type": "string"},
    "description": "Path of the created resource",
}
_HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


def _problem_response(code: int) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": _DESCRIPTIONS[code],
        "content": {PROBLEM_CONTENT_TYPE: {"schema": dict(_PROBLEM_REF)}},
    }
    if code == 401:
        response["headers"] = {
            "WWW-Authenticate": {"schema": {"type": "string"}, "description": "Bearer challenge"}
        }
    if code == 429:
        response["headers"] = {
            "Retry-After": {
                "schema": {"type": "integer", "minimum": 1},
                "description": "Seconds to wait before retrying",
            }
        }
    return response


def implied_problem_codes(path: str, operation: dict[str, Any]) -> list[int]:
    """The problems any operation of this shape can answer, whatever its view declares.

    - authenticated operations: 401 (credentials) and 403 (permission, scope, role, plan);
    - a path with an ID: 404 (unknown or malformed IDs are simply unknown);
    - parsed input (query parameters or a body): 422; a body also 400 (not JSON), 413 (too
      large) and 415 (another media type);
    - every operation: 406 (an Accept header that rules out JSON), 429 and 500.
    """
    codes: list[int] = []
    if operation.get("security") not in (None, [], [{}]):
        codes += [401, 403]
    if "{" in path:
        codes.append(404)
    has_query = any(p.get("in") == "query" for p in operation.get("parameters", []))
    has_body = "requestBody" in operation
    if has_body:
        codes += [400, 413, 415]
    if has_query or has_body:
        codes.append(422)
    codes += [406, 429, 500]
    return codes


def postprocess_problem_responses(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """Declare the problem responses each operation can return (decisions §2), as
    ``application/problem+json`` with the ``ErrorModel`` schema, in status order."""
    for path, path_item in result.get("paths", {}).items():
        for method, operation in path_item.items():
            if method not in _HTTP_METHODS or "responses" not in operation:
                continue
            responses = operation["responses"]
            for code in implied_problem_codes(path, operation):
                responses.setdefault(str(code), _problem_response(code))
            for code, response in responses.items():
                if code in {"401", "429"}:
                    response.setdefault("headers", _problem_response(int(code))["headers"])
                if code == "201":
                    response.setdefault("headers", {}).setdefault("Location", _LOCATION_HEADER)
            operation["responses"] = dict(sorted(responses.items()))
    return result


# --- Schema documents -----------------------------------------------------------------------


@functools.cache
def openapi_document() -> dict[str, Any]:
    generator = SchemaGenerator()
    return generator.get_schema(request=None, public=True)  # type: ignore[no-any-return]


def to_json_schema(node: Any, request: HttpRequest) -> Any:
    """An OpenAPI 3.0 schema object as JSON Schema 2020-12.

    ``nullable`` becomes a ``null`` alternative, and component references become the absolute
    URLs of their own JSON schemas (so every schema document stands alone).
    """
    if isinstance(node, list):
        return [to_json_schema(item, request) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str) and value.startswith("#/components/schemas/"):
            out[key] = schema_url(value.rsplit("/", 1)[1], request)
        elif key in {"properties", "patternProperties", "$defs"} and isinstance(value, dict):
            out[key] = {name: to_json_schema(child, request) for name, child in value.items()}
        elif key in {"example", "default", "const"}:
            out[key] = value
        elif key == "enum":
            out[key] = list(value)
        elif key != "nullable":
            out[key] = to_json_schema(value, request)
    if node.get("nullable") is True:
        out = _allow_null(out)
    return out


def _allow_null(schema: dict[str, Any]) -> dict[str, Any]:
    if "enum" in schema and None not in schema["enum"]:
        schema["enum"] = [*schema["enum"], None]
    kind = schema.get("type")
    if isinstance(kind, str):
        schema["type"] = [kind, "null"]
        return schema
    if isinstance(kind, list):
        if "null" not in kind:
            schema["type"] = [*kind, "null"]
        return schema
    if "enum" in schema and len(schema) == 1:
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


def json_schema_view(request: HttpRequest, name: str) -> JsonResponse:
    components = openapi_document().get("components", {}).get("schemas", {})
    if name not in components:
        return problem_response(request, 404, "not_found", f"No schema named {name}.")
    document = to_json_schema(copy.deepcopy(components[name]), request)
    document = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_url(name, request),
        "title": name,
        **document,
    }
    response = JsonResponse(document, content_type="application/schema+json")
    response["Cache-Control"] = "public, max-age=300"
    return response
