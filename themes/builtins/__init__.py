"""Herald's built-in themes.

Each built-in is a *recipe* — hues, lightness steps, type, shape, motion and component
choices — from which a complete light and dark manifest is computed in OKLCH. Text colors are
solved for contrast against every ground they sit on (with a margin above the WCAG minimum the
validation enforces), so every built-in passes exactly the validation an organization's theme
must pass (``tests/themes/test_themes_manifest.py`` proves it).
"""

from themes.builtins.manifest import (
    BUILT_INS,
    BUILT_INS_BY_ID,
    BuiltIn,
    built_in_manifest,
)
from themes.builtins.recipes import DEFAULT_BUILT_IN_ID

__all__ = ["BUILT_INS", "BUILT_INS_BY_ID", "DEFAULT_BUILT_IN_ID", "BuiltIn", "built_in_manifest"]
