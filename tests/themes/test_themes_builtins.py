"""What the built-in recipes compute: every scheme's inks clear their contrast minimum (the High
Contrast recipe its own 7:1) on every ground they sit on, the solver's direction and its
fallback, and how a recipe's shape, density, motion and type become the manifest's tokens."""

from __future__ import annotations

from typing import Any

import pytest

from themes.builtins import BUILT_INS_BY_ID
from themes.builtins.palette import Palette
from themes.builtins.recipes import RECIPES, Hue, recipe_get
from themes.manifest import css
from themes.manifest import vocabulary as v

SCHEMES = [(recipe.id, scheme) for recipe in RECIPES for scheme in v.SCHEMES]


def colors(built_in_id: str, scheme: str) -> dict[str, css.Rgba]:
    raw = BUILT_INS_BY_ID[built_in_id].manifest["schemes"][scheme]["colors"]
    return {key: css.parse_color(value) for key, value in raw.items()}


def scheme_of(built_in_id: str, scheme: str = "light") -> dict[str, Any]:
    return BUILT_INS_BY_ID[built_in_id].manifest["schemes"][scheme]  # type: ignore[no-any-return]


def ratio(c: dict[str, css.Rgba], ink: str, ground: str) -> float:
    under = c[ground].over(c["canvas"])
    return css.contrast_ratio(c[ink].over(under), under)


# --- Colors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("built_in_id", "scheme"), SCHEMES)
def test_every_contrast_rule_holds_at_the_recipes_own_text_minimum(
    built_in_id: str, scheme: str
) -> None:
    """Text rules need the recipe's text contrast (4.5:1, or 7:1 for High Contrast); the UI
    rules (focus, disabled and destructive inks) their 3:1."""
    recipe = recipe_get(built_in_id)
    c = colors(built_in_id, scheme)
    short = {
        (ink, ground): round(ratio(c, ink, ground), 2)
        for ink, ground, minimum in v.CONTRAST_RULES
        if ratio(c, ink, ground)
        < (max(minimum, recipe.text_contrast) if minimum == v.TEXT_CONTRAST else minimum)
    }
    assert short == {}


@pytest.mark.parametrize(("built_in_id", "scheme"), SCHEMES)
def test_body_inks_are_legible_on_every_surface(built_in_id: str, scheme: str) -> None:
    """Not only on canvas and surface (what validation checks) but on raised and sunken
    surfaces and fields too: ink and muted ink are solved against all five grounds."""
    minimum = recipe_get(built_in_id).text_contrast
    c = colors(built_in_id, scheme)
    for ground in ("canvas", "surface", "surfaceRaised", "surfaceSunken", "field"):
        for ink in ("ink", "mutedInk"):
            assert css.contrast_ratio(c[ink], c[ground]) >= minimum, (ink, ground)
        assert css.contrast_ratio(c["ink"], c[ground]) > css.contrast_ratio(
            c["mutedInk"], c[ground]
        )


@pytest.mark.parametrize(("built_in_id", "scheme"), SCHEMES)
def test_a_filled_actions_ink_is_legible_at_rest_on_hover_and_pressed(
    built_in_id: str, scheme: str
) -> None:
    minimum = recipe_get(built_in_id).text_contrast
    c = colors(built_in_id, scheme)
    for action in ("actionPrimary", "actionFocal", "actionDestructive"):
        for state in ("", "Hover", "Active"):
            assert css.contrast_ratio(c[f"{action}Ink"], c[f"{action}{state}"]) >= minimum, (
                action,
                state,
            )
    assert css.contrast_ratio(c["actionQuietInk"], c["actionQuietHover"]) >= minimum
    for ground in ("canvas", "surface"):
        assert css.contrast_ratio(c["link"], c[ground]) >= minimum


