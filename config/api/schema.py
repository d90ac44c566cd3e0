"""OpenAPI helpers: the ``$schema`` field, the shared problem response and the schema views."""

from __future__ import annotations

import copy
import datetime
import functools
import json
import re
from typing import Any, cast

from django.conf import settings as django_settings
from django.db import connections
from django.db.models import CharField, DateTimeField, Func, Model, QuerySet, TextField, UUIDField
from django.db.models.functions import Cast
from django.http import HttpRequest, JsonResponse
from django.utils import timezone as django_timezone
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.utils import OpenApiResponse, extend_schema_field, inline_serializer
from rest_framework import ISO_8601, serializers
from rest_framework.settings import api_settings

from config.api.problems import PROBLEM_CONTENT_TYPE, problem_response
from config.api.schema_urls import schema_url

# --- $schema --------------------------------------------------------------------------------


@functools.cache
def component_name(serializer_class: type) -> str:
    annotation = getattr(serializer_class, "_spectacular_annotation", {}) or {}
    if annotation.get("component_name"):
        return str(annotation["component_name"])
    meta_ref = getattr(getattr(serializer_class, "Meta", None), "ref_name", None)
    name = str(meta_ref or serializer_class.__name__)
    return name.removesuffix("Serializer")


@extend_schema_field({"type": "string", "format": "uri", "readOnly": True})
class SchemaUrlField(serializers.Field[Any, Any, Any, Any]):
    """``$schema``: absolute URL of the JSON schema of the enclosing object."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["source"] = "*"
        kwargs["read_only"] = True
        super().__init__(**kwargs)

    def to_representation(self, value: Any) -> str:
        # A class is hashable, whatever the stubs' __eq__ implies (the ignore).
        name = component_name(type(self.parent))  # type: ignore[arg-type]
        return schema_url(name, self.context.get("request"))


class ResponseSerializer(serializers.Serializer[Any]):
    # Base of every response object: adds ``$schema`` first. (A comment, not a docstring:
    # drf-spectacular would copy a docstring into every response component's description.)

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        return {"$schema": SchemaUrlField(), **fields}


class ResponseModelSerializer(serializers.ModelSerializer[Any]):
    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        return {"$schema": SchemaUrlField(), **fields}


def with_schema(data: dict[str, Any], name: str, request: Any) -> dict[str, Any]:
    return {"$schema": schema_url(name, request), **data}


class FlatRows:
    """A list of flat response objects read as value rows: exactly the JSON that
    ``serializer_class(many=True)`` gives for model instances, without a model instance and a
    serializer pass per row (together about 40 µs per row of a dozen fields; this costs about
    four).

    The serializer class stays the documented schema and the one statement of the fields; each
    field's ``source`` must be a column of ``model``. Text columns shown as strings or string
    choices pass through as read; date-times are formatted as DRF does (its default ISO 8601
    format, in the current time zone, ``Z`` for UTC); integers as ``int``; any other field goes
    through its own ``to_representation``. On PostgreSQL, UUIDs are selected as text and, in
    UTC, date-times as DRF's text (``columns``).

        flat = FlatRows(EventSerializer, Event)
        data = flat.represent(flat.values(queryset), request)

    or select ``flat.columns()`` in a selector's ``values_list`` and pass its rows to ``represent``.
    """

    def __init__(
        self, serializer_class: type[serializers.Serializer[Any]], model: type[Model]
    ) -> None:
        self.serializer_class = serializer_class
        fields = {
            name: field
            for name, field in serializer_class().fields.items()
            if not isinstance(field, SchemaUrlField)
        }
        # A bound field's source is set: its name, unless it declares another.
        sources = {name: cast(str, field.source) for name, field in fields.items()}
        self.names = tuple(fields)
        self.sources = tuple(sources.values())
        for name, field in fields.items():
            if field.write_only or "." in sources[name] or sources[name] == "*":
                raise TypeError(f"{serializer_class.__name__}.{name} is not a flat field")
        self._columns = [
            (name, field, model._meta.get_field(sources[name])) for name, field in fields.items()
        ]
        self._plans: dict[Any, tuple[tuple[str | Func, ...], tuple[tuple[int, Any], ...]]] = {}
        self._builders: dict[tuple[int, ...], Any] = {}

    def columns(self, using: str = "default") -> tuple[str | Func, ...]:
        """What to select with ``values_list`` for ``represent``: the ``sources``, except that on
        PostgreSQL a UUID shown as a string is selected as text (``id::text``, exactly
        ``str(uuid)``) and, in UTC, a date-time as DRF's ISO 8601 text (``UtcIsoText``): psycopg
        hands the text over, which costs a fraction of building ``UUID`` and ``datetime``
        objects only to format them again."""
        return self._plan(using)[0]

    def values(self, queryset: QuerySet[Any]) -> list[tuple[Any, ...]]:
        """The rows of ``queryset`` for ``represent``."""
        return list(queryset.values_list(*self.columns(queryset.db)))

    def _plan(self, using: str) -> tuple[tuple[str | Func, ...], tuple[tuple[int, Any], ...]]:
        """(columns to select, (index, converter) of the columns not shown as read), for the
        database ``using`` and the current time zone."""
        vendor = connections[using].vendor
        zone = django_timezone.get_current_timezone() if django_settings.USE_TZ else None
        key = (vendor, zone, api_settings.DATETIME_FORMAT)  # all that the plan depends on
        plan = self._plans.get(key)
        if plan is None:
            columns: list[str | Func] = []
            converters = []
            for index, ((_name, field, model_field), source) in enumerate(
                zip(self._columns, self.sources, strict=True)
            ):
                convert = _converter(field, model_field, zone)
                if vendor == "postgresql" and isinstance(model_field, UUIDField) and convert is str:
                    columns.append(Cast(source, output_field=TextField()))
                elif (
                    vendor == "postgresql"
                    and isinstance(model_field, DateTimeField)
                    and _drf_iso(field, zone)
                    and _is_utc(zone)
                ):
                    columns.append(UtcIsoText(source))
                else:
                    columns.append(source)
                    if convert is not None:
                        converters.append((index, convert))
            plan = self._plans[key] = (tuple(columns), tuple(converters))
        return plan

    def represent(self, rows: Any, request: Any, using: str = "default") -> list[dict[str, Any]]:
        """The JSON objects of ``rows``, read with ``columns(using)`` in this time zone."""
        rows = rows if isinstance(rows, list) else list(rows)
        if not rows:
            return []
        url = schema_url(component_name(self.serializer_class), request)
        converters = self._plan(using)[1]
        build = self._builders.get(converted := tuple(index for index, _ in converters))
        if build is None:
            build = self._builders[converted] = _rows_builder(self.names, converted)
        represented: list[dict[str, Any]] = build(
            rows, url, *(convert for _, convert in converters)
        )
        return represented


class UtcIsoText(Func):
    """DRF's ISO 8601 text of a date-time column in UTC, written by PostgreSQL: six fraction
    digits, none on a whole second, ``Z`` (``2026-01-02T03:04:05.678900Z``, as
    ``datetime.isoformat`` with ``+00:00`` made ``Z``). The column appears four times in the SQL:
    a column, not an expression with parameters. PostgreSQL only."""

    output_field = TextField()
    template = (
        "CASE WHEN date_trunc('second', %(expressions)s) = %(expressions)s"
        " THEN to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
        " ELSE to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
        " END"
    )


def _rows_builder(names: tuple[str, ...], converted: tuple[int, ...]) -> Any:
    """``build(rows, url, *converters)``: the objects of value rows of the columns ``names``,
    the columns at ``converted`` passed through their converter (one argument each, in order)
    unless None (as DRF: a None attribute is None whatever the field)."""

    def build(rows: list[tuple[Any, ...]], url: str, *converters: Any) -> list[dict[str, Any]]:
        converting = [
            (names[index], convert) for index, convert in zip(converted, converters, strict=True)
        ]
        represented = []
        for row in rows:
            item = {"$schema": url}
            item.update(zip(names, row, strict=True))  # key order: "$schema", then the columns
            for name, convert in converting:
                value = item[name]
                if value is not None:
                    item[name] = convert(value)
            represented.append(item)
        return represented

    return build


def datetime_representation(field: serializers.Field[Any, Any, Any, Any]) -> Any:
    """``field.to_representation`` for date-times in the current time zone, several times
    cheaper (DRF looks the time zone up again for every value). Use it for one response."""
    zone = django_timezone.get_current_timezone() if django_settings.USE_TZ else None
    convert = _converter(field, None, zone)
    return field.to_representation if convert is None else convert


def _converter(field: serializers.Field[Any, Any, Any, Any], model_field: Any, zone: Any) -> Any:
    """How ``field`` represents a value read from ``model_field``; None: as read."""
    kind = type(field).to_representation
    as_str = kind is serializers.CharField.to_representation or (
        isinstance(field, serializers.ChoiceField)
        and all(isinstance(key, str) for key in field.choice_strings_to_values.values())
    )  # a string choice represents as itself
    if as_str:
        text_column = isinstance(model_field, (CharField, TextField)) and not hasattr(
            model_field, "from_db_value"
        )
        return None if text_column else str
    if kind is serializers.IntegerField.to_representation:
        return int
    if _drf_iso(field, zone):
        return _iso_datetime(zone, field.to_representation)
    return field.to_representation


def _drf_iso(field: serializers.Field[Any, Any, Any, Any], zone: Any) -> bool:
    """Whether ``field`` shows date-times in DRF's default ISO 8601 form in ``zone``."""
    return (
        type(field).to_representation is serializers.DateTimeField.to_representation
        and getattr(field, "format", api_settings.DATETIME_FORMAT) == ISO_8601
        and not hasattr(field, "timezone")
        and zone is not None
    )


