"""Theme writes (``themes``) and theme asset writes (``assets``)."""

from themes.services.assets import theme_asset_delete, theme_asset_upload
from themes.services.themes import (
    organization_theme_default_set,
    theme_create,
    theme_delete,
    theme_draft_replace,
    theme_publish,
    workspace_theme_assign,
)

__all__ = [
    "organization_theme_default_set",
    "theme_asset_delete",
    "theme_asset_upload",
    "theme_create",
    "theme_delete",
    "theme_draft_replace",
    "theme_publish",
    "workspace_theme_assign",
]
