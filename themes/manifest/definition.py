"""One declarative definition of the theme manifest.

The tables of ``vocabulary.py`` are turned into strict serializers here: they validate a
manifest (every rule of ``docs/themes.md``, each failure at its exact location, e.g.
``body.manifest.schemes.dark.colors.ink``) and drf-spectacular derives the OpenAPI and JSON
schemas from the very same classes (each value field states its own schema through
``openapi_schema()``), so validation and contract cannot drift apart.

Unknown keys are rejected at every level; values are type-strict (a number is never accepted
where a string is expected, nor the other way round).

The value fields live in ``fields.py``; this module assembles them into the manifest's groups.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from drf_spectacular.extensions import OpenApiSerializerExtension
from rest_framework import serializers

from config.api.request import StrictSerializer
from themes.manifest import css
from themes.manifest import vocabulary as v
from themes.manifest.fields import (
    ChoiceField,
    ColorField,
    ConstantField,
    DurationField,
    EasingField,
    IntegerField,
    LengthField,
    LineHeightField,
    ListOf,
    NumberField,
    ShadowField,
    TextField,
)

# --- Groups ----------------------------------------------------------------------------------


class ManifestGroup(StrictSerializer):
    # An object of the manifest: strict keys; validated data as plain dicts (stored as JSON).
    # (A comment: drf-spectacular would copy a docstring into every group's description.)

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({"non_field_errors": ["Must be an object."]})
        return dict(super().to_internal_value(data))


def group(
    name: str,
    fields: Mapping[str, serializers.Field[Any, Any, Any, Any]],
    description: str,
    base: type = ManifestGroup,
) -> type:
    """A serializer class named ``name`` (its OpenAPI component, described by ``description``)
    with ``fields`` in key order."""
    return type(
        f"{name}Serializer", (base,), {"__module__": __name__, "__doc__": description, **fields}
    )


def _contrast_description() -> str:
    def rules(minimum: float) -> str:
        return "; ".join(
            f"{ink} on {ground}" for ink, ground, m in v.CONTRAST_RULES if m == minimum
        )

    return (
        "Every key is required. Contrast (WCAG relative luminance; translucent colors composited on "
        f"canvas): at least {v.TEXT_CONTRAST:g}:1 for {rules(v.TEXT_CONTRAST)}; at least "
        f"{v.UI_CONTRAST:g}:1 for {rules(v.UI_CONTRAST)}."
    )


def _family(**kwargs: Any) -> TextField:
    return TextField(max_length=128, pattern=v.FAMILY_PATTERN, **kwargs)


MotionSpecSerializer = group(
    "MotionSpec",
    {
        "distance": LengthField(
            0,
            64,
            units=("px",),
            allow_clamp=False,
            description="N px (or 0); the bound depends on the motion",
        ),
        "duration": DurationField(),
        "easing": EasingField(),
        "opacity": NumberField(
            minimum=0.0,
            maximum=1.0,
            description="starting opacity; the lower bound depends on the motion",
        ),
    },
    "One motion: distance (px), duration, easing and starting opacity.",
)


class _MotionBase(ManifestGroup):
    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        errors: dict[str, Any] = {}
        for key, (max_distance, min_opacity) in v.MOTION_LIMITS.items():
            spec = attrs[key]
            problems: dict[str, list[str]] = {}
            if css.parse_length(spec["distance"], units=("px",)).value > max_distance:
                problems["distance"] = [f"The {key} distance is at most {max_distance:g} px."]
            if spec["opacity"] < min_opacity:
                problems["opacity"] = [f"The {key} opacity is at least {min_opacity:g}."]
            if problems:
                errors[key] = problems
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


SchemeMotionSerializer = group(
    "SchemeMotion",
    {
        **{key: MotionSpecSerializer() for key in sorted(v.MOTION_LIMITS)},
        "reducedMotion": ChoiceField(v.REDUCED_MOTION),
    },
    "Motions. Distance at most: "
    + ", ".join(f"{k} {d:g} px" for k, (d, _) in v.MOTION_LIMITS.items())
    + "; starting opacity at least 0.5 for press, hover and selection, 0.1 for loading.",
    base=_MotionBase,
)

TypeStyleSerializer = group(
    "TypeStyle",
    {
        "family": _family(description="a font family of the manifest's fonts, or a safe family"),
        "fallbacks": ListOf(
            child=ChoiceField(v.SAFE_FAMILIES),
            min_length=1,
            max_length=v.MAX_FALLBACKS,
            unique=True,
        ),
        "lineHeight": LineHeightField(),
        "size": LengthField(*v.FONT_SIZE_PX),
        "tracking": LengthField(*v.TRACKING_PX, units=("px", "rem", "em"), allow_clamp=False),
        "weight": IntegerField(
            minimum=v.FONT_WEIGHT_MIN, maximum=v.FONT_WEIGHT_MAX, step=v.FONT_WEIGHT_STEP
        ),
    },
    "A type style; family is a font family of the manifest's fonts or a safe family.",
)

SchemeColorsSerializer = group(
    "SchemeColors", {key: ColorField() for key in v.COLOR_KEYS}, _contrast_description()
)
SchemeComponentsSerializer = group(
    "SchemeComponents",
    {key: ChoiceField(values) for key, values in v.COMPONENTS.items()},
    "The style of each component.",
)
SchemeElevationSerializer = group(
    "SchemeElevation",
    {key: ShadowField() for key in v.ELEVATION_KEYS},
    "Shadows: none, or 'x y blur spread <color>'.",
)
SchemeProtectedEditorSerializer = group(
    "SchemeProtectedEditor",
    {
        key: ColorField(description="owned by Herald: exactly the built-in value of the scheme")
        for key in v.PROTECTED_EDITOR_KEYS
    },
    "The editor chrome is Herald's: a manifest carries exactly the built-in values of the scheme, "
    "so the editor stays legible whatever the theme.",
)
SchemeShapeSerializer = group(
    "SchemeShape",
    {
        "borderStyle": ChoiceField(v.BORDER_STYLES),
        **{key: LengthField(low, high) for key, (low, high) in v.SHAPE_LENGTHS.items()},
    },
    "Border and corner shapes.",
)
SchemeShellSerializer = group(
    "SchemeShell",
    {
        "canvasTreatment": ChoiceField(v.CANVAS_TREATMENTS),
        **{key: LengthField(low, high) for key, (low, high) in v.SHELL_LENGTHS.items()},
    },
    "The application shell: canvas treatment and frame sizes.",
)
SchemeSpacingSerializer = group(
    "SchemeSpacing",
    {
        **{key: LengthField(low, high) for key, (low, high) in v.SPACING_LENGTHS.items()},
        "density": ChoiceField(v.DENSITIES),
    },
    "Spacing and control sizes.",
)
SchemeTypographySerializer = group(
    "SchemeTypography",
    {role: TypeStyleSerializer() for role in v.TYPOGRAPHY_ROLES},
    "A type style per role.",
)


class _SchemeBase(ManifestGroup):
    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        problems = contrast_problems(attrs["colors"])
        if problems:
            raise serializers.ValidationError({"colors": problems})
        return attrs


SchemeSerializer = group(
    "Scheme",
    {
        "colors": SchemeColorsSerializer(),
        "components": SchemeComponentsSerializer(),
        "elevation": SchemeElevationSerializer(),
        "motion": SchemeMotionSerializer(),
        "protectedEditor": SchemeProtectedEditorSerializer(),
        "shape": SchemeShapeSerializer(),
        "shell": SchemeShellSerializer(),
        "spacing": SchemeSpacingSerializer(),
        "typography": SchemeTypographySerializer(),
    },
    "One color scheme (light or dark): every group is required.",
    base=_SchemeBase,
)

ManifestSchemesSerializer = group(
    "ManifestSchemes",
    {name: SchemeSerializer(required=False) for name in v.SCHEMES},
    "The schemes present; supportedSchemes lists exactly these keys, light before dark.",
)

FontSerializer = group(
    "Font",
    {
        "id": TextField(max_length=128, pattern=v.ID_PATTERN),
        "family": _family(),
        "sourceUrl": TextField(
            max_length=64,
            pattern=v.ASSET_SOURCE_PATTERN,
            description="asset:<theme asset ID> of a font asset of the organization",
        ),
        "format": ChoiceField(v.FONT_FORMATS),
        "style": ChoiceField(v.FONT_STYLES),
        "weight": IntegerField(
            minimum=v.FONT_WEIGHT_MIN, maximum=v.FONT_WEIGHT_MAX, step=v.FONT_WEIGHT_STEP
        ),
        "display": ChoiceField(v.FONT_DISPLAYS),
    },
    "A web font: sourceUrl names a font asset of the organization (asset:<ID>); IDs are unique across fonts and assets.",
)

ManifestAssetSerializer = group(
    "ManifestAsset",
    {
        "id": TextField(max_length=128, pattern=v.ID_PATTERN),
        "alt": TextField(
            min_length=0,
            max_length=v.MAX_ALT_LENGTH,
            description="required (non-empty) for the two illustration slots",
        ),
        "mimeType": ChoiceField(v.ASSET_MIME_TYPES),
        "slot": ChoiceField(v.ASSET_SLOTS, description="each slot at most once"),
        "sourceUrl": TextField(
            max_length=64,
            pattern=v.ASSET_SOURCE_PATTERN,
            description="asset:<theme asset ID> of an image asset of the organization",
        ),
    },
    "An image: sourceUrl names an image asset of the organization of this mimeType; each slot at most once; alt text is required for the illustration slots.",
)


class _ManifestBase(ManifestGroup):
    def to_internal_value(self, data: Any) -> Any:
        size = len(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode())
        if size > v.MAX_MANIFEST_BYTES:
            raise serializers.ValidationError(
                {
                    "non_field_errors": [
                        f"The manifest is {size} bytes; at most {v.MAX_MANIFEST_BYTES} (256 KiB)."
                    ]
                }
            )
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        errors: dict[str, Any] = {}
        present = [name for name in v.SCHEMES if name in attrs["schemes"]]
        if not present:
            errors["schemes"] = ["At least one of light and dark."]
        elif attrs["supportedSchemes"] != present:
            errors["supportedSchemes"] = [
                f"Must list exactly the schemes present, in order: {json.dumps(present)}."
            ]
        _check_resources(attrs, errors)
        families = {font["family"] for font in attrs["fonts"]} | set(v.SAFE_FAMILIES)
        for name in present:
            scheme_errors = _scheme_rules(name, attrs["schemes"][name], families)
            if scheme_errors:
                errors.setdefault("schemes", {})[name] = scheme_errors
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


def _check_resources(attrs: dict[str, Any], errors: dict[str, Any]) -> None:
    seen: set[str] = set()
    for collection in ("fonts", "assets"):
        for index, item in enumerate(attrs[collection]):
            if item["id"] in seen:
                errors.setdefault(collection, {}).setdefault(index, {})["id"] = [
                    "Resource IDs are unique across fonts and assets."
                ]
            seen.add(item["id"])
    slots: set[str] = set()
    for index, asset in enumerate(attrs["assets"]):
        problems = errors.setdefault("assets", {}).setdefault(index, {})
        if asset["slot"] in slots:
            problems["slot"] = [f"The slot {asset['slot']} is used more than once."]
        slots.add(asset["slot"])
        if asset["slot"] in v.ILLUSTRATION_SLOTS and not asset["alt"].strip():
            problems["alt"] = ["An illustration needs alternative text."]
        if not problems:
            del errors["assets"][index]
    if "assets" in errors and not errors["assets"]:
        del errors["assets"]


def _scheme_rules(name: str, scheme: dict[str, Any], families: set[str]) -> dict[str, Any]:
    errors: dict[str, Any] = {}
    for role, style in scheme["typography"].items():
        if style["family"] not in families:
            errors.setdefault("typography", {})[role] = {
                "family": ["Must be the family of one of the manifest's fonts or a safe family."]
            }
    expected = v.PROTECTED_EDITOR[name]
    for key, value in scheme["protectedEditor"].items():
        if value.strip().lower() != expected[key]:
            errors.setdefault("protectedEditor", {})[key] = [
                f"The editor chrome is Herald's: the {name} value is {expected[key]}."
            ]
    return errors


ManifestSerializer = group(
    "Manifest",
    {
        "id": TextField(max_length=128, pattern=v.ID_PATTERN),
        "name": TextField(max_length=80),
        "description": TextField(min_length=0, max_length=240, required=False, default=""),
        "revision": TextField(max_length=128, pattern=v.REVISION_PATTERN),
        "schemaVersion": ConstantField(v.SCHEMA_VERSION),
        "iconPack": ChoiceField(v.ICON_PACKS),
        "supportedSchemes": ListOf(
            child=ChoiceField(v.SCHEMES), min_length=1, max_length=2, unique=True
        ),
        "schemes": ManifestSchemesSerializer(),
        "fonts": ListOf(
            child=FontSerializer(), max_length=v.MAX_FONTS, required=False, default=list
        ),
        "assets": ListOf(
            child=ManifestAssetSerializer(), max_length=v.MAX_ASSETS, required=False, default=list
        ),
    },
    "A theme manifest: at most 256 KiB as JSON; unknown keys are rejected at every level.",
    base=_ManifestBase,
)


# --- Contrast --------------------------------------------------------------------------------


def contrast_problems(colors: Mapping[str, str]) -> dict[str, list[str]]:
    """The contrast rules of ``docs/themes.md`` (WCAG relative luminance). Translucent colors
    are composited on ``canvas`` (itself composited on white, then on black: both must pass)."""
    problems: dict[str, list[str]] = {}
    parsed = {key: css.parse_color(value) for key, value in colors.items()}
    for backdrop in (css.WHITE, css.BLACK):
        canvas = parsed["canvas"].over(backdrop)
        for ink_key, ground_key, minimum in v.CONTRAST_RULES:
            ground = parsed[ground_key].over(canvas)
            ink = parsed[ink_key].over(ground)
            ratio = css.contrast_ratio(ink, ground)
            if ratio + 1e-9 < minimum:
                message = (
                    f"Contrast of {ink_key} on {ground_key} is {ratio:.2f}:1; "
                    f"at least {minimum:g}:1 is needed."
                )
                if message not in problems.get(ink_key, []):
                    problems.setdefault(ink_key, []).append(message)
        if parsed["canvas"].a >= 1.0:
            break  # an opaque canvas: the backdrop makes no difference
    return problems


# --- OpenAPI: request bodies may leave out keys with defaults ---------------------------------


class ManifestGroupScheme(OpenApiSerializerExtension):
    """Request bodies may leave out the keys that have defaults (``description``, ``fonts``,
    ``assets``); a stored manifest always carries them, so responses say so. Keys without a
    default stay optional (``schemes.light`` and ``schemes.dark``)."""

    target_class = ManifestGroup
    match_subclasses = True
    priority = 1  # before the generic StrictSerializer extension, which it extends

    def map_serializer(self, auto_schema: Any, direction: Any) -> Any:
        from config.api.openapi import StrictSerializerScheme

        # drf-spectacular's extension __init__ is unannotated (the ignore below).
        strict = StrictSerializerScheme(self.target)  # type: ignore[no-untyped-call]
        schema = strict.map_serializer(auto_schema, direction)
        if direction == "response":
            schema["required"] = sorted(
                name
                for name, field in self.target.fields.items()
                if field.required or field.default is not serializers.empty
            )
        return schema
