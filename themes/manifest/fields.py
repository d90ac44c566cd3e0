"""The theme manifest's value fields: each is strict about the JSON type of its value, checks it
(text patterns, choices, bounded numbers, CSS values through ``css.py``) and states its own
OpenAPI/JSON schema (the drf-spectacular extensions at the end of this module use it)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from rest_framework import serializers

from themes.manifest import css
from themes.manifest import vocabulary as v

CSS_TEXT_PATTERN = r"^(?![\s\S]*[uU][rR][lL]\()[^;{}<>@\r\n\x00]+$"


# --- Value fields ----------------------------------------------------------------------------


class ManifestValueField(serializers.Field[Any, Any, Any, Any]):
    """Base of the manifest's value fields: strict about the JSON type, states its schema."""

    json_type = "string"
    type_name = "a string"

    def __init__(self, *, description: str = "", **kwargs: Any) -> None:
        self.schema_description = description
        super().__init__(**kwargs)

    def accepts(self, data: Any) -> bool:
        return isinstance(data, str)

    def to_internal_value(self, data: Any) -> Any:
        if not self.accepts(data):
            raise serializers.ValidationError(f"Must be {self.type_name}.")
        if isinstance(data, str) and "\x00" in data:
            raise serializers.ValidationError("Must not contain a NUL character.")
        try:
            return self.clean(data)
        except css.CssValueError as exc:
            raise serializers.ValidationError(str(exc)) from exc

    def clean(self, data: Any) -> Any:
        return data

    def to_representation(self, value: Any) -> Any:
        return value

    def schema(self) -> dict[str, Any]:
        return {"type": self.json_type}

    def openapi_schema(self) -> dict[str, Any]:
        schema = self.schema()
        if self.schema_description:
            schema["description"] = self.schema_description
        return schema


class TextField(ManifestValueField):
    def __init__(
        self, *, min_length: int = 1, max_length: int, pattern: str | None = None, **kwargs: Any
    ) -> None:
        self.min_length, self.max_length, self.pattern = min_length, max_length, pattern
        super().__init__(**kwargs)

    def clean(self, data: str) -> str:
        if len(data.strip()) < self.min_length:
            raise serializers.ValidationError(
                "Must not be blank."
                if self.min_length == 1
                else f"At least {self.min_length} characters."
            )
        if len(data) > self.max_length:
            raise serializers.ValidationError(f"At most {self.max_length} characters.")
        if self.pattern and not re.match(self.pattern, data):
            raise serializers.ValidationError(f"Must match {self.pattern}.")
        return data

    def schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string", "maxLength": self.max_length}
        if self.min_length:
            schema["minLength"] = self.min_length
        if self.pattern:
            schema["pattern"] = self.pattern
        elif self.min_length:
            schema["pattern"] = r"\S"  # not blank
        return schema


class ChoiceField(ManifestValueField):
    def __init__(self, choices: tuple[str, ...], **kwargs: Any) -> None:
        self.choices = choices
        super().__init__(**kwargs)

    def clean(self, data: str) -> str:
        if data not in self.choices:
            raise serializers.ValidationError(f"Must be one of: {', '.join(self.choices)}.")
        return data

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.choices)}


class IntegerField(ManifestValueField):
    json_type, type_name = "integer", "an integer"

    def __init__(self, *, minimum: int, maximum: int, step: int = 1, **kwargs: Any) -> None:
        self.minimum, self.maximum, self.step = minimum, maximum, step
        super().__init__(**kwargs)

    def accepts(self, data: Any) -> bool:
        return isinstance(data, int) and not isinstance(data, bool)

    def clean(self, data: int) -> int:
        if not self.minimum <= data <= self.maximum:
            raise serializers.ValidationError(f"Must be between {self.minimum} and {self.maximum}.")
        if data % self.step:
            raise serializers.ValidationError(f"Must be a multiple of {self.step}.")
        return data

    def schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "integer",
            "minimum": self.minimum,
            "maximum": self.maximum,
        }
        if self.step != 1:
            schema["multipleOf"] = self.step
        return schema


class ConstantField(IntegerField):
    def __init__(self, value: int, **kwargs: Any) -> None:
        super().__init__(minimum=value, maximum=value, **kwargs)

    def clean(self, data: int) -> int:
        if data != self.minimum:
            raise serializers.ValidationError(f"Must be {self.minimum}.")
        return data

    def schema(self) -> dict[str, Any]:
        return {"type": "integer", "enum": [self.minimum]}


