"""The colors of a built-in scheme, computed in OKLCH from its recipe: text colors are solved
for contrast against every ground they sit on, with a margin above the WCAG minimum the
validation enforces."""

from __future__ import annotations

from collections.abc import Iterable

from themes.builtins.recipes import Hue, Recipe
from themes.manifest import css
from themes.manifest import vocabulary as v

MARGIN = 0.15  # solved inks clear their minimum by this much, so rounding to hex never fails


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


def scheme_colors(recipe: Recipe, scheme: str) -> dict[str, str]:
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
