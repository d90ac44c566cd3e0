"""A built-in theme's manifest, built from its recipe (both schemes), and the catalogue of
built-ins."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from themes.builtins.palette import scheme_colors
from themes.builtins.recipes import RECIPES, Recipe, recipe_get
from themes.manifest import vocabulary as v

BUILT_IN_VERSION = 1
RELEASED_AT = datetime(2026, 11, 1, tzinfo=UTC)


def _px(value: float) -> str:
    return "0" if value == 0 else f"{value:g}px"


def _ms(value: float) -> str:
    return f"{round(value)}ms"


def _scheme(recipe: Recipe, scheme: str) -> dict[str, Any]:
    dark = scheme == "dark"
    r = recipe.radius
    shadow_color = "rgb(0 0 0 / 0.5)" if dark else "rgb(16 24 40 / 0.12)"
    soft_shadow = "rgb(0 0 0 / 0.4)" if dark else "rgb(16 24 40 / 0.08)"
    m = recipe.motion_scale
    density = {"compact": 0.85, "comfortable": 1.0, "spacious": 1.15}[recipe.density]

    def type_style(
        role: str, size: str, line_height: str, weight: int, tracking: str = "0"
    ) -> dict[str, Any]:
        family, fallbacks = recipe.type_families[role]
        return {
            "family": family,
            "fallbacks": list(fallbacks),
            "lineHeight": line_height,
            "size": size,
            "tracking": tracking,
            "weight": weight,
        }

    body_px = float(recipe.body_size.removesuffix("px"))
    return {
        "colors": scheme_colors(recipe, scheme),
        "components": dict(recipe.components),
        "elevation": {
            "card": "none"
            if recipe.components["card"] in ("flat", "outlined")
            else f"0 1px 3px 0 {soft_shadow}",
            "dialog": f"0 20px 48px -12px {shadow_color}",
            "focalAction": f"0 2px 6px -1px {soft_shadow}",
            "popover": f"0 8px 24px -6px {shadow_color}",
        },
        "motion": {
            "entry": {
                "distance": _px(round(8 * m)),
                "duration": _ms(200 * m),
                "easing": recipe.easing,
                "opacity": 0.0,
            },
            "exit": {
                "distance": _px(round(4 * m)),
                "duration": _ms(150 * m),
                "easing": "ease-in",
                "opacity": 0.0,
            },
            "hover": {
                "distance": "0",
                "duration": _ms(120 * m),
                "easing": "ease-out",
                "opacity": 1.0,
            },
            "loading": {
                "distance": "0",
                "duration": _ms(900 * m),
                "easing": "ease-in-out",
                "opacity": 0.4,
            },
            "pageTransition": {
                "distance": _px(round(12 * m)),
                "duration": _ms(240 * m),
                "easing": recipe.easing,
                "opacity": 0.0,
            },
            "press": {
                "distance": "1px",
                "duration": _ms(80 * m),
                "easing": "ease-out",
                "opacity": 0.9,
            },
            "selection": {
                "distance": "0",
                "duration": _ms(160 * m),
                "easing": recipe.easing,
                "opacity": 0.85,
            },
            "reducedMotion": recipe.reduced_motion,
        },
        "protectedEditor": dict(v.PROTECTED_EDITOR[scheme]),
        "shape": {
            "borderStyle": recipe.border_style,
            "borderWidth": recipe.border_width,
            "radius": _px(r),
            "radiusSm": _px(max(0, r // 2)),
            "radiusMd": _px(r),
            "radiusLg": _px(r * 2 if r < 8 else round(r * 1.5)),
            "radiusMedia": _px(max(2, r)),
            "radiusPill": "9999px",
        },
        "shell": {
            "canvasTreatment": recipe.canvas_treatment,
            "contentMaxWidth": "1200px" if recipe.density != "compact" else "1440px",
            "headerHeight": _px(round(56 * density)),
            "mobileNavigationHeight": "64px",
            "sidebarWidth": _px(round(264 * density)),
        },
        "spacing": {
            "base": _px(round(4 * density)) if density != 1.0 else "4px",
            "compactControlHeight": _px(max(32, round(32 * density))),
            "componentGap": _px(round(12 * density)),
            "controlHeight": _px(max(36, round(40 * density))),
            "density": recipe.density,
            "pageGutter": f"clamp({_px(round(16 * density))}, 4vw, {_px(round(40 * density))})",
            "sectionGap": _px(round(32 * density)),
            "touchTarget": "44px",
        },
        "typography": {
            "body": type_style("body", recipe.body_size, recipe.line_height, 400),
            "code": type_style("code", _px(body_px - 1), "1.5", 400),
            "display": type_style(
                "display", "clamp(28px, 4vw, 40px)", "1.15", 700, recipe.display_tracking
            ),
            "label": type_style("label", _px(body_px - 2), "1.3", 500),
            "metadata": type_style("metadata", _px(max(11.0, body_px - 3)), "1.35", 400, "0.01em"),
            "title": type_style(
                "title",
                _px(body_px + 5),
                "1.3",
                600,
                "-0.01em" if recipe.display_tracking != "0" else "0",
            ),
        },
    }


@functools.cache
def built_in_manifest(built_in_id: str) -> dict[str, Any]:
    recipe = recipe_get(built_in_id)
    return {
        "id": recipe.id,
        "name": recipe.name,
        "description": recipe.description,
        "revision": str(BUILT_IN_VERSION),
        "schemaVersion": v.SCHEMA_VERSION,
        "iconPack": recipe.icon_pack,
        "supportedSchemes": list(v.SCHEMES),
        "schemes": {name: _scheme(recipe, name) for name in v.SCHEMES},
        "fonts": [],
        "assets": [],
    }


@dataclass(frozen=True)
class BuiltIn:
    id: str
    name: str
    description: str
    icon_pack: str
    version: int
    released_at: datetime

    @property
    def manifest(self) -> dict[str, Any]:
        return built_in_manifest(self.id)


BUILT_INS: tuple[BuiltIn, ...] = tuple(
    BuiltIn(r.id, r.name, r.description, r.icon_pack, BUILT_IN_VERSION, RELEASED_AT)
    for r in RECIPES
)
BUILT_INS_BY_ID = {b.id: b for b in BUILT_INS}