@pytest.mark.parametrize("built_in_id", [recipe.id for recipe in RECIPES])
def test_the_dark_scheme_is_dark_and_the_light_scheme_light(built_in_id: str) -> None:
    light, dark = colors(built_in_id, "light"), colors(built_in_id, "dark")
    assert light["canvas"].luminance() > 0.8
    assert dark["canvas"].luminance() < 0.05
    assert light["ink"].luminance() < light["canvas"].luminance()
    assert dark["ink"].luminance() > dark["canvas"].luminance()
    light_scheme, dark_scheme = scheme_of(built_in_id, "light"), scheme_of(built_in_id, "dark")
    assert light_scheme["colors"]["scrim"] == "rgb(0 0 0 / 0.45)"
    assert dark_scheme["colors"]["scrim"] == "rgb(0 0 0 / 0.6)"
    assert light_scheme["colors"]["actionQuiet"] == "transparent"
    assert list(light_scheme["colors"]) == list(v.COLOR_KEYS)


def test_browser_chrome_follows_the_canvas_unless_the_recipe_has_dark_chrome() -> None:
    for recipe in RECIPES:
        light = scheme_of(recipe.id)["colors"]
        expected = light["chrome"] if recipe.chrome_dark else light["canvas"]
        assert light["browserChrome"] == expected, recipe.id
    assert {r.id for r in RECIPES if r.chrome_dark} == {"midnight", "studio"}
    midnight = colors("midnight", "light")
    assert midnight["chrome"].luminance() < 0.05  # dark chrome even in the light scheme


def test_the_solver_moves_away_from_the_ground_until_the_minimum_and_its_margin() -> None:
    palette = Palette(recipe_get("neutral"), "light")
    blue = Hue(250, 0.1)
    on_white = palette.solve(blue, 0.9, [css.WHITE], 4.5)
    assert 4.65 <= css.contrast_ratio(on_white, css.WHITE) < 5.0  # the nearest tone that passes
    assert css.rgba_to_oklch(on_white)[0] < 0.9  # darker than asked, away from white
    on_black = palette.solve(blue, 0.1, [css.BLACK], 4.5)
    assert 4.65 <= css.contrast_ratio(on_black, css.BLACK) < 5.0
    assert css.rgba_to_oklch(on_black)[0] > 0.1


def test_the_solver_falls_back_to_black_or_white_when_no_tone_reaches_the_minimum() -> None:
    palette = Palette(recipe_get("neutral"), "light")
    grey = Hue(0, 0.0)
    assert palette.solve(grey, 0.5, [css.WHITE], 21.5) == css.BLACK
    assert palette.solve(grey, 0.5, [css.BLACK], 21.5) == css.WHITE
    assert palette.ground_for_white(grey, 0.5, css.WHITE, 21.5) == css.BLACK


def test_an_unknown_recipe_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        recipe_get("nope")


# --- Shape, density, motion, type --------------------------------------------------------------


def test_radii_follow_the_recipe_radius() -> None:
    shapes = {recipe.id: scheme_of(recipe.id)["shape"] for recipe in RECIPES}
    assert shapes["neutral"] == {
        "borderStyle": "solid",
        "borderWidth": "1px",
        "radius": "8px",
        "radiusSm": "4px",
        "radiusMd": "8px",
        "radiusLg": "12px",  # from 8 px up: one and a half times
        "radiusMedia": "8px",
        "radiusPill": "9999px",
    }
    assert (shapes["studio"]["radiusLg"], shapes["studio"]["radiusSm"]) == ("6px", "1px")  # 3 px
    assert shapes["contrast"]["radiusMedia"] == "2px"
    assert shapes["contrast"]["borderWidth"] == "2px"
    assert shapes["garden"]["radiusLg"] == "21px"  # 14 px


