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


# Motion tokens: distance (CSS pixels scaled by the recipe's motion, or a fixed value), duration
# in ms (scaled likewise), easing (None: the recipe's) and opacity.
MOTION: dict[str, tuple[float | str, float, str | None, float]] = {
    "entry": (8, 200, None, 0.0),
    "exit": (4, 150, "ease-in", 0.0),
    "hover": ("0", 120, "ease-out", 1.0),
    "loading": ("0", 900, "ease-in-out", 0.4),
    "pageTransition": (12, 240, None, 0.0),
    "press": ("1px", 80, "ease-out", 0.9),
    "selection": ("0", 160, None, 0.85),
}

# Type roles: size (pixels from the body size, or a fixed value; None: the body size), line
# height (None: the recipe's), weight and tracking (None: the recipe's display tracking; titles
# are tracked a little when displays are).
TYPE_ROLES: dict[str, tuple[float | str | None, str | None, int, str | None]] = {
    "body": (None, None, 400, "0"),
    "code": (-1, "1.5", 400, "0"),
    "display": ("clamp(28px, 4vw, 40px)", "1.15", 700, None),
    "label": (-2, "1.3", 500, "0"),
    "metadata": (-3, "1.35", 400, "0.01em"),
    "title": (5, "1.3", 600, "0"),
}
MIN_METADATA_PX = 11.0
TRACKED_TITLE = "-0.01em"

DENSITY = {"compact": 0.85, "comfortable": 1.0, "spacious": 1.15}

# (light, dark) shadow colors: the deep one of dialogs and popovers, the soft one of cards.
SHADOW = ("rgb(16 24 40 / 0.12)", "rgb(0 0 0 / 0.5)")
SOFT_SHADOW = ("rgb(16 24 40 / 0.08)", "rgb(0 0 0 / 0.4)")


def _scheme(recipe: Recipe, scheme: str) -> dict[str, Any]:
    return {
        "colors": scheme_colors(recipe, scheme),
        "components": dict(recipe.components),
        "elevation": _elevation(recipe, dark=scheme == "dark"),
        "motion": _motion(recipe),
        "protectedEditor": dict(v.PROTECTED_EDITOR[scheme]),
        "shape": _shape(recipe),
        "shell": _shell(recipe),
        "spacing": _spacing(recipe),
        "typography": {role: _type_style(recipe, role) for role in TYPE_ROLES},
    }


def _elevation(recipe: Recipe, *, dark: bool) -> dict[str, str]:
    shadow, soft = SHADOW[dark], SOFT_SHADOW[dark]
    flat = recipe.components["card"] in ("flat", "outlined")
    return {
        "card": "none" if flat else f"0 1px 3px 0 {soft}",
        "dialog": f"0 20px 48px -12px {shadow}",
        "focalAction": f"0 2px 6px -1px {soft}",
        "popover": f"0 8px 24px -6px {shadow}",
    }


def _motion(recipe: Recipe) -> dict[str, Any]:
    m = recipe.motion_scale
    motion: dict[str, Any] = {
        name: {
            "distance": distance if isinstance(distance, str) else _px(round(distance * m)),
            "duration": _ms(duration * m),
            "easing": easing or recipe.easing,
            "opacity": opacity,
        }
        for name, (distance, duration, easing, opacity) in MOTION.items()
    }
    motion["reducedMotion"] = recipe.reduced_motion
    return motion


def _shape(recipe: Recipe) -> dict[str, str]:
    r = recipe.radius
    return {
        "borderStyle": recipe.border_style,
        "borderWidth": recipe.border_width,
        "radius": _px(r),
        "radiusSm": _px(max(0, r // 2)),
        "radiusMd": _px(r),
        "radiusLg": _px(r * 2 if r < 8 else round(r * 1.5)),
        "radiusMedia": _px(max(2, r)),
        "radiusPill": "9999px",
    }


def _shell(recipe: Recipe) -> dict[str, str]:
    density = DENSITY[recipe.density]
    return {
        "canvasTreatment": recipe.canvas_treatment,
        "contentMaxWidth": "1200px" if recipe.density != "compact" else "1440px",
        "headerHeight": _px(round(56 * density)),
        "mobileNavigationHeight": "64px",
        "sidebarWidth": _px(round(264 * density)),
    }


def _spacing(recipe: Recipe) -> dict[str, str]:
    density = DENSITY[recipe.density]
    return {
        "base": _px(round(4 * density)) if density != 1.0 else "4px",
        "compactControlHeight": _px(max(32, round(32 * density))),
        "componentGap": _px(round(12 * density)),
        "controlHeight": _px(max(36, round(40 * density))),
        "density": recipe.density,
        "pageGutter": f"clamp({_px(round(16 * density))}, 4vw, {_px(round(40 * density))})",
        "sectionGap": _px(round(32 * density)),
        "touchTarget": "44px",
    }


def _type_style(recipe: Recipe, role: str) -> dict[str, Any]:
    size, line_height, weight, tracking = TYPE_ROLES[role]
    body_px = float(recipe.body_size.removesuffix("px"))
    if size is None:
        size = recipe.body_size
    elif not isinstance(size, str):
        size = _px(max(MIN_METADATA_PX, body_px + size) if role == "metadata" else body_px + size)
    if role == "title" and recipe.display_tracking != "0":
        tracking = TRACKED_TITLE
    family, fallbacks = recipe.type_families[role]
    return {
        "family": family,
        "fallbacks": list(fallbacks),
        "lineHeight": line_height or recipe.line_height,
        "size": size,
        "tracking": tracking or recipe.display_tracking,
        "weight": weight,
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
