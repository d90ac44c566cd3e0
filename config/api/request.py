"""Parse query strings and bodies with serializers, so 422 locations say where input came from."""

from __future__ import annotations

from typing import Any, TypeVar

from rest_framework import serializers
from rest_framework.request import Request

from config.api.problems import RequestValidationError

S = TypeVar("S", bound="serializers.Serializer[Any]")


def parse_query(serializer_class: type[S], request: Request, **kwargs: Any) -> dict[str, Any]:
    serializer = serializer_class(data=request.query_params, context={"request": request}, **kwargs)
    if not serializer.is_valid():
        raise RequestValidationError(serializer.errors, location="query")
    return dict(serializer.validated_data)


def parse_body(serializer_class: type[S], request: Request, **kwargs: Any) -> dict[str, Any]:
    data = request.data
    if not isinstance(data, dict) and not hasattr(data, "getlist"):
        raise RequestValidationError(
            {"non_field_errors": ["The body must be a JSON object."]}, location="body"
        )
    serializer = serializer_class(data=data, context={"request": request}, **kwargs)
    if not serializer.is_valid():
        raise RequestValidationError(serializer.errors, location="body")
    return dict(serializer.validated_data)


class StrictSerializer(serializers.Serializer[Any]):
    """Rejects unknown body fields: each is a 422 (docs/decisions/0002-problem-json-errors.md)."""

    def to_internal_value(self, data: Any) -> Any:
        unknown: dict[str, list[str]] = {}
        if hasattr(data, "keys"):
            names = sorted(set(data.keys()) - set(self.fields.keys()))
            unknown = {name: ["Unknown field."] for name in names}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if not unknown:
                raise
            # Report every failing field at once: the unknown ones and the invalid known ones.
            detail = (
                exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
            )
            raise serializers.ValidationError({**detail, **unknown}) from exc
        if unknown:
            raise serializers.ValidationError(unknown)
        return value
