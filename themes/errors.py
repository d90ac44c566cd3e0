"""Theme domain errors (rendered as problems by ``config.api.problems``)."""

from __future__ import annotations

from config.errors import ConflictError


class ThemeInUseError(ConflictError):
    code = "theme_in_use"
    default_detail = "The theme is the organization default or assigned to a workspace."


class ThemeNameTakenError(ConflictError):
    code = "theme_name_taken"
    default_detail = "The organization already has a theme with this name."


class ThemeNotPublishedError(ConflictError):
    code = "theme_not_published"
    default_detail = "The theme has no published revision yet; publish it first."


class ThemeAssetInUseError(ConflictError):
    code = "theme_asset_in_use"
    default_detail = "The asset is used by a theme draft or a published revision."
