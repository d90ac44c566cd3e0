"""The recipes of Herald's built-in themes: per theme its hues, lightness steps, type, shape,
motion and component choices (``palette`` solves its colors, ``manifest`` builds the rest)."""

from __future__ import annotations

from dataclasses import dataclass

from themes.manifest import vocabulary as v

DEFAULT_BUILT_IN_ID = "neutral"


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
    type_families: dict[str, tuple[str, tuple[str, ...]]]  # type role -> (family, fallbacks)
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


Family = tuple[str, tuple[str, ...]]


def _type_families(main: Family, **roles: Family) -> dict[str, Family]:
    """Every type role set in ``main`` (code in ``MONO``) unless ``roles`` names another."""
    return dict.fromkeys(v.TYPOGRAPHY_ROLES, main) | {"code": MONO} | roles


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
        type_families=_type_families(SANS),
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
        type_families=_type_families(SERIF, label=SANS, metadata=SANS),
        components=_components(
            card="paper",
            container="tinted",
            decoration="editorial",
            button="tonal",
            navigation="quiet",
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
        type_families=_type_families(SYSTEM),
        components=_components(
            button="outlined",
            container="outlined",
            dialog="outlined",
            popover="outlined",
            toast="outlined",
            toolbar="outlined",
            navigation="outlined",
            pagination="outlined",
            badge="outlined",
            chip="outlined",
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
        type_families=_type_families(SANS),
        components=_components(
            card="lifted",
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
        type_families=_type_families(SANS, display=SERIF, title=SERIF),
        components=_components(
            button="tonal",
            switch="tonal",
            card="flat",
            container="tinted",
            decoration="botanical",
            emptyState="illustrated",
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
        type_families=_type_families(SANS, metadata=MONO),
        components=_components(
            button="precise",
            container="outlined",
            editorChrome="precision",
            decoration="precision",
            tabs="segmented",
            table="striped",
            navigation="outlined",
            pagination="outlined",
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
        type_families=_type_families(SANS),
        components=_components(
            chip="solid",
            badge="solid",
            card="lifted",
            decoration="playful",
            tabs="pill",
            pagination="pill",
            emptyState="illustrated",
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


def recipe_get(built_in_id: str) -> Recipe:
    for recipe in RECIPES:
        if recipe.id == built_in_id:
            return recipe
    raise KeyError(built_in_id)