class NumberField(ManifestValueField):
    json_type, type_name = "number", "a number"

    def __init__(self, *, minimum: float, maximum: float, **kwargs: Any) -> None:
        self.minimum, self.maximum = minimum, maximum
        super().__init__(**kwargs)

    def accepts(self, data: Any) -> bool:
        return isinstance(data, (int, float)) and not isinstance(data, bool)

    def clean(self, data: float) -> float:
        if not self.minimum <= data <= self.maximum:
            raise serializers.ValidationError(
                f"Must be between {self.minimum:g} and {self.maximum:g}."
            )
        return data

    def schema(self) -> dict[str, Any]:
        return {"type": "number", "minimum": self.minimum, "maximum": self.maximum}


class CssField(ManifestValueField):
    """A CSS-like string: non-empty, ≤ 512 characters, none of ``url(`` ``;`` ``{`` ``}``
    ``<`` ``>`` ``@`` CR LF; then the syntax of its kind (``check``)."""

    check: Callable[[str], Any] = staticmethod(lambda value: None)

    def clean(self, data: str) -> str:
        css.check_css_text(data)
        self.check(data)
        return data

    def schema(self) -> dict[str, Any]:
        return {
            "type": "string",
            "minLength": 1,
            "maxLength": css.MAX_CSS_LENGTH,
            "pattern": CSS_TEXT_PATTERN,
        }


class ColorField(CssField):
    check = staticmethod(css.parse_color)

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault(
            "description",
            "#rgb, #rgba, #rrggbb, #rrggbbaa, rgb()/rgba(), oklch(), oklab(), "
            "color-mix(in oklch, …), black, white or transparent",
        )
        super().__init__(**kwargs)


class LengthField(CssField):
    def __init__(
        self,
        minimum: float,
        maximum: float,
        *,
        units: tuple[str, ...] = ("px", "rem", "em", "%", "vw", "vh"),
        allow_clamp: bool = True,
        **kwargs: Any,
    ) -> None:
        self.minimum, self.maximum, self.units, self.allow_clamp = (
            minimum,
            maximum,
            units,
            allow_clamp,
        )
        forms = f"N({'|'.join(units)}), 0" + (
            " or clamp(min, preferred, max)" if allow_clamp else ""
        )
        kwargs.setdefault(
            "description",
            f"{forms}; between {minimum:g} px and {maximum:g} px (1 rem = 1 em = 16 px)",
        )
        super().__init__(**kwargs)

    def check(self, value: str) -> None:
        css.check_length(
            value,
            minimum=self.minimum,
            maximum=self.maximum,
            units=self.units,
            allow_clamp=self.allow_clamp,
        )


class ShadowField(CssField):
    check = staticmethod(css.check_shadow)

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault(
            "description",
            "none, or 'x y blur spread <color>' (|x|, |y|, |spread| ≤ 256 px, blur 0-256 px)",
        )
        super().__init__(**kwargs)


class DurationField(CssField):
    check = staticmethod(css.parse_duration_ms)

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("description", "N(ms|s), at most 2 s")
        super().__init__(**kwargs)


class EasingField(CssField):
    check = staticmethod(css.check_easing)

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault(
            "description",
            "linear, ease, ease-in, ease-out, ease-in-out or cubic-bezier(x1, y1, x2, y2) "
            "(x in [0, 1], |y| ≤ 10)",
        )
        super().__init__(**kwargs)


class LineHeightField(CssField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("description", "a unitless number from 1 to 2.5")
        super().__init__(**kwargs)

    def check(self, value: str) -> None:
        if not re.match(r"^(?:\d+(?:\.\d+)?|\.\d+)$", value):
            raise css.CssValueError("A line height is a unitless number, e.g. 1.5.")
        low, high = v.LINE_HEIGHT
        if not low <= float(value) <= high:
            raise css.CssValueError(f"A line height is between {low:g} and {high:g}.")


class ListOf(serializers.ListField):
    """A JSON array (never a string or an object), with optional unique items."""

    def __init__(self, *, unique: bool = False, **kwargs: Any) -> None:
        self.unique = unique
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, list):
            raise serializers.ValidationError("Must be an array.")
        values = super().to_internal_value(data)
        if self.unique and len({json.dumps(item, sort_keys=True) for item in values}) != len(
            values
        ):
            raise serializers.ValidationError("Items must be unique.")
        return values


# --- OpenAPI: each value field states its schema ---------------------------------------------


class ManifestValueFieldScheme(OpenApiSerializerFieldExtension):
    target_class = ManifestValueField
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> Any:
        return self.target.openapi_schema()


class ListOfScheme(OpenApiSerializerFieldExtension):
    target_class = ListOf
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> Any:
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        if self.target.unique:
            schema["uniqueItems"] = True
        return schema
