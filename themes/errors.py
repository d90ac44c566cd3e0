"""Theme domain errors (rendered as problems by ``config.api.problems``)."""

from __future__ import annotations

from config.errors import ConflictError


class ThemeInUseError(ConflictError):
    """The theme is the organization default or assigned to a workspace; unassign it first."""

    title = "Theme in use"
    code = "theme_in_use"
    default_detail = "The theme is the organization default or assigned to a workspace."


class ThemeNameTakenError(ConflictError):
    """The organization already has a theme with this name."""

    title = "Theme name taken"
    code = "theme_name_taken"
    default_detail = "The organization already has a theme with this name."


class ThemeNotPublishedError(ConflictError):
    """The theme has no published revision yet; publish it first."""

    title = "Theme not published"
    code = "theme_not_published"
    default_detail = "The theme has no published revision yet; publish it first."


class ThemeAssetInUseError(ConflictError):
    """The asset is used by a theme draft or a published revision."""

    title = "Theme asset in use"
    code = "theme_asset_in_use"
    default_detail = "The asset is used by a theme draft or a published revision."
