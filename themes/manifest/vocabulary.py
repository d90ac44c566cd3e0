"""The vocabulary of theme manifests: every key, allowed value and bound of a manifest
and its schemes, with the rules of ``docs/themes.md``. Plain data, no Django: ``definition.py`` builds the
validating serializers (and with them the OpenAPI schema) from these tables, the built-in themes
are written against them, and the settings name the enumerations after them.
"""

from __future__ import annotations

SCHEMA_VERSION = 1
SCHEMA_VERSION_CHOICES = (
    (SCHEMA_VERSION, SCHEMA_VERSION),
)  # (value, label): the contract names it
MAX_MANIFEST_BYTES = 256 * 1024

SCHEMES = ("light", "dark")
ICON_PACKS = ("lucide", "heroicons-outline", "heroicons-solid", "phosphor", "tabler")

ID_PATTERN = r"^[a-zA-Z0-9][a-zA-Z0-9_-]{0,127}$"
REVISION_PATTERN = r"^[a-zA-Z0-9][a-zA-Z0-9 _.-]{0,127}$"
FAMILY_PATTERN = r"^[a-zA-Z0-9 _.,:'-]+$"
UUID_PATTERN = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
ASSET_SOURCE_PATTERN = rf"^asset:{UUID_PATTERN}$"  # asset:<theme asset ID>

MAX_FONTS = 16
FONT_FORMATS = ("woff2",)
FONT_STYLES = ("normal", "italic")
FONT_DISPLAYS = ("swap", "fallback", "optional")
FONT_WEIGHT_MIN, FONT_WEIGHT_MAX, FONT_WEIGHT_STEP = 100, 900, 100

MAX_ASSETS = 5
ASSET_SLOTS = (
    "background-texture",
    "sidebar-decoration",
    "header-decoration",
    "empty-state-illustration",
    "loading-illustration",
)
ILLUSTRATION_SLOTS = ("empty-state-illustration", "loading-illustration")
ASSET_MIME_TYPES = ("image/png", "image/jpeg", "image/webp", "image/avif")
MAX_ALT_LENGTH = 240

# --- Scheme groups ---------------------------------------------------------------------------

COLOR_KEYS = (
    "actionDestructive",
    "actionDestructiveActive",
    "actionDestructiveHover",
    "actionDestructiveInk",
    "actionFocal",
    "actionFocalActive",
    "actionFocalHover",
    "actionFocalInk",
    "actionLink",
    "actionLinkHover",
    "actionOrdinary",
    "actionOrdinaryActive",
    "actionOrdinaryBorder",
    "actionOrdinaryHover",
    "actionOrdinaryInk",
    "actionPrimary",
    "actionPrimaryActive",
    "actionPrimaryHover",
    "actionPrimaryInk",
    "actionQuiet",
    "actionQuietActive",
    "actionQuietHover",
    "actionQuietInk",
    "border",
    "brand",
    "brandInk",
    "browserChrome",
    "browserSurface",
    "canvas",
    "cardHover",
    "caret",
    "chart1",
    "chart2",
    "chart3",
    "chart4",
    "chart5",
    "chrome",
    "chromeInk",
    "danger",
    "dangerInk",
    "disabled",
    "disabledInk",
    "field",
    "fieldBorder",
    "fieldDisabled",
    "fieldDisabledInk",
    "fieldFocus",
    "fieldHover",
    "fieldInk",
    "focus",
    "info",
    "infoInk",
    "ink",
    "input",
    "link",
    "mutedInk",
    "navigationActive",
    "navigationActiveInk",
    "navigationHover",
    "overlay",
    "scrim",
    "selection",
    "selectionInk",
    "sidebar",
    "sidebarActive",
    "sidebarActiveInk",
    "sidebarBorder",
    "sidebarInk",
    "success",
    "successInk",
    "surface",
    "surfaceRaised",
    "surfaceSunken",
    "warning",
    "warningInk",
    "workspace",
    "workspaceInk",
)