def test_density_scales_spacing_and_the_shell() -> None:
    comfortable, compact, spacious = (scheme_of(i) for i in ("neutral", "studio", "garden"))
    assert comfortable["spacing"] == {
        "base": "4px",
        "compactControlHeight": "32px",
        "componentGap": "12px",
        "controlHeight": "40px",
        "density": "comfortable",
        "pageGutter": "clamp(16px, 4vw, 40px)",
        "sectionGap": "32px",
        "touchTarget": "44px",
    }
    assert comfortable["shell"] == {
        "canvasTreatment": "plain",
        "contentMaxWidth": "1200px",
        "headerHeight": "56px",
        "mobileNavigationHeight": "64px",
        "sidebarWidth": "264px",
    }
    assert compact["spacing"]["base"] == "3px"
    assert compact["spacing"]["controlHeight"] == "36px"  # never below 36 px
    assert compact["spacing"]["compactControlHeight"] == "32px"  # never below 32 px
    assert compact["shell"]["contentMaxWidth"] == "1440px"  # compact shows more
    assert compact["shell"]["headerHeight"] == "48px"
    assert spacious["spacing"]["base"] == "5px"
    assert spacious["spacing"]["pageGutter"] == "clamp(18px, 4vw, 46px)"
    assert spacious["shell"]["sidebarWidth"] == "304px"
    for recipe in RECIPES:
        assert scheme_of(recipe.id)["spacing"]["touchTarget"] == "44px"


def test_motion_durations_scale_with_the_recipe() -> None:
    neutral, contrast = scheme_of("neutral")["motion"], scheme_of("contrast")["motion"]
    assert neutral["entry"] == {
        "distance": "8px",
        "duration": "200ms",
        "easing": "cubic-bezier(0.2, 0, 0, 1)",
        "opacity": 0.0,
    }
    assert neutral["exit"]["easing"] == "ease-in"
    assert [neutral[k]["duration"] for k in ("hover", "loading", "press", "selection")] == [
        "120ms",
        "900ms",
        "80ms",
        "160ms",
    ]
    assert contrast["entry"]["duration"] == "120ms"  # 0.6 of 200 ms
    assert contrast["entry"]["distance"] == "5px"
    assert contrast["pageTransition"]["easing"] == "linear"
    assert scheme_of("confetti")["motion"]["reducedMotion"] == "crossfade"
    assert neutral["reducedMotion"] == "instant"


def test_flat_and_outlined_cards_cast_no_shadow_and_dark_shadows_are_deeper() -> None:
    for recipe in RECIPES:
        card = scheme_of(recipe.id)["elevation"]["card"]
        if recipe.components["card"] in ("flat", "outlined"):
            assert card == "none", recipe.id
        else:
            assert card == "0 1px 3px 0 rgb(16 24 40 / 0.08)", recipe.id
    dark = scheme_of("confetti", "dark")["elevation"]
    assert dark["card"] == "0 1px 3px 0 rgb(0 0 0 / 0.4)"
    assert dark["dialog"] == "0 20px 48px -12px rgb(0 0 0 / 0.5)"


def test_type_sizes_derive_from_the_body_size() -> None:
    paper = scheme_of("paper")["typography"]  # 16 px serif body, no display tracking
    assert paper["body"] == {
        "family": "Georgia",
        "fallbacks": ["Georgia", "ui-serif", "Times New Roman", "serif"],
        "lineHeight": "1.65",
        "size": "16px",
        "tracking": "0",
        "weight": 400,
    }
    assert [paper[k]["size"] for k in ("code", "label", "metadata", "title")] == [
        "15px",
        "14px",
        "13px",
        "21px",
    ]
    assert paper["title"]["tracking"] == "0"
    assert paper["label"]["family"] == "Inter"
    studio = scheme_of("studio")["typography"]  # 14 px body: metadata stops at 11 px
    assert studio["metadata"]["size"] == "11px"
    assert studio["metadata"]["family"] == "ui-monospace"
    assert studio["title"]["tracking"] == "-0.01em"
    assert studio["display"]["size"] == "clamp(28px, 4vw, 40px)"


def test_components_and_the_protected_editor_come_through_unchanged() -> None:
    for recipe in RECIPES:
        for scheme in v.SCHEMES:
            data = scheme_of(recipe.id, scheme)
            assert data["components"] == recipe.components
            assert data["protectedEditor"] == v.PROTECTED_EDITOR[scheme]
