"""Pinterest (API v5): image and video Pins on a board, through the operator's OAuth 2 app.
See docs/providers/pinterest.md."""

from providers.pinterest.adapter import PinterestAdapter

__all__ = ["PinterestAdapter"]