# Text on its ground needs 4.5:1; large or incidental ink and focus rings 3:1 (WCAG 2.2).
TEXT_CONTRAST = 4.5
UI_CONTRAST = 3.0
CONTRAST_RULES: tuple[tuple[str, str, float], ...] = (
    ("ink", "canvas", TEXT_CONTRAST),
    ("ink", "surface", TEXT_CONTRAST),
    ("mutedInk", "canvas", TEXT_CONTRAST),
    ("mutedInk", "surface", TEXT_CONTRAST),
    ("brandInk", "brand", TEXT_CONTRAST),
    ("workspaceInk", "workspace", TEXT_CONTRAST),
    ("selectionInk", "selection", TEXT_CONTRAST),
    ("dangerInk", "danger", TEXT_CONTRAST),
    ("successInk", "success", TEXT_CONTRAST),
    ("warningInk", "warning", TEXT_CONTRAST),
    ("infoInk", "info", TEXT_CONTRAST),
    ("link", "canvas", TEXT_CONTRAST),
    ("actionLink", "canvas", TEXT_CONTRAST),
    ("actionPrimaryInk", "actionPrimary", TEXT_CONTRAST),
    ("actionFocalInk", "actionFocal", TEXT_CONTRAST),
    ("actionOrdinaryInk", "actionOrdinary", TEXT_CONTRAST),
    ("actionQuietInk", "actionQuiet", TEXT_CONTRAST),
    ("fieldInk", "field", TEXT_CONTRAST),
    ("navigationActiveInk", "navigationActive", TEXT_CONTRAST),
    ("sidebarInk", "sidebar", TEXT_CONTRAST),
    ("sidebarActiveInk", "sidebarActive", TEXT_CONTRAST),
    ("chromeInk", "chrome", TEXT_CONTRAST),
    ("actionDestructiveInk", "actionDestructive", UI_CONTRAST),
    ("disabledInk", "disabled", UI_CONTRAST),
    ("fieldDisabledInk", "fieldDisabled", UI_CONTRAST),
    ("focus", "canvas", UI_CONTRAST),
    ("focus", "surface", UI_CONTRAST),
    ("focus", "field", UI_CONTRAST),
    ("focus", "sidebar", UI_CONTRAST),
)

# Component styles; each choice set has a name of its own in the contract (config/settings.py).
EMPHASIS = ("solid", "tonal", "outlined")
FIELD_STYLES = ("filled", "outlined", "underlined")
LAYERS = ("flat", "outlined", "elevated")
BUTTON_STYLES = ("solid", "tonal", "outlined", "precise")
CARD_STYLES = ("flat", "outlined", "paper", "lifted")
CONTAINER_STYLES = ("flat", "outlined", "tinted")
DECORATIONS = ("none", "editorial", "playful", "botanical", "study", "tactile", "precision")
EDITOR_CHROMES = ("neutral", "compact", "precision")
EMPTY_STATES = ("plain", "illustrated", "framed")
LINK_STYLES = ("underlined", "subtle", "plain")
LIST_STYLES = ("divided", "spaced", "plain")
LOADING_STATES = ("spinner", "pulse", "skeleton")
NAVIGATION_STYLES = ("quiet", "tonal", "outlined")
PAGINATION_STYLES = ("quiet", "outlined", "pill")
TABLE_STYLES = ("ruled", "striped", "plain")
TABS_STYLES = ("underline", "pill", "segmented")
TOOLBAR_STYLES = ("flat", "outlined", "floating")
COMPONENTS: dict[str, tuple[str, ...]] = {
    "badge": EMPHASIS,
    "button": BUTTON_STYLES,
    "card": CARD_STYLES,
    "checkbox": EMPHASIS,
    "chip": EMPHASIS,
    "container": CONTAINER_STYLES,
    "decoration": DECORATIONS,
    "dialog": LAYERS,
    "editorChrome": EDITOR_CHROMES,
    "emptyState": EMPTY_STATES,
    "input": FIELD_STYLES,
    "link": LINK_STYLES,
    "list": LIST_STYLES,
    "loadingState": LOADING_STATES,
    "navigation": NAVIGATION_STYLES,
    "pagination": PAGINATION_STYLES,
    "popover": LAYERS,
    "radio": EMPHASIS,
    "select": FIELD_STYLES,
    "switch": EMPHASIS,
    "table": TABLE_STYLES,
    "tabs": TABS_STYLES,
    "toast": LAYERS,
    "toolbar": TOOLBAR_STYLES,
}

ELEVATION_KEYS = ("card", "dialog", "focalAction", "popover")

# Motion: the longest distance (px) and the lowest starting opacity of each motion.
MOTION_LIMITS: dict[str, tuple[float, float]] = {
    "entry": (64, 0.0),
    "exit": (64, 0.0),
    "hover": (16, 0.5),
    "loading": (16, 0.1),
    "pageTransition": (64, 0.0),
    "press": (4, 0.5),
    "selection": (16, 0.5),
}
REDUCED_MOTION = ("instant", "crossfade")

