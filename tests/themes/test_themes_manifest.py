"""Theme manifests (docs/themes.md): every rule is checked by the one
declarative definition, each failure a 422 at its exact location; the built-ins pass the same
validation; and the OpenAPI contract is derived from the same definition."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.problem_asserts import assert_invalid
from tests.themes_support import create_theme, manifest, replace_draft
from themes.builtins import BUILT_INS, DEFAULT_BUILT_IN_ID
from themes.manifest import css
from themes.manifest import vocabulary as v
from themes.manifest.definition import ManifestSerializer, contrast_problems
from workspaces.models import User

LIGHT = "body.manifest.schemes.light"
DARK = "body.manifest.schemes.dark"


@pytest.fixture
def owner(bearer_client: Callable[..., APIClient], user: User, organization: Any) -> APIClient:
    return bearer_client(user)


@pytest.fixture
def theme(owner: APIClient, organization: Any) -> dict[str, Any]:
    return create_theme(owner, organization)


def put(owner: APIClient, organization: Any, theme: dict[str, Any], body: dict[str, Any]) -> Any:
    return replace_draft(owner, organization, theme, body)


# --- Built-ins ------------------------------------------------------------------------------


def test_at_least_six_built_ins_each_complete_light_and_dark_and_valid() -> None:
    assert len(BUILT_INS) >= 6
    assert DEFAULT_BUILT_IN_ID in {b.id for b in BUILT_INS}
    for built_in in BUILT_INS:
        data = built_in.manifest
        serializer = ManifestSerializer(data=json.loads(json.dumps(data)))
        assert serializer.is_valid(), (built_in.id, serializer.errors)
        assert data["supportedSchemes"] == ["light", "dark"]
        for scheme in ("light", "dark"):
            assert set(data["schemes"][scheme]["colors"]) == set(v.COLOR_KEYS)
            assert data["schemes"][scheme]["protectedEditor"] == v.PROTECTED_EDITOR[scheme]


def test_built_ins_have_distinct_characters() -> None:
    """Distinct palettes, shapes and component choices, not one theme renamed six times."""
    canvases = {b.manifest["schemes"]["light"]["colors"]["canvas"] for b in BUILT_INS}
    primaries = {b.manifest["schemes"]["light"]["colors"]["actionPrimary"] for b in BUILT_INS}
    radii = {b.manifest["schemes"]["light"]["shape"]["radius"] for b in BUILT_INS}
    treatments = {b.manifest["schemes"]["light"]["shell"]["canvasTreatment"] for b in BUILT_INS}
    assert len(canvases) == len(BUILT_INS)
    assert len(primaries) == len(BUILT_INS)
    assert len(radii) >= 5
    assert len(treatments) >= 5
    contrast = next(b for b in BUILT_INS if b.id == "contrast").manifest["schemes"]["light"][
        "colors"
    ]
    assert (
        css.contrast_ratio(css.parse_color(contrast["ink"]), css.parse_color(contrast["canvas"]))
        >= 7
    )


# A built-in version is a pinned reference ({kind: built_in, id, version}): what version 1 of a
# built-in looks like must never change. Change a recipe (or the code that computes it) only
# together with BUILT_IN_VERSION, then record the new digests here.
BUILT_IN_DIGESTS = {
    "neutral": "6f84ecfe7c90090b3b44ffcbd02095161959e46b25fa249463b24328a832b844",
    "paper": "de4e5254983bca540fe8a91d86dd661f057c48474ed58544eba522730a1b5648",
    "contrast": "0ff47817db40cfe6a2a1d6b0c719067da7410fc3b2148625c30940a1f658a950",
    "midnight": "061280d727ce67fd7aaff62d26bd8bbfb23055cbadc08f269f50e97163b45ee1",
    "garden": "443b1658e902868f01d881b7a8fa3f7ac79a0733de83bd55a9865b4ed54ed4f6",
    "studio": "00b77557221b8da097859738fd1a66e06d95b33e4feeaff8860b00c5b158fa2c",
    "confetti": "4159f8c11026f9b527d0325f68a6548e3942e921cfe4d965afbc8fe98956a52e",
}


def test_a_built_in_version_never_changes() -> None:
    assert {b.version for b in BUILT_INS} == {1}
    digests = {
        b.id: hashlib.sha256(
            json.dumps(b.manifest, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
        for b in BUILT_INS
    }
    assert digests == BUILT_IN_DIGESTS, (
        "a built-in changed: bump BUILT_IN_VERSION and record the digests"
    )


def test_built_ins_endpoint_lists_every_built_in_with_its_manifest(owner: APIClient) -> None:
    response = owner.get("/api/v1/themes/built-ins")
    assert response.status_code == 200
    body = response.json()
    assert [item["summary"]["reference"]["id"] for item in body["items"]] == [
        b.id for b in BUILT_INS
    ]
    first = body["items"][0]
    assert first["summary"]["built_in"] is True
    assert first["summary"]["reference"] == {"kind": "built_in", "id": "neutral", "version": 1}
    assert first["manifest"]["schemes"]["dark"]["colors"]["canvas"]
    assert body["next_cursor"] is None


# --- Bad manifests: 422 with exact locations --------------------------------------------------


def test_a_bad_color_is_reported_at_its_location(
    owner: APIClient, organization: Any, theme: dict[str, Any]
) -> None:
    body = manifest()
    body["schemes"]["dark"]["colors"]["ink"] = "#12345"
    body["schemes"]["light"]["colors"]["canvas"] = "url(https://evil.example/x.png)"
    response = put(owner, organization, theme, body)
    assert_invalid(response, f"{DARK}.colors.ink", f"{LIGHT}.colors.canvas")


def test_a_low_contrast_ink_is_reported_at_the_ink(
    owner: APIClient, organization: Any, theme: dict[str, Any]
) -> None:
    body = manifest()
    colors = body["schemes"]["light"]["colors"]
    colors["ink"] = "#9aa0a6"  # grey on near-white: about 2.6:1
    response = put(owner, organization, theme, body)
    problem = assert_invalid(response, f"{LIGHT}.colors.ink")
    assert "4.5:1" in problem["errors"][0]["message"]


def test_a_translucent_ground_is_composited_on_the_canvas() -> None:
    colors = dict(built_in_colors())
    colors["brand"] = "rgb(0 0 0 / 0.05)"  # almost the canvas: white brand ink becomes unreadable
    assert "brandInk" in contrast_problems(colors)


def built_in_colors(scheme: str = "light") -> dict[str, str]:
    return dict(manifest()["schemes"][scheme]["colors"])


def test_focus_needs_three_to_one_on_every_ground() -> None:
    colors = built_in_colors()
    colors["focus"] = colors["canvas"]
    problems = contrast_problems(colors)
    assert list(problems) == ["focus"]
    assert len(problems["focus"]) == 4  # canvas, surface, field, sidebar


@pytest.mark.parametrize(
    ("ink", "minimum"), sorted({(ink, minimum) for ink, _, minimum in v.CONTRAST_RULES})
)
def test_every_contrast_pair_has_its_own_minimum(ink: str, minimum: float) -> None:
    """Each ink of docs/themes.md is checked on every ground it sits on, at its ratio: just
    above the minimum passes, just below fails (4.5:1 for text, 3:1 for the others)."""
    grounds = [ground for key, ground, _ in v.CONTRAST_RULES if key == ink]
    colors = built_in_colors()
    for ground in grounds:
        colors[ground] = "#ffffff"
    passing, failing = (
        ("#767676", "#777777") if minimum == v.TEXT_CONTRAST else ("#949494", "#959595")
    )
    colors[ink] = passing  # 4.54:1 / 3.03:1 on white
    assert ink not in contrast_problems(colors)
    colors[ink] = failing  # 4.48:1 / 2.996:1 on white
    problems = contrast_problems(colors)[ink]
    assert len(problems) == len(grounds)
    assert all(f"at least {minimum:g}:1" in message for message in problems)


def test_unknown_keys_are_rejected_at_every_level(
    owner: APIClient, organization: Any, theme: dict[str, Any]
) -> None:
    body = manifest()
    body["colour"] = "red"
    body["schemes"]["light"]["colors"]["inkk"] = "#000"
    body["schemes"]["dark"]["motion"]["press"]["bounce"] = "1px"
    response = put(owner, organization, theme, body)
    assert_invalid(
        response, "body.manifest.colour", f"{LIGHT}.colors.inkk", f"{DARK}.motion.press.bounce"
    )


def test_a_distance_over_its_bound(
    owner: APIClient, organization: Any, theme: dict[str, Any]
) -> None:
    body = manifest()
    body["schemes"]["light"]["motion"]["press"]["distance"] = "8px"  # press: at most 4 px
    body["schemes"]["dark"]["motion"]["entry"]["distance"] = "65px"  # entry: at most 64 px
    response = put(owner, organization, theme, body)
    assert_invalid(response, f"{LIGHT}.motion.press.distance", f"{DARK}.motion.entry.distance")


def test_supported_schemes_must_match_the_schemes(
    owner: APIClient, organization: Any, theme: dict[str, Any]
) -> None:
    body = manifest(supportedSchemes=["light"])
    assert_invalid(put(owner, organization, theme, body), "body.manifest.supportedSchemes")
    body = manifest(supportedSchemes=["dark", "light"])
    assert_invalid(put(owner, organization, theme, body), "body.manifest.supportedSchemes")
    body = manifest(supportedSchemes=["dark"])
    del body["schemes"]["light"]
    response = put(owner, organization, theme, body)
    assert response.status_code == 200, response.content[:400]
    assert response.json()["draft"]["manifest"]["supportedSchemes"] == ["dark"]


def test_a_300_kib_manifest_is_rejected(
    owner: APIClient, organization: Any, theme: dict[str, Any]
) -> None:
    body = manifest(description="x" * 240)
    body["padding"] = "y" * (300 * 1024)
    response = put(owner, organization, theme, body)
    problem = assert_invalid(response, "body.manifest")
    assert "256 KiB" in problem["errors"][0]["message"]


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("id",), "-starts-with-a-dash"),
        (("revision",), ""),
        (("name",), "n" * 81),
        (("name",), "   "),
        (("description",), "d" * 241),
        (("schemaVersion",), 2),
        (("schemaVersion",), "1"),
        (("iconPack",), "fontawesome"),
        (("schemes", "light", "components", "button"), "glass"),
        (("schemes", "light", "elevation", "card"), "0 1px 300px 0 #000"),
        (("schemes", "light", "motion", "hover", "duration"), "2.5s"),
        (("schemes", "light", "motion", "hover", "easing"), "cubic-bezier(2, 0, 0, 1)"),
        (("schemes", "light", "motion", "hover", "opacity"), 0.2),
        (("schemes", "light", "motion", "loading", "opacity"), 0.05),
        (("schemes", "light", "motion", "reducedMotion"), "none"),
        (("schemes", "light", "spacing", "controlHeight"), "30px"),
        (("schemes", "light", "spacing", "touchTarget"), "2rem"),
        (("schemes", "light", "spacing", "pageGutter"), "5vw"),
        (("schemes", "light", "spacing", "density"), "cozy"),
        (("schemes", "light", "shape", "borderWidth"), "5px"),
        (("schemes", "light", "shape", "borderStyle"), "dotted"),
        (("schemes", "light", "shell", "sidebarWidth"), "clamp(100px, 20vw, 300px)"),
        (("schemes", "light", "shell", "canvasTreatment"), "marble"),
        (("schemes", "light", "typography", "body", "size"), "10px"),
        (("schemes", "light", "typography", "body", "lineHeight"), "3"),
        (("schemes", "light", "typography", "body", "tracking"), "1.5rem"),
        (("schemes", "light", "typography", "body", "weight"), 450),
        (("schemes", "light", "typography", "body", "family"), "Comic Sans MS"),
        (("schemes", "light", "typography", "body", "fallbacks"), ["Comic Sans"]),
        (("schemes", "light", "typography", "body", "fallbacks"), ["serif", "serif"]),
        (("schemes", "light", "typography", "body", "fallbacks"), []),
        (("schemes", "light", "colors", "ink"), "rgb(0 0 0); color: red"),
        (("schemes", "light", "colors", "ink"), 0),
        (("schemes", "light", "colors", "ink"), "#000\x00"),
        (("name",), "Brand\x00"),
        (("schemes", "light", "protectedEditor", "editorCanvas"), "#fffffe"),
    ],
)
def test_each_rule_fails_at_its_exact_location(
    owner: APIClient, organization: Any, theme: dict[str, Any], path: tuple[str, ...], value: Any
) -> None:
    body = manifest()
    node = body
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    location = "body.manifest." + ".".join(path)
    if value == ["Comic Sans"]:
        location += "[0]"  # the failing item of the list
    assert_invalid(put(owner, organization, theme, body), location)


def test_font_and_asset_rules(owner: APIClient, organization: Any, theme: dict[str, Any]) -> None:
    asset_id = "3b0c6f9e-5d1a-4c57-9a43-6c2d1f1e2a10"
    body = manifest(
        fonts=[
            {
                "id": "brand",
                "family": "Brand Sans",
                "sourceUrl": f"asset:{asset_id}",
                "format": "woff2",
                "style": "normal",
                "weight": 450,
                "display": "swap",
            },
            {
                "id": "brand",
                "family": "Brand Sans",
                "sourceUrl": "https://cdn.example/x.woff2",
                "format": "ttf",
                "style": "oblique",
                "weight": 400,
                "display": "block",
            },
        ],
        assets=[
            {
                "id": "texture",
                "alt": "",
                "mimeType": "image/png",
                "slot": "empty-state-illustration",
                "sourceUrl": f"asset:{asset_id}",
            },
            {
                "id": "texture2",
                "alt": "",
                "mimeType": "image/gif",
                "slot": "empty-state-illustration",
                "sourceUrl": f"asset:{asset_id}",
            },
        ],
    )
    response = put(owner, organization, theme, body)
    assert_invalid(
        response,
        "body.manifest.fonts[0].weight",
        "body.manifest.fonts[1].sourceUrl",
        "body.manifest.fonts[1].format",
        "body.manifest.fonts[1].style",
        "body.manifest.fonts[1].display",
        "body.manifest.assets[1].mimeType",
    )
    body["fonts"] = body["fonts"][:1]
    body["fonts"][0]["weight"] = 400
    body["assets"][1]["mimeType"] = "image/png"
    body["fonts"].append(dict(body["fonts"][0]))
    response = put(owner, organization, theme, body)
    assert_invalid(
        response,
        "body.manifest.fonts[1].id",  # resource IDs unique across fonts and assets
        "body.manifest.assets[0].alt",  # illustrations need alt text
        "body.manifest.assets[1].alt",
        "body.manifest.assets[1].slot",  # each slot once
    )


def test_manifest_assets_must_exist_in_the_organization(
    owner: APIClient, organization: Any, theme: dict[str, Any]
) -> None:
    body = manifest(
        fonts=[
            {
                "id": "brand",
                "family": "Brand Sans",
                "sourceUrl": "asset:3b0c6f9e-5d1a-4c57-9a43-6c2d1f1e2a10",
                "format": "woff2",
                "style": "normal",
                "weight": 400,
                "display": "swap",
            }
        ]
    )
    assert_invalid(put(owner, organization, theme, body), "body.manifest.fonts[0].sourceUrl")


def test_validation_and_contract_come_from_one_definition() -> None:
    """Every key and bound the validator enforces is what the served contract states."""
    schemas = Client().get("/docs/openapi.json").json()["components"]["schemas"]

    def props(name: str) -> dict[str, Any]:
        return schemas[name]["properties"]  # type: ignore[no-any-return]

    def ref(schema: dict[str, Any]) -> str:
        target = schema.get("$ref") or schema["allOf"][0]["$ref"]
        return str(target.rsplit("/", 1)[1])

    manifest_schema = schemas["ManifestRequest"]
    assert manifest_schema["additionalProperties"] is False
    assert set(props("ManifestRequest")) == set(ManifestSerializer().fields)
    # Requests may leave out description, fonts and assets (they have defaults); a manifest in a
    # response always carries every key, and the schemes present stay optional one by one.
    assert set(manifest_schema["required"]) == set(ManifestSerializer().fields) - {
        "description",
        "fonts",
        "assets",
    }
    assert set(schemas["Manifest"]["required"]) == set(ManifestSerializer().fields)
    assert set(props("Manifest")) == set(props("ManifestRequest"))
    assert "required" not in schemas["ManifestSchemes"]
    assert set(schemas["SchemeColors"]["required"]) == set(v.COLOR_KEYS)
    scheme = ref(props("ManifestSchemesRequest")["light"])
    assert set(props(scheme)) == {
        "colors",
        "components",
        "elevation",
        "motion",
        "protectedEditor",
        "shape",
        "shell",
        "spacing",
        "typography",
    }
    colors = ref(props(scheme)["colors"])
    assert set(props(colors)) == set(v.COLOR_KEYS)
    assert set(schemas[colors]["required"]) == set(v.COLOR_KEYS)
    for (
        ink,
        ground,
        minimum,
    ) in v.CONTRAST_RULES:  # the contrast rules are stated, from the same table
        assert f"{ink} on {ground}" in schemas[colors]["description"]
        assert f"at least {minimum:g}:1" in schemas[colors]["description"]
    components = ref(props(scheme)["components"])
    for key, values in v.COMPONENTS.items():
        enum = props(components)[key]
        enum_schema = schemas[ref(enum)] if "enum" not in enum else enum
        assert enum_schema["enum"] == list(values), key
    typestyle = ref(props(ref(props(scheme)["typography"]))["body"])
    assert props(typestyle)["weight"] == {
        "type": "integer",
        "minimum": 100,
        "maximum": 900,
        "multipleOf": 100,
    }
    assert props(ref(props(scheme)["spacing"]))["controlHeight"]["description"].endswith(
        "between 36 px and 96 px (1 rem = 1 em = 16 px)"
    )
    assert manifest_schema["properties"]["fonts"]["maxItems"] == v.MAX_FONTS
    assert manifest_schema["properties"]["assets"]["maxItems"] == v.MAX_ASSETS


# --- The CSS-like syntax ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "#fff",
        "#ffff",
        "#ffffff",
        "#ffffff80",
        "rgb(1, 2, 3)",
        "rgba(1, 2, 3, 0.5)",
        "rgb(1 2 3 / 50%)",
        "oklch(0.7 0.1 250)",
        "oklch(70% 0.1 250deg / 0.5)",
        "oklab(0.5 0.1 -0.1)",
        "black",
        "white",
        "transparent",
        "color-mix(in oklch, #fff 30%, oklch(0.5 0.2 30))",
        "color-mix(in oklch, black, white)",
    ],
)
def test_colors_of_the_grammar_parse(value: str) -> None:
    css.check_css_text(value)
    css.parse_color(value)


@pytest.mark.parametrize(
    "value",
    [
        "#ggg",
        "red",
        "rgb(1, 2)",
        "hsl(0 0% 0%)",
        "color-mix(in srgb, #fff, #000)",
        "oklch(0.5, 0.1, 20)",
        "rgb(1 2 3 /)",
    ],
)
def test_colors_outside_the_grammar_fail(value: str) -> None:
    with pytest.raises(css.CssValueError):
        css.parse_color(value)


def test_color_mix_and_contrast_match_known_values() -> None:
    white, black = css.parse_color("white"), css.parse_color("black")
    assert round(css.contrast_ratio(white, black), 2) == 21.0
    assert round(css.contrast_ratio(css.parse_color("#767676"), white), 2) == 4.54
    mid = css.parse_color("color-mix(in oklch, black, white)")
    assert css.rgba_to_oklch(mid)[0] == pytest.approx(0.5, abs=0.01)
    assert css.parse_color("oklch(1 0 0)").hex() == "#ffffff"
    half = css.parse_color("rgb(0 0 0 / 0.5)").over(white)
    assert half.hex() == "#808080"


def test_lengths_and_clamp_bounds() -> None:
    css.check_length("2.5rem", minimum=36, maximum=96)  # 40 px
    css.check_length("clamp(16px, 4vw, 40px)", minimum=8, maximum=256)
    with pytest.raises(css.CssValueError):
        css.check_length("clamp(4px, 4vw, 40px)", minimum=8, maximum=256)
    with pytest.raises(css.CssValueError):
        css.check_length("clamp(40px, 4vw, 16px)", minimum=8, maximum=256)
    with pytest.raises(css.CssValueError):
        css.check_length("50%", minimum=8, maximum=256)
    css.check_shadow("0 1px 2px 0 rgb(16 24 40 / 0.06)")
    with pytest.raises(css.CssValueError):
        css.check_shadow("0 1px -2px 0 #000")