def _is_utc(zone: Any) -> bool:
    return zone is datetime.UTC or getattr(zone, "key", None) == "UTC"


def _iso_datetime(zone: Any, fallback: Any) -> Any:
    """DRF's ISO 8601 representation in ``zone``."""
    utc = _is_utc(zone)

    def iso(value: Any) -> Any:
        if not isinstance(value, datetime.datetime) or value.tzinfo is None:
            return fallback(value)  # naive or not a date-time: DRF decides
        if not (utc and value.tzinfo is datetime.UTC):  # else: already in the zone
            value = value.astimezone(zone)
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text

    return iso


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
    410: "The resource expired and was removed",
    412: "A precondition header (Tus-Resumable) names an unsupported version",
    413: "Request body too large",
    415: "The body's media type is not the one this operation takes",
    422: "Request does not match the schema",
    429: "Rate limited; see Retry-After",
    460: "Checksum Mismatch: the bytes do not match their Upload-Checksum (tus)",
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
    - parsed input (query or header parameters, e.g. ``Idempotency-Key``, or a body): 422; a
      body also 400 (not JSON), 413 (too large) and 415 (another media type);
    - every operation: 406 (an Accept header that rules out JSON), 429 and 500.
    """
    codes: list[int] = []
    if operation.get("security") not in (None, [], [{}]):
        codes += [401, 403]
    if "{" in path:
        codes.append(404)
    has_query = any(p.get("in") in ("query", "header") for p in operation.get("parameters", []))
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
    """Declare the problem responses each operation can return (docs/decisions/0002-problem-json-errors.md), as
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