PROTECTED_EDITOR_KEYS = (
    "canvasGrid",
    "canvasHandle",
    "canvasPasteboard",
    "canvasSafeArea",
    "canvasSelection",
    "editorBorder",
    "editorCanvas",
    "editorControl",
    "editorControlHover",
    "editorFocus",
    "editorFocusBorder",
    "editorMuted",
    "editorPanel",
    "editorText",
    "protectedGlyph",
    "timelineClip",
    "timelinePlayhead",
    "timelineSelection",
    "timelineTrack",
    "timelineWaveform",
)

# The editor chrome is Herald's: every manifest carries exactly these values for its scheme, so
# the editor stays legible whatever a theme does to the rest of the interface.
PROTECTED_EDITOR: dict[str, dict[str, str]] = {
    "light": {
        "canvasGrid": "#e4e7ec",
        "canvasHandle": "#1d4ed8",
        "canvasPasteboard": "#eef0f3",
        "canvasSafeArea": "#f59e0b",
        "canvasSelection": "#2563eb",
        "editorBorder": "#d0d5dd",
        "editorCanvas": "#ffffff",
        "editorControl": "#f2f4f7",
        "editorControlHover": "#e4e7ec",
        "editorFocus": "#1d4ed8",
        "editorFocusBorder": "#1d4ed8",
        "editorMuted": "#475467",
        "editorPanel": "#f9fafb",
        "editorText": "#101828",
        "protectedGlyph": "#344054",
        "timelineClip": "#dbe4ff",
        "timelinePlayhead": "#d92d20",
        "timelineSelection": "#b2ccff",
        "timelineTrack": "#eaecf0",
        "timelineWaveform": "#667085",
    },
    "dark": {
        "canvasGrid": "#2b3340",
        "canvasHandle": "#84adff",
        "canvasPasteboard": "#0c111d",
        "canvasSafeArea": "#fdb022",
        "canvasSelection": "#528bff",
        "editorBorder": "#344054",
        "editorCanvas": "#161b26",
        "editorControl": "#1f242f",
        "editorControlHover": "#2b3340",
        "editorFocus": "#84adff",
        "editorFocusBorder": "#84adff",
        "editorMuted": "#98a2b3",
        "editorPanel": "#111722",
        "editorText": "#f5f5f6",
        "protectedGlyph": "#cecfd2",
        "timelineClip": "#1d2a4d",
        "timelinePlayhead": "#f97066",
        "timelineSelection": "#2d4a8a",
        "timelineTrack": "#1f242f",
        "timelineWaveform": "#94969c",
    },
}

# Lengths: (minimum px, maximum px); 1 rem = 1 em = 16 px.
SHAPE_LENGTHS: dict[str, tuple[float, float]] = {
    "borderWidth": (1, 4),
    "radius": (0, 256),
    "radiusLg": (0, 256),
    "radiusMd": (0, 256),
    "radiusMedia": (0, 256),
    "radiusPill": (0, 10000),
    "radiusSm": (0, 256),
}
BORDER_STYLES = ("solid", "dashed")
SHELL_LENGTHS: dict[str, tuple[float, float]] = {
    "contentMaxWidth": (320, 4096),
    "headerHeight": (44, 256),
    "mobileNavigationHeight": (44, 256),
    "sidebarWidth": (160, 1024),
}
CANVAS_TREATMENTS = ("plain", "paper", "playful", "garden", "study", "tactile", "precision")
SPACING_LENGTHS: dict[str, tuple[float, float]] = {
    "base": (2, 64),
    "compactControlHeight": (32, 96),
    "componentGap": (4, 256),
    "controlHeight": (36, 96),
    "pageGutter": (8, 256),
    "sectionGap": (4, 256),
    "touchTarget": (44, 96),
}
DENSITIES = ("compact", "comfortable", "spacious")

TYPOGRAPHY_ROLES = ("body", "code", "display", "label", "metadata", "title")
SAFE_FAMILIES = (
    "Arial",
    "Georgia",
    "Helvetica",
    "Inter",
    "Menlo",
    "Monaco",
    "Consolas",
    "Segoe UI",
    "Times New Roman",
    "-apple-system",
    "BlinkMacSystemFont",
    "system-ui",
    "ui-monospace",
    "ui-serif",
    "monospace",
    "sans-serif",
    "serif",
)
MAX_FALLBACKS = 8
FONT_SIZE_PX = (11.0, 256.0)
LINE_HEIGHT = (1.0, 2.5)
TRACKING_PX = (-16.0, 16.0)

# --- Theme references and theme assets ------------------------------------------------------

REFERENCE_KINDS = ("built_in", "organization")
ASSET_KINDS = ("font", "image")
