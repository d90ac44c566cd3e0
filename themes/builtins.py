"""Herald's built-in themes.

Each built-in is a *recipe* — hues, lightness steps, type, shape, motion and component
choices — from which a complete light and dark manifest is computed in OKLCH. Text colors are
solved for contrast against every ground they sit on (with a margin above the WCAG minimum the
validation enforces), so every built-in passes exactly the validation an organization's theme
must pass (``tests/themes/test_themes_manifest.py`` proves it).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from themes.manifest import css
from themes.manifest import vocabulary as v

DEFAULT_BUILT_IN_ID = "neutral"
BUILT_IN_VERSION = 1
RELEASED_AT = datetime(2026, 11, 1, tzinfo=UTC)
MARGIN = 0.15  # solved inks clear their minimum by this much, so rounding to hex never fails


@dataclass(frozen=True)
class Hue:
    hue: float
    chroma: float


@dataclass(frozen=True)
class Recipe:
    id: str
    name: str
    description: str
    icon_pack: str
    neutral: Hue
    accent: Hue
    focal: Hue
    workspace: Hue
    type_families: dict[str, tuple[str, tuple[str, ...]]]
    components: dict[str, str]
    canvas_treatment: str = "plain"
    density: str = "comfortable"
    radius: int = 8
    border_width: str = "1px"
    border_style: str = "solid"
    text_contrast: float = v.TEXT_CONTRAST
    light_canvas: float = 0.985
    dark_canvas: float = 0.19
    dark_chroma_scale: float = 1.0
    chrome_dark: bool = False
    motion_scale: float = 1.0
    easing: str = "cubic-bezier(0.2, 0, 0, 1)"
    reduced_motion: str = "instant"
    body_size: str = "15px"
    line_height: str = "1.5"
    display_tracking: str = "-0.02em"
    extra: dict[str, Any] = field(default_factory=dict)


SANS = (
    "Inter",
    ("Inter", "system-ui", "-apple-system", "Segoe UI", "Helvetica", "Arial", "sans-serif"),
)
SYSTEM = (
    "system-ui",
    ("system-ui", "-apple-system", "BlinkMacSystemFont", "Segoe UI", "Arial", "sans-serif"),
)
SERIF = ("Georgia", ("Georgia", "ui-serif", "Times New Roman", "serif"))
MONO = ("ui-monospace", ("ui-monospace", "Menlo", "Monaco", "Consolas", "monospace"))

_BASE_COMPONENTS = {
    "badge": "tonal",
    "button": "solid",
    "card": "outlined",
    "checkbox": "solid",
    "chip": "tonal",
    "container": "flat",
    "decoration": "none",
    "dialog": "elevated",
    "editorChrome": "neutral",
    "emptyState": "plain",
    "input": "outlined",
    "link": "underlined",
    "list": "divided",
    "loadingState": "spinner",
    "navigation": "tonal",
    "pagination": "quiet",
    "popover": "elevated",
    "radio": "solid",
    "select": "outlined",
    "switch": "solid",
    "table": "ruled",
    "tabs": "underline",
    "toast": "elevated",
    "toolbar": "flat",
}


def _components(**overrides: str) -> dict[str, str]:
    return {**_BASE_COMPONENTS, **overrides}


RECIPES: tuple[Recipe, ...] = (
    Recipe(
        id="neutral",
        name="Herald Neutral",
        description="Quiet cool greys with a confident blue: the default, out of the way of the work.",
        icon_pack="lucide",
        neutral=Hue(255, 0.012),
        accent=Hue(259, 0.17),
        focal=Hue(285, 0.16),
        workspace=Hue(200, 0.12),
        type_families={
            "body": SANS,
            "code": MONO,
            "display": SANS,
            "label": SANS,
            "metadata": SANS,
            "title": SANS,
        },
        components=_components(),
    ),
    Recipe(
        id="paper",
        name="Warm Paper",
        description="Cream paper, ink-brown text and a terracotta accent, set in a bookish serif.",
        icon_pack="phosphor",
        neutral=Hue(75, 0.022),
        accent=Hue(38, 0.13),
        focal=Hue(150, 0.08),
        workspace=Hue(60, 0.1),
        type_families={
            "body": SERIF,
            "code": MONO,
            "display": SERIF,
            "label": SANS,
            "metadata": SANS,
            "title": SERIF,
        },
        components=_components(
            card="paper",
            container="tinted",
            decoration="editorial",
            button="tonal",
            navigation="quiet",
            tabs="underline",
            table="plain",
            list="spaced",
            emptyState="illustrated",
            loadingState="pulse",
            dialog="outlined",
        ),
        canvas_treatment="paper",
        radius=4,
        light_canvas=0.965,
        dark_canvas=0.2,
        dark_chroma_scale=0.7,
        motion_scale=1.3,
        easing="ease-out",
        body_size="16px",
        line_height="1.65",
        display_tracking="0",
    ),
    Recipe(
        id="contrast",
        name="High Contrast",
        description="Black on white and white on black, heavy borders and focus rings, no decoration.",
        icon_pack="heroicons-solid",
        neutral=Hue(260, 0.0),
        accent=Hue(264, 0.2),
        focal=Hue(300, 0.2),
        workspace=Hue(240, 0.15),
        type_families={
            "body": SYSTEM,
            "code": MONO,
            "display": SYSTEM,
            "label": SYSTEM,
            "metadata": SYSTEM,
            "title": SYSTEM,
        },
        components=_components(
            button="outlined",
            card="outlined",
            container="outlined",
            dialog="outlined",
            popover="outlined",
            toast="outlined",
            toolbar="outlined",
            navigation="outlined",
            pagination="outlined",
            badge="outlined",
            chip="outlined",
            input="outlined",
            select="outlined",
            tabs="underline",
            table="ruled",
        ),
        radius=2,
        border_width="2px",
        text_contrast=7.0,
        light_canvas=1.0,
        dark_canvas=0.0,
        reduced_motion="instant",
        motion_scale=0.6,
        easing="linear",
        body_size="16px",
        line_height="1.6",
        display_tracking="0",
    ),
    Recipe(
        id="midnight",
        name="Midnight",
        description="Dark first: deep indigo night with a violet glow and cyan highlights; a lavender day scheme.",
        icon_pack="tabler",
        neutral=Hue(275, 0.03),
        accent=Hue(292, 0.16),
        focal=Hue(205, 0.12),
        workspace=Hue(330, 0.12),
        type_families={
            "body": SANS,
            "code": MONO,
            "display": SANS,
            "label": SANS,
            "metadata": SANS,
            "title": SANS,
        },
        components=_components(
            card="lifted",
            button="solid",
            navigation="tonal",
            tabs="pill",
            chip="solid",
            pagination="pill",
            decoration="study",
            toolbar="floating",
            container="tinted",
            loadingState="skeleton",
        ),
        canvas_treatment="study",
        radius=12,
        light_canvas=0.975,
        dark_canvas=0.17,
        dark_chroma_scale=1.4,
        chrome_dark=True,
        motion_scale=1.1,
        easing="cubic-bezier(0.16, 1, 0.3, 1)",
    ),
    Recipe(
        id="garden",
        name="Garden",
        description="Sage and leaf greens with a marigold highlight, soft rounded shapes and room to breathe.",
        icon_pack="phosphor",
        neutral=Hue(140, 0.018),
        accent=Hue(150, 0.13),
        focal=Hue(75, 0.15),
        workspace=Hue(110, 0.12),
        type_families={
            "body": SANS,
            "code": MONO,
            "display": SERIF,
            "label": SANS,
            "metadata": SANS,
            "title": SERIF,
        },
        components=_components(
            button="tonal",
            badge="tonal",
            chip="tonal",
            switch="tonal",
            card="flat",
            container="tinted",
            decoration="botanical",
            emptyState="illustrated",
            navigation="tonal",
            tabs="pill",
            pagination="pill",
            list="spaced",
            loadingState="pulse",
            input="filled",
            select="filled",
        ),
        canvas_treatment="garden",
        density="spacious",
        radius=14,
        light_canvas=0.975,
        dark_canvas=0.2,
        motion_scale=1.25,
        easing="ease-in-out",
        body_size="16px",
        line_height="1.6",
    ),
    Recipe(
        id="studio",
        name="Studio Precision",
        description="Graphite and signal cyan, tight spacing, square corners and monospaced details for dense work.",
        icon_pack="tabler",
        neutral=Hue(230, 0.008),
        accent=Hue(220, 0.12),
        focal=Hue(50, 0.16),
        workspace=Hue(180, 0.1),
        type_families={
            "body": SANS,
            "code": MONO,
            "display": SANS,
            "label": SANS,
            "metadata": MONO,
            "title": SANS,
        },
        components=_components(
            button="precise",
            card="outlined",
            container="outlined",
            editorChrome="precision",
            decoration="precision",
            tabs="segmented",
            table="striped",
            navigation="outlined",
            pagination="outlined",
            input="outlined",
            select="outlined",
            list="plain",
            loadingState="skeleton",
            toolbar="outlined",
            dialog="outlined",
            popover="outlined",
        ),
        canvas_treatment="precision",
        density="compact",
        radius=3,
        light_canvas=0.98,
        dark_canvas=0.16,
        chrome_dark=True,
        motion_scale=0.7,
        easing="cubic-bezier(0.4, 0, 0.2, 1)",
        body_size="14px",
        line_height="1.45",
        display_tracking="-0.01em",
    ),
    Recipe(
        id="confetti",
        name="Confetti",
        description="Playful magenta and tangerine on a bright canvas, pill shapes and bouncy motion.",
        icon_pack="heroicons-outline",
        neutral=Hue(330, 0.01),
        accent=Hue(340, 0.19),
        focal=Hue(55, 0.17),
        workspace=Hue(280, 0.15),
        type_families={
            "body": SANS,
            "code": MONO,
            "display": SANS,
            "label": SANS,
            "metadata": SANS,
            "title": SANS,
        },
        components=_components(
            button="solid",
            chip="solid",
            badge="solid",
            card="lifted",
            decoration="playful",
            tabs="pill",
            pagination="pill",
            emptyState="illustrated",
            navigation="tonal",
            loadingState="pulse",
            toolbar="floating",
            input="filled",
            select="filled",
        ),
        canvas_treatment="playful",
        radius=16,
        light_canvas=0.99,
        dark_canvas=0.2,
        motion_scale=1.2,
        easing="cubic-bezier(0.34, 1.56, 0.64, 1)",
        reduced_motion="crossfade",
    ),
)


# --- Colors ----------------------------------------------------------------------------------


class Palette:
    """Solved colors of one scheme, as hex."""

    def __init__(self, recipe: Recipe, scheme: str) -> None:
        self.recipe = recipe
        self.dark = scheme == "dark"
        self.scale = recipe.dark_chroma_scale if self.dark else 1.0

    def tone(self, hue: Hue, lightness: float, chroma_scale: float = 1.0) -> css.Rgba:
        return css.oklch_in_gamut(lightness, hue.chroma * chroma_scale * self.scale, hue.hue)

    def n(self, lightness: float, chroma_scale: float = 1.0) -> css.Rgba:
        return self.tone(self.recipe.neutral, lightness, chroma_scale)

    def solve(
        self,
        hue: Hue,
        lightness: float,
        grounds: Iterable[css.Rgba],
        minimum: float,
        chroma_scale: float = 1.0,
    ) -> css.Rgba:
        """The tone of ``hue`` nearest ``lightness`` (moving away from the grounds) whose
        contrast on every ground reaches ``minimum`` (plus a margin)."""
        grounds = list(grounds)
        darker = sum(g.luminance() for g in grounds) / len(grounds) > 0.18
        step = -0.005 if darker else 0.005
        current = lightness
        for _ in range(400):
            color = css.Rgba(*_hex_rgb(self.tone(hue, current, chroma_scale).hex()))
            if all(css.contrast_ratio(color, g) >= minimum + MARGIN for g in grounds):
                return color
            current = min(1.0, max(0.0, current + step))
        return css.BLACK if darker else css.WHITE

    def ground_for_white(
        self, hue: Hue, lightness: float, ink: css.Rgba, minimum: float
    ) -> css.Rgba:
        """The tone of ``hue`` at or below ``lightness`` on which ``ink`` reaches ``minimum``."""
        current = lightness
        for _ in range(400):
            color = css.Rgba(*_hex_rgb(self.tone(hue, current).hex()))
            if css.contrast_ratio(ink, color) >= minimum + MARGIN:
                return color
            current = max(0.0, current - 0.005)
        return css.BLACK


def _hex_rgb(text: str) -> tuple[float, float, float]:
    color = css.parse_color(text)
    return color.r, color.g, color.b


RED, GREEN, AMBER, BLUE = Hue(27, 0.19), Hue(150, 0.14), Hue(75, 0.16), Hue(250, 0.14)


def _colors(recipe: Recipe, scheme: str) -> dict[str, str]:
    p = Palette(recipe, scheme)
    dark = p.dark
    text = recipe.text_contrast
    strong = max(text, v.TEXT_CONTRAST)

    def lvl(light: float, dark_value: float) -> float:
        return dark_value if dark else light

    canvas = p.n(lvl(recipe.light_canvas, recipe.dark_canvas))
    surface = p.n(lvl(min(1.0, recipe.light_canvas + 0.015), recipe.dark_canvas + 0.03))
    raised = p.n(lvl(1.0, recipe.dark_canvas + 0.06))
    sunken = p.n(lvl(recipe.light_canvas - 0.025, max(0.0, recipe.dark_canvas - 0.03)))
    sidebar = p.n(lvl(recipe.light_canvas - 0.02, max(0.0, recipe.dark_canvas - 0.02)))
    field_ground = p.n(lvl(1.0, recipe.dark_canvas + 0.045))
    grounds = [canvas, surface, raised, sunken, field_ground]
    ink = p.solve(recipe.neutral, lvl(0.22, 0.96), grounds, strong, chroma_scale=1.5)
    muted = p.solve(recipe.neutral, lvl(0.48, 0.76), grounds, text, chroma_scale=1.5)
    light_ink = p.solve(recipe.neutral, 0.99, [css.BLACK], 4.5, chroma_scale=0.3)  # near-white

    def action(
        hue: Hue, light: float, dark_value: float
    ) -> tuple[css.Rgba, css.Rgba, css.Rgba, css.Rgba]:
        """Rest, hover, active and ink of a filled action."""
        if dark:
            rest = p.tone(hue, dark_value)
            ink_color = p.solve(
                hue,
                0.18,
                [rest, p.tone(hue, dark_value + 0.05), p.tone(hue, dark_value + 0.1)],
                text,
                0.6,
            )
            return rest, p.tone(hue, dark_value + 0.05), p.tone(hue, dark_value + 0.1), ink_color
        rest = p.ground_for_white(hue, light, light_ink, text)
        rest_l = css.rgba_to_oklch(rest)[0]
        return rest, p.tone(hue, rest_l - 0.05), p.tone(hue, rest_l - 0.1), light_ink

    primary = action(recipe.accent, 0.52, 0.72)
    focal = action(recipe.focal, 0.55, 0.75)
    destructive = action(RED, 0.55, 0.7)
    brand = action(recipe.accent, 0.45, 0.68)
    workspace = action(recipe.workspace, 0.5, 0.7)

    ordinary = p.n(lvl(1.0, recipe.dark_canvas + 0.06))
    ordinary_ink = p.solve(
        recipe.neutral,
        lvl(0.25, 0.94),
        [ordinary, p.n(lvl(0.95, recipe.dark_canvas + 0.1))],
        strong,
        1.5,
    )
    quiet_hover = p.n(lvl(recipe.light_canvas - 0.04, recipe.dark_canvas + 0.06))
    quiet_ink = p.solve(recipe.accent, lvl(0.45, 0.8), [canvas, quiet_hover], text)
    link = p.solve(recipe.accent, lvl(0.45, 0.8), [canvas, surface], text)
    link_hover = p.solve(recipe.accent, lvl(0.38, 0.86), [canvas, surface], text)
    focus = p.solve(
        recipe.accent, lvl(0.55, 0.72), [canvas, surface, field_ground, sidebar], v.UI_CONTRAST
    )

    def status(hue: Hue) -> tuple[css.Rgba, css.Rgba]:
        ground = p.tone(hue, lvl(0.95, 0.3), 0.35 if not dark else 0.5)
        return ground, p.solve(hue, lvl(0.4, 0.88), [ground], text)

    danger, success, warning, info = status(RED), status(GREEN), status(AMBER), status(BLUE)
    selection = p.tone(recipe.accent, lvl(0.9, 0.38), 0.45)
    navigation_active = p.tone(recipe.accent, lvl(0.93, 0.3), 0.3)
    sidebar_active = p.tone(recipe.accent, lvl(0.91, 0.33), 0.35)
    disabled = p.n(lvl(0.93, recipe.dark_canvas + 0.07))
    field_disabled = p.n(lvl(0.955, recipe.dark_canvas + 0.03))
    if recipe.chrome_dark or dark:
        chrome = p.n(lvl(0.24, max(0.0, recipe.dark_canvas - 0.04)), 1.5)
    else:
        chrome = p.n(lvl(recipe.light_canvas - 0.01, recipe.dark_canvas))
    chrome_ink = p.solve(
        recipe.neutral, 0.96 if css.rgba_to_oklch(chrome)[0] < 0.6 else 0.2, [chrome], strong, 0.5
    )

    colors: dict[str, css.Rgba | str] = {
        "actionDestructive": destructive[0],
        "actionDestructiveHover": destructive[1],
        "actionDestructiveActive": destructive[2],
        "actionDestructiveInk": destructive[3],
        "actionFocal": focal[0],
        "actionFocalHover": focal[1],
        "actionFocalActive": focal[2],
        "actionFocalInk": focal[3],
        "actionLink": link,
        "actionLinkHover": link_hover,
        "actionOrdinary": ordinary,
        "actionOrdinaryHover": p.n(lvl(0.96, recipe.dark_canvas + 0.09)),
        "actionOrdinaryActive": p.n(lvl(0.93, recipe.dark_canvas + 0.12)),
        "actionOrdinaryBorder": p.n(lvl(0.82, recipe.dark_canvas + 0.2)),
        "actionOrdinaryInk": ordinary_ink,
        "actionPrimary": primary[0],
        "actionPrimaryHover": primary[1],
        "actionPrimaryActive": primary[2],
        "actionPrimaryInk": primary[3],
        "actionQuiet": "transparent",
        "actionQuietHover": quiet_hover,
        "actionQuietActive": p.n(lvl(recipe.light_canvas - 0.07, recipe.dark_canvas + 0.1)),
        "actionQuietInk": quiet_ink,
        "border": p.n(lvl(0.88, recipe.dark_canvas + 0.12), 1.2 if not dark else 1.0),
        "brand": brand[0],
        "brandInk": brand[3],
        "browserChrome": chrome if recipe.chrome_dark else canvas,
        "browserSurface": surface,
        "canvas": canvas,
        "cardHover": p.n(lvl(recipe.light_canvas - 0.01, recipe.dark_canvas + 0.05)),
        "caret": p.tone(recipe.accent, lvl(0.5, 0.75)),
        "chart1": p.tone(recipe.accent, lvl(0.58, 0.72)),
        "chart2": p.tone(recipe.focal, lvl(0.62, 0.75)),
        "chart3": p.tone(GREEN, lvl(0.6, 0.74)),
        "chart4": p.tone(AMBER, lvl(0.72, 0.8)),
        "chart5": p.tone(RED, lvl(0.6, 0.72)),
        "chrome": chrome,
        "chromeInk": chrome_ink,
        "danger": danger[0],
        "dangerInk": danger[1],
        "disabled": disabled,
        "disabledInk": p.solve(recipe.neutral, lvl(0.6, 0.6), [disabled], v.UI_CONTRAST),
        "field": field_ground,
        "fieldBorder": p.n(lvl(0.78, recipe.dark_canvas + 0.2)),
        "fieldDisabled": field_disabled,
        "fieldDisabledInk": p.solve(
            recipe.neutral, lvl(0.62, 0.58), [field_disabled], v.UI_CONTRAST
        ),
        "fieldFocus": focus,
        "fieldHover": p.n(lvl(0.985, recipe.dark_canvas + 0.065)),
        "fieldInk": p.solve(recipe.neutral, lvl(0.2, 0.95), [field_ground], strong, 1.5),
        "focus": focus,
        "info": info[0],
        "infoInk": info[1],
        "ink": ink,
        "input": p.n(lvl(0.8, recipe.dark_canvas + 0.22)),
        "link": link,
        "mutedInk": muted,
        "navigationActive": navigation_active,
        "navigationActiveInk": p.solve(recipe.accent, lvl(0.35, 0.9), [navigation_active], text),
        "navigationHover": p.n(lvl(recipe.light_canvas - 0.035, recipe.dark_canvas + 0.05)),
        "overlay": raised,
        "scrim": "rgb(0 0 0 / 0.45)" if not dark else "rgb(0 0 0 / 0.6)",
        "selection": selection,
        "selectionInk": p.solve(recipe.accent, lvl(0.2, 0.97), [selection], text, 0.4),
        "sidebar": sidebar,
        "sidebarActive": sidebar_active,
        "sidebarActiveInk": p.solve(recipe.accent, lvl(0.32, 0.92), [sidebar_active], text),
        "sidebarBorder": p.n(lvl(0.89, recipe.dark_canvas + 0.1)),
        "sidebarInk": p.solve(recipe.neutral, lvl(0.3, 0.9), [sidebar], text, 1.5),
        "success": success[0],
        "successInk": success[1],
        "surface": surface,
        "surfaceRaised": raised,
        "surfaceSunken": sunken,
        "warning": warning[0],
        "warningInk": warning[1],
        "workspace": workspace[0],
        "workspaceInk": workspace[3],
    }
    out = {key: value if isinstance(value, str) else value.hex() for key, value in colors.items()}
    assert set(out) == set(v.COLOR_KEYS)  # noqa: S101 - a recipe table must be complete
    return {key: out[key] for key in v.COLOR_KEYS}


# --- The rest of a scheme --------------------------------------------------------------------


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
        "colors": _colors(recipe, scheme),
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
    recipe = _recipe(built_in_id)
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


def _recipe(built_in_id: str) -> Recipe:
    for recipe in RECIPES:
        if recipe.id == built_in_id:
            return recipe
    raise KeyError(built_in_id)


BUILT_INS: tuple[BuiltIn, ...] = tuple(
    BuiltIn(r.id, r.name, r.description, r.icon_pack, BUILT_IN_VERSION, RELEASED_AT)
    for r in RECIPES
)
BUILT_INS_BY_ID = {b.id: b for b in BUILT_INS}