# --- Portability ----------------------------------------------------------------------------

# The only value of a ``oneOf`` alternative that stands for ``null`` in OpenAPI 3.0 (where
# ``nullable`` needs a ``type`` beside it in the same schema object).
NULL_ALTERNATIVE: dict[str, Any] = {"type": "object", "nullable": True, "enum": [None]}


def postprocess_portable_schema(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """Express the document the way OpenAPI 3.0 validators and client generators read it
    (docs/clients.md): no ``default`` that its own schema rejects (drf-spectacular writes
    ``default: ""`` for an optional field that otherwise needs a non-empty value, and generated
    clients then send it); a nullable reference as ``oneOf`` with a ``null`` alternative (strict
    validators apply ``nullable`` beside ``allOf`` to nothing); and a parameter whose choices
    are an enum component refers to it (one enum per concept).

    A request body's ``default`` (what the server assumes when a field is omitted) moves into
    the field's description: TypeScript generators read a ``default`` in a component as "always
    present" and would make the field required in requests.
    """
    schemas = result.get("components", {}).get("schemas", {})
    _make_portable(schemas)
    for name, schema in schemas.items():
        if name.endswith("Request"):  # COMPONENT_SPLIT_REQUEST: the request-only components
            for field in schema.get("properties", {}).values():
                _describe_default(field)
    enums = {
        _enum_key(schema): name
        for name, schema in result.get("components", {}).get("schemas", {}).items()
        if "enum" in schema and _enum_key(schema) is not None
    }
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in _HTTP_METHODS:
                continue
            _make_portable(operation)
            for parameter in operation.get("parameters", []):
                name = enums.get(_enum_key(parameter.get("schema", {})))
                if name:
                    parameter["schema"] = {"$ref": f"#/components/schemas/{name}"}
    return result


def _describe_default(field: dict[str, Any]) -> None:
    if "default" in field:
        said = f"Default when omitted: {json.dumps(field.pop('default'))}."
        field["description"] = (
            f"{field['description']}\n\n{said}" if field.get("description") else said
        )


def _enum_key(schema: dict[str, Any]) -> tuple[Any, ...] | None:
    values = schema.get("enum")
    if not values or schema.get("type") not in (None, "string", "integer"):
        return None
    return (schema.get("type"), *sorted(values, key=str))


def _make_portable(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _make_portable(item)
        return
    if not isinstance(node, dict):
        return
    if "default" in node and not _accepts(node, node["default"]):
        del node["default"]
    if node.get("nullable") is True and "type" not in node and len(node.get("allOf", ())) == 1:
        node["oneOf"] = [node.pop("allOf")[0], dict(NULL_ALTERNATIVE)]
        del node["nullable"]
    for key, value in node.items():
        if key not in {"default", "example", "enum"}:
            _make_portable(value)


def _accepts(schema: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` meets the string and enum constraints written in ``schema`` itself."""
    if value is None:
        return schema.get("nullable") is True
    if "enum" in schema and value not in schema["enum"]:
        return False
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return False
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return False
        if "pattern" in schema and not re.search(schema["pattern"], value):
            return False
    return True


# --- Schema documents -----------------------------------------------------------------------


@functools.cache
def openapi_document() -> dict[str, Any]:
    generator = SchemaGenerator()
    document: dict[str, Any] = generator.get_schema(request=None, public=True)
    return document


def to_json_schema(node: Any, request: HttpRequest) -> Any:
    """An OpenAPI 3.0 schema object as JSON Schema 2020-12.

    ``nullable`` (and the ``NULL_ALTERNATIVE`` of a nullable reference) becomes a ``null``
    alternative, and component references become the absolute URLs of their own JSON schemas
    (so every schema document stands alone).
    """
    if isinstance(node, list):
        return [to_json_schema(item, request) for item in node]
    if not isinstance(node, dict):
        return node
    if node == NULL_ALTERNATIVE:
        return {"type": "null"}
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
        elif key == "oneOf" and NULL_ALTERNATIVE in value:
            out["anyOf"] = to_json_schema(value, request)  # null or an object: either way
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
