"""The colors of a built-in scheme, computed in OKLCH from its recipe: text colors are solved
for contrast against every ground they sit on, with a margin above the WCAG minimum the
validation enforces."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from themes.builtins.recipes import Hue, Recipe
from themes.manifest import css
from themes.manifest import vocabulary as v

T = TypeVar("T")

MARGIN = 0.15  # solved inks clear their minimum by this much, so rounding to hex never fails


class Palette:
    """Solved colors of one scheme, as hex."""

    def __init__(self, recipe: Recipe, scheme: str) -> None:
        self.recipe = recipe
        self.dark = scheme == "dark"
        self.scale = recipe.dark_chroma_scale if self.dark else 1.0

    def tone(self, hue: Hue, lightness: float, chroma_scale: float = 1.0) -> css.Rgba:
        return css.oklch_in_gamut(lightness, hue.chroma * chroma_scale * self.scale, hue.hue)

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


# --- The tables --------------------------------------------------------------------------------
# A hue is a recipe role ("neutral", "accent", "focal", "workspace") or a fixed hue. A lightness
# is absolute, or ``Canvas(offset)`` from the recipe's canvas lightness in that scheme; levels
# are (light scheme, dark scheme). An ink's minimum is "text" (the recipe's text contrast),
# "strong" (that, at least 4.5:1) or "ui" (3:1).


@dataclass(frozen=True)
class Canvas:
    offset: float


Lightness = float | Canvas
Levels = tuple[Lightness, Lightness]


@dataclass(frozen=True)
class Tone:
    hue: str | Hue
    levels: Levels
    chroma: float | tuple[float, float] = 1.0  # one scale, or (light, dark)


@dataclass(frozen=True)
class Ink:
    """A text or line color, solved from ``levels`` until it reaches its minimum on every
    ground (a color key or a tone) it is read on."""

    hue: str | Hue
    levels: Levels
    grounds: tuple[str | Tone, ...]
    minimum: str = "text"
    chroma: float = 1.0


@dataclass(frozen=True)
class Action:
    """A filled action: rest, hover, active and its ink (``states``: whether hover and active
    are color keys of their own)."""

    hue: str | Hue
    light: float
    dark: float
    states: bool = True


SURFACES = ("canvas", "surface", "surfaceRaised", "surfaceSunken", "field")

TONES: dict[str, Tone] = {
    "canvas": Tone("neutral", (Canvas(0.0), Canvas(0.0))),
    "surface": Tone("neutral", (Canvas(0.015), Canvas(0.03))),
    "surfaceRaised": Tone("neutral", (1.0, Canvas(0.06))),
    "surfaceSunken": Tone("neutral", (Canvas(-0.025), Canvas(-0.03))),
    "sidebar": Tone("neutral", (Canvas(-0.02), Canvas(-0.02))),
    "field": Tone("neutral", (1.0, Canvas(0.045))),
    "actionOrdinary": Tone("neutral", (1.0, Canvas(0.06))),
    "actionOrdinaryHover": Tone("neutral", (0.96, Canvas(0.09))),
    "actionOrdinaryActive": Tone("neutral", (0.93, Canvas(0.12))),
    "actionOrdinaryBorder": Tone("neutral", (0.82, Canvas(0.2))),
    "actionQuietHover": Tone("neutral", (Canvas(-0.04), Canvas(0.06))),
    "actionQuietActive": Tone("neutral", (Canvas(-0.07), Canvas(0.1))),
    "border": Tone("neutral", (0.88, Canvas(0.12)), chroma=(1.2, 1.0)),
    "cardHover": Tone("neutral", (Canvas(-0.01), Canvas(0.05))),
    "disabled": Tone("neutral", (0.93, Canvas(0.07))),
    "fieldBorder": Tone("neutral", (0.78, Canvas(0.2))),
    "fieldDisabled": Tone("neutral", (0.955, Canvas(0.03))),
    "fieldHover": Tone("neutral", (0.985, Canvas(0.065))),
    "input": Tone("neutral", (0.8, Canvas(0.22))),
    "navigationHover": Tone("neutral", (Canvas(-0.035), Canvas(0.05))),
    "sidebarBorder": Tone("neutral", (0.89, Canvas(0.1))),
    "selection": Tone("accent", (0.9, 0.38), chroma=0.45),
    "navigationActive": Tone("accent", (0.93, 0.3), chroma=0.3),
    "sidebarActive": Tone("accent", (0.91, 0.33), chroma=0.35),
    "caret": Tone("accent", (0.5, 0.75)),
    "chart1": Tone("accent", (0.58, 0.72)),
    "chart2": Tone("focal", (0.62, 0.75)),
    "chart3": Tone(GREEN, (0.6, 0.74)),
    "chart4": Tone(AMBER, (0.72, 0.8)),
    "chart5": Tone(RED, (0.6, 0.72)),
}

STATUSES: dict[str, Hue] = {"danger": RED, "success": GREEN, "warning": AMBER, "info": BLUE}
STATUS_GROUND, STATUS_INK = (0.95, 0.3), (0.4, 0.88)
STATUS_CHROMA = (0.35, 0.5)

# The ordinary action's ink also reads on this shade (about its hover and pressed states).
ORDINARY_SHADE = Tone("neutral", (0.95, Canvas(0.1)))

INKS: dict[str, Ink] = {
    "ink": Ink("neutral", (0.22, 0.96), SURFACES, "strong", 1.5),
    "mutedInk": Ink("neutral", (0.48, 0.76), SURFACES, "text", 1.5),
    "actionOrdinaryInk": Ink(
        "neutral", (0.25, 0.94), ("actionOrdinary", ORDINARY_SHADE), "strong", 1.5
    ),
    "actionQuietInk": Ink("accent", (0.45, 0.8), ("canvas", "actionQuietHover")),
    "link": Ink("accent", (0.45, 0.8), ("canvas", "surface")),
    "actionLinkHover": Ink("accent", (0.38, 0.86), ("canvas", "surface")),
    "focus": Ink("accent", (0.55, 0.72), ("canvas", "surface", "field", "sidebar"), "ui"),
    "disabledInk": Ink("neutral", (0.6, 0.6), ("disabled",), "ui"),
    "fieldDisabledInk": Ink("neutral", (0.62, 0.58), ("fieldDisabled",), "ui"),
    "fieldInk": Ink("neutral", (0.2, 0.95), ("field",), "strong", 1.5),
    "navigationActiveInk": Ink("accent", (0.35, 0.9), ("navigationActive",)),
    "selectionInk": Ink("accent", (0.2, 0.97), ("selection",), "text", 0.4),
    "sidebarActiveInk": Ink("accent", (0.32, 0.92), ("sidebarActive",)),
    "sidebarInk": Ink("neutral", (0.3, 0.9), ("sidebar",), "text", 1.5),
}

ACTIONS: dict[str, Action] = {
    "actionPrimary": Action("accent", 0.52, 0.72),
    "actionFocal": Action("focal", 0.55, 0.75),
    "actionDestructive": Action(RED, 0.55, 0.7),
    "brand": Action("accent", 0.45, 0.68, states=False),
    "workspace": Action("workspace", 0.5, 0.7, states=False),
}
ACTION_INK_ON_DARK = 0.18  # dark scheme: a dark ink on a light action

# Chrome is dark in the dark scheme, and in the light one when the recipe asks for it.
DARK_CHROME = Tone("neutral", (0.24, Canvas(-0.04)), chroma=1.5)
LIGHT_CHROME = Tone("neutral", (Canvas(-0.01), Canvas(0.0)))

SAME_AS = {
    "actionLink": "link",
    "fieldFocus": "focus",
    "overlay": "surfaceRaised",
    "browserSurface": "surface",
}
SCRIM = ("rgb(0 0 0 / 0.45)", "rgb(0 0 0 / 0.6)")


# --- Solving a scheme ----------------------------------------------------------------------


class SchemePalette(Palette):
    """The tables above, read for one recipe and scheme."""

    def __init__(self, recipe: Recipe, scheme: str) -> None:
        super().__init__(recipe, scheme)
        text = recipe.text_contrast
        self.minimums = {"text": text, "strong": max(text, v.TEXT_CONTRAST), "ui": v.UI_CONTRAST}
        self.colors: dict[str, css.Rgba] = {}

    def pick(self, pair: tuple[T, T]) -> T:
        return pair[1] if self.dark else pair[0]

    def hue(self, hue: str | Hue) -> Hue:
        role: Hue = getattr(self.recipe, hue) if isinstance(hue, str) else hue
        return role

    def lightness(self, levels: Levels) -> float:
        level = self.pick(levels)
        if not isinstance(level, Canvas):
            return level
        canvas = self.recipe.dark_canvas if self.dark else self.recipe.light_canvas
        return min(1.0, max(0.0, canvas + level.offset))

    def of(self, tone: Tone) -> css.Rgba:
        chroma = self.pick(tone.chroma) if isinstance(tone.chroma, tuple) else tone.chroma
        return self.tone(self.hue(tone.hue), self.lightness(tone.levels), chroma)

    def ink(self, ink: Ink) -> css.Rgba:
        grounds = [self.colors[g] if isinstance(g, str) else self.of(g) for g in ink.grounds]
        return self.solve(
            self.hue(ink.hue),
            self.lightness(ink.levels),
            grounds,
            self.minimums[ink.minimum],
            ink.chroma,
        )

    def action(self, action: Action, light_ink: css.Rgba) -> list[css.Rgba]:
        """Rest, hover, active and ink: in the dark scheme a light action under a dark ink
        solved on all three states; in the light one the lightest tone a near-white ink reads
        on, darkening for hover and active."""
        hue, text = self.hue(action.hue), self.minimums["text"]
        if self.dark:
            states = [self.tone(hue, action.dark + step) for step in (0.0, 0.05, 0.1)]
            return [*states, self.solve(hue, ACTION_INK_ON_DARK, states, text, 0.6)]
        rest = self.ground_for_white(hue, action.light, light_ink, text)
        rest_l = css.rgba_to_oklch(rest)[0]
        return [rest, self.tone(hue, rest_l - 0.05), self.tone(hue, rest_l - 0.1), light_ink]

    def chrome(self) -> tuple[css.Rgba, css.Rgba]:
        chrome = self.of(DARK_CHROME if self.recipe.chrome_dark or self.dark else LIGHT_CHROME)
        start = 0.96 if css.rgba_to_oklch(chrome)[0] < 0.6 else 0.2
        strong = self.minimums["strong"]
        return chrome, self.solve(self.recipe.neutral, start, [chrome], strong, 0.5)


def scheme_colors(recipe: Recipe, scheme: str) -> dict[str, str]:
    """Every color key of one scheme, as hex (in the vocabulary's order)."""
    p = SchemePalette(recipe, scheme)
    colors = p.colors
    colors.update({key: p.of(tone) for key, tone in TONES.items()})
    for key, hue in STATUSES.items():
        colors[key] = p.tone(hue, p.pick(STATUS_GROUND), p.pick(STATUS_CHROMA))
        colors[f"{key}Ink"] = p.solve(hue, p.pick(STATUS_INK), [colors[key]], p.minimums["text"])
    colors.update({key: p.ink(ink) for key, ink in INKS.items()})
    light_ink = p.solve(recipe.neutral, 0.99, [css.BLACK], 4.5, chroma_scale=0.3)  # near-white
    for key, action in ACTIONS.items():
        rest, hover, active, ink = p.action(action, light_ink)
        colors.update({key: rest, f"{key}Ink": ink})
        if action.states:
            colors.update({f"{key}Hover": hover, f"{key}Active": active})
    colors["chrome"], colors["chromeInk"] = p.chrome()
    colors["browserChrome"] = colors["chrome"] if recipe.chrome_dark else colors["canvas"]
    colors.update({key: colors[same] for key, same in SAME_AS.items()})
    out = {key: color.hex() for key, color in colors.items()}
    out["actionQuiet"] = "transparent"
    out["scrim"] = p.pick(SCRIM)
    assert set(out) == set(v.COLOR_KEYS)  # noqa: S101 - the tables must be complete
    return {key: out[key] for key in v.COLOR_KEYS}
